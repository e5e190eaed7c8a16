"""Helper threads that run a search's vector half beside its keyword half
(docs/sqlite.md#hybrid-search-in-parallel).

numpy, faiss and SQLite release the GIL while they compute, so on a machine with more
than one core two halves of one search overlap. The pool is per process: a child
after ``fork`` starts its own (a pool inherited from the parent has no live threads
and would never run what it is given).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

T = TypeVar("T")
S = TypeVar("S")
M = TypeVar("M")


def _usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the system has one, as
    under ``taskset`` or a container's cpuset), else ``os.cpu_count()``."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity call (macOS, Windows)
        return os.cpu_count() or 1


WORKERS = min(8, _usable_cores())
"""Threads of the pool; with one usable core (``WORKERS == 1``) nothing runs beside."""

_lock = threading.Lock()
_pool: tuple[int, ThreadPoolExecutor] | None = None


def _after_fork_in_child() -> None:
    """A lock another thread held at ``fork`` stays held in the child: replace it."""
    global _lock, _pool
    _lock, _pool = threading.Lock(), None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def beside(fn: Callable[[], T]) -> Future[T] | None:
    """Start ``fn()`` on a helper thread and return its future, or None when it should
    run in the caller instead: a single core (``WORKERS``), the interpreter shutting
    down, or a thread that cannot be started. Never raises; ``fn``'s own exception
    is raised by ``future.result()``."""
    global _pool
    if WORKERS < 2:
        return None
    with _lock:
        pid = os.getpid()
        if _pool is None or _pool[0] != pid:
            _pool = (pid, ThreadPoolExecutor(WORKERS, thread_name_prefix="oam-search"))
        pool = _pool[1]
    future: Future[T] = Future()

    def task() -> None:
        if future.set_running_or_notify_cancel():  # else the caller runs ``fn``
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

    try:
        pool.submit(task)
    except RuntimeError:  # shutting down, or no thread can be started
        # ``submit`` queued the task before it failed to start a thread: a busy
        # thread of the pool would run it later, after the caller's lock is gone.
        if future.cancel():
            return None
    return future


def _wait_for(future: Future[Any]) -> None:
    """Wait until ``future`` is done, through ``KeyboardInterrupt`` (raised after):
    the helper may read state the caller holds a lock over."""
    interrupted: BaseException | None = None
    while True:
        try:
            wait([future])
            break
        except BaseException as exc:  # a signal handler's exception (Ctrl-C)
            interrupted = interrupted or exc
    if interrupted is not None:
        raise interrupted


def run_beside(side: Callable[[], S], main: Callable[[], M]) -> tuple[S, M]:
    """``(side(), main())``, with ``side`` on a helper thread (``beside``) while ``main``
    runs in the calling thread. When ``main`` raises, ``side`` is still waited for
    (it may read state the caller holds a lock over), then ``main``'s exception
    propagates. Without a helper thread ``main`` runs first, then ``side``."""
    future = beside(side)
    if future is None:
        got = main()
        return side(), got
    try:
        got = main()
    finally:
        _wait_for(future)
    return future.result(), got
