"""The LLM path without an API key is quiet: no LiteLLM banner on stdout, nothing on
stderr; an INLINE pass raises one ``MissingApiKeyError`` that says what to set
(docs/llms.md#errors), after the messages are stored. Real LiteLLM; the missing key is
found before any request is sent."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest

from oam_core import MemoryPipelineWarning, OracleAgentMemory
from oam_core._litellm import MissingApiKeyError

pytest.importorskip("litellm")


def test_a_missing_key_is_raised_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "OAM_LITELLM_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(logging, "lastResort", logging.StreamHandler())  # as a script has it
    memory = OracleAgentMemory.open(
        f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", llm="openai/gpt-4o-mini"
    )
    thread = memory.create_thread(user_id="alice")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(MissingApiKeyError, match="has no API key: set OPENAI_API_KEY"):
            thread.add_messages([{"role": "user", "content": "I am vegetarian."}])
        stored = [m.content for m in thread.get_messages()]
    memory.close()
    assert stored == ["I am vegetarian."]  # the message is stored all the same
    pipeline = [w for w in caught if issubclass(w.category, MemoryPipelineWarning)]
    assert pipeline == [], [str(w.message) for w in caught]
    out, err = capfd.readouterr()
    assert "Give Feedback" not in out and out == ""
    assert err == ""
