"""Peer comparison: the embedded store against other vector stores on one workload.

Workload (seed 0, the shape of the project's shared peer benchmark): N records of
16-24 words from a 400-word synthetic vocabulary, each with a unit float32 384-d
vector (100 gaussian centroids + noise sigma 0.05 per dimension) and metadata
``{"user": f"u{i % 50}", "tags": [two of 12 tags]}``; 200 queries are perturbed copies
(sigma 0.02) of random records and carry that record's user. Ground truth is the
exact top 10 by cosine (numpy float32), overall and within the query's user.

Each (peer, N) runs in a fresh subprocess; its peak-RSS counter is reset right
before the bulk load (``/proc/self/clear_refs``), so the figure is the memory the
load and the searches needed. Bulk load: ``--batch`` records per add call with the
precomputed vectors; search: 10 warm-up queries (``--warmup``), then each query timed alone; with
``--warmup 0`` the 200 searches right after the load are timed first (the oam peer's
index may still be building: the ``first`` columns), then the usual passes.

Peers (missing packages are reported, not fatal; ``pip install 'oam[bench]'``):
  numpy      exact scan over a matrix (per-user row lists for the filtered case)
  chroma     chromadb PersistentClient (HNSW, cosine), where={"user": u}
  sqlitevec  sqlite-vec vec0 table through apsw (brute force), user metadata column
  hnswlib    raw HNSW (M=16, ef=100), filter callable
  usearch    raw HNSW (connectivity 16), post-filter of an oversampled list
  oam        SQLiteMemoryStore (file): store.add / store.search, user_id +
             exact_user_match; also reports the seconds until its vector index
             serves searches after the load (from 120k rows the index is built in
             a background thread: searches are timed after it), the seconds its
             ``close`` takes, and reopen + first search of the file

Every peer's disk is the MiB of the files in its scratch directory after the searches,
with the store still open (a WAL file included), as the shared peer benchmark
measures it; ``disk ÷ sqlite-vec`` is the ratio the disk target uses.

Prints a markdown table with the ratios the targets use (search p50 / numpy,
/ chroma; filtered p50 / numpy; add rate / sqlite-vec; peak RSS / numpy; disk /
sqlite-vec) and writes
JSON with every raw figure.

    python bench/peers.py --n 10000 100000
    python bench/peers.py --n 100000 --rounds 3        # medians of 3 rounds
    python bench/peers.py --n 1000000 --peers numpy,oam
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

DIM, CENTROIDS, USERS, K = 384, 100, 50, 10
TAGS = ["work", "home", "health", "travel", "food", "family", "finance", "music"]
TAGS += ["sport", "reading", "code", "garden"]
PEERS = ["numpy", "chroma", "sqlitevec", "hnswlib", "usearch", "oam"]


def _unit(x: Any) -> Any:
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def _topk(scores: Any, k: int) -> Any:
    if k >= len(scores):
        return np.argsort(-scores, kind="stable")
    idx = np.argpartition(-scores, k)[:k]
    return idx[np.argsort(-scores[idx], kind="stable")]


def dataset(n: int, n_queries: int = 200, seed: int = 0) -> dict[str, Any]:
    """The workload described in the module docstring."""
    rng = np.random.default_rng(seed)
    syll = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    vocab = sorted({"".join(rng.choice(syll, rng.integers(1, 4))) for _ in range(600)})[:400]
    centres = _unit(rng.standard_normal((CENTROIDS, DIM), dtype=np.float32))
    vecs = centres[rng.integers(0, CENTROIDS, n)]
    vecs += rng.standard_normal((n, DIM), dtype=np.float32) * np.float32(0.05)
    vecs = _unit(vecs).astype(np.float32, copy=False)
    words = rng.integers(0, len(vocab), (n, 24))
    lengths = rng.integers(16, 25, n)
    texts = [" ".join(vocab[w] for w in words[i, : lengths[i]]) for i in range(n)]
    tag_idx = np.argsort(rng.random((n, len(TAGS))), axis=1)[:, :2]
    metas = [
        {"user": f"u{i % USERS}", "tags": [TAGS[tag_idx[i, 0]], TAGS[tag_idx[i, 1]]]}
        for i in range(n)
    ]
    ids = [f"rec-{i:07d}" for i in range(n)]
    src = rng.choice(n, n_queries, replace=False)
    qv = vecs[src] + rng.standard_normal((n_queries, DIM), dtype=np.float32) * np.float32(0.02)
    qv = _unit(qv).astype(np.float32, copy=False)
    gt, gt_user = [], []
    for i in range(n_queries):
        scores = vecs @ qv[i]
        gt.append([ids[j] for j in _topk(scores, K)])
        rows = np.arange(int(src[i]) % USERS, n, USERS)
        gt_user.append([ids[rows[j]] for j in _topk(scores[rows], K)])
    users = [metas[int(i)]["user"] for i in src]
    return dict(
        vecs=vecs,
        texts=texts,
        metas=metas,
        ids=ids,
        queries=qv,
        users=users,
        gt=gt,
        gt_user=gt_user,
    )


# -- peers: add(texts, vecs, metas, ids); search(q, k, user) -> ids -------------------


class NumpyPeer:
    def __init__(self, workdir: str, n: int) -> None:
        self.mat = np.empty((n, DIM), np.float32)
        self.n, self.ids, self.rows = 0, [], {}

    def add(self, texts, vecs, metas, ids):  # type: ignore[no-untyped-def]
        self.mat[self.n : self.n + len(ids)] = vecs
        for j, m in enumerate(metas):
            self.rows.setdefault(m["user"], []).append(self.n + j)
        self.n += len(ids)
        self.ids += ids
        self.user_rows = {u: np.asarray(r) for u, r in self.rows.items()}

    def search(self, q, k, user=None):  # type: ignore[no-untyped-def]
        if user is None:
            return [self.ids[i] for i in _topk(self.mat[: self.n] @ q, k)]
        rows = self.user_rows[user]
        return [self.ids[rows[i]] for i in _topk(self.mat[rows] @ q, k)]


class ChromaPeer:
    def __init__(self, workdir: str, n: int) -> None:
        import chromadb
        from chromadb.config import Settings

        client = chromadb.PersistentClient(
            path=os.path.join(workdir, "chroma"), settings=Settings(anonymized_telemetry=False)
        )
        self.col = client.create_collection(
            "bench", metadata={"hnsw:space": "cosine"}, embedding_function=None
        )
        self.batch = int(client.get_max_batch_size())

    def add(self, texts, vecs, metas, ids):  # type: ignore[no-untyped-def]
        for a in range(0, len(ids), self.batch):
            b = a + self.batch
            self.col.add(
                ids=ids[a:b],
                embeddings=vecs[a:b],
                documents=texts[a:b],
                metadatas=[{"user": m["user"], "tags": ",".join(m["tags"])} for m in metas[a:b]],
            )

    def search(self, q, k, user=None):  # type: ignore[no-untyped-def]
        where = {"user": user} if user else None
        return self.col.query(query_embeddings=[q], n_results=k, where=where)["ids"][0]


class SqliteVecPeer:
    def __init__(self, workdir: str, n: int) -> None:
        import apsw
        import sqlite_vec

        self.con = apsw.Connection(os.path.join(workdir, "vec.db"))
        self.con.enable_load_extension(True)
        self.con.load_extension(sqlite_vec.loadable_path())
        self.con.execute("pragma journal_mode=wal; pragma synchronous=normal")
        self.con.execute(
            f"create virtual table items using vec0(id text primary key, embedding "
            f"float[{DIM}] distance_metric=cosine, user text, +tags text, +body text)"
        )

    def add(self, texts, vecs, metas, ids):  # type: ignore[no-untyped-def]
        rows = (
            (i, v.tobytes(), m["user"], json.dumps(m["tags"]), t)
            for i, v, m, t in zip(ids, vecs, metas, texts, strict=True)
        )
        with self.con:
            self.con.executemany(
                "insert into items(id, embedding, user, tags, body) values (?,?,?,?,?)", rows
            )

    def search(self, q, k, user=None):  # type: ignore[no-untyped-def]
        sql = "select id from items where embedding match ? and k = ?"
        args: tuple[Any, ...] = (q.tobytes(), k)
        if user:
            sql, args = sql + " and user = ?", (*args, user)
        return [r[0] for r in self.con.execute(sql, args)]


class HnswlibPeer:
    def __init__(self, workdir: str, n: int) -> None:
        import hnswlib

        self.index = hnswlib.Index(space="cosine", dim=DIM)
        self.index.init_index(max_elements=n, ef_construction=100, M=16)
        self.index.set_ef(100)
        self.ids, self.user = [], np.empty(0, np.int32)

    def add(self, texts, vecs, metas, ids):  # type: ignore[no-untyped-def]
        self.index.add_items(vecs, np.arange(len(self.ids), len(self.ids) + len(ids)))
        self.ids += ids
        self.user = np.concatenate([self.user, [int(m["user"][1:]) for m in metas]])

    def search(self, q, k, user=None):  # type: ignore[no-untyped-def]
        flt = None
        if user:
            code, arr = int(user[1:]), self.user
            flt = lambda label: arr[label] == code  # noqa: E731
        labels, _ = self.index.knn_query(q, k=k, num_threads=1, filter=flt)
        return [self.ids[int(x)] for x in labels[0]]


class UsearchPeer:
    def __init__(self, workdir: str, n: int) -> None:
        from usearch.index import Index

        self.index = Index(
            ndim=DIM,
            metric="cos",
            dtype="f32",
            connectivity=16,
            expansion_add=128,
            expansion_search=64,
        )
        self.ids, self.user = [], np.empty(0, np.int32)

    def add(self, texts, vecs, metas, ids):  # type: ignore[no-untyped-def]
        keys = np.arange(len(self.ids), len(self.ids) + len(ids), dtype=np.uint64)
        self.index.add(keys, vecs)
        self.ids += ids
        self.user = np.concatenate([self.user, [int(m["user"][1:]) for m in metas]])

    def search(self, q, k, user=None):  # type: ignore[no-untyped-def]
        if not user:
            return [self.ids[int(x)] for x in self.index.search(q, k).keys]
        count = 20 * k
        while True:  # post-filter an oversampled list, doubling up to the whole index
            keys = np.asarray(self.index.search(q, min(count, len(self.ids))).keys, np.int64)
            keys = keys[self.user[keys] == int(user[1:])][:k]
            if len(keys) >= k or count >= len(self.ids):
                return [self.ids[int(x)] for x in keys]
            count *= 2


class OamPeer:
    def __init__(self, workdir: str, n: int) -> None:
        from oam_core import SQLiteMemoryStore

        self.path = os.path.join(workdir, "oam.db")
        self.store = SQLiteMemoryStore(self.path, vector_dim=DIM)

    def add(self, texts, vecs, metas, ids):  # type: ignore[no-untyped-def]
        self.store.add(
            list(texts),
            "memory",
            embeddings=vecs,
            record_ids=list(ids),
            user_ids=[m["user"] for m in metas],
            metadata=list(metas),
        )

    def search(self, q, k, user=None):  # type: ignore[no-untyped-def]
        kw: dict[str, Any] = dict(user_id=user, exact_user_match=True) if user else {}
        return [r.id for r, _ in self.store.search(query_vector=q, k=k, **kw)]

    def index_ready(self, q: Any) -> float:
        """Seconds from the end of the load until the vector index serves searches:
        the first search (mirror catch-up; from ``BACKGROUND_ROWS`` rows it starts
        the ANN build in a background thread, ranking exactly meanwhile) plus the
        wait for that build."""
        started = time.perf_counter()
        self.store.search(query_vector=q, k=K)
        self.store._impl.index.wait_for_build()
        return time.perf_counter() - started

    def reopen_first_search(self, q: Any) -> float:
        """Seconds to open the file in a new store object and answer one search."""
        from oam_core import SQLiteMemoryStore

        started = time.perf_counter()
        self.store.close()
        self.close_s = time.perf_counter() - started
        started = time.perf_counter()
        self.store = SQLiteMemoryStore(self.path, vector_dim=DIM)
        self.store.search(query_vector=q, k=K)
        return time.perf_counter() - started


CLASSES = {
    "numpy": NumpyPeer,
    "chroma": ChromaPeer,
    "sqlitevec": SqliteVecPeer,
    "hnswlib": HnswlibPeer,
    "usearch": UsearchPeer,
    "oam": OamPeer,
}


# -- one worker -----------------------------------------------------------------------


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _timed(peer: Any, ds: dict[str, Any], users: bool, warmup: int = 10) -> dict[str, float]:
    qs, us, gt = ds["queries"], ds["users"], ds["gt_user" if users else "gt"]
    for i in range(warmup):
        peer.search(qs[i], K, us[i] if users else None)
    lat, recall = [], []
    for i, q in enumerate(qs):
        started = time.perf_counter()
        got = peer.search(q, K, us[i] if users else None)
        lat.append(time.perf_counter() - started)
        recall.append(len(set(got[:K]) & set(gt[i])) / min(K, len(gt[i])))
    lat.sort()
    return {
        "p50_ms": 1e3 * lat[len(lat) // 2],
        "p95_ms": 1e3 * lat[int(len(lat) * 0.95)],
        "recall": float(np.mean(recall)),
    }


def worker(name: str, n: int, batch: int, warmup: int = 10) -> dict[str, Any]:
    ds = dataset(n)
    workdir = tempfile.mkdtemp(prefix=f"peers-{name}-")
    out: dict[str, Any] = {"peer": name, "n": n}
    try:
        try:
            peer = CLASSES[name](workdir, n)
        except ImportError as exc:
            return {**out, "skipped": f"not installed: {exc}"}
        gc.collect()
        with contextlib.suppress(OSError, AttributeError):  # return freed heap to the OS
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        base = _rss_mb()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        started = time.perf_counter()
        for a in range(0, n, batch):
            b = min(a + batch, n)
            peer.add(ds["texts"][a:b], ds["vecs"][a:b], ds["metas"][a:b], ds["ids"][a:b])
        out["add_per_s"] = n / (time.perf_counter() - started)
        if not warmup:  # the searches right after the load, index ready or not
            out["first"] = _timed(peer, ds, users=False, warmup=0)
        if hasattr(peer, "index_ready"):
            out["index_ready_s"] = peer.index_ready(ds["queries"][0])
        out["search"] = _timed(peer, ds, users=False)
        out["user"] = _timed(peer, ds, users=True)
        out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base
        out["disk_mb"] = _dir_mb(workdir)  # open, as the searches left it (WAL included)
        if hasattr(peer, "reopen_first_search"):
            out["reopen_first_search_s"] = peer.reopen_first_search(ds["queries"][0])
            out["close_s"] = peer.close_s
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return out


# -- parent -----------------------------------------------------------------------------


def run(name: str, n: int, batch: int, warmup: int = 10) -> dict[str, Any]:
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        name,
        "--n",
        str(n),
        "--batch",
        str(batch),
        "--warmup",
        str(warmup),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        return {"peer": name, "n": n, "error": proc.stderr.strip()[-400:]}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _dir_mb(path: str) -> float:
    """MiB of the files under ``path``."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(root, name))
    return total / 2**20


