"""One implementation, two fronts: build ``*_async`` twins from sync methods (SPEC §9)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

import anyio.to_thread

P = ParamSpec("P")
T = TypeVar("T")


def async_twin(method: Callable[P, T]) -> Callable[P, Coroutine[Any, Any, T]]:
    """Return an async method with ``method``'s exact signature that runs it in a worker
    thread, so the event loop never blocks on database or model I/O.

    The twin looks the method up on the instance at call time, so subclass overrides
    are honoured; arguments, results and exceptions are those of the sync method.
    """
    name = method.__name__

    @functools.wraps(method)
    async def twin(*args: P.args, **kwargs: P.kwargs) -> T:
        self, rest = args[0], args[1:]
        bound = getattr(self, name)
        result: T = await anyio.to_thread.run_sync(functools.partial(bound, *rest, **kwargs))
        return result

    twin.__name__ = f"{name}_async"
    twin.__qualname__ = f"{method.__qualname__}_async"
    twin.__doc__ = f"Async twin of ``{name}``: same arguments, result and errors (SPEC §9)."
    return twin
