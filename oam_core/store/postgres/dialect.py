"""The PostgreSQL dialect of the store contract (``store/backend.py``).

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
rare; pgvector 0.6 (what ``pgserver`` ships) has no iterative scans and relies on
the rerun. See docs/postgres.md.
"""

from __future__ import annotations

import builtins
import json
import threading
import time
import weakref
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, cast

import numpy as np
import psycopg
from psycopg_pool import ConnectionPool

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.records import MESSAGE, THREAD, Record, ThreadRow
from oam_core.store.backend import Backend, Predicate, StoredRow, Tx
from oam_core.store.planning import ChunkPlan, RowPlan, Vector
from oam_core.store.postgres.filter import PgFilterCompiler
from oam_core.store.postgres.fulltext import K1, B, index_input, query_words, tsquery_literal
from oam_core.store.postgres.schema import lock_key, write_meta
from oam_core.store.ranking import RRF_K
from oam_core.store.rows import (
    RECORD_COLUMNS,
    epoch,
    record_from_row,
    seq_range,
    thread_from_row,
)
from oam_core.store.ttl import iso

Conn = psycopg.Connection[Any]

_RECORD_COLS = RECORD_COLUMNS
EXACT_BELOW = 5000
"""Chunk-table size (planner estimate) under which VECTOR ranking scans exactly."""
EF_SEARCH = 64
"""Smallest ``hnsw.ef_search`` used for index queries (pgvector's default is 40)."""
SIZE_TTL_S = 5.0
"""How long the chunk-table size that picks exact vs HNSW ranking is cached."""
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


@contextmanager
def _values_checked() -> Iterator[None]:
    """Turn PostgreSQL's refusal of a value into ``ValueError``: text holding NUL
    (``\\x00``) characters, which PostgreSQL text cannot store, or JSON with a
    ``\\u0000`` escape, which jsonb cannot. The transaction is rolled back first."""
    try:
        yield
    except psycopg.DataError as exc:
        raise ValueError(
            f"PostgreSQL cannot store this value (text and JSON may not contain NUL "
            f"characters): {exc}"
        ) from None


def _distance(expr: str) -> str:
    """Cosine distance clamped to [0, 2]; NaN (a zero vector) counts as 1, as SQLite."""
    return f"LEAST(GREATEST(CASE WHEN ({expr}) = 'NaN' THEN 1.0 ELSE ({expr}) END, 0.0), 2.0)"


