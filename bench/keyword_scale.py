"""KEYWORD and HYBRID search at scale, against a bare FTS5 bm25 query over the same rows.

Builds one SQLite file of ``--records`` memory records (default 100,000) through the
public ``store.add(..., embeddings=...)``: 50 users, each record ``"<speaker>: <words>"``
with 8-30 words drawn from a Zipf-distributed vocabulary of pseudo-English words (a
few words are in most rows, as function words are in real chats), and a unit vector
of 384 dimensions: by default near one of 100 random centres (gaussian noise, sigma
0.05 per dimension: the vector model of ``bench/peers.py``, clustered as real
embeddings are), with ``--vectors random`` uniform on the sphere (no structure: the
store's IVF calibration then finds no probe count reaching its recall target and
ranks the vector half exactly). Queries are ``"When did <speaker> <w1> <w2> <w3>?"`` with
words from the same distribution without its 100 most common words (the ones
``query_terms`` would drop as function words in English text).

Per query, in one run and on one file, it times:

- ``bare``: ``SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH <terms OR'ed>
  ORDER BY rank LIMIT 10`` on a plain ``sqlite3`` connection, where the terms are the
  ones oam searches (``store/text.query_terms``: function words removed);
- ``bare_bm25``: the same query ordered by ``bm25(chunks_fts)`` instead of ``rank``
  (the same scores; FTS5 sorts ``rank`` in an extra pass, so this form is ~30% faster
  and is the one oam's keyword ranking uses): the stricter baseline, reported as the
  ``*_bm25_ratio_p50`` figures;
- ``keyword``: ``store.search(q, 10)`` of a KEYWORD store (everything: query parsing,
  term statistics, ranking, scope and expiry checks, loading the records);
- ``hybrid``: ``store.search(q, 10)`` of a HYBRID store (keyword ranking at depth 50,
  exact vector ranking, RRF). Its query embedding is a ``HashingEmbedder`` (a few
  microseconds), so the figure is the search itself. The vector half is the
  in-process vector index (``store/sqlite/vector/``, docs/sqlite.md);
- ``vector``: ``store.search(query_vector=v, k=10)`` of the HYBRID store, the vector
  half alone, for reading the hybrid figure;
- ``bare_user`` / ``keyword_user`` / ``hybrid_user``: the same, scoped to one user of
  50 (the bare query joins the chunk rows on ``user_id``; the stores are searched with
  ``user_id=u, exact_user_match=True``);
- ``bare_user_bm25``: ``bare_user`` ordered by ``bm25(chunks_fts)``. Scoped, this
  form is the slower one (FTS5 sorts ``rank`` itself and the join then stops after
  ``k`` rows of the user; ordered by ``bm25()`` every matching row is joined before
  the sort), so ``bare_user`` stays the stricter scoped baseline; the
  ``*_user_bm25_ratio_p50`` figures are against this form.

Each mode has its own connection (a store of its own for each store mode), so no
mode finds the pages another mode just read for the same query in its SQLite page
cache. Every mode runs every query once per repeat, modes interleaved per query; the report
gives, per repeat, each mode's p50 (ms) and the p50 of the per-query ratio to
``bare``, then the medians over repeats. Timings on a shared machine are noisy: read
the ratios, which are measured side by side.

```
python bench/keyword_scale.py                       # 100k records, 200 queries, 3 repeats
python bench/keyword_scale.py --records 10000 --queries 50 --repeat 1 --json
python bench/keyword_scale.py --db /tmp/ks.db       # keep (and reuse) the built file
python bench/keyword_scale.py --clock cpu           # CPU time of the searching thread
```
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

try:
    import oam_core  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oam_core import SQLiteMemoryStore
from oam_core.embedders import HashingEmbedder
from oam_core.store.text import query_terms

DIM = 384
K = 10
USERS = 50
VOCAB = 20_000
QUERY_SKIP = 100
"""Query words skip the 100 most common words, as ``query_terms`` drops function words."""
SYLLABLES = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]


def vocabulary(rng: random.Random) -> list[str]:
    """``VOCAB`` distinct pseudo-words of 2-4 syllables (porter leaves most alone)."""
    words: dict[str, None] = {}
    while len(words) < VOCAB:
        words["".join(rng.choices(SYLLABLES, k=rng.randint(2, 4)))] = None
    return list(words)


def speakers(user: int) -> tuple[str, str]:
    return f"Spk{user}a", f"Spk{user}b"


class Corpus:
    """Deterministic records and queries (seeded)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng)
        self.cum = list(np.cumsum([1.0 / (r + 1) for r in range(VOCAB)]))

    def draw(self, n: int, skip: int = 0) -> list[str]:
        """``n`` words by Zipf frequency, among the words after the ``skip`` most common."""
        lo = self.cum[skip - 1] if skip else 0.0
        picks = [lo + self.rng.random() * (self.cum[-1] - lo) for _ in range(n)]
        return [self.words[min(bisect.bisect_left(self.cum, x), VOCAB - 1)] for x in picks]

    def record(self, i: int) -> tuple[str, str]:
        user = i % USERS
        name = speakers(user)[self.rng.randint(0, 1)]
        return f"{name}: {' '.join(self.draw(self.rng.randint(8, 30)))}", f"u{user}"

    def query(self) -> tuple[str, str]:
        user = self.rng.randrange(USERS)
        name = speakers(user)[self.rng.randint(0, 1)]
        words = " ".join(self.draw(3, skip=QUERY_SKIP))
        return f"When did {name} {words}?", f"u{user}"


