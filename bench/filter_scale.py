"""Metadata-filtered VECTOR search at scale, against a pure-Python/numpy baseline.

Builds one SQLite file of ``--records`` memory records (default 100,000) through the
public ``store.add(..., embeddings=...)``: unit float32 vectors of 384 dimensions near
one of 100 random centres (gaussian noise, sigma 0.05 per dimension: the vector model
of ``bench/peers.py``), ``user_ids`` ``u{i % 50}``, and metadata shaped like the peer
benchmark's ``{"user": ..., "tags": [...]}`` plus scalar fields::

    {"user": "u{i % 50}", "tags": [two of 12 tags], "lang": "en" | "fr" (i % 2),
     "group": "g{i % 20}", "day": i % 1000, "score": uniform [0, 1)}

Queries are perturbed copies (sigma 0.02) of random records. Each query runs every
filter below, with values drawn per query (so the filters differ between queries):

==============  ===========================================================  ==========
name            filter                                                       keeps
==============  ===========================================================  ==========
``eq_50``       ``{"lang": "en"}``                                           50 %
``eq_5``        ``{"group": g}``                                             5 %
``eq_0.1``      ``{"day": d}``                                               0.1 %
``in_15``       ``{"group": {"$in": [g1, g2, g3]}}``                         15 %
``range_5``     ``{"day": {"$gte": a, "$lt": a + 50}}``                      5 %
``tags_17``     ``{"tags": {"$array_contains": t}}``                         17 %
``and_scope``   ``user_id=u, exact_user_match=True`` and                     0.17 %
                ``{"$and": [{"score": {"$lt": 0.5}},
                {"tags": {"$array_contains": t}}]}``
==============  ===========================================================  ==========

Modes, timed per query and interleaved per query:

- ``numpy``: the baseline: a pre-built Python list of the metadata dicts is filtered
  with a hand-written predicate (the fastest pure-Python form), then the kept rows of
  a float32 matrix are scanned exactly (``argpartition``);
- ``oam_cold``: ``store.search(query_vector=v, k=10, metadata_filter=f)`` on a VECTOR
  store over the file, right after another connection committed a write to the file
  (a row of ``oam_meta``; outside the timing): whatever the store derived from the
  previous state must be re-checked, so this is the cost of a filter the store has not
  seen in this state (a store being written to, or a new filter value);
- ``oam_warm``: the same search again, nothing written in between: the filter's
  candidates are still valid (``sqlite/candidates.py``);
- ``chroma`` (``--chroma``; ``pip install 'oam[bench]'``): a chromadb
  ``PersistentClient`` collection of the same records (HNSW, cosine) queried with the
  same filter as a ``where`` clause (``$contains`` for array membership). Building it
  takes about a minute at 100k.

Every oam result is compared with the baseline's exact top 10: ``recall`` is the mean
share of the baseline's ids that oam returned (1.0 where oam ranks exactly). The
report gives p50 and p95 per filter and mode (ms), the medians over ``--repeat``
runs, and the load average. Timings on a shared machine are noisy: compare modes
measured in the same run.

```
python bench/filter_scale.py                             # 100k records, 100 queries, 3 repeats
python bench/filter_scale.py --records 10000 --queries 20 --repeat 1 --json
python bench/filter_scale.py --db /tmp/fs.db --chroma    # keep (and reuse) the built file
python bench/filter_scale.py --db /tmp/fs.db --exact     # as a store without an ANN index
```

``--exact`` makes oam rank every search exactly, as a store does whose vectors have
no cluster structure (no usable index) or while its index builds: the candidate rows'
product is then the whole cost of a warm search.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

try:
    import oam_core  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oam_core import SQLiteMemoryStore

DIM, CENTRES, USERS, GROUPS, DAYS, K = 384, 100, 50, 20, 1000, 10
NOISE, QUERY_NOISE = 0.05, 0.02
TAGS = ["work", "home", "health", "travel", "food", "family", "finance", "music"]
TAGS += ["sport", "reading", "code", "garden"]

Meta = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One filtered query: the oam filter (and scope user), the baseline predicate,
    and the Chroma ``where`` clause."""

    name: str
    flt: Meta
    user: str | None
    pred: Callable[[Meta], bool]
    where: Meta


def _unit(x: Any) -> Any:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def dataset(n: int, n_queries: int, seed: int) -> dict[str, Any]:
    """Vectors, ids, metadata and query vectors (deterministic for a seed)."""
    rng = np.random.default_rng(seed)
    centres = _unit(rng.standard_normal((CENTRES, DIM), dtype=np.float32))
    vecs = centres[rng.integers(0, CENTRES, n)]
    vecs = _unit(vecs + rng.standard_normal((n, DIM), dtype=np.float32) * np.float32(NOISE))
    tag_idx = np.argsort(rng.random((n, len(TAGS))), axis=1)[:, :2]
    scores = rng.random(n)
    metas = [
        {
            "user": f"u{i % USERS}",
            "tags": [TAGS[tag_idx[i, 0]], TAGS[tag_idx[i, 1]]],
            "lang": "en" if i % 2 == 0 else "fr",
            "group": f"g{i % GROUPS}",
            "day": i % DAYS,
            "score": float(scores[i]),
        }
        for i in range(n)
    ]
    src = rng.choice(n, n_queries, replace=False)
    queries = vecs[src] + rng.standard_normal((n_queries, DIM), dtype=np.float32) * np.float32(
        QUERY_NOISE
    )
    return {
        "vecs": vecs,
        "metas": metas,
        "ids": [f"r{i}" for i in range(n)],
        "queries": _unit(queries),
        "cases": [cases(int(j), np.random.default_rng(seed * 1000 + q)) for q, j in enumerate(src)],
    }