class PgBackend(Backend):
    """Reads, rankings and transactions over one pool and one object prefix."""

    def __init__(self, pool: ConnectionPool[Any], prefix: str, *, owns_pool: bool) -> None:
        self.pool = pool
        self.p = prefix
        self.owns_pool = owns_pool
        self.exact_below = EXACT_BELOW
        self.ef_search = EF_SEARCH
        self._size_cache: tuple[float, float] | None = None
        self._ef_by_conn: weakref.WeakKeyDictionary[Conn, int] = weakref.WeakKeyDictionary()
        self._iterative: bool | None = None  # pgvector >= 0.8 (hnsw.iterative_scan)
        self._local = threading.local()
        # lexeme -> (chunk_stats change counter when counted, rows holding it)
        self._df_cache: dict[str, tuple[int, int]] = {}

    # -- connections -------------------------------------------------------------

    def current_conn(self) -> Conn | None:
        """The connection of this thread's open store transaction, if any."""
        conn: Conn | None = getattr(self._local, "conn", None)
        return conn

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        with _values_checked(), self.pool.connection() as conn, conn.transaction():
            self._local.conn = conn
            try:
                yield PgTx(self, conn)
            finally:
                self._local.conn = None

    @contextmanager
    def reading(self) -> Iterator[Conn]:
        """A pooled connection for reads: autocommit connections (the store's own pool)
        read without BEGIN/COMMIT round trips; others in one short transaction."""
        with _values_checked(), self.pool.connection() as conn:
            if conn.autocommit:
                yield conn
            else:
                with conn.transaction():
                    yield conn

    def close(self) -> None:
        if self.owns_pool:
            self.pool.close()

    # -- row decoding --------------------------------------------------------------

    record = staticmethod(record_from_row)

    _thread = staticmethod(thread_from_row)

    # -- predicates --------------------------------------------------------------

    def where(
        self, pred: Predicate, alias: str, params: builtins.list[Any], *, records: bool
    ) -> str:
        """SQL for ``pred`` over ``alias`` (records ``r``, or chunks ``c`` joined to ``r``
        when a metadata filter is given)."""
        types = sorted(pred.record_types)
        parts = [f"{alias}.record_type = ANY(%s)"]
        params.append(types)
        parts.append(f"({alias}.expires_at IS NULL OR {alias}.expires_at > %s)")
        params.append(pred.now.timestamp())
        is_thread = records and types == [THREAD]
        for column, value in (
            ("thread_id", pred.thread_id),
            ("user_id", pred.user_id),
            ("agent_id", pred.agent_id),
        ):
            if value is NOT_SET:
                continue
            col = "id" if (is_thread and column == "thread_id") else column
            if value is None:
                parts.append(f"{alias}.{col} IS NULL")
            else:
                parts.append(f"{alias}.{col} = %s")
                params.append(value)
        if pred.metadata is None:
            parts.append("r.metadata IS NULL")
        elif pred.metadata is not NOT_SET and pred.metadata:
            comp = PgFilterCompiler()
            parts.append(comp.compile("r.meta", pred.metadata))
            params.extend(comp.params)
        return " AND ".join(parts)

    def _candidates(self, pred: Predicate) -> tuple[str, str, builtins.list[Any]]:
        params: builtins.list[Any] = []
        where = self.where(pred, "c", params, records=False)
        join = (
            f"JOIN {self.p}records r ON r.pk = c.record_pk" if pred.metadata is not NOT_SET else ""
        )
        return join, where, params

    # -- reads -------------------------------------------------------------------

    def get(self, family: str, record_id: str, record_type: str, now: datetime) -> Record | None:
        with self.reading() as conn:
            row = conn.execute(
                f"SELECT {_RECORD_COLS} FROM {self.p}records WHERE family = %s AND id = %s "
                "AND record_type = %s AND (expires_at IS NULL OR expires_at > %s)",
                (family, record_id, record_type, now.timestamp()),
            ).fetchone()
        return None if row is None else self.record(row)

    def list(self, pred: Predicate, limit: int | None) -> builtins.list[Record]:
        params: builtins.list[Any] = []
        where = self.where(pred, "r", params, records=True)
        query = f"SELECT {_RECORD_COLS} FROM {self.p}records r WHERE {where} ORDER BY pk DESC"
        if limit is not None:
            query += " LIMIT %s"
            params.append(limit)
        with self.reading() as conn:
            rows = conn.execute(query, params).fetchall()
        return [self.record(r) for r in reversed(rows)]

    def _thread_where(self) -> str:
        return (
            f"FROM {self.p}records WHERE family = 'message' AND thread_id = %s "
            "AND (expires_at IS NULL OR expires_at > %s)"
        )

    def count_thread_messages(self, thread_id: str, now: datetime) -> int:
        with self.reading() as conn:
            return self._count(conn, thread_id, now)

    def _count(self, conn: Conn, thread_id: str, now: datetime) -> int:
        row = conn.execute(
            f"SELECT count(*) {self._thread_where()}",
            (thread_id, now.timestamp()),
        ).fetchone()
        return int(row[0]) if row else 0

    def thread_messages(
        self, thread_id: str, start: int | None, end: int | None, now: datetime
    ) -> builtins.list[Record]:
        with self.reading() as conn:
            lo, hi = 0, None
            if (start is not None and start < 0) or (end is not None and end < 0):
                total = self._count(conn, thread_id, now)
                lo, hi, _ = slice(start, end).indices(total)
            else:
                lo = start or 0
                hi = end
            if hi is not None and hi <= lo:
                return []
            rows = conn.execute(
                f"SELECT {_RECORD_COLS} {self._thread_where()} "
                "ORDER BY seq_no, pk LIMIT %s OFFSET %s",
                (thread_id, now.timestamp(), None if hi is None else hi - lo, lo),
            ).fetchall()
        return [self.record(r) for r in rows]

    def thread_messages_by_seq(
        self,
        thread_id: str,
        after: int | None,
        through: int | None,
        limit: int | None,
        newest: bool,
        now: datetime,
    ) -> builtins.list[Record]:
        tail, bounds = seq_range("%s", after, through, newest)
        params = [thread_id, now.timestamp(), *bounds, limit]
        with self.reading() as conn:
            rows = conn.execute(
                f"SELECT {_RECORD_COLS} {self._thread_where()}{tail}", params
            ).fetchall()
        records = [self.record(r) for r in rows]
        return records[::-1] if newest else records

    def get_thread(self, thread_id: str) -> ThreadRow | None:
        with self.reading() as conn:
            row = conn.execute(
                f"SELECT id, user_id, agent_id, metadata, config, state, created_at "
                f"FROM {self.p}records WHERE family = 'thread' AND id = %s",
                (thread_id,),
            ).fetchone()
        return None if row is None else self._thread(row)

    def list_threads(
        self, user_id: Maybe[str | None], agent_id: Maybe[str | None]
    ) -> builtins.list[ThreadRow]:
        parts, params = ["family = 'thread'"], []
        for column, value in (("user_id", user_id), ("agent_id", agent_id)):
            if value is None:
                parts.append(f"{column} IS NULL")
            elif value is not NOT_SET:
                parts.append(f"{column} = %s")
                params.append(value)
        with self.reading() as conn:
            rows = conn.execute(
                f"SELECT id, user_id, agent_id, metadata, config, state, created_at "
                f"FROM {self.p}records WHERE {' AND '.join(parts)} ORDER BY pk",
                params,
            ).fetchall()
        return [self._thread(r) for r in rows]

    def load(self, keys: Sequence[Hashable]) -> dict[Hashable, Record]:
        if not keys:
            return {}
        with self.reading() as conn:
            rows = conn.execute(
                f"SELECT {_RECORD_COLS} FROM {self.p}records WHERE pk = ANY(%s)",
                (list(keys),),
            ).fetchall()
        return {r[0]: self.record(r) for r in rows}

    def unembedded(self, limit: int | None) -> builtins.list[tuple[str, str]]:
        with self.reading() as conn:
            rows = conn.execute(
                f"SELECT family, id FROM {self.p}records WHERE pk IN (SELECT record_pk FROM "
                f"{self.p}chunks WHERE embedding IS NULL AND text IS NOT NULL AND text <> '') "
                "ORDER BY pk LIMIT %s",
                (limit,),
            ).fetchall()
        return [(str(f), str(i)) for f, i in rows]

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
        with self.reading() as conn:
            approximate = self._size(conn) >= self.exact_below
            return [self._rank_one(conn, q, k, pred, approximate) for q in queries]

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
        join, where, params = self._candidates(pred)
        qtext = vector_param(query)
        dist = _distance("c.embedding <=> qv.v")
        if approximate:
            fetch = 4 * k + 10  # chunks: records often have two (text + context row)
            self._set_ef_search(conn, min(1000, max(self.ef_search, fetch)))
            # The query vector is bound once, as an InitPlan the HNSW scan orders by.
            inner = (
                f"SELECT c.record_pk, c.embedding <=> (SELECT v FROM qv) AS d "
                f"FROM {self.p}chunks c {join} WHERE {where} AND c.embedding IS NOT NULL "
                "ORDER BY c.embedding <=> (SELECT v FROM qv) LIMIT %s"
            )
            rows = conn.execute(
                "WITH qv AS MATERIALIZED (SELECT %b::float4[]::vector AS v) "
                f"SELECT record_pk, min({_distance('d')}) AS dm FROM ({inner}) s "
                "GROUP BY record_pk ORDER BY dm, record_pk LIMIT %s",
                [qtext, *params, fetch, k],
            ).fetchall()
            if len(rows) >= k:
                return [(int(pk), float(d)) for pk, d in rows]
        rows = conn.execute(
            "WITH qv AS MATERIALIZED (SELECT %b::float4[]::vector AS v) "
            f"SELECT c.record_pk, min({dist}) AS dm FROM qv, {self.p}chunks c {join} "
            f"WHERE {where} AND c.embedding IS NOT NULL "
            "GROUP BY c.record_pk ORDER BY dm, c.record_pk LIMIT %s",
            [qtext, *params, k],
        ).fetchall()
        return [(int(pk), float(d)) for pk, d in rows]

    # -- KEYWORD -----------------------------------------------------------------

    def _lexemes(self, conn: Conn, words: Sequence[str]) -> builtins.list[str]:
        rows = conn.execute(
            f"SELECT w, tsvector_to_array(to_tsvector('{self.p}oam_fts', w)) "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS u(w, i) ORDER BY i",
            (list(words),),
        ).fetchall()
        out: builtins.list[str] = []
        for _w, lexemes in rows:
            for lx in lexemes or []:
                if lx not in out:
                    out.append(lx)
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
        with self.reading() as conn:
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
                join, where, params = self._candidates(pred)
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
        join, where, params = self._candidates(pred)
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

    # -- HYBRID ------------------------------------------------------------------

    def fuse(
        self, lists: Sequence[Sequence[Hashable]], rrf_k: int = RRF_K
    ) -> builtins.list[tuple[Hashable, float]]:
        """Reciprocal rank fusion of ranked key lists in SQL (``ranking.rrf``'s formula
        ``sum 1 / (k + rank)``), best first; ties keep first-seen order like ``rrf``."""
        keys: builtins.list[int] = []
        list_no: builtins.list[int] = []
        ranks: builtins.list[int] = []
        for i, lst in enumerate(lists):
            for rank, key in enumerate(lst, start=1):
                keys.append(int(cast(Any, key)))
                list_no.append(i)
                ranks.append(rank)
        if not keys:
            return []
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT key, sum(1.0::float8 / (%s + rank)) AS score, "
                "min(array[list_no, rank]) AS first_seen "
                "FROM unnest(%s::bigint[], %s::int[], %s::int[]) AS u(key, list_no, rank) "
                "GROUP BY key ORDER BY score DESC, first_seen",
                (rrf_k, keys, list_no, ranks),
            ).fetchall()
        return [(int(key), float(score)) for key, score, _ in rows]


