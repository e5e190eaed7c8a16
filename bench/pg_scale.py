"""PostgreSQL at scale: the store's VECTOR search against bare pgvector SQL on the same
tables, in one run, for three query shapes, with recall@10 against the exact answer.

Workload (the peer benchmark's definitions, ``../shared/tools/peerbench.py``): N
unit-norm float32 384-d vectors around 100 gaussian centroids (per-dimension noise
0.05), record ``i`` of user ``u{i % 50}`` with metadata ``{"user": ..., "cat":
"c{(7 * i) % 20}"}`` (one ``cat`` value selects 5% of the records); queries are
perturbed copies (noise 0.02) of random records, searched in their source record's
user or ``cat``. Shapes:

* ``all``: no filter;
* ``user``: one user of 50 (the store: ``user_id=u, exact_user_match=True``; bare:
  ``WHERE c.user_id = %s``);
* ``cat``: the 5% metadata filter (the store: ``metadata_filter={"cat": c}``; bare:
  ``JOIN records r ... WHERE r.meta @> '{"cat": c}'``, jsonb containment as a
  pgvector user writes it).

Load: ``PostgresMemoryStore.add`` with precomputed vectors in calls of ``--batch``
records, without the HNSW index (docs/postgres.md, "Bulk import"), then the index is
built by reopening the store with ``CREATE_IF_NECESSARY`` (both timed), then
``ANALYZE``. ``--reuse`` keeps a store already loaded with the same N.

Search: per query the store's ``search(query_vector=q, k=10)`` (no embedding) and the
bare statement ``SELECT c.record_pk FROM <id>_chunks c [JOIN ...] WHERE ... ORDER BY
c.embedding <=> q LIMIT 10`` on its own autocommit connection, alternating which runs
first; wall time per call (p50/p95 over the queries after ``--warmup`` untimed ones).
Exact answer: the bare statement with index scans disabled (``enable_indexscan =
off``: a sequential or bitmap scan), computed once per shape. Variants:

* ``ef40`` / ``ef100`` / ``ef200`` / ``ef1000``: ``hnsw.ef_search`` (40 is pgvector's
  default, 1000 its largest);
  the store's own floor (``PgBackend.ef_search``, 64 by default) is set to the same
  value, and the store still asks for at least ``4k + 10`` = 50;
* ``iterative``: ``hnsw.iterative_scan = relaxed_order`` for the bare statement
  (pgvector 0.8 and later; the store turns it on itself there); skipped with the
  reason on older servers (``pgserver`` ships 0.6.2);
* ``partial``: the ``user`` shape with one partial HNSW index per queried user
  (``CREATE INDEX ... USING hnsw (embedding vector_cosine_ops) WHERE user_id = 'uX'``),
  at pgvector's default ``ef_search``; ``--partial-users`` limits how many users
  (queries of other users are left out of that variant).

    python bench/pg_scale.py --n 100000                          # temporary pgserver
    python bench/pg_scale.py --n 1000000 --server-dir /tmp/pg1m --reuse --queries 100
    python bench/pg_scale.py --n 2000 --queries 20 --json        # a quick check

Prints a Markdown table on stdout and the JSON report on stderr (``--json``: JSON on
stdout only).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import psycopg

from oam_core.store.postgres import PostgresMemoryStore

DIM = 384
N_CENTROIDS = 100
N_USERS = 50
N_CATS = 20
CLUSTER_NOISE = 0.05
QUERY_NOISE = 0.02
K = 10
SHAPES = ("all", "user", "cat")
EF_VALUES = (40, 100, 200, 1000)


# -- workload ---------------------------------------------------------------------


class Workload:
    """The records' vectors, users and categories, and the queries with theirs.

    Args:
        n: Records.
        n_queries: Queries (perturbed copies of distinct random records).
        seed: The generator's seed.
    """

    def __init__(self, n: int, n_queries: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        centroids = _unit(rng.standard_normal((N_CENTROIDS, DIM), dtype=np.float32))
        self.n = n
        self.vectors = centroids[rng.integers(0, N_CENTROIDS, n)]
        self.vectors += rng.standard_normal((n, DIM), dtype=np.float32) * np.float32(CLUSTER_NOISE)
        self.vectors = _unit(self.vectors)
        src = rng.choice(n, min(n_queries, n), replace=False)
        noise = rng.standard_normal((len(src), DIM), dtype=np.float32)
        self.queries = _unit(self.vectors[src] + noise * np.float32(QUERY_NOISE))
        self.query_users = [user_of(int(i)) for i in src]
        self.query_cats = [cat_of(int(i)) for i in src]


def _unit(x: Any) -> Any:
    """Rows of ``x`` scaled to unit norm, float32."""
    out: Any = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return out


def user_of(i: int) -> str:
    """The user of record ``i``: one of 50."""
    return f"u{i % N_USERS}"


def cat_of(i: int) -> str:
    """The ``cat`` metadata value of record ``i``: one of 20 (a 5% filter)."""
    return f"c{(i * 7) % N_CATS}"


# -- server and load --------------------------------------------------------------


def start_server(directory: str | None, shared_buffers: str, work_mem: str) -> str:
    """Start a pgserver PostgreSQL (a temporary directory, removed at exit, when
    ``directory`` is None; else kept running in ``directory`` for ``--reuse``) with
    ``shared_buffers``, ``maintenance_work_mem`` = ``work_mem`` (the HNSW build keeps
    its graph there) and ``fsync`` off; return its URL."""
    import tempfile

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
        import pgserver
        from pgserver._commands import pg_ctl  # type: ignore[attr-defined]

    path = directory or tempfile.mkdtemp(prefix="oam-pgscale-")
    mode = None if directory else "delete"
    server = pgserver.get_server(path, cleanup_mode=mode)  # type: ignore[attr-defined]
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        current = conn.execute("SHOW shared_buffers").fetchone()
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
        conn.execute(f"ALTER SYSTEM SET maintenance_work_mem = '{work_mem}'")
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")
    if current is None or str(current[0]).upper() != shared_buffers.upper():
        pg_ctl(["-w", "restart"], pgdata=server.pgdata, user=server.system_user)
    _KEEP.append(server)
    return str(server.get_uri())


_KEEP: list[Any] = []


def pgvector_version(url: str) -> str:
    """The server's pgvector version (``extversion``)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname='vector'").fetchone()
    return str(row[0]) if row else ""


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in text.split("."))


