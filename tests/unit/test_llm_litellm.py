"""LiteLLMLlm: recorded real traffic (SmolLM2 via llama.cpp) and the I/O-free pieces.

Recorded tests replay ``tests/cassettes/test_llm_litellm/*.yaml``; re-record them with
``python scripts/record_cassettes.py tests/unit/test_llm_litellm.py``.
"""

from __future__ import annotations

import asyncio
import importlib.machinery
import importlib.util
import json
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import oam_core.llms.litellm as llm_mod
from oam_core import _litellm
from oam_core.apis.llm import ILlm
from oam_core.llms import EmptyReplyError, LiteLLMLlm, resolve_llm
from tests.llm import API_BASE, CassetteMissError, RecordedLlm, json_body_matcher, record_mode

needs_litellm = pytest.mark.skipif(
    importlib.util.find_spec("litellm") is None, reason="litellm not installed"
)

# Bounded strings and lists: SmolLM2-135M loops until max_tokens without bounds.
TOPICS_SCHEMA: dict[str, Any] = {
    "title": "topics reply",
    "type": "object",
    "properties": {
        "topics": {
            "type": "array",
            "items": {"type": "string", "maxLength": 24},
            "maxItems": 3,
        }
    },
    "required": ["topics"],
    "additionalProperties": False,
}
TOPICS_PROMPT = "List up to three topics of this message as JSON: I love hiking and green tea."
PLAIN_PROMPT = "Name one colour. Answer with one word."

RecordedFactory = Callable[..., RecordedLlm]


# ---------------------------------------------------------------------------------------
# Recorded real traffic.


@needs_litellm
class TestRecorded:
    def test_plain_text(self, recorded_llm: RecordedFactory) -> None:
        llm = recorded_llm("plain_text", max_tokens=16)
        reply = llm.generate(PLAIN_PROMPT)
        assert isinstance(reply, str)
        assert reply.strip()

    def test_json_schema(self, recorded_llm: RecordedFactory) -> None:
        llm = recorded_llm("json_schema")
        reply = llm.generate(TOPICS_PROMPT, response_json_schema=TOPICS_SCHEMA)
        value = json.loads(reply)  # the server enforces the schema: strict JSON
        assert set(value) == {"topics"}
        assert 0 < len(value["topics"]) <= 3
        assert all(isinstance(t, str) and len(t) <= 24 for t in value["topics"])

    def test_async_plain_and_schema(self, recorded_llm: RecordedFactory) -> None:
        llm = recorded_llm("async", max_tokens=16)

        async def both() -> tuple[str, str]:
            plain = await llm.generate_async(PLAIN_PROMPT)
            structured = await llm.generate_async(
                TOPICS_PROMPT, response_json_schema=TOPICS_SCHEMA
            )
            return plain, structured

        plain, structured = asyncio.run(both())
        assert plain.strip()
        # max_tokens=16 may cut the JSON short; it is still JSON-shaped text.
        assert structured.lstrip().startswith("{")

    def test_sync_and_async_send_the_same_request(self, recorded_llm: RecordedFactory) -> None:
        llm = recorded_llm("sync_async_same", max_tokens=16)
        sync_reply = llm.generate(PLAIN_PROMPT)
        async_reply = asyncio.run(llm.generate_async(PLAIN_PROMPT))
        assert sync_reply == async_reply  # temperature 0, same request body

    def test_prompt_level_json_against_the_server(self, recorded_llm: RecordedFactory) -> None:
        llm = recorded_llm("prompt_json", structured_output=False, max_tokens=64)
        reply = llm.generate(TOPICS_PROMPT, response_json_schema=TOPICS_SCHEMA)
        assert reply.strip()

    def test_unrecorded_request_fails_loudly(self, recorded_llm: RecordedFactory) -> None:
        if record_mode() != "none":
            pytest.skip("replay-only check")
        llm = recorded_llm("plain_text", max_tokens=16)
        with pytest.raises(CassetteMissError, match="holds no recording"):
            llm.generate("A prompt that was never recorded.")

    def test_missing_cassette_fails_loudly(self, recorded_llm: RecordedFactory) -> None:
        if record_mode() != "none":
            pytest.skip("replay-only check")
        with pytest.raises(CassetteMissError, match="does not exist"):
            recorded_llm("no_such_cassette")