CENTRES = 100
NOISE = 0.05


def vectors(rng: np.random.Generator, n: int, kind: str, centres: Any) -> Any:
    """``n`` unit float32 vectors: near ``centres`` (``clustered``) or uniform."""
    if kind == "random":
        vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    else:
        vecs = centres[rng.integers(0, len(centres), n)]
        vecs = vecs + rng.normal(size=(n, DIM)).astype(np.float32) * np.float32(NOISE)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs.astype(np.float32, copy=False)


def build(path: Path, n: int, corpus: Corpus, kind: str, batch: int = 5000) -> float:
    """Fill a new store file with ``n`` records; return the seconds it took."""
    store = SQLiteMemoryStore(path, vector_dim=DIM, search_strategy="KEYWORD")
    vec_rng = np.random.default_rng(1)
    centres = vectors(vec_rng, CENTRES, "random", None)
    started = time.perf_counter()
    for i in range(0, n, batch):
        rows = [corpus.record(j) for j in range(i, min(n, i + batch))]
        vecs = vectors(vec_rng, len(rows), kind, centres)
        store.add(
            [text for text, _ in rows],
            "memory",
            record_ids=[f"r{j}" for j in range(i, i + len(rows))],
            user_ids=[user for _, user in rows],
            embeddings=vecs,
        )
    store.close()
    return time.perf_counter() - started


def fts_query(query: str) -> str:
    return " OR ".join(f'"{t}"' for t in query_terms(query)) or '""'


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}
"""``--clock``: wall time, or the CPU time of the searching thread (SQLite runs in it),
which leaves out the time slices other processes of a loaded machine take."""


def timed(
    fn: Callable[[str, str], Any], query: str, user: str, clock: Callable[[], float]
) -> float:
    started = clock()
    fn(query, user)
    return (clock() - started) * 1000