def cases(src: int, rng: np.random.Generator) -> list[Case]:
    """The filters of one query (values drawn per query; the scope is the user of
    the record the query was copied from)."""
    g = [f"g{int(x)}" for x in rng.choice(GROUPS, 3, replace=False)]
    d = int(rng.integers(0, DAYS))
    a = int(rng.integers(0, DAYS - 50))
    t = TAGS[int(rng.integers(0, len(TAGS)))]
    u = f"u{src % USERS}"
    return [
        Case("eq_50", {"lang": "en"}, None, lambda m: m["lang"] == "en", {"lang": "en"}),
        Case("eq_5", {"group": g[0]}, None, lambda m: m["group"] == g[0], {"group": g[0]}),
        Case("eq_0.1", {"day": d}, None, lambda m: m["day"] == d, {"day": d}),
        Case(
            "in_15",
            {"group": {"$in": g}},
            None,
            lambda m: m["group"] in g,
            {"group": {"$in": g}},
        ),
        Case(
            "range_5",
            {"day": {"$gte": a, "$lt": a + 50}},
            None,
            lambda m: a <= m["day"] < a + 50,
            {"$and": [{"day": {"$gte": a}}, {"day": {"$lt": a + 50}}]},
        ),
        Case(
            "tags_17",
            {"tags": {"$array_contains": t}},
            None,
            lambda m: t in m["tags"],
            {"tags": {"$contains": t}},
        ),
        Case(
            "and_scope",
            {"$and": [{"score": {"$lt": 0.5}}, {"tags": {"$array_contains": t}}]},
            u,
            lambda m: m["user"] == u and m["score"] < 0.5 and t in m["tags"],
            {"$and": [{"user": u}, {"score": {"$lt": 0.5}}, {"tags": {"$contains": t}}]},
        ),
    ]


def build(path: Path, ds: dict[str, Any], batch: int = 5000) -> float:
    """Fill a new store file; return the seconds it took."""
    store = SQLiteMemoryStore(path, vector_dim=DIM, search_strategy="VECTOR")
    started = time.perf_counter()
    n = len(ds["ids"])
    for i in range(0, n, batch):
        j = min(n, i + batch)
        store.add(
            [f"record {k}" for k in range(i, j)],
            "memory",
            record_ids=ds["ids"][i:j],
            user_ids=[m["user"] for m in ds["metas"][i:j]],
            metadata=ds["metas"][i:j],
            embeddings=ds["vecs"][i:j],
        )
    store.close()
    return time.perf_counter() - started


def baseline(ds: dict[str, Any], q: Any, case: Case) -> list[str]:
    """Filter the list of dicts in Python, then scan the kept rows exactly (gathering
    them when they are few, else multiplying the whole matrix)."""
    rows = np.fromiter((i for i, m in enumerate(ds["metas"]) if case.pred(m)), dtype=np.int64)
    if not len(rows):
        return []
    vecs = ds["vecs"]
    scores = vecs[rows] @ q if 4 * len(rows) < len(vecs) else (vecs @ q)[rows]
    top = np.argpartition(-scores, K - 1)[:K] if len(rows) > K else np.arange(len(rows))
    top = top[np.argsort(-scores[top], kind="stable")]
    return [ds["ids"][int(rows[i])] for i in top]


class Chroma:
    """A chromadb collection of the same records."""

    def __init__(self, workdir: str, ds: dict[str, Any]) -> None:
        import chromadb
        from chromadb.config import Settings

        self.client = chromadb.PersistentClient(
            path=os.path.join(workdir, "chroma"), settings=Settings(anonymized_telemetry=False)
        )
        self.col = self.client.create_collection(
            "filter_scale", metadata={"hnsw:space": "cosine"}, embedding_function=None
        )
        step = int(self.client.get_max_batch_size())
        n = len(ds["ids"])
        for a in range(0, n, step):
            b = min(n, a + step)
            self.col.add(ids=ds["ids"][a:b], embeddings=ds["vecs"][a:b], metadatas=ds["metas"][a:b])

    def search(self, q: Any, case: Case) -> list[str]:
        r = self.col.query(query_embeddings=q[None, :], n_results=K, where=case.where)
        return list(r["ids"][0])


