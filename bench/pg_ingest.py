"""PostgreSQL ingest: the store's add rate with the HNSW index in place, against
pgvector's own insert rate measured in the same run, as the table grows.

For each size S (default 10k and 100k) two tables are brought to S rows by the bulk
path (rows loaded without the HNSW index, ``CREATE INDEX`` afterwards; both timed):

* the store: ``PostgresMemoryStore`` with a fresh ``memory_store_id``, loaded with
  ``store.add`` after dropping ``<id>_chunks_hnsw`` (docs/postgres.md, "Bulk
  import"), the index recreated by reopening with ``CREATE_IF_NECESSARY``;
* the bare table: ``CREATE TABLE t (embedding vector(384))`` with the same
  ``hnsw (embedding vector_cosine_ops)`` index (pgvector defaults m=16,
  ef_construction=64).

Then ``--extra`` more rows go into each with the index present (store: ``store.add``
in calls of ``--batch`` records; bare: ``executemany`` of the same batches, one
transaction each), alternating store and bare batch by batch so that machine load
hits both alike. The ratio store / bare is the target figure (>= 0.8).

    python bench/pg_ingest.py                        # temporary pgserver
    python bench/pg_ingest.py --sizes 10000 --extra 500 --db postgresql://...
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np
import psycopg
from scale import pg_url  # type: ignore[import-not-found]

from oam_core.store.postgres import PostgresMemoryStore

DIM = 384


def _vectors(n: int, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((100, DIM)).astype(np.float32)
    v = centres[rng.integers(0, 100, n)] + rng.standard_normal((n, DIM)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def _store_add(store: PostgresMemoryStore, vecs: Any, start: int) -> None:
    ids = [f"r{start + i}" for i in range(len(vecs))]
    store.add(ids, "memory", record_ids=ids, embeddings=list(vecs), user_ids="bench")


def run(url: str, size: int, extra: int, batch: int) -> dict[str, Any]:
    sid = f"ing{size}"
    vecs = _vectors(size + extra, size)
    out: dict[str, Any] = {"size": size, "extra": extra, "batch": batch}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"DROP TABLE IF EXISTS bare{size}")
        conn.execute(f"CREATE TABLE bare{size} (embedding vector({DIM}))")
        started = time.perf_counter()
        with conn.cursor() as cur, cur.copy(f"COPY bare{size} (embedding) FROM STDIN") as copy:
            for v in vecs[:size]:
                copy.write_row(["[" + ",".join(map(repr, v.tolist())) + "]"])
        out["bare_load_per_s"] = size / (time.perf_counter() - started)
        started = time.perf_counter()
        conn.execute(
            f"CREATE INDEX bare{size}_hnsw ON bare{size} USING hnsw (embedding vector_cosine_ops)"
        )
        out["bare_index_s"] = time.perf_counter() - started

    store = PostgresMemoryStore(
        url, embedder=None, vector_dim=DIM, memory_store_id=sid, schema_policy="RECREATE"
    )
    with store._impl.pool.connection() as conn:  # the documented bulk-import path
        conn.execute(f"DROP INDEX {sid}_chunks_hnsw")
    started = time.perf_counter()
    for a in range(0, size, 1000):
        _store_add(store, vecs[a : min(a + 1000, size)], a)
    out["store_load_per_s"] = size / (time.perf_counter() - started)
    store.close()
    started = time.perf_counter()
    store = PostgresMemoryStore(
        url, embedder=None, vector_dim=DIM, memory_store_id=sid, schema_policy="CREATE_IF_NECESSARY"
    )
    out["store_index_s"] = time.perf_counter() - started

    store_s = bare_s = 0.0
    with psycopg.connect(url) as bare:
        for a in range(size, size + extra, batch):
            part = vecs[a : min(a + batch, size + extra)]
            started = time.perf_counter()
            _store_add(store, part, a)
            store_s += time.perf_counter() - started
            started = time.perf_counter()
            with bare.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO bare{size} (embedding) VALUES (%s::float4[]::vector)",
                    [(v.tolist(),) for v in part],
                )
            bare.commit()
            bare_s += time.perf_counter() - started
    store.close()
    out["store_per_s"] = extra / store_s
    out["bare_per_s"] = extra / bare_s
    out["ratio"] = out["store_per_s"] / out["bare_per_s"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--extra", type=int, default=1000, help="rows added with the index")
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--db", help="postgresql:// URL (default: a temporary pgserver)")
    args = ap.parse_args(argv)
    url = pg_url(args.db)
    rows = [run(url, s, args.extra, args.batch) for s in args.sizes]
    print(
        "| table size | store rec/s (HNSW) | bare INSERT rec/s (HNSW) | ratio | store bulk load "
        "rec/s (no index) | store CREATE INDEX s | bare COPY rec/s | bare CREATE INDEX s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['size']:,} | {r['store_per_s']:.0f} | {r['bare_per_s']:.0f} | "
            f"{r['ratio']:.2f} | {r['store_load_per_s']:,.0f} | {r['store_index_s']:.1f} | "
            f"{r['bare_load_per_s']:,.0f} | {r['bare_index_s']:.1f} |"
        )
    print(json.dumps(rows), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
