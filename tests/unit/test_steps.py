"""The one step driver (``oam_core/steps.py``): bound methods, their async twins, the
worker-thread fallback, and errors thrown back into the operation
(docs/concepts.md#sync-and-async)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from oam_core.steps import Steps, call, paired, run_async, run_sync


class Target:
    def __init__(self) -> None:
        self.threads: list[str] = []

    def double(self, x: int) -> int:
        self.threads.append("sync")
        return 2 * x

    async def double_async(self, x: int) -> int:
        self.threads.append("twin")
        return 20 * x

    def plain(self, x: int) -> int:
        self.threads.append(threading.current_thread().name)
        return x + 1

    def fail(self) -> int:
        raise ValueError("boom")


def _steps(t: Target) -> Steps[tuple[int, int, str]]:
    a = yield from call(t.double, 2)
    b = yield from call(t.plain, a)
    try:
        yield from call(t.fail)
    except ValueError as exc:  # thrown back at the yield that issued the call
        caught = str(exc)
    return a, b, caught


def test_sync_calls_the_bound_method_itself() -> None:
    t = Target()
    assert run_sync(_steps(t)) == (4, 5, "boom")
    assert t.threads == ["sync", threading.current_thread().name]


def test_async_awaits_the_twin_or_runs_the_sync_method_in_a_worker_thread() -> None:
    t = Target()
    assert asyncio.run(run_async(_steps(t))) == (40, 41, "boom")
    assert t.threads[0] == "twin"
    assert t.threads[1] != threading.current_thread().name  # a worker thread


def test_paired_names_the_twin_of_another_naming_scheme() -> None:
    calls: list[str] = []

    def embed(text: str) -> str:
        calls.append("sync")
        return text

    async def aembed(text: str) -> str:
        calls.append("async")
        return text.upper()

    def steps() -> Steps[Any]:
        return (yield from call(paired(embed, aembed), "hi"))

    assert run_sync(steps()) == "hi"
    assert asyncio.run(run_async(steps())) == "HI"
    assert calls == ["sync", "async"]


def test_an_unhandled_error_propagates_from_both_drivers() -> None:
    t = Target()

    def steps() -> Steps[int]:
        return (yield from call(t.fail))

    with pytest.raises(ValueError, match="boom"):
        run_sync(steps())
    with pytest.raises(ValueError, match="boom"):
        asyncio.run(run_async(steps()))
