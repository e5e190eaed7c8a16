"""Scale benchmark: bulk add and VECTOR search at 10k / 100k records, SQLite vs PostgreSQL.

Synthetic data: 384-dim unit vectors drawn around 200 random cluster centres (real
sentence embeddings are clustered too; uniform random vectors in 384 dimensions
would make every neighbour equally far), one memory record per vector, added through
the public ``store.add(..., embeddings=...)`` in calls of ``--batch`` records.
Queries are fresh draws from the same mixture, searched with
``store.search(query_vector=q, k=10)``.

Reported per back end and size: bulk add records/s; search p50/p95 in ms. For
PostgreSQL both the HNSW path and the exact path (forced by raising the store's
``exact_below`` threshold) are timed, and HNSW recall@10 is measured against the
exact top 10. SQLite ranks from its in-process vector index (docs/sqlite.md: exact
below 20,000 vector chunks, IVF with exact re-ranking above).

pgvector maintains the HNSW graph on every insert, which is slow (tens of rows per
second on a loaded 2-core machine); from ``--index-after`` records on (default
50,000) the PostgreSQL store is loaded without its HNSW index and the index is built
afterwards with ``CREATE INDEX``, and the build time is reported.

```
python bench/scale.py                         # 10k and 100k, temporary pgserver
python bench/scale.py --sizes 10000 --queries 100 --json
python bench/scale.py --db postgresql://user@host/db   # an existing server
```
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from oam_core import OracleMemoryStore, SQLiteMemoryStore

DIM = 384
K = 10


def vectors(n: int, rng: np.random.Generator, centres: npt.NDArray[np.float32]) -> Any:
    """``n`` unit vectors around random ``centres`` (noise comparable to the spread)."""
    picks = centres[rng.integers(0, len(centres), size=n)]
    v = picks + rng.normal(scale=0.6 / np.sqrt(DIM), size=(n, DIM)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def bulk_add(store: OracleMemoryStore, data: Any, batch: int) -> float:
    """Add every row of ``data`` as a memory; return records per second."""
    started = time.perf_counter()
    for i in range(0, len(data), batch):
        part = data[i : i + batch]
        store.add(
            [f"record {j}" for j in range(i, i + len(part))],
            "memory",
            record_ids=[f"r{j}" for j in range(i, i + len(part))],
            embeddings=list(part),
            user_ids="bench",
        )
    return len(data) / (time.perf_counter() - started)


def timed_search(store: OracleMemoryStore, queries: Any) -> tuple[list[list[str]], list[float]]:
    """Top-k ids and latency (ms) of each query."""
    ids, ms = [], []
    for q in queries:
        started = time.perf_counter()
        hits = store.search(query_vector=q, k=K)
        ms.append((time.perf_counter() - started) * 1000)
        ids.append([r.id for r, _ in hits])
    return ids, ms


def pct(values: list[float]) -> dict[str, float]:
    """p50 / p95 of ``values``, rounded."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 2), "p95": round(p95, 2)}


def recall(approx: list[list[str]], exact: list[list[str]]) -> float:
    """Mean fraction of the exact top k found in the approximate top k."""
    return float(
        np.mean([len(set(a) & set(e)) / max(1, len(e)) for a, e in zip(approx, exact, strict=True)])
    )


def pg_url(db: str | None) -> str:
    """The PostgreSQL URL: ``db``, or a temporary pgserver started here."""
    if db:
        return db
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        server = pgserver.get_server(  # type: ignore[attr-defined]
            tempfile.mkdtemp(prefix="oam-scale-"), cleanup_mode="delete"
        )
        # Room for a 100k x 384 HNSW index in shared buffers (default 128 MB); fsync
        # off as for any throwaway server. pg_ctl restart keeps the socket options.
        import psycopg
        from pgserver._commands import pg_ctl  # type: ignore[attr-defined]

        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET shared_buffers = '1GB'")
            conn.execute("ALTER SYSTEM SET fsync = off")
        pg_ctl(["-w", "restart"], pgdata=server.pgdata, user=server.system_user)
    _KEEP.append(server)
    return str(server.get_uri())


_KEEP: list[Any] = []


Result = tuple[dict[str, Any], list[list[str]]]
"""A report row and the exact top-k ids of every query."""


