"""The vector index's unit scaling (``mirror.unit``) and how its background threads
run (``vector/threads.py``)."""

from __future__ import annotations

import os
import threading

import numpy as np

from oam_core.checks import lengthen_short_rows
from oam_core.store.sqlite.vector import threads
from oam_core.store.sqlite.vector.mirror import unit


def _reference(vecs: np.ndarray) -> np.ndarray:
    """The scaling as written before (every row through ``lengthen_short_rows``)."""
    out = lengthen_short_rows(np.array(vecs, dtype=np.float32))
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    out[(norms == 0)[:, 0]] = 0.0
    return out


def _rows() -> np.ndarray:
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((500, 48)).astype(np.float32)
    vecs[5] = 0.0  # a zero row stays zero
    vecs[7] *= np.float32(1e-25)  # squares underflow float32: scaled in float64
    vecs[9] *= np.float32(1e-17)
    vecs[11] = 0.0
    vecs[11, 3] = np.float32(1e-30)  # one tiny component
    vecs[12] *= np.float32(2.0**-48)  # just above the short limit
    return vecs


def test_unit_gives_the_same_bits_as_scaling_every_row() -> None:
    vecs = _rows()
    got = unit(vecs)
    assert np.array_equal(got, _reference(vecs))
    assert got[5].tolist() == [0.0] * 48
    assert abs(float(np.linalg.norm(got[7])) - 1.0) < 1e-6
    assert got[11, 3] == 1.0 and np.count_nonzero(got[11]) == 1
    assert np.array_equal(vecs, _rows())  # the caller's rows are not changed


def test_unit_writes_into_the_given_rows_only() -> None:
    vecs = _rows()
    dest = np.full((700, 48), 7.0, np.float32)
    out = unit(vecs, out=dest[100:600])
    assert np.shares_memory(out, dest)
    assert np.array_equal(dest[100:600], _reference(vecs))
    assert (dest[:100] == 7.0).all() and (dest[600:] == 7.0).all()


def test_unit_of_no_rows() -> None:
    assert unit(np.zeros((0, 4), np.float32)).shape == (0, 4)


class _Faiss:
    def __init__(self) -> None:
        self.threads: list[int] = []

    def omp_set_num_threads(self, n: int) -> None:
        self.threads.append(n)


def test_a_background_thread_runs_one_omp_thread_at_its_priority() -> None:
    faiss = _Faiss()
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen: list[int] = []

    def run() -> None:
        threads.background(faiss)
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert faiss.threads == [1]
    assert seen == [before]


def test_background_without_omp_setter() -> None:
    threads.background(object())  # a faiss build without OpenMP: nothing to set