def _ratio(a: float | None, b: float | None) -> str:
    return "—" if not a or not b else f"{a / b:.2f}"


def table(results: dict[tuple[str, int], dict[str, Any]], ns: list[int], peers: list[str]) -> str:
    head = (
        "| N | peer | add rec/s | p50 ms | p95 ms | recall@10 | ÷ numpy | ÷ chroma "
        "| user p50 ms | user recall | user ÷ numpy | add ÷ sqlite-vec | peak RSS MB "
        "| RSS ÷ numpy | disk MiB | disk ÷ sqlite-vec | index ready s | close s "
        "| reopen + 1st search s "
        "| first p50 ms | first p95 ms | first p95 ÷ p50 | first recall |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for n in ns:
        get = lambda p, *path, n=n: _get(results.get((p, n)), path)  # noqa: E731
        for p in peers:
            r = results.get((p, n))
            if r is None:
                continue
            if "search" not in r:
                lines.append(f"| {n:,} | {p} | {r.get('skipped') or r.get('error')} |")
                continue
            lines.append(
                f"| {n:,} | {p} | {r['add_per_s']:,.0f} | {r['search']['p50_ms']:.3f} "
                f"| {r['search']['p95_ms']:.3f} | {r['search']['recall']:.3f} "
                f"| {_ratio(get(p, 'search', 'p50_ms'), get('numpy', 'search', 'p50_ms'))} "
                f"| {_ratio(get(p, 'search', 'p50_ms'), get('chroma', 'search', 'p50_ms'))} "
                f"| {r['user']['p50_ms']:.3f} | {r['user']['recall']:.3f} "
                f"| {_ratio(get(p, 'user', 'p50_ms'), get('numpy', 'user', 'p50_ms'))} "
                f"| {_ratio(get(p, 'add_per_s'), get('sqlitevec', 'add_per_s'))} "
                f"| {r['peak_rss_mb']:,.0f} "
                f"| {_ratio(get(p, 'peak_rss_mb'), get('numpy', 'peak_rss_mb'))} "
                f"| {_fmt(r.get('disk_mb'))} "
                f"| {_ratio(get(p, 'disk_mb'), get('sqlitevec', 'disk_mb'))} "
                f"| {_fmt(r.get('index_ready_s'))} | {_fmt(r.get('close_s'))} "
                f"| {_fmt(r.get('reopen_first_search_s'))} "
                f"| {_first(r, 'p50_ms')} | {_first(r, 'p95_ms')} "
                f"| {_ratio(get(p, 'first', 'p95_ms'), get(p, 'search', 'p50_ms'))} "
                f"| {_first(r, 'recall')} |"
            )
    return "\n".join(lines)


def _first(r: dict[str, Any], field: str) -> str:
    """A figure of the searches right after the load (``--warmup 0``), or a dash."""
    value = _get(r, ("first", field))
    return "—" if value is None else f"{value:.3f}"


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _get(d: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if "search" in r]
    if not ok:
        return runs[-1]
    out = json.loads(json.dumps(ok[0]))
    for path in [
        ("add_per_s",),
        ("peak_rss_mb",),
        ("index_ready_s",),
        ("reopen_first_search_s",),
        ("close_s",),
        ("disk_mb",),
        *[(m, f) for m in ("search", "user", "first") for f in ("p50_ms", "p95_ms", "recall")],
    ]:
        vals = [v for v in (_get(r, path) for r in ok) if v is not None]
        if vals:
            target = out
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = statistics.median(vals)
    out["rounds"] = len(ok)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument(
        "--warmup",
        type=int,
        default=10,
        help="warm-up queries before each timed pass (0: also time the 200 searches right "
        "after the load, before waiting for the vector index: the 'first' columns)",
    )
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", default="peers_results.json")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.n[0], args.batch, args.warmup)))
        return 0
    peers = [p for p in args.peers.split(",") if p]
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for rnd in range(args.rounds):
        order = peers if rnd % 2 == 0 else peers[::-1]
        for n in sorted(args.n):
            for p in order:
                print(f"[peers] round {rnd + 1} {p} n={n}", file=sys.stderr, flush=True)
                runs.setdefault((p, n), []).append(run(p, n, args.batch, args.warmup))
    results = {key: _median(rs) for key, rs in runs.items()}
    text = table(results, sorted(args.n), peers)
    print(text)
    with open(args.out, "w") as f:
        json.dump(
            {
                "machine": {
                    "python": platform.python_version(),
                    "cpus": os.cpu_count(),
                    "load_avg": os.getloadavg(),
                },
                "runs": {f"{p}@{n}": rs for (p, n), rs in runs.items()},
                "markdown": text,
            },
            f,
            indent=1,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
