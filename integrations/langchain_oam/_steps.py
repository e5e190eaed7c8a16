"""Write each adapter operation once, run it sync or async (SPEC §9; STYLE 1).

An operation is a generator that yields ``Call`` objects for every piece of I/O (a
store method, an embedding model, a thread) and receives each call's result. The
sync driver runs the sync method; the async driver awaits its async twin. So the
adapters' logic (validation, mapping, ranking) exists once, and only the I/O differs.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One I/O call: ``target.<sync>(*args, **kwargs)`` or ``await target.<async_>(...)``."""

    target: Any
    sync: str
    async_: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Steps = Generator[Call, Any, T]
"""An operation: yields ``Call`` objects, returns its result."""


def oam(target: Any, name: str, *args: Any, **kwargs: Any) -> Call:
    """A call of an ``oam_core`` method whose async twin is ``<name>_async``."""
    return Call(target, name, f"{name}_async", args, kwargs)


def lc(target: Any, name: str, *args: Any, **kwargs: Any) -> Call:
    """A call of a LangChain method whose async twin is ``a<name>``."""
    return Call(target, name, f"a{name}", args, kwargs)


def run_sync(steps: Steps[T]) -> T:
    """Drive ``steps`` with the sync methods; return the operation's result."""
    try:
        call = next(steps)
        while True:
            try:
                result = getattr(call.target, call.sync)(*call.args, **call.kwargs)
            except Exception as exc:  # handed to the operation, which may handle it
                call = steps.throw(exc)
            else:
                call = steps.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def run_async(steps: Steps[T]) -> T:
    """Drive ``steps`` with the async twins; return the operation's result."""
    try:
        call = next(steps)
        while True:
            try:
                result = await getattr(call.target, call.async_)(*call.args, **call.kwargs)
            except Exception as exc:  # handed to the operation, which may handle it
                call = steps.throw(exc)
            else:
                call = steps.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
