"""The searches right after a bulk load: does the vector index follow the writes?

Loads N records of the peer workload's shape (384-d unit vectors around 100 unit
centroids, gaussian noise 0.05 per dimension, one user of 50 each) into a new
``SQLiteMemoryStore`` file, ``--batch`` records per ``store.add``; then times the 200
searches right after the load (no warm-up: the index may still be building) and 200
more once no build or assignment thread runs (steady). Prints one JSON line: add rate,
CPU seconds of the writing thread and of the process during the load, p50/p95/max and
recall@10 (against exact numpy) of both passes, their ratio (first p95 / steady p50),
the serving IVF index (lists, probes, rows it was trained on), and the peak resident
memory above the resident memory before the load (as ``peerbench.py`` counts it: the
peak counter reset through ``/proc/self/clear_refs``), at the end of the first 200
searches (``peak_rss_first_mb``) and at the end (``peak_rss_mb``).

    python bench/bulk_follow.py --n 200000
    python bench/bulk_follow.py --n 1000000 --write-builds   # writes start builds

``--write-builds`` / ``--no-write-builds`` set ``builds.WRITE_BUILDS`` (writes start
the index's builds and retrains in the background during the load); without
either, the tree's default holds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from typing import Any

import numpy as np

from oam_core import SQLiteMemoryStore


def _data(n: int) -> tuple[np.ndarray, np.ndarray, list[set[int]]]:
    rng = np.random.default_rng(0)
    cent = rng.standard_normal((100, 384)).astype(np.float32)
    cent /= np.linalg.norm(cent, axis=1, keepdims=True)
    vecs = cent[rng.integers(0, 100, n)] + 0.05 * rng.standard_normal((n, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    qs = vecs[rng.integers(0, n, 200)] + 0.02 * rng.standard_normal((200, 384)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    truth = [set(np.argpartition(-(vecs @ q), 10)[:10].tolist()) for q in qs]
    return vecs, qs, truth


def _timed(store: SQLiteMemoryStore, qs: np.ndarray, truth: list[set[int]]) -> dict[str, float]:
    lat, rec = [], []
    for q, want in zip(qs, truth, strict=True):
        started = time.perf_counter()
        got = store.search(query_vector=q, k=10)
        lat.append(time.perf_counter() - started)
        rec.append(len({int(str(r.id)[1:]) for r, _ in got} & want) / 10)
    ms = np.sort(np.array(lat)) * 1e3
    return {
        "p50": round(float(ms[len(ms) // 2]), 3),
        "p95": round(float(ms[int(len(ms) * 0.95)]), 3),
        "max": round(float(ms[-1]), 1),
        "recall": round(float(np.mean(rec)), 4),
    }


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def run(n: int, batch: int) -> dict[str, Any]:
    vecs, qs, truth = _data(n)
    workdir = tempfile.mkdtemp(prefix="bulk-follow-")
    store = SQLiteMemoryStore(os.path.join(workdir, "b.db"), vector_dim=384)
    _reset_peak()
    rss0 = _rss_mb()
    try:
        wall, cpu, proc = time.perf_counter(), time.thread_time(), time.process_time()
        for a in range(0, n, batch):
            b = min(a + batch, n)
            store.add(
                ["some words"] * (b - a),
                "memory",
                embeddings=vecs[a:b],
                record_ids=[f"r{i}" for i in range(a, b)],
                user_ids=[f"u{i % 50}" for i in range(a, b)],
            )
        wall = time.perf_counter() - wall
        out: dict[str, Any] = {
            "n": n,
            "add_per_s": round(n / wall),
            "writer_cpu_s": round(time.thread_time() - cpu, 1),
            "process_cpu_s": round(time.process_time() - proc, 1),
        }
        out["first"] = _timed(store, qs, truth)
        out["peak_rss_first_mb"] = round(_peak_mb() - rss0)
        index = store._impl.index  # type: ignore[attr-defined]
        started = time.perf_counter()
        while not index.wait_for_build() or getattr(index.builds, "tail", None) is not None:
            store.search(query_vector=qs[0], k=10)  # adopts what the threads finished
            if time.perf_counter() - started > 3600:
                break
        out["ready_after_s"] = round(time.perf_counter() - started, 1)
        out["steady"] = _timed(store, qs, truth)
        out["first_p95_over_steady_p50"] = round(out["first"]["p95"] / out["steady"]["p50"], 1)
        out["peak_rss_mb"] = round(_peak_mb() - rss0)
        ann = index.ann
        if ann is not None:
            out["index"] = {
                "lists": int(ann.index.nlist),
                "probes": ann.nprobe,
                "trained_on": ann.trained_on,
            }
        return out
    finally:
        store.close()
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--write-builds", action="store_true", help="writes start index builds")
    ap.add_argument("--no-write-builds", action="store_true", help="writes start none")
    args = ap.parse_args()
    if args.write_builds or args.no_write_builds:
        from oam_core.store.sqlite.vector import builds

        builds.WRITE_BUILDS = bool(args.write_builds)
    print(json.dumps(run(args.n, args.batch)))


if __name__ == "__main__":
    main()
