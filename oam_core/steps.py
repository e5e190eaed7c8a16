"""Write an operation once, run it sync or async (docs/concepts.md#sync-and-async;
as httpx does).

An operation is a generator that yields ``Call`` values and receives their results.
A ``Call`` holds a *bound method* (``store.search``, ``llm.generate``, ...) and its
arguments, so mypy checks every call against the method's signature: a misspelt
method, a missing required argument or an unknown keyword fails the type check at
the caller (``call`` is typed with ``ParamSpec``).

``run_sync`` performs each call with the method itself; ``run_async`` awaits its
async twin: the ``twin`` given with ``paired``, else the owner's ``<name>_async``
method, else the sync method in a worker thread (``anyio.to_thread``), so the event
loop never blocks. The sync driver is ordinary blocking code, so it also works when
called from inside a running event loop. The adapters (LangChain, LlamaIndex) use
this driver too.

``sync_method`` and ``async_method`` turn one steps method (``_<name>_steps``) into
the public pair ``<name>`` / ``<name>_async``: one signature, one docstring, one
body for both. Code that is blocking by nature (the store over a DB-API driver) gets
its async twins from ``async_twin`` instead, and ``in_worker_thread`` runs any
blocking call from async code; both use the worker threads of ``anyio``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, cast

import anyio.to_thread

from oam_core.errors import InvalidArgumentError

__all__ = [
    "Call",
    "Paired",
    "Steps",
    "async_method",
    "async_twin",
    "call",
    "in_worker_thread",
    "paired",
    "run_async",
    "run_sync",
    "sync_method",
]

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One I/O step: ``fn(*args, **kwargs)``, or its async twin under ``run_async``.

    Attributes:
        fn: The sync callable, usually a bound method of a store, an ``ILlm``, an
            ``IEmbedder``, a client or a thread.
        args: Positional arguments.
        kwargs: Keyword arguments.
    """

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


Steps = Generator[Call, Any, T]
"""A computation that yields ``Call`` values and finally returns a ``T``."""


def call(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> Steps[R]:
    """Yield one ``Call`` of ``fn`` and return its result (use with ``yield from``).

    Example::

        hits = yield from call(store.search, query, k=5)
    """
    result = yield Call(fn, args, kwargs)
    return cast(R, result)


class Paired(Generic[P, R]):
    """A sync callable with an explicit async twin of the same arguments (for APIs
    whose twin is not ``<name>_async``, such as LangChain's ``aembed_query``)."""

    def __init__(self, sync: Callable[P, R], twin: Callable[P, Awaitable[R]]) -> None:
        self.sync = sync
        self.twin = twin

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.sync(*args, **kwargs)


def paired(sync: Callable[P, R], twin: Callable[P, Awaitable[R]]) -> Paired[P, R]:
    """``sync`` with ``twin`` as the callable ``run_async`` awaits instead.

    Example::

        vector = yield from call(paired(emb.embed_query, emb.aembed_query), text)
    """
    return Paired(sync, twin)


def async_twin_of(fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]] | None:
    """The async twin ``run_async`` awaits for ``fn``: a ``Paired`` twin, else the
    ``<name>_async`` attribute of a bound method's owner, else None."""
    if isinstance(fn, Paired):
        return fn.twin
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", None)
    if owner is None or not isinstance(name, str):
        return None
    twin = getattr(owner, name + "_async", None)
    return cast("Callable[..., Awaitable[Any]] | None", twin)


def run_sync(steps: Steps[T]) -> T:
    """Drive ``steps`` with plain (blocking) calls and return its result.

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
            value = step.fn(*step.args, **step.kwargs)
        except Exception as exc:
            value, error = None, exc


async def run_async(steps: Steps[T]) -> T:
    """Drive ``steps`` by awaiting each call's async twin and return its result.

    A call without a twin (``async_twin_of``) runs its sync callable in a worker
    thread (``anyio.to_thread.run_sync``), so the event loop never blocks.
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
            twin = async_twin_of(step.fn)
            if twin is not None:
                value = await twin(*step.args, **step.kwargs)
            else:
                value = await in_worker_thread(step.fn, *step.args, **step.kwargs)
        except Exception as exc:
            value, error = None, exc


def sync_method(
    steps: Callable[Concatenate[Any, P], Steps[T]],
) -> Callable[Concatenate[Any, P], T]:
    """The public blocking method of the steps method ``_<name>_steps``: ``<name>``,
    with its signature and docstring, driven by ``run_sync``.

    (``self`` is typed ``Any`` so that the pair may implement an abstract method of
    a base class; the steps method's own ``self`` is positional-only.)"""

    def method(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return run_sync(steps(self, *args, **kwargs))

    return _front(method, steps, "")


def async_method(
    steps: Callable[Concatenate[Any, P], Steps[T]],
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, T]]:
    """The async twin of ``sync_method(steps)``: ``<name>_async``, same signature,
    driven by ``run_async``."""

    async def method(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await run_async(steps(self, *args, **kwargs))

    return _front(method, steps, "_async")


F = TypeVar("F", bound=Callable[..., Any])


def _front(method: F, steps: Callable[..., Any], suffix: str) -> F:
    """Name, document and sign ``method`` after the steps method it drives."""
    qualname = steps.__qualname__
    owner, _, steps_name = qualname.rpartition(".")
    if not (steps_name.startswith("_") and steps_name.endswith("_steps")):
        raise InvalidArgumentError(f"a steps method is named _<name>_steps, got {steps_name!r}")
    name = steps_name[1 : -len("_steps")] + suffix
    method.__name__ = name
    method.__qualname__ = f"{owner}.{name}" if owner else name
    method.__module__ = steps.__module__
    if suffix:
        method.__doc__ = (
            f"Async twin of ``{name[: -len(suffix)]}``: same arguments, result and errors "
            "(docs/concepts.md#sync-and-async)."
        )
    else:
        method.__doc__ = steps.__doc__
    signature = inspect.signature(steps)
    first, *rest = signature.parameters.values()
    # Shown as the reference pages show methods: ``self`` is an ordinary parameter.
    signature = signature.replace(
        parameters=[first.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD), *rest]
    )
    returned = signature.return_annotation
    if isinstance(returned, str) and returned.startswith("Steps[") and returned.endswith("]"):
        signature = signature.replace(return_annotation=returned[len("Steps[") : -1])
    method.__signature__ = signature  # type: ignore[attr-defined]
    return method


async def in_worker_thread(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """Run the blocking ``fn(*args, **kwargs)`` in a worker thread and return its
    result (its exception propagates), so the event loop never blocks."""
    result: R = await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
    return result


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
        result: T = await in_worker_thread(bound, *rest, **kwargs)
        return result

    twin.__name__ = f"{name}_async"
    twin.__qualname__ = f"{method.__qualname__}_async"
    twin.__doc__ = (
        f"Async twin of ``{name}``: same arguments, result and errors "
        "(docs/concepts.md#sync-and-async)."
    )
    return twin