def run(
    path: Path, queries: list[tuple[str, str]], repeat: int, clock: str = "wall"
) -> dict[str, Any]:
    # One connection (store) per mode: a mode never finds in its SQLite page cache
    # the pages another mode just read for the same query (bare_bm25 used to run
    # on bare's connection, right after it).
    plain = {
        m: sqlite3.connect(path)  # plain: reading the index needs no oam function
        for m in ("bare", "bare_bm25", "bare_user", "bare_user_bm25")
    }
    kw = SQLiteMemoryStore(path, search_strategy="KEYWORD")
    kw_user = SQLiteMemoryStore(path, search_strategy="KEYWORD")
    embedder = HashingEmbedder(DIM)
    hy = SQLiteMemoryStore(path, search_strategy="HYBRID", embedder=embedder)
    hy_user = SQLiteMemoryStore(path, search_strategy="HYBRID", embedder=embedder)
    vectors = dict(
        zip((q for q, _ in queries), embedder.embed([q for q, _ in queries]), strict=True)
    )
    bare_sql = "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?"
    bm25_sql = (
        "SELECT rowid, bm25(chunks_fts) AS score FROM chunks_fts WHERE chunks_fts MATCH ? "
        "ORDER BY score LIMIT ?"
    )
    bare_user_sql = (
        "SELECT f.rowid, f.rank FROM chunks_fts f JOIN chunks c ON c.pk = f.rowid "
        "WHERE chunks_fts MATCH ? AND c.user_id = ? ORDER BY f.rank LIMIT ?"
    )
    bare_user_bm25_sql = (
        "SELECT f.rowid, bm25(chunks_fts) AS score FROM chunks_fts f JOIN chunks c "
        "ON c.pk = f.rowid WHERE chunks_fts MATCH ? AND c.user_id = ? ORDER BY score LIMIT ?"
    )
    modes: dict[str, Callable[[str, str], Any]] = {
        "bare": lambda q, u: plain["bare"].execute(bare_sql, (fts_query(q), K)).fetchall(),
        "bare_bm25": lambda q, u: (
            plain["bare_bm25"].execute(bm25_sql, (fts_query(q), K)).fetchall()
        ),
        "keyword": lambda q, u: kw.search(q, K),
        "hybrid": lambda q, u: hy.search(q, K),
        "vector": lambda q, u: hy.search(query_vector=vectors[q], k=K),
        "bare_user": lambda q, u: (
            plain["bare_user"].execute(bare_user_sql, (fts_query(q), u, K)).fetchall()
        ),
        "bare_user_bm25": lambda q, u: (
            plain["bare_user_bm25"].execute(bare_user_bm25_sql, (fts_query(q), u, K)).fetchall()
        ),
        "keyword_user": lambda q, u: kw_user.search(q, K, user_id=u, exact_user_match=True),
        "hybrid_user": lambda q, u: hy_user.search(q, K, user_id=u, exact_user_match=True),
    }
    baseline = {
        "keyword": "bare",
        "hybrid": "bare",
        "vector": "bare",
        "bare_bm25": "bare",
        "bare_user_bm25": "bare_user",
        "keyword_user": "bare_user",
        "hybrid_user": "bare_user",
    }
    strict = {"keyword": "bare_bm25", "hybrid": "bare_bm25"}
    strict_user = {"keyword_user": "bare_user_bm25", "hybrid_user": "bare_user_bm25"}
    for q, u in queries[:5]:  # warm the page cache and the vector index (built here)
        for fn in modes.values():
            fn(q, u)
    ann = hy._impl.index.ann  # what ranked the vector half: IVF probes, or exact
    index_state = (
        {"lists": int(ann.index.nlist), "nprobe": ann.nprobe, "oversample": ann.oversample}
        if ann is not None and ann.nprobe
        else "exact"
    )
    runs = []
    for _ in range(repeat):
        ms: dict[str, list[float]] = {m: [] for m in modes}
        for q, u in queries:
            for mode, fn in modes.items():
                ms[mode].append(timed(fn, q, u, CLOCKS[clock]))
        one: dict[str, Any] = {f"{m}_p50_ms": statistics.median(v) for m, v in ms.items()}
        for mode, base in baseline.items():
            ratios = [a / b for a, b in zip(ms[mode], ms[base], strict=True)]
            one[f"{mode}_ratio_p50"] = statistics.median(ratios)
            one[f"{mode}_ratio_total"] = sum(ms[mode]) / sum(ms[base])
        for mode, base in (*strict.items(), *strict_user.items()):
            ratios = [a / b for a, b in zip(ms[mode], ms[base], strict=True)]
            one[f"{mode}_bm25_ratio_p50"] = statistics.median(ratios)
        runs.append(one)
    for store in (kw, kw_user, hy, hy_user):
        store.close()
    for conn in plain.values():
        conn.close()
    medians = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    return {"runs": runs, "median": medians, "vector_index": index_state}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--db", type=Path, default=None, help="store file to build or reuse")
    ap.add_argument(
        "--vectors", choices=("clustered", "random"), default="clustered", help="record vectors"
    )
    ap.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall time, or the searching thread's CPU time (for a loaded machine)",
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    corpus = Corpus(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "keyword_scale.db"
        build_s = None
        if not path.exists():
            build_s = build(path, args.records, corpus, args.vectors)
        else:
            for i in range(args.records):  # the same random stream as a fresh build
                corpus.record(i)
        queries = [corpus.query() for _ in range(args.queries)]
        result = run(path, queries, args.repeat, args.clock)
    result["config"] = {
        "records": args.records,
        "queries": args.queries,
        "repeat": args.repeat,
        "k": K,
        "build_s": build_s,
        "vectors": args.vectors,
        "clock": args.clock,
        "sqlite": sqlite3.sqlite_version,
    }
    if args.json:
        print(json.dumps(result))
        return 0
    med = result["median"]
    modes_order = (
        *("bare", "bare_bm25", "keyword", "hybrid", "vector"),
        *("bare_user", "bare_user_bm25", "keyword_user", "hybrid_user"),
    )
    print(
        f"{args.records} records ({args.vectors} vectors), {args.queries} queries, k={K}, "
        f"{args.repeat} repeats, {args.clock} clock; vector index: {result['vector_index']}"
    )
    if build_s is not None:
        print(f"build: {build_s:.1f} s ({args.records / build_s:.0f} records/s)")
    print("| mode | p50 ms | ratio to bare (p50 of per-query ratios) | ratio of total time |")
    print("|---|---|---|---|")
    for mode in modes_order:
        ratio = med.get(f"{mode}_ratio_p50")
        total = med.get(f"{mode}_ratio_total")
        r = "" if ratio is None else f"{ratio:.2f}"
        t = "" if total is None else f"{total:.2f}"
        print(f"| {mode} | {med[f'{mode}_p50_ms']:.2f} | {r} | {t} |")
    print(
        "ratio to bare_bm25 (p50 of per-query ratios): "
        + ", ".join(f"{m} {med[f'{m}_bm25_ratio_p50']:.2f}" for m in ("keyword", "hybrid"))
        + "; to bare_user_bm25: "
        + ", ".join(
            f"{m} {med[f'{m}_bm25_ratio_p50']:.2f}" for m in ("keyword_user", "hybrid_user")
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