def _timed(fn: Callable[[], list[str]]) -> tuple[float, list[str]]:
    started = time.perf_counter()
    out = fn()
    return (time.perf_counter() - started) * 1000, out


def run(
    path: Path, ds: dict[str, Any], repeat: int, chroma: Chroma | None, exact: bool = False
) -> dict[str, Any]:
    store = SQLiteMemoryStore(path, search_strategy="VECTOR")
    if exact:  # the ranking of a store without a usable ANN index
        store._impl.index.exact_max = 1 << 62
    writer = sqlite3.connect(path, isolation_level=None)
    tick = [0]

    def write() -> None:  # a committed write by another connection
        tick[0] += 1
        writer.execute(
            "INSERT OR REPLACE INTO oam_meta (key, value) VALUES ('filter_scale_tick', ?)",
            (str(tick[0]),),
        )

    def oam(q: Any, case: Case) -> list[str]:
        kwargs: dict[str, Any] = {"metadata_filter": case.flt}
        if case.user is not None:
            kwargs.update(user_id=case.user, exact_user_match=True)
        return [r.id for r, _ in store.search(query_vector=q, k=K, **kwargs)]

    modes: dict[str, Callable[[Any, Case], list[str]]] = {
        "numpy": lambda q, c: baseline(ds, q, c),
        "oam_cold": oam,
        "oam_warm": oam,
    }
    if chroma is not None:
        modes["chroma"] = chroma.search
    names = [c.name for c in ds["cases"][0]]
    for q, cs in list(zip(ds["queries"], ds["cases"], strict=True))[:3]:  # warm up
        for c in cs:
            for fn in modes.values():
                fn(q, c)
    runs = []
    for _ in range(repeat):
        ms: dict[tuple[str, str], list[float]] = {(n, m): [] for n in names for m in modes}
        recall: dict[tuple[str, str], list[float]] = {
            (n, m): [] for n in names for m in modes if m != "numpy"
        }
        for q, cs in zip(ds["queries"], ds["cases"], strict=True):
            for c in cs:
                want: list[str] = []
                for mode, fn in modes.items():
                    if mode == "oam_cold":
                        write()
                    t, got = _timed(lambda fn=fn, q=q, c=c: fn(q, c))  # type: ignore[misc]
                    ms[(c.name, mode)].append(t)
                    if mode == "numpy":
                        want = got
                    else:
                        recall[(c.name, mode)].append(
                            len(set(got) & set(want)) / len(want) if want else 1.0
                        )
        one: dict[str, Any] = {}
        for (name, mode), v in ms.items():
            one[f"{name}/{mode}/p50_ms"] = statistics.median(v)
            one[f"{name}/{mode}/p95_ms"] = float(np.percentile(v, 95))
        for (name, mode), r in recall.items():
            one[f"{name}/{mode}/recall"] = statistics.fmean(r)
        runs.append(one)
    store.close()
    writer.execute("DELETE FROM oam_meta WHERE key = 'filter_scale_tick'")
    writer.close()
    medians = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    return {"runs": runs, "median": medians, "filters": names, "modes": list(modes)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--db", type=Path, default=None, help="store file to build or reuse")
    ap.add_argument("--chroma", action="store_true", help="also time chromadb")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument(
        "--exact", action="store_true", help="oam ranks every search exactly (no ANN index)"
    )
    args = ap.parse_args(argv)
    ds = dataset(args.records, args.queries, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "filter_scale.db"
        build_s = build(path, ds) if not path.exists() else None
        chroma = Chroma(tmp, ds) if args.chroma else None
        load = os.getloadavg()
        result = run(path, ds, args.repeat, chroma, args.exact)
        result["loadavg"] = [load, os.getloadavg()]
    result["config"] = {
        "records": args.records,
        "queries": args.queries,
        "repeat": args.repeat,
        "exact": args.exact,
        "k": K,
        "build_s": build_s,
        "sqlite": sqlite3.sqlite_version,
    }
    if args.json:
        print(json.dumps(result))
        return 0
    med = result["median"]
    print(
        f"{args.records} records, {args.queries} queries per filter, k={K}, "
        f"{args.repeat} repeats{', exact ranking' if args.exact else ''}; "
        "load average before/after: "
        + " / ".join(" ".join(f"{x:.2f}" for x in la) for la in result["loadavg"])
    )
    if build_s is not None:
        print(f"build: {build_s:.1f} s ({args.records / build_s:.0f} records/s)")
    modes = result["modes"]
    print("| filter | " + " | ".join(f"{m} p50 / p95 ms" for m in modes) + " | recall |")
    print("|---|" + "---|" * len(modes) + "---|")
    for name in result["filters"]:
        cells = [
            f"{med[f'{name}/{m}/p50_ms']:.2f} / {med[f'{name}/{m}/p95_ms']:.2f}" for m in modes
        ]
        rec = " ".join(f"{m} {med[f'{name}/{m}/recall']:.3f}" for m in modes if m != "numpy")
        print(f"| {name} | " + " | ".join(cells) + f" | {rec} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
