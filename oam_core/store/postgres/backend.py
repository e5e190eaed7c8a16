"""The PostgreSQL back end of the store contract (``store/backend.py``) over the shared
SQL layer (``store/sql``): connections, vector and keyword ranking.

Every call borrows a connection from a ``psycopg_pool.ConnectionPool``; writes run in
one transaction per store call. Scope, type, expiry and metadata predicates are in
the WHERE clause of the ranking queries, so they apply before any top-k cut.

Ordering and races: a message's ``seq_no`` is assigned under a transaction-scoped
advisory lock on its thread (a partial unique index backs it), and ``delete_thread``
takes the same lock, so writers of one thread and a cascade delete of it serialise.

VECTOR ranking: exact (a scan with the cosine distance of every visible chunk)
while the chunk table is small (``exact_below`` rows, by the planner's statistics),
so small stores rank exactly as SQLite does; above that the HNSW index returns the
``fetch = 4k + 10`` nearest chunks with ``hnsw.ef_search = max(ef_search, fetch)``
(64 at k = 10: HNSW recall@10 0.985 at 100k rows, bench/scale.py), and when the
filters leave fewer than ``k`` records among the index's candidates the query is
rerun exactly, so a selective filter never loses results. On pgvector 0.8 and later
the index scan is iterative (``hnsw.iterative_scan = relaxed_order``: it keeps
walking the graph until ``fetch`` rows pass the filters), so the exact rerun is
rare; before 0.8 (``pgserver`` ships 0.6.2) a short first pass is followed by one
pass over the index's 1,000 nearest chunks (``ef_search`` 1000, pgvector's most)
before the exact rerun. The ranking statement also reads the ranked records (held
for the search's ``load``): one round trip per search. See docs/postgres.md.
"""

from __future__ import annotations

import builtins
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any, TypeVar

import numpy as np
import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from oam_core.apis._sentinel import Maybe
from oam_core.checks import Vector
from oam_core.errors import StoreConnectionError
from oam_core.store.backend import DimCheck, Predicate, Tx
from oam_core.store.postgres.dialect import POSTGRES
from oam_core.store.postgres.fulltext import (
    K1,
    B,
    index_input,
    kept_lexemes,
    query_words,
    tsquery_literal,
    tsvector_sql,
)
from oam_core.store.postgres.schema import (
    ann_expression,
    lock_key,
    lock_meta,
    read_meta,
    set_dimension,
    usable_ann,
)
from oam_core.store.sql import statements as st
from oam_core.store.sql.backend import SqlBackend, SqlTx

Conn = psycopg.Connection[Any]
T = TypeVar("T")

EXACT_BELOW = 5000
"""Chunk-table size (planner estimate) under which VECTOR ranking scans exactly."""
EF_SEARCH = 64
"""Smallest ``hnsw.ef_search`` used for index queries (pgvector's default is 40)."""
EF_MAX = 1000
"""The largest ``hnsw.ef_search`` pgvector takes: the second index pass of a filtered
query on pgvector before 0.8 (no iterative scans)."""
SIZE_TTL_S = 5.0
"""How long the chunk-table size that picks exact vs HNSW ranking is cached."""
HELD_TTL_S = 1.0
"""How long the records a VECTOR ranking read stay ready for the search's ``load``."""
DF_CACHE_SIZE = 4096
"""Lexemes whose document frequency a store keeps between searches."""


def _version(text: str) -> tuple[int, ...]:
    """``"0.8.0"`` -> ``(0, 8, 0)`` (non-numeric parts are 0)."""
    return tuple(int(part) if part.isdigit() else 0 for part in text.split("."))


def vector_param(vector: Vector | None) -> list[float] | None:
    """A vector as a bound parameter: a float list sent in binary (``%b``) and cast
    with ``::float4[]::vector`` in SQL (6x faster than pgvector's text form)."""
    if vector is None:
        return None
    values: list[float] = np.asarray(vector, dtype=np.float32).tolist()
    return values


