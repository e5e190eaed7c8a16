"""How the vector index's background threads (a build, the tail assigner) run beside
the threads that call the store (``docs/sqlite.md#how-a-search-is-ranked``).

A build or an assignment is long work no caller waits for; a search or a write is
short work a caller waits for. On a machine with few cores they compete for the same
cores, so a background thread (``background``) runs its faiss calls on one OpenMP
thread (threads that spin waiting for a busy core halved a writer's rate on a loaded
2-core machine) and, where the system gives each thread its own priority (Linux), at
a lower one (``BACKGROUND_NICE``): a search or a write then takes a core from it at
once instead of sharing it. The thread that writes the index file is not lowered: it
holds the mirror's lock while faiss writes, and a search waiting for that lock would
wait behind a thread the system runs last.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

__all__ = ["BACKGROUND_NICE", "background", "one_omp_thread"]

BACKGROUND_NICE = 10
"""Niceness added to a background thread's (Linux: its weight against a nice-0
thread that wants the same core is about a tenth)."""


def one_omp_thread(faiss: Any) -> None:
    """Let faiss (OpenMP, and the BLAS it calls) use one thread in the calling thread."""
    setter = getattr(faiss, "omp_set_num_threads", None)
    if setter is not None:
        setter(1)


def background(faiss: Any) -> None:
    """Call first in a background thread of the vector index: one OpenMP thread for
    faiss, and on Linux the thread's niceness raised by ``BACKGROUND_NICE`` (a no-op
    where the system refuses or has no per-thread priority)."""
    one_omp_thread(faiss)
    if not sys.platform.startswith("linux"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICE)
    except (AttributeError, OSError):
        pass
