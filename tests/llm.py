"""Recorded real LLM traffic for tests (vcrpy cassettes), loaded as a pytest plugin.

The ``recorded_llm`` fixture gives a factory: ``recorded_llm("name")`` returns a
``LiteLLMLlm`` that talks to the local SmolLM2-135M-Instruct server
(``scripts/record_cassettes.py``) at ``API_BASE`` and whose HTTP traffic goes through
the cassette ``tests/cassettes/<test module>/<name>.yaml``.

* Normal runs (CI): record mode ``none``. Every request is answered from the cassette;
  a request that is not in it fails the test with ``CassetteMissError`` (no network,
  no server needed).
* ``OAM_RECORD_CASSETTES=1``: record mode ``new_episodes`` with unused interactions
  dropped: recorded requests still replay, new ones go to the server and are added,
  interactions no longer requested are removed from the file.
* ``OAM_RECORD_CASSETTES=all``: record mode ``all``: every request goes to the server
  and the cassette is rewritten from scratch.

Requests match on method, path and the parsed JSON body (``json_body`` matcher): key
order, whitespace and escaping of the body do not matter, so a litellm upgrade that
serialises differently still replays. The ``authorization`` header and API-key
headers are never written to a cassette.

Tests that use the fixture get the ``llm_cassette`` marker automatically, so
``pytest -m llm_cassette`` selects them for re-recording.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from oam_core.apis.llm import ILlm

if TYPE_CHECKING:
    import vcr

    from oam_core.llms.litellm import LiteLLMLlm

__all__ = [
    "API_BASE",
    "CASSETTE_DIR",
    "MODEL",
    "PORT",
    "RECORD_ENV",
    "CassetteMissError",
    "RecordedLlm",
    "json_body_matcher",
    "open_cassette",
    "record_mode",
]

PORT = 18573
"""Fixed loopback port of the recording server (part of every recorded URL)."""
MODEL = "openai/smollm2"
"""LiteLLM id: OpenAI-compatible provider, the server's model alias ``smollm2``."""
API_BASE = f"http://127.0.0.1:{PORT}/v1"
RECORD_ENV = "OAM_RECORD_CASSETTES"
CASSETTE_DIR = Path(__file__).parent / "cassettes"
IGNORED_BODY_FIELDS: frozenset[str] = frozenset({"user", "metadata", "stream_options"})
"""Top-level request-body fields left out of matching (ids or metadata, if any are sent)."""
_FILTERED_HEADERS = ["authorization", "api-key", "x-api-key", "openai-organization"]


class CassetteMissError(AssertionError):
    """A recorded LLM made a request that its cassette does not hold."""


def record_mode() -> str:
    """vcrpy record mode chosen by ``OAM_RECORD_CASSETTES`` (unset/empty/0: ``none``)."""
    value = os.environ.get(RECORD_ENV, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return "none"
    if value == "all":
        return "all"
    return "new_episodes"


def _parsed_body(request: Any) -> Any:
    body = request.body
    if body is None or body == b"" or body == "":
        return None
    if isinstance(body, bytes):
        body = body.decode("utf-8")
    try:
        value = json.loads(body)
    except ValueError:
        return body
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in IGNORED_BODY_FIELDS}
    return value


def json_body_matcher(r1: Any, r2: Any) -> None:
    """vcrpy matcher: equal parsed JSON bodies (raw text compared if not JSON).

    Raises:
        AssertionError: when the bodies differ (vcrpy reads it as "no match").
    """
    left, right = _parsed_body(r1), _parsed_body(r2)
    assert left == right, f"JSON bodies differ: {left!r} != {right!r}"


def _vcr(mode: str) -> vcr.VCR:
    import vcr

    recorder = vcr.VCR(
        record_mode=mode,
        match_on=["method", "path", "json_body"],
        filter_headers=_FILTERED_HEADERS,
        decode_compressed_response=True,
        drop_unused_requests=(mode == "new_episodes"),
    )
    recorder.register_matcher("json_body", json_body_matcher)
    return recorder


def _miss(exc: BaseException) -> BaseException | None:
    from vcr.errors import CannotOverwriteExistingCassetteException

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, CannotOverwriteExistingCassetteException):
            found: BaseException = current
            return found
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