def loaded_count(url: str, sid: str) -> int:
    """Records of the store ``sid`` whose HNSW index exists (0: none or no index)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NOT NULL",
            (f"{sid}_records", f"{sid}_chunks_hnsw"),
        ).fetchone()
        if not row or not (row[0] and row[1]):
            return 0
        count = conn.execute(f"SELECT count(*) FROM {sid}_records").fetchone()
    return int(count[0]) if count else 0


def load(
    url: str, sid: str, work: Workload, batch: int, log: Callable[[str], None]
) -> dict[str, Any]:
    """Load ``work`` into a new store ``sid`` through ``store.add`` without the HNSW
    index, then build it by reopening with ``CREATE_IF_NECESSARY``; ``ANALYZE``."""
    store = PostgresMemoryStore(
        url, vector_dim=DIM, memory_store_id=sid, schema_policy="RECREATE", search_strategy="VECTOR"
    )
    with store._impl.pool.connection() as conn:  # the documented bulk-import path
        conn.execute(f"DROP INDEX {sid}_chunks_hnsw")
    started = time.perf_counter()
    for a in range(0, work.n, batch):
        b = min(a + batch, work.n)
        ids = [f"r{i}" for i in range(a, b)]
        store.add(
            ids,
            "memory",
            record_ids=ids,
            embeddings=work.vectors[a:b],
            user_ids=[user_of(i) for i in range(a, b)],
            metadata=[{"user": user_of(i), "cat": cat_of(i)} for i in range(a, b)],
        )
        if (b // batch) % 20 == 0:
            log(f"loaded {b:,} records")
    load_s = time.perf_counter() - started
    store.close()
    log("building the HNSW index")
    started = time.perf_counter()
    PostgresMemoryStore(
        url, vector_dim=DIM, memory_store_id=sid, schema_policy="CREATE_IF_NECESSARY"
    ).close()
    index_s = time.perf_counter() - started
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"ANALYZE {sid}_records")
        conn.execute(f"ANALYZE {sid}_chunks")
    return {"load_rec_per_s": work.n / load_s, "load_s": load_s, "index_build_s": index_s}


# -- the bare statements and the exact answer -------------------------------------


def bare_sql(sid: str, shape: str) -> str:
    """The statement a pgvector user writes for ``shape`` over the store's tables;
    parameters: [filter value,] query vector, k."""
    order = "ORDER BY c.embedding <=> %b::float4[]::vector LIMIT %s"
    if shape == "all":
        return f"SELECT c.record_pk FROM {sid}_chunks c {order}"
    if shape == "user":
        return f"SELECT c.record_pk FROM {sid}_chunks c WHERE c.user_id = %s {order}"
    return (
        f"SELECT c.record_pk FROM {sid}_chunks c JOIN {sid}_records r ON r.pk = c.record_pk "
        f"WHERE r.meta @> %s::jsonb {order}"
    )


def bare_params(shape: str, work: Workload, i: int) -> list[Any]:
    """The parameters of ``bare_sql(shape)`` for query ``i``."""
    vec = work.queries[i].tolist()
    if shape == "all":
        return [vec, K]
    if shape == "user":
        return [work.query_users[i], vec, K]
    return [json.dumps({"cat": work.query_cats[i]}), vec, K]


def exact_answers(url: str, sid: str, shape: str, work: Workload) -> list[list[int]]:
    """The exact top ``K`` record pks of every query: the bare statement with index
    scans off (a sequential scan, or a bitmap scan of the scope index)."""
    out: list[list[int]] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET enable_indexscan = off")
        for i in range(len(work.queries)):
            rows = conn.execute(bare_sql(sid, shape), bare_params(shape, work, i)).fetchall()
            out.append([int(r[0]) for r in rows])
    return out


def cached_truth(
    path: str | None,
    url: str,
    sid: str,
    work: Workload,
    report: dict[str, Any],
    log: Callable[[str], None],
) -> dict[str, list[list[int]]]:
    """``exact_answers`` of every shape, read from the JSON file ``path`` when it holds
    them for this store, N and query count (``--reuse`` runs), else computed (and
    written there); the seconds taken go to ``report["exact_s"]``."""
    key = f"{sid}/{work.n}/{len(work.queries)}"
    if path:
        try:
            with open(path) as f:
                stored = json.load(f)
            if stored.get("key") == key:
                log(f"exact answers from {path}")
                report["exact_s"] = "cached"
                return {s: stored["truth"][s] for s in SHAPES}
        except (OSError, ValueError, KeyError):
            pass
    log("exact answers (index scans off)")
    started = time.perf_counter()
    truth = {shape: exact_answers(url, sid, shape, work) for shape in SHAPES}
    report["exact_s"] = round(time.perf_counter() - started, 1)
    if path:
        with open(path, "w") as f:
            json.dump({"key": key, "truth": truth}, f)
    return truth


def record_pks(url: str, sid: str) -> dict[str, int]:
    """Record id -> pk of every record of the store."""
    with psycopg.connect(url, autocommit=True) as conn:
        return {str(i): int(pk) for i, pk in conn.execute(f"SELECT id, pk FROM {sid}_records")}


# -- timing -----------------------------------------------------------------------


def pct(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile of ``values`` (linear interpolation)."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), p))


def summary(
    lat: Sequence[float], cpu: Sequence[float], recalls: Sequence[float], short: int
) -> dict[str, Any]:
    """p50/p95 wall time and p50 client CPU time (ms), mean recall@10 and the count of
    short answers of one side."""
    return {
        "p50_ms": round(pct(lat, 50) * 1e3, 3),
        "p95_ms": round(pct(lat, 95) * 1e3, 3),
        "client_cpu_p50_ms": round(pct(cpu, 50) * 1e3, 3),
        "recall": round(statistics.fmean(recalls), 4),
        "short": short,
    }


class Runner:
    """Times the store and the bare statement on the same queries, alternately.

    Args:
        url: The server.
        sid: The store's ``memory_store_id``.
        work: The workload (queries and their users and categories).
        truth: Shape -> exact top-``K`` pks per query.
        warmup: How many of the queries run once untimed first, on each side.
    """

    def __init__(
        self, url: str, sid: str, work: Workload, truth: dict[str, list[list[int]]], warmup: int
    ) -> None:
        self.sid, self.work, self.truth, self.warmup = sid, work, truth, warmup
        self.store = PostgresMemoryStore(
            url, vector_dim=DIM, memory_store_id=sid, search_strategy="VECTOR"
        )
        self.bare = psycopg.connect(url, autocommit=True)
        self.pks = record_pks(url, sid)

    def close(self) -> None:
        """Close the store and the bare connection."""
        self.store.close()
        self.bare.close()

    def store_search(self, shape: str, i: int) -> list[int]:
        """The store's top ``K`` record pks for query ``i``."""
        w = self.work
        q = w.queries[i]
        if shape == "all":
            res = self.store.search(query_vector=q, k=K)
        elif shape == "user":
            res = self.store.search(
                query_vector=q, k=K, user_id=w.query_users[i], exact_user_match=True
            )
        else:
            res = self.store.search(query_vector=q, k=K, metadata_filter={"cat": w.query_cats[i]})
        return [self.pks[rec.id] for rec, _ in res]

    def bare_search(self, shape: str, i: int) -> list[int]:
        """The bare statement's top ``K`` record pks for query ``i``."""
        rows = self.bare.execute(
            bare_sql(self.sid, shape), bare_params(shape, self.work, i)
        ).fetchall()
        return [int(r[0]) for r in rows]

    def settings(self, ef: int, iterative: bool) -> None:
        """``hnsw.ef_search`` (and the iterative scan) for both sides."""
        self.bare.execute(f"SET hnsw.ef_search = {int(ef)}")
        if iterative:
            self.bare.execute("SET hnsw.iterative_scan = relaxed_order")
        self.store._impl.ef_search = ef

    def run(self, shape: str, queries: Sequence[int]) -> dict[str, Any]:
        """Both sides over ``queries`` (indexes), alternating which goes first."""
        sides: dict[str, Callable[[str, int], list[int]]] = {
            "store": self.store_search,
            "bare": self.bare_search,
        }
        lat: dict[str, list[float]] = {"store": [], "bare": []}
        cpu: dict[str, list[float]] = {"store": [], "bare": []}
        rec: dict[str, list[float]] = {"store": [], "bare": []}
        short = {"store": 0, "bare": 0}
        for i in queries[: self.warmup]:  # untimed, then every query timed
            self.store_search(shape, i)
            self.bare_search(shape, i)
        for j, i in enumerate(queries):
            order = ("store", "bare") if j % 2 == 0 else ("bare", "store")
            for side in order:
                started, used = time.perf_counter(), time.process_time()
                got = sides[side](shape, i)
                lat[side].append(time.perf_counter() - started)
                cpu[side].append(time.process_time() - used)
                want = self.truth[shape][i]
                rec[side].append(len(set(got) & set(want)) / max(1, min(K, len(want))))
                short[side] += len(got) < min(K, len(want))
        out: dict[str, Any] = {s: summary(lat[s], cpu[s], rec[s], short[s]) for s in sides}
        out["p50_ratio"] = round(out["store"]["p50_ms"] / out["bare"]["p50_ms"], 2)
        out["p95_ratio"] = round(out["store"]["p95_ms"] / out["bare"]["p95_ms"], 2)
        out["queries"] = len(lat["store"])
        return out


