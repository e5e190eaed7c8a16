"""``SQLiteMemoryStore``: the embedded default back end (SPEC §1 [oam]; DESIGN table).

stdlib ``sqlite3`` in WAL mode; one connection guarded by a lock, so one store object
is safe to share between threads of a process, and several processes may open the
same file (SQLite serialises their writers). VECTOR ranks from an in-process mirror
of the chunk vectors (``store/vectorindex.py``: exact for small or filtered candidate
sets, an IVF index with exact re-ranking for large ones; it catches up with every
committed write of any connection before each search); KEYWORD ranks with FTS5 BM25.
Scope, type and expiry filters run on the mirror's arrays, metadata filters in SQL,
all before the top-k cut.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import threading
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import numpy as np
import regex

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.embedder import IEmbedder
from oam_core.apis.records import MESSAGE, THREAD, Record, ThreadRow
from oam_core.rerankers import IReranker
from oam_core.store import sqlite_schema
from oam_core.store.backend import Backend, Predicate, StoredRow, Tx
from oam_core.store.base import OracleMemoryStore
from oam_core.store.identity import META_KEY as IDENTITY_META_KEY
from oam_core.store.options import MemoryRetentionConfig, SearchStrategy
from oam_core.store.planning import ChunkPlan, RowPlan, Vector
from oam_core.store.rows import (
    RECORD_COLUMNS,
    epoch,
    record_from_row,
    seq_range,
    thread_from_row,
)
from oam_core.store.sqlite_filter import SQLiteFilterCompiler
from oam_core.store.sqlite_schema import SCHEMA_VERSION, table_prefix
from oam_core.store.text import index_text, keyword_terms
from oam_core.store.ttl import Clock, iso
from oam_core.store.vectorindex import LOG_KEEP, VectorIndex, index_path

_TERM = regex.compile(r"[\p{L}\p{N}]+")
_RECORD_COLS = RECORD_COLUMNS


def _fts_text(text: str | None) -> str | None:
    """``oam_fts_text(text)``: what the FTS index holds for a chunk's text."""
    return index_text(text) if isinstance(text, str) else text


def _blob(vector: Vector | None) -> Any:
    if vector is None:
        return None
    if vector.dtype == _F4 and vector.flags.c_contiguous:
        return vector  # bound as a BLOB through the buffer protocol: no copy
    return np.asarray(vector, dtype=_F4).tobytes()


_F4 = np.dtype("<f4")


