"""The LangChain examples run (issue 4 item 6), offline, with their real outputs
checked; and every ``>>>`` example in the adapters' docstrings runs."""

from __future__ import annotations

import doctest
import importlib
import runpy
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "langchain"


def load(name: str) -> dict[str, Any]:
    return runpy.run_path(str(EXAMPLES / name), run_name="example")


def test_chat_chain_remembers_across_sessions(tmp_path: Path) -> None:
    out = load("chat_with_history.py")["main"](tmp_path / "chat.db")
    assert out["answer"] == "You told me you love sailing."
    # the second session's prompt held the first session's turns, from the file
    assert out["prompt"] == [
        ("system", "You are a friendly assistant."),
        ("human", "Hi, I'm Alice and I love sailing."),
        ("ai", "Nice to meet you, Alice!"),
        ("human", "What do I love?"),
    ]
    assert out["history"] == [
        ("human", "Hi, I'm Alice and I love sailing."),
        ("ai", "Nice to meet you, Alice!"),
        ("human", "What do I love?"),
        ("ai", "You told me you love sailing."),
    ]


def test_langgraph_agent_shares_memory_across_threads() -> None:
    out = load("langgraph_agent.py")["main"]()
    assert out["answer"] == "Your favourite colour is green."
    assert "- my favourite colour is green." in out["system_prompt"]
    # thread 2 started fresh: only its own question, the memory came from the store
    assert out["thread_2_messages"] == ["What is my favourite colour?"]
    assert out["oam_records"] == ["my favourite colour is green."]


@pytest.mark.parametrize(
    "module",
    [
        "langchain_oam.vectorstores",
        "langchain_oam.retrievers",
        "langchain_oam.chat_history",
        "langchain_oam.store",
    ],
)
def test_docstring_examples_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_the_quick_start_of_the_docs_runs_as_plain_python(run_quick_start: Any) -> None:
    """docs/langchain.md's quick start is plain Python (no ``>>>``) that prints what
    the page says it prints."""
    printed, expected = run_quick_start("langchain.md")
    assert printed == expected
    assert printed.splitlines()[1] == '["Alice\'s dog is called Biscuit."]'
