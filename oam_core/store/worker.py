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
from typing import TypeVar

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


def beside(fn: Callable[[], T]) -> Future[T] | None:
    """Start ``fn()`` on a helper thread and return its future, or None when it should
    run in the caller instead: a single core (``WORKERS``), the interpreter shutting
    down, or a thread that cannot be started. Never raises; ``fn``'s own exception
    is raised by ``future.result()``."""
    global _pool
    if WORKERS < 2:
        return None
    try:
        with _lock:
            pid = os.getpid()
            if _pool is None or _pool[0] != pid:
                _pool = (pid, ThreadPoolExecutor(WORKERS, thread_name_prefix="oam-search"))
            pool = _pool[1]
        return pool.submit(fn)
    except RuntimeError:  # shutting down, or no thread can be started
        return None


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
        wait([future])
    return future.result(), got