class PgTx(Tx):
    """Write primitives over one connection inside an open transaction."""

    def __init__(self, backend: PgBackend, conn: Conn) -> None:
        self.b = backend
        self.c = conn
        self.p = backend.p

    def _lock_threads(self, thread_ids: Sequence[str | None]) -> None:
        for key in sorted({lock_key("oam-thread", self.p, t or "") for t in thread_ids}):
            self.c.execute("SELECT pg_advisory_xact_lock(%s)", (key,))

    def existing_ids(self, family: str, ids: Sequence[str]) -> set[str]:
        rows = self.c.execute(
            f"SELECT id FROM {self.p}records WHERE family = %s AND id = ANY(%s)",
            (family, list(ids)),
        ).fetchall()
        return {r[0] for r in rows}

    def hold_thread(self, thread_id: str) -> bool:
        # The thread's advisory lock: delete_thread and delete_actor_scope take it
        # before deleting, so they wait for this transaction (and it for them).
        self._lock_threads([thread_id])
        return bool(self.existing_ids(THREAD, [thread_id]))

    def insert(self, plans: Sequence[RowPlan], created_at: datetime, batch_size: int) -> None:
        created = iso(created_at)
        message_threads = [p.thread_id for p in plans if p.family == MESSAGE]
        if message_threads:
            self._lock_threads(message_threads)
        next_seq: dict[str | None, int] = {}
        rows = []
        for plan in plans:
            seq = None
            if plan.family == MESSAGE:
                if plan.thread_id not in next_seq:
                    next_seq[plan.thread_id] = self._next_seq(plan.thread_id)
                seq = next_seq[plan.thread_id]
                next_seq[plan.thread_id] = seq + 1
            rows.append(
                (
                    plan.family,
                    plan.id,
                    plan.record_type,
                    plan.content,
                    plan.role,
                    seq,
                    plan.thread_id,
                    plan.user_id,
                    plan.agent_id,
                    plan.timestamp,
                    plan.metadata,
                    created,
                    epoch(plan.expires_at),
                )
            )
        query = (
            f"INSERT INTO {self.p}records (family, id, record_type, content, role, seq_no, "
            "thread_id, user_id, agent_id, event_ts, metadata, created_at, expires_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING pk"
        )
        pks: builtins.list[int] = []
        try:
            with self.c.cursor() as cur:
                for i in range(0, len(rows), batch_size):
                    cur.executemany(query, rows[i : i + batch_size], returning=True)
                    while True:  # one result set per row, in input order
                        row = cur.fetchone()
                        assert row is not None
                        pks.append(int(row[0]))
                        if not cur.nextset():
                            break
        except psycopg.errors.UniqueViolation as exc:
            raise ValueError(f"record ids already exist (written concurrently): {exc}") from None
        chunk_rows = [
            self._chunk_row(
                pk,
                plan.record_type,
                seq,
                chunk,
                plan.chunk_scope,
                epoch(plan.expires_at),
            )
            for plan, pk in zip(plans, pks, strict=True)
            for seq, chunk in enumerate(plan.chunks)
        ]
        self._insert_chunks(chunk_rows, batch_size)
        for thread_id, following in next_seq.items():
            if thread_id is not None:
                self.c.execute(
                    f"UPDATE {self.p}records SET seq_no = %s WHERE family = 'thread' AND id = %s",
                    (following - 1, thread_id),
                )

    def _next_seq(self, thread_id: str | None) -> int:
        """The next message ``seq_no`` of a thread (under its advisory lock): after
        every message it holds and after the thread row's high-water mark, so a number
        freed by a delete is never handed out again (the pipeline's watermark relies
        on it)."""
        row = self.c.execute(
            f"SELECT GREATEST(COALESCE(MAX(seq_no), -1), COALESCE((SELECT seq_no FROM "
            f"{self.p}records WHERE family = 'thread' AND id = %s), -1)) + 1 "
            f"FROM {self.p}records "
            "WHERE family = 'message' AND thread_id IS NOT DISTINCT FROM %s",
            (thread_id, thread_id),
        ).fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _chunk_row(
        record_pk: int,
        record_type: str,
        seq: int,
        chunk: ChunkPlan,
        scope: tuple[str | None, str | None, str | None],
        expires_at: float | None,
    ) -> tuple[Any, ...]:
        words, n_tokens = index_input(chunk.text)
        return (
            record_pk,
            record_type,
            seq,
            chunk.text,
            vector_param(chunk.vector),
            *scope,
            expires_at,
            words,
            n_tokens,
        )

    def _insert_chunks(self, rows: Sequence[tuple[Any, ...]], batch_size: int) -> None:
        query = (
            f"INSERT INTO {self.p}chunks (record_pk, record_type, seq, text, embedding, "
            "thread_id, user_id, agent_id, expires_at, tsv, n_tokens) VALUES "
            f"(%s, %s, %s, %s, %b::float4[]::vector, %s, %s, %s, %s, to_tsvector('{self.p}oam_fts', %s), %s)"
        )
        with self.c.cursor() as cur:
            for i in range(0, len(rows), batch_size):
                cur.executemany(query, rows[i : i + batch_size])

    def fetch(self, family: str, record_id: str) -> StoredRow | None:
        row = self.c.execute(
            f"SELECT pk, record_type, content, event_ts, metadata, created_at, thread_id, "
            f"user_id, agent_id FROM {self.p}records WHERE family = %s AND id = %s FOR UPDATE",
            (family, record_id),
        ).fetchone()
        if row is None:
            return None
        pk, rtype, content, ts, meta, created, tid, uid, aid = row
        if rtype == "user_profile":
            scope: tuple[str | None, str | None, str | None] = (None, record_id, None)
        elif rtype == "agent_profile":
            scope = (None, None, record_id)
        else:
            scope = (tid, uid, aid)
        return StoredRow(
            key=pk,
            family=family,
            record_type=rtype,
            content=content,
            timestamp=ts,
            metadata=json.loads(meta) if meta is not None else None,
            created_at=datetime.fromisoformat(created),
            scope=scope,
        )

    def chunk_texts(self, key: Hashable) -> builtins.list[str | None]:
        return [
            r[0]
            for r in self.c.execute(
                f"SELECT text FROM {self.p}chunks WHERE record_pk = %s ORDER BY seq",
                (key,),
            )
        ]

    def replace_chunks(self, row: StoredRow, chunks: Sequence[ChunkPlan]) -> None:
        found = self.c.execute(
            f"SELECT expires_at FROM {self.p}records WHERE pk = %s",
            (row.key,),
        ).fetchone()
        expires = found[0] if found else None
        self.c.execute(f"DELETE FROM {self.p}chunks WHERE record_pk = %s", (row.key,))
        rows = [
            self._chunk_row(int(cast(Any, row.key)), row.record_type, seq, c, row.scope, expires)
            for seq, c in enumerate(chunks)
        ]
        self._insert_chunks(rows, 256)

    def update_row(self, row: StoredRow, fields: dict[str, Any]) -> None:
        columns = {
            "content": "content",
            "metadata": "metadata",
            "timestamp": "event_ts",
            "expires_at": "expires_at",
        }
        values = {columns[k]: (epoch(v) if k == "expires_at" else v) for k, v in fields.items()}
        sets = ", ".join(f"{col} = %s" for col in values)
        self.c.execute(
            f"UPDATE {self.p}records SET {sets} WHERE pk = %s",
            [*values.values(), row.key],
        )
        if "expires_at" in values:
            self.c.execute(
                f"UPDATE {self.p}chunks SET expires_at = %s WHERE record_pk = %s",
                (values["expires_at"], row.key),
            )

    def delete_record(
        self, family: str, record_id: str, record_type: str | None, thread_id: Maybe[str]
    ) -> int:
        query = f"DELETE FROM {self.p}records WHERE family = %s AND id = %s"
        params: builtins.list[Any] = [family, record_id]
        if record_type is not None:
            query += " AND record_type = %s"
            params.append(record_type)
        if thread_id is not NOT_SET:
            query += " AND thread_id = %s"
            params.append(thread_id)
        return self.c.execute(query, params).rowcount

    def delete_thread(self, thread_id: str) -> int:
        self._lock_threads([thread_id])
        n = self.c.execute(
            f"DELETE FROM {self.p}records WHERE family = 'thread' AND id = %s",
            (thread_id,),
        ).rowcount
        self.c.execute(
            f"DELETE FROM {self.p}records WHERE family IN ('message', 'memory') AND thread_id = %s",
            (thread_id,),
        )
        return n

    def delete_actor_scope(self, column: str, actor_id: str) -> None:
        if column not in ("user_id", "agent_id"):
            raise ValueError(f"unknown scope column {column!r}")
        threads = [
            r[0]
            for r in self.c.execute(
                f"SELECT id FROM {self.p}records WHERE family = 'thread' AND {column} = %s",
                (actor_id,),
            )
        ]
        self._lock_threads(threads)  # all at once, in key order: no lock-order deadlock
        for tid in threads:
            self.delete_thread(tid)
        self.c.execute(
            f"DELETE FROM {self.p}records WHERE family IN ('message', 'memory') AND {column} = %s",
            (actor_id,),
        )

    def insert_thread(self, row: ThreadRow) -> None:
        try:
            self.c.execute(
                f"INSERT INTO {self.p}records (family, id, record_type, user_id, agent_id, "
                "metadata, created_at, config, state) "
                "VALUES ('thread', %s, 'thread', %s, %s, %s, %s, %s, %s)",
                (
                    row.thread_id,
                    row.user_id,
                    row.agent_id,
                    json.dumps(row.metadata, ensure_ascii=False)
                    if row.metadata is not None
                    else None,
                    row.created_at,
                    json.dumps(row.config),
                    json.dumps(row.state),
                ),
            )
        except psycopg.errors.UniqueViolation:
            raise ValueError(f"thread {row.thread_id!r} already exists") from None

    def update_thread(
        self,
        thread_id: str,
        config: Maybe[dict[str, Any]],
        state: Maybe[dict[str, Any]],
        expected_state: Maybe[dict[str, Any]],
    ) -> int:
        row = self.c.execute(
            f"SELECT state FROM {self.p}records WHERE family = 'thread' AND id = %s FOR UPDATE",
            (thread_id,),
        ).fetchone()
        if row is None:
            return 0
        if expected_state is not NOT_SET and json.loads(row[0] or "{}") != expected_state:
            return 0
        sets, params = [], []
        if config is not NOT_SET:
            sets.append("config = %s")
            params.append(json.dumps(config))
        if state is not NOT_SET:
            sets.append("state = %s")
            params.append(json.dumps(state))
        if not sets:
            return 1
        return self.c.execute(
            f"UPDATE {self.p}records SET {', '.join(sets)} WHERE family = 'thread' AND id = %s",
            [*params, thread_id],
        ).rowcount

    def purge(self, now: datetime) -> int:
        return self.c.execute(
            f"DELETE FROM {self.p}records WHERE expires_at IS NOT NULL AND expires_at <= %s",
            (now.timestamp(),),
        ).rowcount

    def write_meta(self, values: dict[str, str]) -> None:
        write_meta(self.c, self.p, values)
