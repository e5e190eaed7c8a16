"""Where the embedded store's bytes are, and what its index file costs to write and read.

Builds a store of the peer workload (``bench/peers.py``'s ``dataset``; ``store.add`` of
10,000 records per call), searches once (the IVF index is built: inline below 120k
rows, in a background thread above, waited for), then prints:

- the seconds of the load, the first search, the build, the background write of the
  index file, ``close()``, and reopening the file plus one search;
- the files beside the database (MiB), with the store open and after ``close``;
- SQLite's ``dbstat`` per table and index (pages, MiB, unused MiB, payload MiB);
- the sections of ``<db>.oamvec`` as its trailer lists them;
- with ``--rerank``, the cost of reading 100 and 500 random candidates' vectors from
  SQLite's BLOBs against a memory-mapped float32 copy of the matrix.

    python bench/index_file.py --n 100000
    python bench/index_file.py --n 1000000 --rerank
    python bench/index_file.py --reopen /path/to/oam.db   # open, one search, close
    python bench/index_file.py --reopen /path/to/oam.db --queries 100   # and steady p50

Documented in ``bench/README.md`` (the peers section, "Disk, open and close").
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import DIM, dataset

from oam_core import SQLiteMemoryStore

MIB = 2**20


def _files(folder: str) -> str:
    return ", ".join(
        f"{name} {os.path.getsize(os.path.join(folder, name)) / MIB:,.1f}"
        for name in sorted(os.listdir(folder))
    )


def build(folder: str, n: int) -> tuple[str, list[float]]:
    """The store file, timed step by step; the query vector used."""
    ds = dataset(n, n_queries=2)
    path = os.path.join(folder, "oam.db")
    store = SQLiteMemoryStore(path, vector_dim=DIM)
    started = time.perf_counter()
    for a in range(0, n, 10_000):
        b = min(a + 10_000, n)
        store.add(
            ds["texts"][a:b],
            "memory",
            embeddings=ds["vecs"][a:b],
            record_ids=ds["ids"][a:b],
            user_ids=[m["user"] for m in ds["metas"][a:b]],
            metadata=ds["metas"][a:b],
        )
    print(f"load {time.perf_counter() - started:.2f} s")
    q = [float(x) for x in ds["queries"][0]]
    del ds
    index = store._impl.index
    for label, step in (
        ("first search", lambda: store.search(query_vector=q, k=10)),
        ("build wait", index.wait_for_build),
        ("search adopting the build", lambda: store.search(query_vector=q, k=10)),
        ("background write", getattr(index.builds, "writes", index.builds).wait),
    ):
        started = time.perf_counter()
        step()
        print(f"{label} {time.perf_counter() - started:.2f} s")
    print(f"files, store open (MiB): {_files(folder)}")
    time.sleep(3)  # the checkpoint thread truncates an idle log after 1 s
    print(f"files, store open, idle 3 s (MiB): {_files(folder)}")
    started = time.perf_counter()
    store.close()
    print(f"close {time.perf_counter() - started:.2f} s")
    print(f"files, closed (MiB): {_files(folder)}")
    started = time.perf_counter()
    store = SQLiteMemoryStore(path)
    store.search(query_vector=q, k=10)
    print(f"reopen + first search {time.perf_counter() - started:.2f} s")
    loader = getattr(store._impl.index.log, "loader", None)  # format 5: vectors from SQLite
    if loader is not None and loader.thread is not None:
        loader.thread.join()
        print(f"vectors filled from SQLite {time.perf_counter() - started:.2f} s after reopening")
    started = time.perf_counter()
    store.close()
    print(f"close after reopening {time.perf_counter() - started:.2f} s")
    return path, q


def reopen(path: str, queries: int) -> None:
    """Open an existing store, search once, close: wall and CPU seconds; with
    ``queries``, first wait for the matrix and time that many searches (stored
    vectors plus noise; recall@10 against an exact ranking of the mirror)."""
    import faiss  # noqa: F401 - its import (about 1 s) is not the store's

    q = [float(x) for x in np.random.default_rng(0).standard_normal(DIM)]
    wall, cpu = time.perf_counter(), time.process_time()
    store = SQLiteMemoryStore(path)
    store.search(query_vector=q, k=10)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"open + first search {wall:.3f} s wall, {cpu:.3f} s CPU")
    if queries:
        steady(store, path, queries)
    started = time.perf_counter()
    store.close()
    print(f"close {time.perf_counter() - started:.3f} s")


def steady(store: SQLiteMemoryStore, path: str, n: int) -> None:
    """p50/p95 and recall@10 of ``n`` searches once the matrix is filled."""
    loader = getattr(store._impl.index.log, "loader", None)
    if loader is not None and loader.thread is not None:
        loader.thread.join()
    rng = np.random.default_rng(3)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        top = conn.execute("SELECT max(pk) FROM chunks").fetchone()[0]
        keys = sorted(set(rng.integers(1, top, n + n // 2).tolist()))[:n]
        marks = ",".join("?" * len(keys))
        rows = conn.execute(f"SELECT embedding FROM chunks WHERE pk IN ({marks})", keys)
        base = np.stack([np.frombuffer(r[0], "<f4") for r in rows])
        qs = base + 0.05 * rng.standard_normal(base.shape).astype(np.float32)
        m = store._impl.index.mirror
        times, hits, cpu = [], 0, 0.0
        for q in qs:
            started, cpu0 = time.perf_counter(), time.process_time()
            got = store.search(query_vector=[float(x) for x in q], k=10)
            times.append(time.perf_counter() - started)
            cpu += time.process_time() - cpu0
            best = m.rec[: m.n][np.argsort(-(m.mat[: m.n] @ (q / np.linalg.norm(q))))[:10]]
            marks = ",".join("?" * len(best))
            ids = conn.execute(f"SELECT id FROM records WHERE pk IN ({marks})", best.tolist())
            hits += len({r[0] for r in ids} & {r.id for r, _ in got})
    print(
        f"{len(qs)} searches: p50 {np.median(times) * 1e3:.3f} ms, p95 "
        f"{np.percentile(times, 95) * 1e3:.3f} ms, CPU {cpu / len(qs) * 1e3:.3f} ms a search, "
        f"recall@10 {hits / (10 * len(qs)):.3f}"
    )


def dbstat(path: str) -> None:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT name, count(*), sum(pgsize), sum(unused), sum(payload) FROM dbstat "
            "GROUP BY name ORDER BY 3 DESC"
        ).fetchall()
    print("| table or index | pages | MiB | unused MiB | payload MiB |\n|---|---:|---:|---:|---:|")
    for name, pages, size, unused, payload in rows:
        if size >= MIB // 10:
            print(
                f"| {name} | {pages:,} | {size / MIB:,.1f} | {unused / MIB:,.1f} | {payload / MIB:,.1f} |"
            )
    print(f"| total | | {sum(r[2] for r in rows) / MIB:,.1f} | | |")


def sections(path: str) -> None:
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        f.seek(size - 16)
        length = int.from_bytes(f.read(8), "little")
        f.seek(size - 16 - length)
        head: dict[str, Any] = json.loads(f.read(length))
    print(f"index file {size / MIB:,.1f} MiB, format {head['format']}, {head['n']:,} rows")
    ann = head.get("ann") or {}
    print(f"  faiss part {ann.get('end', 0) / MIB:,.1f}")
    for name, _offset, nbytes, dtype, *rest in head["sections"]:
        how = f", {rest[1]}" if len(rest) > 1 else ""  # format 5: compressed
        print(f"  {name} ({dtype}{how}) {nbytes / MIB:,.2f}")


def rerank(path: str, n: int, draws: int = 40) -> None:
    """Fetching 100 and 500 random candidates' vectors: SQLite BLOBs against a map."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.execute("PRAGMA mmap_size = 1073741824")
    lo, hi = conn.execute("SELECT min(pk), max(pk) FROM chunks").fetchone()
    copy = path + ".matrix.npy"
    mat = np.lib.format.open_memmap(copy, mode="w+", dtype=np.float32, shape=(n, DIM))
    cur, at = conn.execute("SELECT embedding FROM chunks ORDER BY pk"), 0
    while rows := cur.fetchmany(8192):
        mat[at : at + len(rows)] = np.frombuffer(b"".join(r[0] for r in rows), "<f4").reshape(
            -1, DIM
        )
        at += len(rows)
    mat.flush()
    del mat
    mapped = np.load(copy, mmap_mode="r")
    rng = np.random.default_rng(1)
    for size in (100, 500):
        blob, mm = [], []
        for _ in range(draws):
            keys = sorted(rng.integers(lo, hi + 1, size).tolist())
            started = time.perf_counter()
            for i in range(0, size, 500):
                part = keys[i : i + 500]
                conn.execute(
                    f"SELECT pk, embedding FROM chunks WHERE pk IN ({','.join('?' * len(part))})",
                    part,
                ).fetchall()
            blob.append(time.perf_counter() - started)
            started = time.perf_counter()
            np.asarray(mapped[np.array(keys) - lo])
            mm.append(time.perf_counter() - started)
        print(
            f"{size} candidates: SQLite p50 {np.median(blob) * 1e3:.2f} ms, "
            f"memory map p50 {np.median(mm) * 1e3:.3f} ms"
        )
    conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dir", help="scratch directory (default: a new temporary one)")
    parser.add_argument("--rerank", action="store_true", help="time candidate vector reads")
    parser.add_argument(
        "--reopen", metavar="DB", help="only open DB, search once and close (wall and CPU)"
    )
    parser.add_argument("--queries", type=int, default=0, help="with --reopen: timed searches")
    args = parser.parse_args(argv)
    if args.reopen:
        reopen(args.reopen, args.queries)
        return 0
    folder = args.dir or tempfile.mkdtemp(prefix="index-file-")
    os.makedirs(folder, exist_ok=True)
    path, _q = build(folder, args.n)
    dbstat(path)
    if os.path.exists(path + ".oamvec"):
        sections(path + ".oamvec")
    if args.rerank:
        rerank(path, args.n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