REACH_TIMEOUT_S = 3
"""Seconds one direct connection attempt may take when the pool's connections died
or none came in time: telling a server that went away from a busy pool."""
FIRST_WAIT_S = 1.0
"""Seconds a call waits for a pooled connection before it checks, with one direct
connection attempt, that the server answers; then it waits the rest of the pool's
``timeout``. A pool whose server went away has no connection to give (it retries
with growing pauses), so without the check every call would wait the whole timeout."""
_SERVER_BUSY = ("53300", "too many clients", "too many connections")
"""A direct attempt refused for these (SQLSTATE too_many_connections, its messages):
the server answers, it is busy."""


def _alive(conn: Conn) -> bool:
    """Whether ``conn`` answers the pool's check (an empty query)."""
    try:
        ConnectionPool.check_connection(conn)
    except psycopg.Error:
        return False
    return True


def _dead(conn: Conn) -> bool:
    """Whether ``conn`` lost its server session (closed, or broken by an error)."""
    return bool(conn.closed or conn.broken)


@contextmanager
def _read_transaction(conn: Conn) -> Iterator[None]:
    """Nothing on an autocommit connection (the store's own pool: reads run without
    BEGIN/COMMIT round trips); else one short transaction."""
    if conn.autocommit:
        yield
    else:
        with conn.transaction():
            yield


@contextmanager
def _pipelined(conn: Conn) -> Iterator[None]:
    """Pipeline mode where libpq has it (statements sent without waiting for the
    results of the earlier ones); else nothing."""
    if psycopg.Pipeline.is_supported():
        with conn.pipeline():
            yield
    else:  # pragma: no cover - libpq before 14
        yield


def _distance(expr: str) -> str:
    """Cosine distance clamped to [0, 2]; NaN (a zero vector) counts as 1, as SQLite."""
    return f"LEAST(GREATEST(CASE WHEN ({expr}) = 'NaN' THEN 1.0 ELSE ({expr}) END, 0.0), 2.0)"