class SQLiteMemoryStore(OracleMemoryStore):
    """Memory store in one SQLite file, or in memory (SPEC §1, §3; the default).

    Args:
        path: Database file path, or ``":memory:"`` for a private in-memory store.
        embedder: See ``OracleMemoryStore``.
        vector_dim: See ``OracleMemoryStore``; checked against the dimension stored
            in the file.
        search_strategy: ``SearchStrategy`` or its name; None = the strategy stored
            in the file, HYBRID for a new one (the best of the three on the LoCoMo
            benchmark, docs/store.md#search-strategies). Without an embedder HYBRID
            ranks text queries by their keywords alone. SQLite keeps vectors and a
            full-text index for every store, so any strategy opens any file, and the
            one given is recorded (as on PostgreSQL; docs/postgres.md).
        memory_retention_config: TTL defaults; persisted in the file. When omitted,
            the stored config is used.
        memory_store_id: Prefix of every table, so several stores share one file
            (letter first, letters/digits/underscore, at most 16 characters).
        clock: Zero-argument callable returning an aware datetime (default UTC now).
        reranker: See ``OracleMemoryStore`` (docs/retrieval.md).
        allow_embedder_change: See ``OracleMemoryStore``.

    Raises:
        ValueError: for a bad ``memory_store_id``, a dimension different from the
            one stored in the file, an embedder other than the one recorded in the
            file, a schema version this release cannot read, or any
            ``OracleMemoryStore`` argument error.
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        embedder: IEmbedder | None = None,
        vector_dim: int | None = None,
        search_strategy: SearchStrategy | str | None = None,
        memory_retention_config: MemoryRetentionConfig | None = None,
        memory_store_id: str | None = None,
        clock: Clock | None = None,
        reranker: IReranker | None = None,
        allow_embedder_change: bool = False,
    ) -> None:
        super().__init__(
            embedder=embedder,
            vector_dim=vector_dim,
            search_strategy=SearchStrategy.HYBRID if search_strategy is None else search_strategy,
            memory_retention_config=memory_retention_config,
            clock=clock,
            reranker=reranker,
            allow_embedder_change=allow_embedder_change,
        )
        if not isinstance(path, (str, Path)):
            raise ValueError(f"path must be a str or pathlib.Path, got {path!r}")
        self.path = str(path)
        self.memory_store_id = memory_store_id
        self._impl = _SQLiteBackend(self.path, table_prefix(memory_store_id))
        self._open_schema(memory_retention_config, search_strategy is not None)

    @property
    def _backend(self) -> Backend:
        return self._impl

    def _open_schema(self, retention: MemoryRetentionConfig | None, strategy_given: bool) -> None:
        with self._impl.lock:
            meta = _SQLiteTx(self._impl).meta()
        version = int(meta.get("schema_version", SCHEMA_VERSION))
        if version > SCHEMA_VERSION:
            raise ValueError(
                f"{self.path} holds schema version {version}; this oam reads up to "
                f"{SCHEMA_VERSION}. Upgrade oam."
            )
        self._adopt_embedder_identity(meta.get(IDENTITY_META_KEY), self.path)
        stored_dim = meta.get("vector_dim")
        if (
            stored_dim is not None
            and self.vector_dim is not None
            and int(stored_dim) != self.vector_dim
        ):
            raise ValueError(
                f"{self.path} stores vectors of dimension {stored_dim}, but this store "
                f"was opened with dimension {self.vector_dim}"
            )
        if stored_dim is not None:
            self.vector_dim = int(stored_dim)
        if not strategy_given and "search_strategy" in meta:
            self.search_strategy = SearchStrategy.parse(meta["search_strategy"])
        if retention is None and "retention" in meta:
            self.memory_retention_config = MemoryRetentionConfig(**json.loads(meta["retention"]))
        wanted = {
            "schema_version": str(self._impl.schema_version),
            "search_strategy": self.search_strategy.value,
            "retention": json.dumps(asdict(self.memory_retention_config)),
        }
        if self.vector_dim is not None:
            wanted["vector_dim"] = str(self.vector_dim)
        changed = {k: v for k, v in wanted.items() if meta.get(k) != v}
        if changed and not self._impl.read_only:  # a read-only file stays readable
            with self._impl.transaction() as tx:
                assert isinstance(tx, _SQLiteTx)
                for key, value in changed.items():
                    tx.set_meta(key, value)

    def _remember_vector_dim(self, dim: int) -> None:
        super()._remember_vector_dim(dim)
        self._impl.conn.execute(
            f"INSERT OR REPLACE INTO {self._impl.p}oam_meta (key, value) VALUES ('vector_dim', ?)",
            (str(dim),),
        )


class _SQLiteBackend(Backend):
    def __init__(self, path: str, prefix: str) -> None:
        self.p = prefix
        self.lock = threading.RLock()
        try:
            self.conn = self._connect(path)
            self.conn.execute("SELECT name FROM sqlite_master").fetchall()
        except sqlite3.OperationalError as exc:
            if "readonly" not in str(exc) or path == ":memory:":
                raise sqlite3.OperationalError(
                    f"cannot open SQLite database {path!r}: {exc}"
                ) from exc
            # A WAL file in a read-only place: read it as an immutable snapshot.
            self.conn = self._connect(f"file:{Path(path).resolve()}?immutable=1", uri=True)
        try:
            with self.lock:
                self.schema_version = sqlite_schema.prepare(self.conn, prefix)
        except BaseException:
            self.conn.close()
            raise
        # A file that could not be upgraded (read-only place) is read as it is.
        self.read_only = self.schema_version < SCHEMA_VERSION
        self.index = VectorIndex(prefix, index_path(path, prefix))
        # Keyword statistics: (data_version, total_changes) -> {term: capped row count}
        self._term_rows: tuple[tuple[int, int], dict[str, int]] = ((-1, -1), {})

    @staticmethod
    def _connect(target: str, *, uri: bool = False) -> sqlite3.Connection:
        conn = sqlite3.connect(
            target, check_same_thread=False, isolation_level=None, timeout=30, uri=uri
        )
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.create_function(sqlite_schema.FTS_FUNCTION, 1, _fts_text, deterministic=True)
        if target != ":memory:" and not uri:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield _SQLiteTx(self)
                changes = f"{self.p}chunk_changes"
                self.conn.execute(
                    f"DELETE FROM {changes} WHERE seq <= (SELECT max(seq) FROM {changes}) - ?",
                    (LOG_KEEP,),
                )
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def close(self) -> None:
        with self.lock:
            try:
                self.index.save()
            finally:
                self.conn.close()

    # -- row decoding -----------------------------------------------------------

    record = staticmethod(record_from_row)

    # -- predicates -------------------------------------------------------------

    def where(
        self, pred: Predicate, alias: str, params: builtins.list[Any], *, records: bool
    ) -> str:
        """SQL for ``pred`` over ``alias`` (records r or chunks c joined to records r)."""
        types = sorted(pred.record_types)
        parts = [f"{alias}.record_type IN ({', '.join('?' * len(types))})"]
        params.extend(types)
        parts.append(f"({alias}.expires_at IS NULL OR {alias}.expires_at > ?)")
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
                parts.append(f"{alias}.{col} = ?")
                params.append(value)
        if pred.metadata is None:
            parts.append("r.metadata IS NULL")
        elif pred.metadata is not NOT_SET and pred.metadata:
            comp = SQLiteFilterCompiler()
            parts.append(comp.compile("r.metadata", pred.metadata))
            params.extend(comp.params)
        return " AND ".join(parts)

    # -- reads ------------------------------------------------------------------

    def get(self, family: str, record_id: str, record_type: str, now: datetime) -> Record | None:
        with self.lock:
            row = self.conn.execute(
                f"SELECT {_RECORD_COLS} FROM {self.p}records WHERE family = ? AND id = ? "
                "AND record_type = ? AND (expires_at IS NULL OR expires_at > ?)",
                (family, record_id, record_type, now.timestamp()),
            ).fetchone()
        return None if row is None else self.record(row)

    def list(self, pred: Predicate, limit: int | None) -> builtins.list[Record]:
        params: builtins.list[Any] = []
        where = self.where(pred, "r", params, records=True)
        sql = f"SELECT {_RECORD_COLS} FROM {self.p}records r WHERE {where} ORDER BY pk DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self.lock:
            rows = self.conn.execute(sql, params).fetchall()
        return [self.record(r) for r in reversed(rows)]

    def _thread_where(self) -> str:
        return (
            f"FROM {self.p}records WHERE family = 'message' AND thread_id = ? "
            "AND (expires_at IS NULL OR expires_at > ?)"
        )

    def count_thread_messages(self, thread_id: str, now: datetime) -> int:
        with self.lock:
            return int(
                self.conn.execute(
                    f"SELECT count(*) {self._thread_where()}", (thread_id, now.timestamp())
                ).fetchone()[0]
            )

    def thread_messages(
        self, thread_id: str, start: int | None, end: int | None, now: datetime
    ) -> builtins.list[Record]:
        with self.lock:
            lo, hi = 0, None
            if (start is not None and start < 0) or (end is not None and end < 0):
                total = self.count_thread_messages(thread_id, now)
                lo, hi, _ = slice(start, end).indices(total)
            else:
                lo = start or 0
                hi = end
            if hi is not None and hi <= lo:
                return []
            limit = -1 if hi is None else hi - lo
            rows = self.conn.execute(
                f"SELECT {_RECORD_COLS} {self._thread_where()} ORDER BY seq_no, pk LIMIT ? OFFSET ?",
                (thread_id, now.timestamp(), limit, lo),
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
        tail, bounds = seq_range("?", after, through, newest)
        params = [thread_id, now.timestamp(), *bounds, -1 if limit is None else limit]
        with self.lock:
            rows = self.conn.execute(
                f"SELECT {_RECORD_COLS} {self._thread_where()}{tail}", params
            ).fetchall()
        records = [self.record(r) for r in rows]
        return records[::-1] if newest else records

    def get_thread(self, thread_id: str) -> ThreadRow | None:
        with self.lock:
            row = self.conn.execute(
                f"SELECT id, user_id, agent_id, metadata, config, state, created_at "
                f"FROM {self.p}records WHERE family = 'thread' AND id = ?",
                (thread_id,),
            ).fetchone()
        return None if row is None else self._thread(row)

    _thread = staticmethod(thread_from_row)

    def list_threads(
        self, user_id: Maybe[str | None], agent_id: Maybe[str | None]
    ) -> builtins.list[ThreadRow]:
        parts, params = ["family = 'thread'"], []
        for column, value in (("user_id", user_id), ("agent_id", agent_id)):
            if value is None:
                parts.append(f"{column} IS NULL")
            elif value is not NOT_SET:
                parts.append(f"{column} = ?")
                params.append(value)
        with self.lock:
            rows = self.conn.execute(
                f"SELECT id, user_id, agent_id, metadata, config, state, created_at "
                f"FROM {self.p}records WHERE {' AND '.join(parts)} ORDER BY pk",
                params,
            ).fetchall()
        return [self._thread(r) for r in rows]

    def load(self, keys: Sequence[Hashable]) -> dict[Hashable, Record]:
        out: dict[Hashable, Record] = {}
        keys = list(keys)
        with self.lock:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                rows = self.conn.execute(
                    f"SELECT {_RECORD_COLS} FROM {self.p}records WHERE pk IN "
                    f"({', '.join('?' * len(part))})",
                    part,
                ).fetchall()
                out.update({r[0]: self.record(r) for r in rows})
        return out

    def unembedded(self, limit: int | None) -> builtins.list[tuple[str, str]]:
        with self.lock:
            rows = self.conn.execute(
                f"SELECT family, id FROM {self.p}records WHERE pk IN (SELECT record_pk FROM "
                f"{self.p}chunks WHERE has_vector = 0 AND text IS NOT NULL AND text != '') "
                "ORDER BY pk LIMIT ?",
                (-1 if limit is None else limit,),
            ).fetchall()
        return [(str(f), str(i)) for f, i in rows]

    # -- ranking ----------------------------------------------------------------

    def _candidates(self, pred: Predicate) -> tuple[str, str, builtins.list[Any]]:
        """``(join, where, params)`` restricting chunks ``c`` to ``pred``."""
        params: builtins.list[Any] = []
        where = self.where(pred, "c", params, records=False)
        join = (
            f"JOIN {self.p}records r ON r.pk = c.record_pk" if pred.metadata is not NOT_SET else ""
        )
        return join, where, params

    def rank_vector(
        self, queries: Sequence[Vector], k: int, pred: Predicate
    ) -> builtins.list[builtins.list[tuple[Hashable, float]]]:
        q = np.stack([np.asarray(v, dtype=np.float32) for v in queries])
        qn = np.linalg.norm(q, axis=1, keepdims=True)
        q = np.divide(q, qn, out=np.zeros_like(q), where=qn > 0)
        scopes = {
            name: value
            for name, value in (
                ("thread", pred.thread_id),
                ("user", pred.user_id),
                ("agent", pred.agent_id),
            )
            if value is not NOT_SET
        }
        with self.lock:
            began = not self.conn.in_transaction
            if began:  # one snapshot for the catch-up and the metadata candidates
                self.conn.execute("BEGIN")
            try:
                self.index.sync(self.conn)
                allowed = None
                if pred.metadata is not NOT_SET:
                    join, where, params = self._candidates(pred)
                    allowed = np.fromiter(
                        (
                            r[0]
                            for r in self.conn.execute(
                                f"SELECT c.pk FROM {self.p}chunks c {join} "
                                f"WHERE {where} AND c.has_vector = 1",
                                params,
                            )
                        ),
                        dtype=np.int64,
                    )
            finally:
                if began:
                    self.conn.execute("COMMIT")
            rows, mask = self.index.candidates(
                pred.record_types, scopes, pred.now.timestamp(), allowed
            )
            ranked = self.index.rank(q, k, rows, mask)
        return [[(rpk, d) for rpk, d in lst] for lst in ranked]

    def rank_keyword(
        self, terms: Sequence[str], k: int, pred: Predicate
    ) -> builtins.list[tuple[Hashable, float]]:
        if self.schema_version >= 2:  # a read-only version-1 file indexed plain words
            terms = keyword_terms(terms)
        terms = [t for t in terms if _TERM.fullmatch(t)]
        if not terms:
            return []
        with self.lock:
            informative, common = self._split_terms(terms)
            if not informative:
                return []
            out = self._ranked(_or(informative), k, pred)
            if common and len(out) < k:
                # Rows matching only very common terms: BM25 scores them ~0, so they
                # follow the ranked ones unranked, in insertion order.
                seen = {rpk for rpk, _ in out}
                rest = self._unranked(_or(common), k + len(seen), pred)
                out += [(int(r), 0.0) for r in rest if r not in seen][: k - len(out)]
        return out

    def _unranked(self, match: str, limit: int, pred: Predicate) -> builtins.list[int]:
        """The first ``limit`` record pks, in pk order, with a chunk passing ``pred`` that
        matches ``match`` (terms in more than half of the rows). Unscoped, chunks are
        walked in record order and each is looked up in the index, so the walk stops
        after about ``2 * limit`` chunks; scoped to a user, agent or thread, the scope's
        chunks are intersected with the index's match list instead."""
        fts = f"{self.p}chunks_fts"
        join, where, params = self._candidates(pred)
        scoped = any(v is not NOT_SET for v in (pred.user_id, pred.agent_id, pred.thread_id))
        matches = (
            f"c.pk IN (SELECT rowid FROM {fts} WHERE {fts} MATCH ?)"
            if scoped
            else f"EXISTS (SELECT 1 FROM {fts} f WHERE {fts} MATCH ? AND f.rowid = c.pk)"
        )
        rows = self.conn.execute(
            f"SELECT DISTINCT c.record_pk FROM {self.p}chunks c {join} "
            f"WHERE {matches} AND {where} ORDER BY c.record_pk LIMIT ?",
            [match, *params, limit],
        ).fetchall()
        return [int(r) for (r,) in rows]

    def _ranked(self, match: str, k: int, pred: Predicate) -> builtins.list[tuple[Hashable, float]]:
        """Up to ``k`` ``(record pk, BM25 of its best chunk)`` pairs for the FTS5 query
        ``match`` among chunks passing ``pred``, best first, ties by record pk.

        FTS5 ranks every matching row (as a bare ``ORDER BY rank`` query does); the
        rows are then read in rank order, in growing batches, and only those are
        checked against ``pred``, until ``k`` records are found and the next row
        scores worse than the k-th.
        """
        fts = f"{self.p}chunks_fts"
        join, where, params = self._candidates(pred)
        scope_sql = f"SELECT c.pk, c.record_pk FROM {self.p}chunks c {join} WHERE c.pk IN ({{}}) AND {where}"
        best: dict[int, float] = {}
        bound: float | None = None  # the k-th record's score, once k are found
        cursor = self.conn.execute(
            f"SELECT rowid, rank FROM {fts} WHERE {fts} MATCH ? ORDER BY rank", (match,)
        )
        try:
            size, done = 64, False
            while not done and (rows := cursor.fetchmany(size)):
                size = min(4 * size, 4096)
                if bound is not None and rows[0][1] > bound:
                    break
                in_scope = dict(
                    self.conn.execute(
                        scope_sql.format(", ".join("?" * len(rows))),
                        [*(pk for pk, _ in rows), *params],
                    ).fetchall()
                )
                for pk, score in rows:
                    if bound is not None and score > bound:
                        done = True
                        break
                    rpk = in_scope.get(pk)
                    if rpk is not None and rpk not in best:
                        best[rpk] = score
                        if len(best) == k:
                            bound = score
        finally:
            cursor.close()
        ranked = sorted(best.items(), key=lambda kv: (kv[1], kv[0]))[:k]
        return [(int(rpk), float(-s)) for rpk, s in ranked]

    def _split_terms(self, terms: Sequence[str]) -> tuple[builtins.list[str], builtins.list[str]]:
        """Split terms into ``(informative, common)``: a common term is found in more
        than half of the search rows (a speaker's name in every turn, say). FTS5's BM25
        gives it an IDF of about 0, so it changes no score, but ranking it would make
        nearly every row a candidate. Terms found nowhere are dropped. If no found term
        is informative, the common ones are ranked (their BM25 still orders by term
        frequency and row length).

        Costs: the row count comes from the index's own size table, each term's
        count stops at half the rows, and the counts are kept until the file changes
        (``PRAGMA data_version`` for other connections, ``total_changes`` for this
        one), so no query scans the chunk table.
        """
        fts = f"{self.p}chunks_fts"
        version = (
            int(self.conn.execute("PRAGMA data_version").fetchone()[0]),
            self.conn.total_changes,
        )
        if self._term_rows[0] != version or len(self._term_rows[1]) > 4096:
            total = self.conn.execute(f"SELECT count(*) FROM {fts}_docsize").fetchone()[0]
            self._term_rows = (version, {"": int(total)})  # "" is never a term
        counts = self._term_rows[1]
        half = counts[""] // 2
        informative: builtins.list[str] = []
        common: builtins.list[str] = []
        for t in terms:
            df = counts.get(t)
            if df is None:
                df = counts[t] = self.conn.execute(
                    f"SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH ? LIMIT ?)",
                    (_or([t]), half + 1),
                ).fetchone()[0]
            if df:
                (common if df > half else informative).append(t)
        return (informative, common) if informative else (common, [])


