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
"""

from __future__ import annotations

from typing import Any

__all__ = ["background"]


def background(faiss: Any) -> None:
    """Call first in a background thread of the vector index: faiss (OpenMP, and the
    BLAS it calls) uses one thread in it."""
    setter = getattr(faiss, "omp_set_num_threads", None)
    if setter is not None:
        setter(1)
