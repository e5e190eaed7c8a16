"""Start ``oam mcp`` as a subprocess and talk to it with the MCP SDK's own client."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from _seed import EMBEDDER
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

BASE_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "test-key-not-used"}
# The MCP client starts the server with a minimal environment; PYTHONPATH is passed on
# so the server imports the same oam_core as the test process.
if "PYTHONPATH" in os.environ:
    BASE_ENV["PYTHONPATH"] = os.environ["PYTHONPATH"]


def server_params(
    url: str, *args: str, cwd: Path, embedder: str | None = EMBEDDER
) -> StdioServerParameters:
    """``python -m oam_core.cli mcp --db URL --embedder hashing/64 ARGS...`` (no
    ``--embedder`` when ``embedder`` is None)."""
    chosen = [] if embedder is None else ["--embedder", embedder]
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "oam_core.cli", "mcp", "--db", url, *chosen, *args],
        env=BASE_ENV,
        cwd=str(cwd),
    )


@asynccontextmanager
async def mcp_session(
    url: str, *args: str, cwd: Path, embedder: str | None = EMBEDDER
) -> AsyncIterator[Client]:
    """A connected client of a fresh ``oam mcp`` subprocess (stopped on exit)."""
    params = server_params(url, *args, cwd=cwd, embedder=embedder)
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


def structured(result: CallToolResult) -> Any:
    """A successful tool result's structured value (lists come wrapped as ``result``)."""
    assert not result.is_error, result.content
    value = result.structured_content
    if isinstance(value, dict) and set(value) == {"result"}:
        return value["result"]
    return value


def error_text(result: CallToolResult) -> str:
    """A failed tool result's message."""
    assert result.is_error, f"expected a tool error, got {result.structured_content}"
    return " ".join(getattr(c, "text", "") for c in result.content)


def resource_json(contents: Any) -> Any:
    """The JSON body of a read_resource result."""
    return json.loads(contents.contents[0].text)
