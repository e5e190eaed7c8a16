"""Helpers shared by the thread and client conformance tests (imported, not a conftest)."""

from __future__ import annotations

import doctest
import io
import json
from collections.abc import Callable, Sequence
from typing import Any

from oam_core.apis.llm import ILlm
from oam_core.apis.thread import Message
from oam_core.store.threads import thread_store

STORE_TIME = "2026-03-01T12:00:00.000000+00:00"
"""``created_at`` of every row written under the conformance ``clock`` fixture."""


class CountingLlm(ILlm):
    """A fake LLM that records every prompt and answers with no memories (and a fixed
    running summary when asked for one)."""

    def __init__(self, reply: str = json.dumps({"memories": []})) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        self.prompts.append(prompt)
        if response_json_schema and "summary" in response_json_schema.get("properties", {}):
            return json.dumps({"summary": "A summary.", "topics": []})
        return self.reply


def contents(messages: Sequence[Message]) -> list[str]:
    """The ``content`` of each message, in order."""
    return [m.content for m in messages]


def alternating(n: int) -> list[dict[str, str]]:
    """``n`` message dicts alternating user/assistant, contents ``"m0"``, ``"m1"``, ..."""
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(n)]


def run_docstring_examples(obj: Any, make_globs: Callable[[], dict[str, Any]]) -> int:
    """Run every ``>>>`` example in ``obj``'s docstrings (recursively), each docstring
    with fresh globals from ``make_globs()``; fail with doctest's report on a mismatch.

    Returns:
        The number of examples run.
    """
    finder = doctest.DocTestFinder(recurse=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = io.StringIO()
    count = 0
    for test in finder.find(obj):
        if not test.examples:
            continue
        test.globs = {**test.globs, **make_globs()}
        runner.run(test, out=report.write, clear_globs=False)
        count += len(test.examples)
    assert runner.failures == 0, report.getvalue()
    return count


Reply = str | Exception | Callable[[str, "dict[str, Any] | None"], str]


class ScriptedLlm(ILlm):
    """A fake LLM for pipeline unit tests: answers by prompt kind from scripts.

    ``extraction``, ``summary`` and ``shorten`` are lists of replies used in order
    (the last one repeats); a reply is a string, an exception to raise, or a
    function ``(prompt, schema) -> str``. Every call is recorded in ``calls`` as
    ``(kind, prompt, schema)``.
    """

    def __init__(
        self,
        extraction: Sequence[Reply] = ('{"memories": []}',),
        summary: Sequence[Reply] = ('{"summary": "s", "topics": []}',),
        shorten: Sequence[Reply] = ("short",),
    ) -> None:
        self.scripts = {
            "extraction": list(extraction),
            "summary": list(summary),
            "shorten": list(shorten),
        }
        self.calls: list[tuple[str, str, dict[str, Any] | None]] = []

    @staticmethod
    def kind(prompt: str) -> str:
        if "<new_messages>" in prompt and "existing memories" in prompt.lower():
            return "extraction"
        if "running summary" in prompt:
            return "summary"
        return "shorten"

    def prompts(self, kind: str) -> list[str]:
        return [p for k, p, _ in self.calls if k == kind]

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        kind = self.kind(prompt)
        self.calls.append((kind, prompt, response_json_schema))
        script = self.scripts[kind]
        reply = script.pop(0) if len(script) > 1 else script[0]
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(prompt, response_json_schema)
        return reply


def memories_reply(*items: dict[str, Any]) -> str:
    """An extraction reply holding ``items`` (missing fields get defaults)."""
    full = [{"record_type": "fact", "timestamp": None, "supersedes": [], **item} for item in items]
    return json.dumps({"memories": full})


def add_derived(
    store: Any,
    content: str,
    record_type: str,
    record_id: str,
    reserved: dict[str, Any],
    *,
    thread_id: str = "t1",
    metadata: dict[str, Any] | None = None,
) -> None:
    """Write a record the way the extraction pipeline does: with library-owned
    ``$agent_memory`` provenance, through ``commit_thread_pass`` (callers cannot set
    that key through ``add``). Creates the thread row when missing."""
    from oam_core.apis.batch import PendingRecordBatch

    row = thread_store(store).get_thread_row(thread_id)
    if row is None:
        thread_store(store).create_thread_row(thread_id)
        row = thread_store(store).get_thread_row(thread_id)
    batch = PendingRecordBatch(
        texts=[content],
        record_type=record_type,
        record_ids=[record_id],
        thread_ids=thread_id,
        metadata={**(metadata or {}), "$agent_memory": reserved},
    )
    state = dict(row.state or {})
    assert thread_store(store).commit_thread_pass(
        thread_id, expected_state=state, state=state, batches=[batch]
    ) == [record_id]
