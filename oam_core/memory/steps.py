"""Write an operation once, run it sync or async (SPEC §9; STYLE §1, httpx-style).

An operation is a generator that yields ``Call`` values (a store, LLM or embedder
method plus arguments) and receives their results. ``run_sync`` performs each call
with the plain method; ``run_async`` awaits the ``*_async`` twin (or runs the sync
method in a worker thread when the target has none). The sync driver is ordinary
blocking code, so it also works when called from inside a running event loop.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import anyio.to_thread

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One I/O step: ``target.method(*args, **kwargs)`` (or its ``*_async`` twin).

    Attributes:
        target: The object to call: a store, an ``ILlm`` or an ``IEmbedder``.
        method: Name of the sync method; the async driver uses ``method + "_async"``.
        args: Positional arguments.
        kwargs: Keyword arguments.
    """

    target: Any
    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


Steps = Generator[Call, Any, T]
"""A computation that yields ``Call`` values and finally returns a ``T``."""


def call(target: Any, method: str, *args: Any, **kwargs: Any) -> Steps[Any]:
    """Yield one ``Call`` and return its result (use with ``yield from``)."""
    result = yield Call(target, method, args, kwargs)
    return result


def run_sync(steps: Steps[T]) -> T:
    """Drive ``steps`` with plain (blocking) method calls and return its result.

    An exception raised by a call is thrown back into the generator at the ``yield``
    that issued it, exactly as the async driver does.
    """
    value: Any = None
    error: Exception | None = None
    while True:
        try:
            step = steps.send(value) if error is None else steps.throw(error)
        except StopIteration as stop:
            return cast(T, stop.value)
        error = None
        try:
            value = getattr(step.target, step.method)(*step.args, **step.kwargs)
        except Exception as exc:
            value, error = None, exc


async def run_async(steps: Steps[T]) -> T:
    """Drive ``steps`` by awaiting each call's ``*_async`` twin and return its result.

    A target without a ``method + "_async"`` attribute has its sync method run in a
    worker thread (``anyio.to_thread.run_sync``), so the event loop never blocks.
    """
    value: Any = None
    error: Exception | None = None
    while True:
        try:
            step = steps.send(value) if error is None else steps.throw(error)
        except StopIteration as stop:
            return cast(T, stop.value)
        error = None
        try:
            twin = getattr(step.target, step.method + "_async", None)
            if twin is not None:
                value = await twin(*step.args, **step.kwargs)
            else:
                sync = getattr(step.target, step.method)
                value = await anyio.to_thread.run_sync(
                    functools.partial(sync, *step.args, **step.kwargs)
                )
        except Exception as exc:
            value, error = None, exc
