"""The LLM path without an API key is quiet: no LiteLLM banner on stdout, nothing on
stderr, and one warning per failed pass that says what to set (docs/llms.md#errors).
Real LiteLLM; it fails on the missing key before any request is sent."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest

from oam_core import MemoryPipelineWarning, OracleAgentMemory

pytest.importorskip("litellm")


def test_a_missing_key_is_one_warning_naming_the_variable(
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
        ids = thread.add_messages([{"role": "user", "content": "I am vegetarian."}])
    memory.close()
    assert len(ids) == 1  # the message is stored all the same
    pipeline = [w for w in caught if issubclass(w.category, MemoryPipelineWarning)]
    assert len(pipeline) == 1, [str(w.message) for w in caught]
    assert "has no API key: set OPENAI_API_KEY" in str(pipeline[0].message)
    out, err = capfd.readouterr()
    assert "Give Feedback" not in out and out == ""
    assert err == ""