# -- partial indexes --------------------------------------------------------------


def partial_indexes(url: str, sid: str, users: Sequence[str], drop: bool) -> float:
    """Create (or ``drop``) one partial HNSW index per user; seconds taken."""
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        for u in users:
            name = f"{sid}_hnsw_{u}"
            if drop:
                conn.execute(f"DROP INDEX IF EXISTS {name}")
            else:
                conn.execute(
                    f"CREATE INDEX IF NOT EXISTS {name} ON {sid}_chunks "
                    f"USING hnsw (embedding vector_cosine_ops) WHERE user_id = '{u}'"
                )
        if not drop:
            conn.execute(f"ANALYZE {sid}_chunks")
    return time.perf_counter() - started


# -- the whole run ----------------------------------------------------------------


def variants(version: str) -> list[tuple[str, int, bool]]:
    """``(name, ef_search, iterative)`` of every timed variant on this pgvector."""
    out = [(f"ef{ef}", ef, False) for ef in EF_VALUES]
    if _version(version) >= (0, 8):
        out.append(("iterative", 40, True))
    return out


def run(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    """Load (or reuse) the store, compute the exact answers, time every variant."""
    url = args.db or start_server(args.server_dir, args.shared_buffers, args.maintenance_work_mem)
    version = pgvector_version(url)
    sid = args.store_id or f"pgs{args.n}"
    log(f"pgvector {version}; generating {args.n:,} vectors")
    work = Workload(args.n, args.queries, args.seed)
    report: dict[str, Any] = {"n": args.n, "queries": len(work.queries), "k": K}
    report["pgvector"] = version
    report["iterative_scan"] = (
        "available" if _version(version) >= (0, 8) else f"not available (pgvector {version} < 0.8)"
    )
    if args.reuse and loaded_count(url, sid) == args.n:
        log(f"reusing store {sid}")
        report["load"] = "reused"
    else:
        report["load"] = load(url, sid, work, args.batch, log)
    truth = cached_truth(args.truth_cache, url, sid, work, report, log)
    runner = Runner(url, sid, work, truth, args.warmup)
    everyone = list(range(len(work.queries)))
    results: dict[str, dict[str, Any]] = {shape: {} for shape in SHAPES}
    try:
        for name, ef, iterative in variants(version):
            runner.settings(ef, iterative)
            for shape in SHAPES:
                log(f"{shape} {name}")
                results[shape][name] = runner.run(shape, everyone)
        runner.settings(40, False)
        if args.partial_users:
            users = sorted(set(work.query_users), key=lambda u: int(u[1:]))[: args.partial_users]
            report["partial_build_s"] = round(partial_indexes(url, sid, users, drop=False), 1)
            report["partial_users"] = len(users)
            mine = [i for i in everyone if work.query_users[i] in set(users)]
            log(f"user partial ({len(users)} indexes)")
            results["user"]["partial"] = runner.run("user", mine)
            partial_indexes(url, sid, users, drop=True)
    finally:
        runner.close()
    report["results"] = results
    return report


def markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown table, one row per shape and variant."""
    lines = [
        "| shape | variant | store p50 ms | store p95 ms | store recall@10 | bare p50 ms "
        "| bare p95 ms | bare recall@10 | p50 store/bare | p95 store/bare "
        "| client CPU p50 ms store / bare |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for shape, rows in report["results"].items():
        for name, r in rows.items():
            s, b = r["store"], r["bare"]
            lines.append(
                f"| {shape} | {name} | {s['p50_ms']:.2f} | {s['p95_ms']:.2f} | "
                f"{s['recall']:.3f} | {b['p50_ms']:.2f} | {b['p95_ms']:.2f} | "
                f"{b['recall']:.3f} | {r['p50_ratio']:.2f} | {r['p95_ratio']:.2f} | "
                f"{s['client_cpu_p50_ms']:.2f} / {b['client_cpu_p50_ms']:.2f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run, print the table and the JSON report."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="records")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10, help="untimed queries per variant")
    ap.add_argument("--batch", type=int, default=5000, help="records per store.add call")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--partial-users", type=int, default=N_USERS, help="0: no partial variant")
    ap.add_argument("--db", help="postgresql:// URL (default: a pgserver started here)")
    ap.add_argument("--server-dir", help="keep the pgserver data here (with --reuse)")
    ap.add_argument("--store-id", help="memory_store_id (default pgs<N>)")
    ap.add_argument("--reuse", action="store_true", help="keep a store loaded with N records")
    ap.add_argument("--shared-buffers", default="1GB")
    ap.add_argument("--maintenance-work-mem", default="2GB")
    ap.add_argument("--truth-cache", help="JSON file keeping the exact answers between runs")
    ap.add_argument("--json", action="store_true", help="only the JSON report, on stdout")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(f"[pg_scale {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    report = run(args, log)
    if args.json:
        print(json.dumps(report))
    else:
        print(markdown(report))
        print(json.dumps(report), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