def _or(terms: Sequence[str]) -> str:
    """An FTS5 query matching any of ``terms`` (plain word tokens, quoted)."""
    return " OR ".join(f'"{t}"' for t in terms)


class _SQLiteTx(Tx):
    def __init__(self, backend: _SQLiteBackend) -> None:
        self.b = backend
        self.c = backend.conn
        self.p = backend.p

    def meta(self) -> dict[str, str]:
        return dict(self.c.execute(f"SELECT key, value FROM {self.p}oam_meta").fetchall())

    def set_meta(self, key: str, value: str) -> None:
        self.c.execute(
            f"INSERT OR REPLACE INTO {self.p}oam_meta (key, value) VALUES (?, ?)", (key, value)
        )

    def existing_ids(self, family: str, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        ids = list(ids)
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            found.update(
                r[0]
                for r in self.c.execute(
                    f"SELECT id FROM {self.p}records WHERE family = ? AND id IN "
                    f"({', '.join('?' * len(part))})",
                    [family, *part],
                )
            )
        return found

    def hold_thread(self, thread_id: str) -> bool:
        # BEGIN IMMEDIATE: no other writer runs until this transaction ends.
        return bool(self.existing_ids(THREAD, [thread_id]))

    def insert(self, plans: Sequence[RowPlan], created_at: datetime, batch_size: int) -> None:
        created = iso(created_at)
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
        sql = (
            f"INSERT INTO {self.p}records (family, id, record_type, content, role, seq_no, "
            "thread_id, user_id, agent_id, event_ts, metadata, created_at, expires_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        base = self._next_pk("records")
        for i in range(0, len(rows), batch_size):
            self.c.executemany(sql, rows[i : i + batch_size])
        pks = self._inserted_pks(plans, base)
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
                    f"UPDATE {self.p}records SET seq_no = ? WHERE family = 'thread' AND id = ?",
                    (following - 1, thread_id),
                )

    def _next_pk(self, table: str) -> int:
        """The primary key the next row of ``table`` gets (AUTOINCREMENT: after the
        largest key it ever held), read inside the write transaction."""
        row = self.c.execute(
            f"SELECT max(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = ?), 0), "
            f"COALESCE((SELECT max(pk) FROM {self.p}{table}), 0))",
            (f"{self.p}{table}",),
        ).fetchone()
        return int(row[0]) + 1

    def _inserted_pks(self, plans: Sequence[RowPlan], base: int) -> builtins.list[int]:
        """The record keys of ``plans`` just inserted from key ``base`` on. One writer
        holds the database, so they are consecutive; that is checked (the largest key
        must be the last one), else they are looked up by id."""
        last = self.c.execute(f"SELECT max(pk) FROM {self.p}records").fetchone()[0]
        if last == base + len(plans) - 1:
            return builtins.list(range(base, base + len(plans)))
        found: dict[tuple[str, str], int] = {}
        for family in {p.family for p in plans}:
            ids = [p.id for p in plans if p.family == family]
            for i in range(0, len(ids), 500):
                part = ids[i : i + 500]
                for rid, pk in self.c.execute(
                    f"SELECT id, pk FROM {self.p}records WHERE family = ? AND id IN "
                    f"({', '.join('?' * len(part))})",
                    [family, *part],
                ):
                    found[(family, rid)] = pk
        return [found[(p.family, p.id)] for p in plans]

    def _next_seq(self, thread_id: str | None) -> int:
        """The next message ``seq_no`` of a thread: after every message it holds and
        after the thread row's high-water mark, so a number freed by a delete is never
        handed out again (the pipeline's watermark relies on it)."""
        row = self.c.execute(
            f"SELECT COALESCE(MAX(seq_no), -1) FROM {self.p}records "
            "WHERE family = 'message' AND thread_id IS ?",
            (thread_id,),
        ).fetchone()
        top = int(row[0])
        if thread_id is not None:
            mark = self.c.execute(
                f"SELECT seq_no FROM {self.p}records WHERE family = 'thread' AND id = ?",
                (thread_id,),
            ).fetchone()
            if mark is not None and mark[0] is not None:
                top = max(top, int(mark[0]))
        return top + 1

    @staticmethod
    def _chunk_row(
        record_pk: int,
        record_type: str,
        seq: int,
        chunk: ChunkPlan,
        scope: tuple[str | None, str | None, str | None],
        expires_at: float | None,
    ) -> tuple[Any, ...]:
        has_vector = int(chunk.vector is not None)
        return (
            record_pk,
            record_type,
            seq,
            chunk.text,
            _blob(chunk.vector),
            has_vector,
            *scope,
            expires_at,
        )

    def _insert_chunks(self, rows: Sequence[tuple[Any, ...]], batch_size: int) -> None:
        if not rows:
            return
        sql = (
            f"INSERT INTO {self.p}chunks (record_pk, record_type, seq, text, embedding, has_vector, "
            "thread_id, user_id, agent_id, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        first = self._next_pk("chunks")
        for i in range(0, len(rows), batch_size):
            self.c.executemany(sql, rows[i : i + batch_size])
        # One set-based statement indexes the new text (a per-row trigger is ~2x slower),
        # through the view that applies ``oam_fts_text`` (sqlite_schema.py).
        self.c.execute(
            f"INSERT INTO {self.p}chunks_fts (rowid, text) SELECT pk, text "
            f"FROM {self.p}chunks_fts_src WHERE pk >= ? AND text IS NOT NULL",
            (first,),
        )

    def fetch(self, family: str, record_id: str) -> StoredRow | None:
        row = self.c.execute(
            f"SELECT pk, record_type, content, event_ts, metadata, created_at, thread_id, "
            f"user_id, agent_id, expires_at FROM {self.p}records WHERE family = ? AND id = ?",
            (family, record_id),
        ).fetchone()
        if row is None:
            return None
        pk, rtype, content, ts, meta, created, tid, uid, aid, _exp = row
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
                f"SELECT text FROM {self.p}chunks WHERE record_pk = ? ORDER BY seq", (key,)
            )
        ]

    def replace_chunks(self, row: StoredRow, chunks: Sequence[ChunkPlan]) -> None:
        expires = self.c.execute(
            f"SELECT expires_at FROM {self.p}records WHERE pk = ?", (row.key,)
        ).fetchone()[0]
        self.c.execute(f"DELETE FROM {self.p}chunks WHERE record_pk = ?", (row.key,))
        rows = [
            self._chunk_row(cast(int, row.key), row.record_type, seq, c, row.scope, expires)
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
        sets = ", ".join(f"{col} = ?" for col in values)
        self.c.execute(
            f"UPDATE {self.p}records SET {sets} WHERE pk = ?", [*values.values(), row.key]
        )
        if "expires_at" in values:
            self.c.execute(
                f"UPDATE {self.p}chunks SET expires_at = ? WHERE record_pk = ?",
                (values["expires_at"], row.key),
            )

    def delete_record(
        self, family: str, record_id: str, record_type: str | None, thread_id: Maybe[str]
    ) -> int:
        sql = f"DELETE FROM {self.p}records WHERE family = ? AND id = ?"
        params: builtins.list[Any] = [family, record_id]
        if record_type is not None:
            sql += " AND record_type = ?"
            params.append(record_type)
        if thread_id is not NOT_SET:
            sql += " AND thread_id = ?"
            params.append(thread_id)
        return self.c.execute(sql, params).rowcount

    def delete_thread(self, thread_id: str) -> int:
        n = self.c.execute(
            f"DELETE FROM {self.p}records WHERE family = 'thread' AND id = ?", (thread_id,)
        ).rowcount
        self.c.execute(
            f"DELETE FROM {self.p}records WHERE family IN ('message', 'memory') AND thread_id = ?",
            (thread_id,),
        )
        return n

    def delete_actor_scope(self, column: str, actor_id: str) -> None:
        if column not in ("user_id", "agent_id"):
            raise ValueError(f"unknown scope column {column!r}")
        threads = [
            r[0]
            for r in self.c.execute(
                f"SELECT id FROM {self.p}records WHERE family = 'thread' AND {column} = ?",
                (actor_id,),
            )
        ]
        for tid in threads:
            self.delete_thread(tid)
        self.c.execute(
            f"DELETE FROM {self.p}records WHERE family IN ('message', 'memory') AND {column} = ?",
            (actor_id,),
        )

    def insert_thread(self, row: ThreadRow) -> None:
        self.c.execute(
            f"INSERT INTO {self.p}records (family, id, record_type, user_id, agent_id, metadata, "
            "created_at, config, state) VALUES ('thread', ?, 'thread', ?, ?, ?, ?, ?, ?)",
            (
                row.thread_id,
                row.user_id,
                row.agent_id,
                json.dumps(row.metadata, ensure_ascii=False) if row.metadata is not None else None,
                row.created_at,
                json.dumps(row.config),
                json.dumps(row.state),
            ),
        )

    def update_thread(
        self,
        thread_id: str,
        config: Maybe[dict[str, Any]],
        state: Maybe[dict[str, Any]],
        expected_state: Maybe[dict[str, Any]],
    ) -> int:
        row = self.c.execute(
            f"SELECT state FROM {self.p}records WHERE family = 'thread' AND id = ?", (thread_id,)
        ).fetchone()
        if row is None:
            return 0
        if expected_state is not NOT_SET and json.loads(row[0] or "{}") != expected_state:
            return 0
        sets, params = [], []
        if config is not NOT_SET:
            sets.append("config = ?")
            params.append(json.dumps(config))
        if state is not NOT_SET:
            sets.append("state = ?")
            params.append(json.dumps(state))
        if not sets:
            return 1
        return self.c.execute(
            f"UPDATE {self.p}records SET {', '.join(sets)} WHERE family = 'thread' AND id = ?",
            [*params, thread_id],
        ).rowcount

    def purge(self, now: datetime) -> int:
        return self.c.execute(
            f"DELETE FROM {self.p}records WHERE expires_at IS NOT NULL AND expires_at <= ?",
            (now.timestamp(),),
        ).rowcount

    def write_meta(self, values: dict[str, str]) -> None:
        for key, value in values.items():
            self.set_meta(key, value)