@contextmanager
def _quiet_litellm(cassette: Path) -> Iterator[None]:
    """Narrow warning filters for one recorded call, and loud cassette misses.

    litellm builds some pydantic models lazily on its first call and pydantic warns
    about them (UserWarning from ``pydantic.*``); that is litellm's business, not ours.
    """
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=UserWarning, module=r"pydantic\..*")
            yield
    except Exception as exc:
        miss = _miss(exc)
        if miss is None:
            raise
        raise CassetteMissError(
            f"cassette {cassette} holds no recording of this LLM request; record it with "
            f"`python scripts/record_cassettes.py <test path>` ({RECORD_ENV}=1).\n{miss}"
        ) from exc


class RecordedLlm(ILlm):
    """An ``ILlm`` over a ``LiteLLMLlm`` whose traffic is recorded in ``cassette``.

    Cassette misses become ``CassetteMissError``; ``inner`` is the wrapped
    ``LiteLLMLlm`` (its ``model``, ``max_tokens``, ... are readable there).
    """

    def __init__(self, inner: LiteLLMLlm, cassette: Path) -> None:
        self.inner = inner
        self.cassette = cassette

    def __repr__(self) -> str:
        return f"RecordedLlm({self.inner!r}, cassette={str(self.cassette)!r})"

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        with _quiet_litellm(self.cassette):
            return self.inner.generate(prompt, response_json_schema=response_json_schema)

    async def generate_async(
        self, prompt: str, *, response_json_schema: dict[str, Any] | None = None
    ) -> str:
        with _quiet_litellm(self.cassette):
            return await self.inner.generate_async(
                prompt, response_json_schema=response_json_schema
            )


def open_cassette(stack: ExitStack, recorder: vcr.VCR, path: Path) -> Any:
    """Enter ``path``'s cassette on ``stack``; returns vcrpy's ``Cassette``.

    When re-recording (``new_episodes``), interactions a test no longer requests are
    dropped from its cassette, but only if the test used the cassette at all: a test
    that sent no request (skipped, or failed before its first call) leaves the file
    as it was instead of emptying it.
    """
    cassette = stack.enter_context(recorder.use_cassette(str(path)))

    def keep_if_unused() -> None:
        if cassette.play_count == 0 and not cassette.dirty:
            cassette.drop_unused_requests = False

    stack.callback(keep_if_unused)  # runs before the cassette saves (LIFO)
    return cassette


def _cassette_path(request: pytest.FixtureRequest, name: str) -> Path:
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(f"cassette name must be a plain file stem, got {name!r}")
    module = Path(str(request.node.path)).stem
    return CASSETTE_DIR / module / f"{name}.yaml"


@pytest.fixture
def recorded_llm(request: pytest.FixtureRequest) -> Iterator[Callable[..., RecordedLlm]]:
    """Factory ``recorded_llm(name, **llm_kwargs) -> RecordedLlm`` over a cassette.

    ``name`` is the cassette's file stem (``tests/cassettes/<module>/<name>.yaml``);
    ``llm_kwargs`` override the ``LiteLLMLlm`` arguments (defaults: ``MODEL``,
    ``API_BASE``, ``api_key="x"``, ``structured_output=True``, ``max_retries=0``,
    ``timeout=120``, ``max_tokens=256``). The cassette stays active until the test
    ends; several names in one test each get their own cassette.

    In replay mode a missing cassette file fails at once with a hint to record it.
    """
    mode = record_mode()
    recorder = _vcr(mode)
    with ExitStack() as stack:

        def make(name: str, **llm_kwargs: Any) -> RecordedLlm:
            path = _cassette_path(request, name)
            if mode == "none" and not path.exists():
                raise CassetteMissError(
                    f"cassette {path} does not exist; record it with "
                    f"`python scripts/record_cassettes.py {request.node.nodeid}`"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            open_cassette(stack, recorder, path)
            options: dict[str, Any] = {
                "api_base": API_BASE,
                "api_key": "x",
                "structured_output": True,
                "max_retries": 0,
                "timeout": 120.0,
                "max_tokens": 256,
                **llm_kwargs,
            }
            from oam_core.llms.litellm import LiteLLMLlm

            return RecordedLlm(LiteLLMLlm(options.pop("model", MODEL), **options), path)

        yield make


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "llm_cassette: replays recorded LLM traffic (tests/llm.py, recorded_llm)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "recorded_llm" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.llm_cassette)
