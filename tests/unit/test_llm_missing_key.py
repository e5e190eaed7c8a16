"""A LiteLLM model without its API key (docs/llms.md#errors,
docs/memory-pipeline.md#failures-never-lose-messages).

README's "With an LLM" example run without ``OPENAI_API_KEY``: the missing key is
found before any connection (tests block the network; ``litellm.completion`` is also
wrapped to count calls) and is a ``MissingApiKeyError``, a ``ConfigurationError``
naming the variable. ``INLINE`` raises it from ``add_messages`` (the messages are
stored); ``BACKGROUND`` reports it once. Pipeline warnings point at the caller's line,
never at a line of ``oam``.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oam_core import (
    MemoryExtractionConfig,
    MemoryExtractionMode,
    MemoryPipelineWarning,
    OracleAgentMemory,
    _litellm,
)
from oam_core.apis.llm import ILlm
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.embedders.litellm import LiteLLMEmbedder
from oam_core.errors import ConfigurationError
from oam_core.llms.litellm import LiteLLMLlm

pytest.importorskip("litellm")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:pydantic.*")

KEYS = ("OPENAI_API_KEY", "GROQ_API_KEY", "MISTRAL_API_KEY", "ANTHROPIC_API_KEY")
MESSAGE = {"role": "user", "content": "I'm vegetarian and I fly to Lisbon in March."}


@pytest.fixture
def requests(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """No API key in the environment; every LiteLLM request is counted and fails."""
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    litellm = _litellm.import_litellm("test")
    sent: list[str] = []

    def request(**kwargs: Any) -> Any:
        sent.append(kwargs["model"])
        raise litellm.InternalServerError("connection refused", "openai", kwargs["model"])

    async def request_async(**kwargs: Any) -> Any:
        return request(**kwargs)

    for name in ("completion", "embedding"):
        monkeypatch.setattr(litellm, name, request)
        monkeypatch.setattr(litellm, f"a{name}", request_async)
    yield sent


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("openai/gpt-4o-mini", "OPENAI_API_KEY"),
        ("groq/llama3-8b-8192", "GROQ_API_KEY"),  # LiteLLM itself would connect first
        ("mistral/mistral-small", "MISTRAL_API_KEY"),
    ],
)
def test_a_missing_key_is_found_before_any_request(
    requests: list[str], model: str, variable: str
) -> None:
    llm = LiteLLMLlm(model, max_retries=2)
    with pytest.raises(ConfigurationError, match=f"set {variable}, or pass api_key") as sync:
        llm.generate("hi")
    assert isinstance(sync.value, _litellm.MissingApiKeyError)
    with pytest.raises(_litellm.MissingApiKeyError, match=variable):
        asyncio.run(llm.generate_async("hi"))
    assert requests == []


def test_the_embedder_checks_its_key_the_same_way(requests: list[str]) -> None:
    embedder = LiteLLMEmbedder("openai/text-embedding-3-small", max_retries=2)
    with pytest.raises(_litellm.MissingApiKeyError, match="set OPENAI_API_KEY"):
        embedder.embed(["hi"])
    assert requests == []


def test_a_model_id_of_no_known_provider_is_refused_before_any_request(
    requests: list[str],
) -> None:
    """A typo such as ``embedder="loca"`` names the id and the accepted forms instead of
    LiteLLM's BadRequestError; an id LiteLLM knows without a prefix still goes out."""
    says = "model 'loca' names no provider LiteLLM knows: write it as '<provider>/<model>'"
    with pytest.raises(_litellm.UnknownModelError, match=says) as raised:
        LiteLLMEmbedder("loca", max_retries=0).embed(["hi"])
    assert isinstance(raised.value, ConfigurationError)
    with pytest.raises(_litellm.UnknownModelError, match="'local', 'hashing"):
        asyncio.run(LiteLLMLlm("loca", max_retries=0).generate_async("hi"))
    with pytest.raises(_litellm.UnknownModelError):
        OracleAgentMemory(connection=":memory:", embedder="loca", extract_memories=False)
    assert requests == []
    # named by the request itself: sent (and fails here as every request does)
    with pytest.raises(Exception) as sent:
        LiteLLMLlm("loca", max_retries=0, api_base="http://127.0.0.1:9/v1").generate("hi")
    assert not isinstance(sent.value, _litellm.UnknownModelError)
    assert requests == ["loca"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model": "openai/gpt-4o-mini", "api_key": "sk-given"},
        {"model": "openai/gpt-4o-mini", "api_base": "http://127.0.0.1:9/v1"},  # own server
        {"model": "ollama/llama3"},  # no key needed
        {"model": "bedrock/anthropic.claude-v2"},  # AWS credentials may come from a role
    ],
)
def test_requests_that_may_need_no_key_are_sent(requests: list[str], kwargs: Any) -> None:
    with pytest.raises(Exception) as raised:
        LiteLLMLlm(**kwargs, max_retries=0).generate("hi")
    assert not isinstance(raised.value, _litellm.MissingApiKeyError)
    assert requests == [kwargs["model"]]


