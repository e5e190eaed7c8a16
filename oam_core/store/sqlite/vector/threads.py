"""How the vector index's background threads (a build, the tail assigner) run beside
the threads that call the store (``docs/sqlite.md#how-a-search-is-ranked``).

A build or an assignment is long work no caller waits for, a search or a write short
work a caller waits for; on a machine with few cores they compete for the same cores.
A background thread runs its faiss calls on one OpenMP thread (``background``):
threads that spin waiting for a busy core halved a writer's rate on a loaded 2-core
machine. Its scheduling priority is left as it is: a lowered one (niceness +10) was
tried and made a 1M bulk load slower, not faster (32-41% below main's rate against
12-18% without it), as a writer then waited for the GIL or the mirror's lock held by
a thread the system ran last.

A child process made by ``fork`` after faiss ran a parallel region inherits GNU
OpenMP's thread pool as data but not its threads: its first parallel faiss call
would wait for ever for threads that do not exist. ``guard_fork`` makes faiss run
on one OpenMP thread in such a child (``docs/sqlite.md#consistency-with-other-processes``).
"""

from __future__ import annotations

import os
import threading
from typing import Any

__all__ = ["background", "guard_fork"]

_guarded = threading.Lock()
_registered: list[bool] = []


def background(faiss: Any) -> None:
    """Call first in a background thread of the vector index: faiss (OpenMP, and the
    BLAS it calls) uses one thread in it."""
    setter = getattr(faiss, "omp_set_num_threads", None)
    if setter is not None:
        setter(1)


def guard_fork(faiss: Any) -> None:
    """Make faiss use one OpenMP thread in every child process ``fork`` makes from
    now on (registered once per process; where ``os.register_at_fork`` is missing,
    nothing is done). Called when faiss is first loaded."""
    if not hasattr(os, "register_at_fork"):
        return
    with _guarded:
        if _registered:
            return
        _registered.append(True)
    os.register_at_fork(after_in_child=lambda: background(faiss))