def run_sqlite(n: int, data: Any, queries: Any, batch: int, tmp: Path) -> Result:
    store = SQLiteMemoryStore(tmp / f"scale{n}.db", vector_dim=DIM)
    try:
        rate = bulk_add(store, data, batch)
        timed_search(store, queries[:5])  # loads the vector cache
        exact, ms = timed_search(store, queries)
    finally:
        store.close()
    return {"backend": "sqlite", "n": n, "add_per_s": round(rate), "exact_ms": pct(ms)}, exact


def run_postgres(
    n: int, data: Any, queries: Any, batch: int, url: str, index_after: bool
) -> Result:
    from oam_core.store.postgres import PostgresMemoryStore
    from oam_core.store.postgres.schema import hnsw_index

    store = PostgresMemoryStore(
        url, vector_dim=DIM, memory_store_id=f"scale{n}", schema_policy="RECREATE"
    )
    p = store._impl.p
    build_s = None
    try:
        if index_after:  # bulk load without the HNSW index, then build it in one go
            with store._impl.reading() as conn:
                conn.execute(f"DROP INDEX {p}chunks_hnsw")
        rate = bulk_add(store, data, batch)
        with store._impl.reading() as conn:
            if index_after:
                started = time.perf_counter()
                conn.execute("SET maintenance_work_mem = '1GB'")
                conn.execute(hnsw_index(p))
                build_s = round(time.perf_counter() - started, 1)
            conn.execute(f"ANALYZE {p}chunks")
        timed_search(store, queries[:5])  # warms the index pages
        approx, hnsw_ms = timed_search(store, queries)
        store._impl.exact_below = 10**12
        exact, exact_ms = timed_search(store, queries)
    finally:
        store.close()
    return {
        "backend": "postgres",
        "n": n,
        "add_per_s": round(rate),
        "hnsw_build_s": build_s,
        "hnsw_ms": pct(hnsw_ms),
        "exact_ms": pct(exact_ms),
        "hnsw_recall@10": round(recall(approx, exact), 4),
    }, exact


def table(rows: list[dict[str, Any]]) -> str:
    """A markdown table of the results."""
    lines = [
        "| back end | records | bulk add rec/s | search p50 ms | search p95 ms "
        "| exact p50 ms | exact p95 ms | HNSW recall@10 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["backend"] == "sqlite":
            search = r["exact_ms"]
            lines.append(
                f"| SQLite (exact) | {r['n']:,} | {r['add_per_s']:,} | {search['p50']} | "
                f"{search['p95']} | {search['p50']} | {search['p95']} | exact |"
            )
        else:
            h, e = r["hnsw_ms"], r["exact_ms"]
            add = f"{r['add_per_s']:,}"
            if r.get("hnsw_build_s") is not None:
                add += f" (no index) + {r['hnsw_build_s']} s index build"
            lines.append(
                f"| PostgreSQL (HNSW) | {r['n']:,} | {add} | {h['p50']} | "
                f"{h['p95']} | {e['p50']} | {e['p95']} | {r['hnsw_recall@10']} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run every size on both back ends, print a table or JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated record counts")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch", type=int, default=1000, help="records per add call")
    parser.add_argument("--db", help="postgresql:// URL (default: a temporary pgserver)")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument(
        "--index-after",
        type=int,
        default=50000,
        help="from this size on, PostgreSQL loads without the HNSW index and builds it "
        "afterwards (incremental HNSW inserts are slow: see bench/README.md)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    backends = args.backends.split(",")
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(200, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    queries = vectors(args.queries, rng, centres)
    url = pg_url(args.db) if "postgres" in backends else ""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            data = vectors(n, np.random.default_rng(n), centres)
            exact_sqlite = None
            if "sqlite" in backends:
                row, exact_sqlite = run_sqlite(n, data, queries, args.batch, Path(tmp))
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
            if "postgres" in backends:
                row, exact_pg = run_postgres(
                    n, data, queries, args.batch, url, n >= args.index_after
                )
                if exact_sqlite is not None:
                    row["exact_agrees_with_sqlite"] = round(recall(exact_pg, exact_sqlite), 4)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    print(json.dumps(rows) if args.json else table(rows))
    for server in _KEEP:  # restarted above, so pgserver's own exit hook misses it
        from pgserver._commands import pg_ctl  # type: ignore[attr-defined]

        pg_ctl(["-w", "stop"], pgdata=server.pgdata, user=server.system_user)
    return 0


if __name__ == "__main__":
    sys.exit(main())