class PgBackend(SqlBackend):
    """Reads, rankings and transactions over one pool and one object prefix.

    Args:
        pool: A ``psycopg_pool.ConnectionPool`` or a pool-shaped wrapper of one
            connection (``store.SingleConnection``).
        prefix: The object-name prefix.
        label: Names the database in error messages (the password hidden).
        owns_pool: ``close`` closes the pool.
    """

    vector_select = "embedding::float4[]"

    def __init__(
        self, pool: ConnectionPool[Any], prefix: str, label: str, *, owns_pool: bool
    ) -> None:
        super().__init__(POSTGRES, prefix, label)
        self.pool = pool
        self.owns_pool = owns_pool
        self.exact_below = EXACT_BELOW
        self.ef_search = EF_SEARCH
        self._size_cache: tuple[float, float] | None = None
        self._ef_by_conn: weakref.WeakKeyDictionary[Conn, int] = weakref.WeakKeyDictionary()
        self._iterative: bool | None = None  # pgvector >= 0.8 (hnsw.iterative_scan)
        # The HNSW index kind (schema.ann_kind) and the dimension it was built for;
        # None: no index, VECTOR ranking always scans exactly.
        self.ann: str | None = "vector"
        self.ann_dim: int | None = None
        self._local = threading.local()
        # lexeme -> (chunk_stats change counter when counted, rows holding it)
        self._df_cache: dict[str, tuple[int, int]] = {}

    # -- the vector dimension ----------------------------------------------------

    def remember_vector_dim(self, dim: int, check: DimCheck) -> None:
        """Record ``dim`` in the open write's transaction under the metadata lock
        (another first write waits, then reads ours), after ``check`` accepted it
        against the recorded one; then use the HNSW index that serves it."""
        conn = self.current_conn()
        if conn is None:  # pragma: no cover - the runtime learns dims inside a write
            with self.mapped(), self.checked_connection() as own, own.transaction():
                self._record_dim(own, dim, check)
        else:
            self._record_dim(conn, dim, check)

    def _record_dim(self, conn: Conn, dim: int, check: DimCheck) -> None:
        lock_meta(conn, self.p)
        check(read_meta(conn, self.p).get("vector_dim"), dim)
        set_dimension(conn, self.p, dim)
        self.use_ann(conn, dim)

    def use_ann(self, conn: Conn, dim: int | None) -> None:
        """Rank vectors of ``dim`` with the HNSW index that serves them
        (``schema.usable_ann``; none: exactly)."""
        self.ann, self.ann_dim = usable_ann(conn, self.p, dim, self.label), dim

    # -- connections -------------------------------------------------------------

    def current_conn(self) -> Conn | None:
        """The connection of this thread's open store transaction, if any."""
        conn: Conn | None = getattr(self._local, "conn", None)
        return conn

    @contextmanager
    def checked_connection(self, check: bool = True) -> Iterator[Conn]:
        """A connection of the pool that answered a check (one empty query): one the
        server ended while it was idle (a restart, ``pg_terminate_backend``, an idle
        timeout) is handed back, every idle connection of the pool is checked at
        once (``ConnectionPool.check`` drops the dead ones and opens new ones), and
        another is taken. psycopg_pool's own ``check=`` option would wait 1 s, 2 s,
        4 s, ... between dead connections (its reconnection backoff), so the store
        checks here instead. A caller's single connection is used as it is; so is
        every connection when ``check`` is False (``read``, which runs its reads once
        more on another connection when the first turns out dead, saving the
        check's round trip to the server)."""
        with ExitStack() as stack:
            conn = self._enter(stack)
            if check and isinstance(self.pool, ConnectionPool) and not _alive(conn):
                stack.close()  # the pool discards the dead connection
                self._reachable()  # a server gone away fails now, not after the pool's wait
                self.pool.check()
                conn = self._enter(stack)
            yield conn

    def _enter(self, stack: ExitStack) -> Conn:
        """A connection of the pool, held until ``stack`` closes. A pool that gives
        none within ``FIRST_WAIT_S`` is checked with one direct connection attempt
        (``_reachable``): a server that cannot be reached raises
        ``StoreConnectionError`` then, a busy pool is waited for up to its
        ``timeout`` in all and then raises its ``PoolTimeout``."""
        pool = self.pool
        if not isinstance(pool, ConnectionPool):
            single: Conn = stack.enter_context(pool.connection())
            return single
        total = float(pool.timeout)
        first = min(FIRST_WAIT_S, total)
        try:
            conn: Conn = stack.enter_context(pool.connection(timeout=first))
            return conn
        except PoolTimeout:
            self._reachable()
            if first >= total:
                raise
        try:
            conn = stack.enter_context(pool.connection(timeout=total - first))
        except PoolTimeout:
            self._reachable()
            raise
        return conn

    def _reachable(self) -> None:
        """Check with one direct connection attempt that the pool's server answers.

        Raises:
            StoreConnectionError: naming the database (the password hidden) and the
                driver's reason, when it does not (docs/postgres.md).
        """
        if not isinstance(self.pool, ConnectionPool):
            return
        info = self.pool.conninfo
        try:
            conninfo = info() if callable(info) else info
            psycopg.connect(conninfo, connect_timeout=REACH_TIMEOUT_S).close()
        except psycopg.OperationalError as exc:
            reason = " ".join(str(exc).split())
            if getattr(exc, "sqlstate", None) in _SERVER_BUSY or any(
                busy in reason for busy in _SERVER_BUSY
            ):
                return  # it answers: at its connection limit
            raise StoreConnectionError(f"cannot connect to {self.label}: {reason}") from exc

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        self._local.held = None  # records read before a write are not served after it
        with self.mapped(), self.checked_connection() as conn, conn.transaction():
            self._local.conn = conn
            try:
                yield PgTx(self, conn)
            finally:
                self._local.conn = None

    @contextmanager
    def reading(self) -> Iterator[Conn]:
        """A pooled connection for reads: autocommit connections (the store's own pool)
        read without BEGIN/COMMIT round trips; others in one short transaction."""
        with self.mapped(), self._read_conn() as conn:
            yield conn

    @contextmanager
    def _read_conn(self) -> Iterator[Conn]:
        """``reading`` without the error mapping."""
        with self.checked_connection() as conn, _read_transaction(conn):
            yield conn

    def read(self, fn: Callable[[Any], T]) -> T:
        """``fn(conn)`` on a connection of ``reading``; when that connection turns out
        dead (the server restarted, or ended the session: ``pg_terminate_backend``,
        an idle timeout), the idle connections of the pool are checked and ``fn``
        runs once more on another one. Reads only: ``fn`` must not write.

        Raises:
            StoreConnectionError: when the second connection fails too (the server
                is down), or for a caller's single connection that died.
        """
        used: builtins.list[Conn] = []

        def once() -> T:
            # No check at checkout: a dead connection fails here and is replaced below.
            with self.checked_connection(check=False) as conn:
                used.append(conn)
                with _read_transaction(conn):
                    return fn(conn)

        with self.mapped():
            try:
                return once()
            except psycopg.OperationalError:
                if not used or not _dead(used[-1]) or self.current_conn() is not None:
                    raise
            if isinstance(self.pool, ConnectionPool):
                self._reachable()  # a server gone away fails now, not after the pool's wait
                self.pool.check()  # drop the other dead ones now, without backoff waits
            return once()

    def database_key(self) -> Hashable | None:
        """As ``Backend.database_key``: the server (its port and start time), the
        database, the schema the tables are in (the first of ``search_path`` that
        exists) and the prefix as PostgreSQL folds it (``table_key``)."""

        def key(conn: Conn) -> Hashable:
            row = conn.execute(
                "SELECT current_database(), current_schema(), inet_server_port(), "
                "pg_postmaster_start_time()::text"
            ).fetchone()
            return ("postgresql", *(row or ()), self.table_key)

        return self.read(key)

    def close(self) -> None:
        if self.owns_pool:
            self.pool.close()

    # -- VECTOR ------------------------------------------------------------------

    def _table_size(self, conn: Conn) -> float:
        """Chunk rows, from the planner's statistics; a table never analysed yet is
        counted up to ``exact_below`` rows (a bounded scan)."""
        row = conn.execute(
            "SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", (f"{self.p}chunks",)
        ).fetchone()
        estimate = float(row[0]) if row and row[0] is not None else -1.0
        if estimate >= 0:
            return estimate
        bounded = conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {self.p}chunks LIMIT %s) s",
            (min(self.exact_below, 10**9),),
        ).fetchone()
        return float(bounded[0]) if bounded else 0.0

    def _size(self, conn: Conn) -> float:
        """``_table_size``, cached for ``SIZE_TTL_S`` seconds (it only picks the path)."""
        now = time.monotonic()
        cached = self._size_cache
        if cached is None or now - cached[0] > SIZE_TTL_S:
            cached = (now, self._table_size(conn))
            self._size_cache = cached
        return cached[1]

    def rank_vector(
        self, queries: Sequence[Vector], k: int, pred: Predicate
    ) -> builtins.list[builtins.list[tuple[Hashable, float]]]:
        def ranked(conn: Conn) -> builtins.list[builtins.list[tuple[Hashable, float]]]:
            approximate = self._size(conn) >= self.exact_below
            return [self._rank_one(conn, q, k, pred, approximate) for q in queries]

        return self.read(ranked)

    def _set_ef_search(self, conn: Conn, ef: int) -> None:
        """Set ``hnsw.ef_search`` (and, where pgvector has it, an iterative index
        scan): for the session of an autocommit connection (once per value,
        remembered per connection), else for the current transaction."""
        if self._iterative is None:
            row = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()
            self._iterative = row is not None and _version(str(row[0])) >= (0, 8)
        local = not conn.autocommit
        if local or self._ef_by_conn.get(conn) != ef:
            conn.execute("SELECT set_config('hnsw.ef_search', %s, %s)", (str(ef), local))
            if self._iterative:
                conn.execute(
                    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', %s)", (local,)
                )
            if not local:
                self._ef_by_conn[conn] = ef

    def _rank_one(
        self, conn: Conn, query: Vector, k: int, pred: Predicate, approximate: bool
    ) -> builtins.list[tuple[Hashable, float]]:
        join, where, params = st.candidates(self.d, self.p, pred)
        qtext = vector_param(query)
        if approximate and self.ann is not None:
            fetch = 4 * k + 10  # chunks: records often have two (text + context row)
            scope = (join, where, params)
            ef = min(EF_MAX, max(self.ef_search, fetch))
            rows = self._index_pass(conn, qtext, k, scope, ef, fetch)
            if len(rows) >= k:
                return rows
            if not self._iterative and fetch < EF_MAX:
                # No iterative scan (pgvector < 0.8): filters that left fewer than k
                # records among the first candidates get the most candidates
                # pgvector's index returns, before the exact rerun.
                rows = self._index_pass(conn, qtext, k, scope, EF_MAX, EF_MAX)
                if len(rows) >= k:
                    return rows
        dist = _distance("c.embedding <=> qv.v")
        return self._ranked_records(
            conn,
            f"SELECT c.record_pk, min({dist}) AS dm FROM qv, {self.p}chunks c {join} "
            f"WHERE {where} AND c.embedding IS NOT NULL "
            "GROUP BY c.record_pk ORDER BY dm, c.record_pk LIMIT %s",
            [qtext, *params, k],
        )

    def _ranked_records(
        self, conn: Conn, ranking: str, params: Sequence[Any]
    ) -> builtins.list[tuple[Hashable, float]]:
        """Run ``ranking`` (``(record_pk, dm)`` rows over the query vector ``qv``, the
        first parameter) and read the ranked records in the same statement: they are
        held for this thread's next ``load`` (one round trip per search, not two)."""
        rows = conn.execute(
            "WITH qv AS MATERIALIZED (SELECT %b::float4[]::vector AS v), "
            f"ranked AS ({ranking}) SELECT ranked.record_pk, ranked.dm, "
            f"{st.record_select(self.d, 'r')} FROM ranked "
            f"LEFT JOIN {self.p}records r ON r.pk = ranked.record_pk "
            "ORDER BY ranked.dm, ranked.record_pk",
            params,
        ).fetchall()
        held = self._held_records()
        for row in rows:
            if row[2] is not None:
                held[int(row[0])] = st.record_from_row(row[2:])
        return [(int(row[0]), float(row[1])) for row in rows]

    def _held_records(self) -> dict[Hashable, Any]:
        """This thread's records read with a ranking, for the next ``load`` (kept
        ``HELD_TTL_S`` seconds; a write transaction or a ``load`` drops them)."""
        held: tuple[float, dict[Hashable, Any]] | None = getattr(self._local, "held", None)
        now = time.monotonic()
        if held is None or now - held[0] > HELD_TTL_S:
            held = (now, {})
            self._local.held = held
        return held[1]

    def load(self, keys: Sequence[Hashable]) -> dict[Hashable, Any]:
        """Records by key: those the last ranking of this thread read (within
        ``HELD_TTL_S`` seconds) without a query, the others from the table."""
        held: tuple[float, dict[Hashable, Any]] | None = getattr(self._local, "held", None)
        self._local.held = None
        fresh = held is not None and time.monotonic() - held[0] <= HELD_TTL_S
        out = {key: held[1][key] for key in keys if key in held[1]} if fresh and held else {}
        missing = [key for key in keys if key not in out]
        if missing:
            out.update(super().load(missing))
        return out

    def _index_pass(
        self,
        conn: Conn,
        qtext: builtins.list[float] | None,
        k: int,
        candidates: tuple[str, str, builtins.list[Any]],
        ef: int,
        fetch: int,
    ) -> builtins.list[tuple[Hashable, float]]:
        """The best ``k`` records among the HNSW index's ``fetch`` nearest chunks
        passing the filters, with ``hnsw.ef_search = ef``."""
        with _pipelined(conn):  # the setting goes with the query: one round trip
            self._set_ef_search(conn, ef)
            return self._ranked_pass(conn, qtext, k, candidates, fetch)

    def _ranked_pass(
        self,
        conn: Conn,
        qtext: builtins.list[float] | None,
        k: int,
        candidates: tuple[str, str, builtins.list[Any]],
        fetch: int,
    ) -> builtins.list[tuple[Hashable, float]]:
        """``_index_pass`` once ``hnsw.ef_search`` is set."""
        join, where, params = candidates
        # The query vector is bound once, as an InitPlan the HNSW scan orders by;
        # the order is the indexed expression's (halfvec over 2,000 dimensions),
        # the distance returned is the full-precision one.
        indexed = ann_expression("c.embedding", self.ann, self.ann_dim)
        probe = ann_expression("(SELECT v FROM qv)", self.ann, self.ann_dim)
        inner = (
            f"SELECT c.record_pk, c.embedding <=> (SELECT v FROM qv) AS d "
            f"FROM {self.p}chunks c {join} WHERE {where} AND c.embedding IS NOT NULL "
            f"ORDER BY {indexed} <=> {probe} LIMIT %s"
        )
        return self._ranked_records(
            conn,
            f"SELECT record_pk, min({_distance('d')}) AS dm FROM ({inner}) s "
            "GROUP BY record_pk ORDER BY dm, record_pk LIMIT %s",
            [qtext, *params, fetch, k],
        )

    # -- KEYWORD -----------------------------------------------------------------

    def _lexemes(self, conn: Conn, words: Sequence[str]) -> builtins.list[str]:
        """The distinct lexemes of query ``words``, in order: a word FTS5 does not
        stem is its own lexeme (``fulltext.kept_lexemes``), the others are stemmed by
        the store's text-search configuration, as the index was."""
        kept = kept_lexemes(words)
        stemmed = [w for w, lx in zip(words, kept, strict=True) if lx is None]
        rows = (
            conn.execute(
                f"SELECT w, tsvector_to_array(to_tsvector('{self.p}oam_fts', w)) "
                "FROM unnest(%s::text[]) WITH ORDINALITY AS u(w, i) ORDER BY i",
                (stemmed,),
            ).fetchall()
            if stemmed
            else []
        )
        stems = iter(rows)
        out: builtins.list[str] = []
        for lx in kept:
            for lexeme in [lx] if lx is not None else next(stems)[1] or []:
                if lexeme not in out:
                    out.append(lexeme)
        return out

    def _stats(self, conn: Conn) -> tuple[int, float, int]:
        """``(indexed rows, mean tokens per indexed row, change counter)`` from
        ``chunk_stats`` (a few rows, kept by triggers): no scan of the chunk table."""
        row = conn.execute(
            "SELECT COALESCE(sum(n_rows), 0), COALESCE(sum(n_tokens), 0), "
            f"COALESCE(sum(changes), 0) FROM {self.p}chunk_stats"
        ).fetchone()
        total, tokens, changes = (int(v) for v in row) if row else (0, 0, 0)
        return total, (tokens / total if total else 1.0), changes

    def _doc_freqs(self, conn: Conn, lexemes: Sequence[str], changes: int) -> builtins.list[int]:
        """Rows holding each lexeme: the ones not cached since the change counter last
        moved are counted together, in one pass over the rows holding any of them."""
        cache = self._df_cache
        if len(cache) > DF_CACHE_SIZE:
            cache.clear()
        missing = [lx for lx in lexemes if cache.get(lx, (None, 0))[0] != changes]
        if missing:
            counts = ", ".join(["count(*) FILTER (WHERE tsv @@ %s::tsquery)"] * len(missing))
            row = conn.execute(
                f"SELECT {counts} FROM {self.p}chunks WHERE tsv @@ %s::tsquery",
                [*(tsquery_literal([lx]) for lx in missing), tsquery_literal(missing)],
            ).fetchone()
            for lx, df in zip(missing, row or [0] * len(missing), strict=True):
                cache[lx] = (changes, int(df))
        return [cache[lx][1] for lx in lexemes]

    def _split_terms(
        self, conn: Conn, lexemes: Sequence[str], total: int, changes: int
    ) -> tuple[builtins.list[tuple[str, int]], builtins.list[str]]:
        """``(informative (lexeme, df), common)``: as SQLite's split, a term found in
        more than half of the search rows is common (BM25 IDF ~ 0); terms found
        nowhere are dropped; with no informative term, the common ones rank."""
        half = total // 2
        informative: builtins.list[tuple[str, int]] = []
        common: builtins.list[tuple[str, int]] = []
        for lx, df in zip(lexemes, self._doc_freqs(conn, lexemes, changes), strict=True):
            if df:
                (common if df > half else informative).append((lx, df))
        if not informative:
            return common, []
        return informative, [lx for lx, _ in common]

    def rank_keyword(
        self, terms: Sequence[str], k: int, pred: Predicate
    ) -> builtins.list[tuple[Hashable, float]]:
        words = query_words(terms)
        if not words:
            return []
        return self.read(lambda conn: self._rank_keyword(conn, words, k, pred))

    def _rank_keyword(
        self, conn: Conn, words: Sequence[str], k: int, pred: Predicate
    ) -> builtins.list[tuple[Hashable, float]]:
        """``rank_keyword`` on one connection."""
        lexemes = self._lexemes(conn, words)
        if not lexemes:
            return []
        total, avgdl, changes = self._stats(conn)
        ranked, common = self._split_terms(conn, lexemes, total, changes)
        if not ranked:
            return []
        out = self._bm25(conn, ranked, total, avgdl, k, pred)
        if common and len(out) < k:
            # Rows matching only very common terms follow unranked, oldest first.
            seen = {pk for pk, _ in out}
            join, where, params = st.candidates(self.d, self.p, pred)
            rest = conn.execute(
                f"SELECT DISTINCT c.record_pk FROM {self.p}chunks c {join} "
                f"WHERE c.tsv @@ %s::tsquery AND {where} ORDER BY c.record_pk LIMIT %s",
                [tsquery_literal(common), *params, k + len(seen)],
            ).fetchall()
            out += [(int(r), 0.0) for (r,) in rest if r not in seen][: k - len(out)]
        return out

    def _bm25(
        self,
        conn: Conn,
        terms: Sequence[tuple[str, int]],
        total: int,
        avgdl: float,
        k: int,
        pred: Predicate,
    ) -> builtins.list[tuple[Hashable, float]]:
        """Up to ``k`` ``(record pk, best chunk's BM25)`` pairs, as FTS5 scores them:
        ``idf = ln((N - n + 0.5) / (n + 0.5))`` (1e-6 when <= 0) and
        ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))`` per term."""
        lexemes = [lx for lx, _ in terms]
        idf = []
        for _, df in terms:
            # A concurrent writer can make df exceed the total counted just before.
            value = float(np.log(max(total - df + 0.5, 0.5) / (df + 0.5)))
            idf.append(value if value > 0 else 1e-6)
        join, where, params = st.candidates(self.d, self.p, pred)
        query = f"""
            WITH q AS (SELECT * FROM unnest(%s::text[], %s::float8[]) AS q(lex, idf)),
            hits AS (
                SELECT c.pk, c.record_pk, c.tsv, c.n_tokens FROM {self.p}chunks c {join}
                WHERE c.tsv @@ %s::tsquery AND {where}),
            scored AS (
                SELECT h.record_pk, sum(q.idf * (u.tf * {K1 + 1}) / (u.tf + {K1} * (1 - {B}
                    + {B} * h.n_tokens / %s::float8))) AS score
                FROM hits h
                CROSS JOIN LATERAL (
                    SELECT lexeme, COALESCE(array_length(positions, 1), 1)::float8 AS tf
                    FROM unnest(h.tsv)) u
                JOIN q ON q.lex = u.lexeme
                GROUP BY h.pk, h.record_pk)
            SELECT record_pk, max(score) AS s FROM scored
            GROUP BY record_pk ORDER BY s DESC, record_pk LIMIT %s"""
        rows = conn.execute(
            query,
            [lexemes, idf, tsquery_literal(lexemes), *params, avgdl or 1.0, k],
        ).fetchall()
        return [(int(pk), float(s)) for pk, s in rows]