def test_a_key_set_module_wide_is_accepted(
    requests: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    litellm = _litellm.import_litellm("test")
    monkeypatch.setattr(litellm, "openai_key", "sk-module-wide")
    with pytest.raises(Exception, match="connection refused"):
        LiteLLMLlm("openai/gpt-4o-mini", max_retries=0).generate("hi")
    assert requests == ["openai/gpt-4o-mini"]


def _client(tmp_path: Path, mode: MemoryExtractionMode) -> OracleAgentMemory:
    return OracleAgentMemory.open(
        str(tmp_path / "memory.db"),
        embedder=HashingEmbedder(16),
        llm="openai/gpt-4o-mini",
        memory_extraction_config=MemoryExtractionConfig(extraction_mode=mode),
    )


def test_inline_extraction_raises_the_missing_key_after_storing_the_messages(
    requests: list[str], tmp_path: Path
) -> None:
    memory = _client(tmp_path, MemoryExtractionMode.INLINE)
    thread = memory.create_thread(user_id="alice", enable_context_summary=True)
    with pytest.raises(_litellm.MissingApiKeyError, match="set OPENAI_API_KEY"):
        thread.add_messages([MESSAGE])
    assert [m.content for m in thread.get_messages()] == [MESSAGE["content"]]
    with pytest.raises(_litellm.MissingApiKeyError):
        asyncio.run(thread.add_messages_async([MESSAGE]))
    assert len(thread.get_messages()) == 2
    assert requests == []
    memory.close()


def test_background_extraction_reports_the_missing_key_once(
    requests: list[str], tmp_path: Path
) -> None:
    memory = _client(tmp_path, MemoryExtractionMode.BACKGROUND)
    thread = memory.create_thread(user_id="alice", enable_context_summary=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            thread.add_messages([MESSAGE])
            assert memory.wait_for_memory_extraction(timeout=30)
    reports = [w for w in caught if issubclass(w.category, MemoryPipelineWarning)]
    assert len(reports) == 1, [str(w.message) for w in caught]
    text = str(reports[0].message)
    assert "has no API key: set OPENAI_API_KEY, or pass api_key=..." in text
    assert "Error(" not in text  # the message itself, not a repr
    assert reports[0].filename == "oam-extraction" and reports[0].lineno == 0
    assert len(thread.get_messages()) == 3
    assert requests == []
    memory.close()


class _Down(ILlm):
    """An LLM whose every call fails with a transient-looking error."""

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        raise RuntimeError("service unavailable")

    async def generate_async(
        self, prompt: str, *, response_json_schema: dict[str, Any] | None = None
    ) -> str:
        raise RuntimeError("service unavailable")


def test_a_failed_pass_warns_at_the_callers_line(tmp_path: Path) -> None:
    memory = OracleAgentMemory.open(
        str(tmp_path / "memory.db"), embedder=HashingEmbedder(16), llm=_Down()
    )
    thread = memory.create_thread(user_id="alice")
    with pytest.warns(MemoryPipelineWarning, match="service unavailable") as caught:
        thread.add_messages([MESSAGE])
    assert {w.filename for w in caught} == {__file__}
    memory.close()
