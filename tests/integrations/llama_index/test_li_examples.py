"""The LlamaIndex examples in ``examples/llama_index/`` run offline and say what they
claim (the fake LLM answers from the long-term memory; filters apply in the store)."""

from __future__ import annotations

import asyncio
import runpy
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "llama_index"


def load(name: str) -> dict[str, Any]:
    return runpy.run_path(str(EXAMPLES / name), run_name="example")


def test_chat_with_memory_example(
    tmp_path: Path, event_loop: asyncio.AbstractEventLoop, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = load("chat_with_memory.py")["main"](tmp_path / "chat.db")
    # Statements are acknowledged; after a restart, the allergy (flushed out of the
    # short-term queue long ago) is answered from the oam thread's context card.
    assert answers[:2] == ["Noted.", "Noted."]
    assert answers[-1] == "You told me: I am allergic to peanuts, please remember that."
    assert capsys.readouterr().out.splitlines() == answers


def test_retriever_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain, filtered, remembered = load("retriever.py")["main"](tmp_path / "index.db")
    assert plain[0] == "The Prado museum in Madrid opens every day, Mondays included."
    assert filtered == ["Pasteis de nata are custard tarts; the oldest bakery is in Belem."]
    assert remembered == ["Ada is vegetarian, so paella should be the vegetable kind."]
    assert len(capsys.readouterr().out.splitlines()) == 3


def test_the_quick_start_of_the_docs_runs_as_plain_python(
    run_quick_start: Any, event_loop: asyncio.AbstractEventLoop
) -> None:
    """docs/llama_index.md's quick start is plain Python (no ``>>>``) that prints what
    the page says it prints: the card holding the memory is the system message."""
    printed, expected = run_quick_start("llama_index.md")
    assert printed == expected == "['system', 'user']\nTrue\n"