class PgTx(SqlTx):
    """Write primitives over one connection inside an open transaction.

    Ordering and races: a thread's writers and a delete of it serialise on a
    transaction-scoped advisory lock of the thread (``lock_threads``), which also
    guards the ``seq_no`` a message gets (a partial unique index backs it).

    Lock order (docs/postgres.md#concurrency-and-durability), the same in every
    transaction, so no two of them wait on each other: (1) the advisory locks of the
    threads written, all at once in key order, before anything else; (2) the thread
    rows; (3) record rows; (4) the ``chunk_stats`` row of the session, which the
    triggers on ``chunks`` take when search rows are inserted or deleted. Every
    transaction that writes a thread row or a thread's messages takes (1) first: a
    message write, a pipeline pass (``update_thread``), a thread delete. A message
    write moves the thread's sequence mark (2) before it inserts search rows (4).
    """

    def lock_threads(self, thread_ids: Sequence[str | None]) -> None:
        for key in sorted({lock_key("oam-thread", self.p, t or "") for t in thread_ids}):
            self.c.execute("SELECT pg_advisory_xact_lock(%s)", (key,))

    def update_thread(
        self,
        thread_id: str,
        config: Maybe[dict[str, Any]],
        state: Maybe[dict[str, Any]],
        expected_state: Maybe[dict[str, Any]],
    ) -> int:
        # The thread's lock first (the lock order above): a pipeline pass commits with
        # this update and then inserts its memories' search rows, while a message
        # write of the thread holds the lock, its statistics row and, next, the row.
        self.lock_threads([thread_id])
        return super().update_thread(thread_id, config, state, expected_state)

    def insert_record_rows(
        self, columns: Sequence[Sequence[Any]], batch_size: int
    ) -> builtins.list[int]:
        query = st.insert_records(self.d, self.p, returning=True)
        rows = builtins.list(zip(*columns, strict=True))
        pks: builtins.list[int] = []
        with self.c.cursor() as cur:
            for i in range(0, len(rows), batch_size):
                cur.executemany(query, rows[i : i + batch_size], returning=True)
                while True:  # one result set per row, in input order
                    row = cur.fetchone()
                    assert row is not None
                    pks.append(int(row[0]))
                    if not cur.nextset():
                        break
        return pks

    def insert_chunk_columns(
        self,
        columns: Sequence[Sequence[Any]],
        vectors: Sequence[Vector | None],
        batch_size: int,
    ) -> None:
        query = st.insert_chunks(
            self.d,
            self.p,
            ["embedding", "tsv", "n_tokens"],
            ["%b::float4[]::vector", tsvector_sql(self.p), "%s"],
        )
        values = [
            (*shared, vector_param(v), *index_input(text))
            for shared, v, text in zip(
                zip(*columns, strict=True), vectors, columns[st.CHUNK_TEXT], strict=True
            )
        ]
        with self.c.cursor() as cur:
            for i in range(0, len(values), batch_size):
                cur.executemany(query, values[i : i + batch_size])
