"""The Oracle dialect of the ``Backend``/``Tx`` contract (store/backend.py; docs/oracle.md).

Executes the statements of sql.py through a ``Session``: every ``Tx`` is one
transaction (one commit, or a rollback on any error, cascades included), inserts use
``executemany`` in ``batch_size`` slices, vectors bind as ``array('f')`` (VECTOR),
metadata as dicts (JSON), times as naive UTC ``TIMESTAMP``.
"""

from __future__ import annotations

import builtins
import json
import threading
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, cast

import numpy as np

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.embedder import IEmbedder
from oam_core.apis.records import MESSAGE, Record, ThreadRow
from oam_core.checks import Vector
from oam_core.errors import InvalidArgumentError
from oam_core.store.backend import (
    Backend,
    DimCheck,
    DumpRow,
    IdsTakenError,
    Predicate,
    StoredRow,
    Tx,
    message_window,
)
from oam_core.store.fusion import normalized_distances
from oam_core.store.options import SearchStrategy
from oam_core.store.oracle import dump as od
from oam_core.store.oracle import quoting as oq
from oam_core.store.oracle import sql, windows
from oam_core.store.oracle.names import Names
from oam_core.store.oracle.rows import (
    family_of_type,
    json_value,
    lob_text,
    record_from_row,
    split_key,
    stored_text,
    thread_row,
    to_array,
    utc,
)
from oam_core.store.oracle.schema import parse_dim
from oam_core.store.oracle.session import (
    Session,
    chunked,
    error_code,
    fetchall,
    fetchone,
    run,
    run_batched,
)
from oam_core.store.oracle.transfer import chunks_by_record, dump_rows, restore
from oam_core.store.planning import ChunkPlan, RowPlan
from oam_core.store.quotes import (
    QuotingRow,
    ResolvedChunk,
    earliest,
    quoted_ids,
    resolve_quotes,
)

_ODCI_ERROR = 29902
"""ORA-29902 error in executing ODCIIndexStart() (Oracle Text wraps its DRG- errors)."""


class OracleBackend(Backend):
    """Reads and transactions over one schema prefix.

    Args:
        session: Connection handling (pool or single session).
        names: Managed object names.
        local_vectors: The chunks table has an embedding column.
        recorded_dim: The vector dimension the schema metadata records, or None
            (a flexible column that has not recorded one yet).
        check_dim: The store's check of a dimension against the recorded one;
            raises to refuse it (docs/oracle.md#vector-dimension).
    """

    def __init__(
        self,
        session: Session,
        names: Names,
        local_vectors: bool,
        recorded_dim: int | None,
        check_dim: DimCheck,
    ) -> None:
        self.session = session
        self.n = names
        self.local_vectors = local_vectors
        self.recorded_dim = recorded_dim
        """Dimension recorded in the metadata as far as this object knows; set when a
        transaction that recorded or read it commits."""
        self.check_dim = check_dim
        self.strategy = SearchStrategy.VECTOR
        """The strategy the store opened with: its indexes serve only that one."""
        self.hybrid_model: IEmbedder | None = None
        """HYBRID: the in-database model (``OracleDBEmbedder``) the hybrid index
        uses; its dimension is asked for only by a vector query."""
        self._local = threading.local()

    # -- store hooks (store/backend.py) ----------------------------------------------

    def remember_vector_dim(self, dim: int, check: DimCheck) -> None:
        """A flexible embedding column learns its dimension inside the write that
        stores its first vector, before its rows (``OracleTx.record_dim``: the
        dimension another store object recorded meanwhile is adopted, and ``dim``
        refused if it differs; ``check`` is the ``check_dim`` given at open).

        Raises:
            InvalidArgumentError: naming both dimensions when they differ.
        """
        tx = self.current_tx()
        assert tx is not None, "a dimension is learned inside a write transaction"
        tx.record_dim(dim)

    def serves_strategy(self, strategy: SearchStrategy) -> bool:
        return strategy is self.strategy  # its indexes serve the one it opened with

    ranks_natively = True

    def native_search(
        self, query: str | None, query_vector: Vector | None, k: int, pred: Predicate
    ) -> builtins.list[tuple[Hashable, float]] | None:
        """HYBRID: ``DBMS_HYBRID_VECTOR.SEARCH`` over the managed hybrid index
        (``hybrid_search``), as distances; None for the other strategies.

        Raises:
            InvalidArgumentError: for a ``query_vector`` of another dimension than
                the in-database model's.
        """
        if self.strategy is not SearchStrategy.HYBRID:
            return None
        if query_vector is not None:
            assert self.hybrid_model is not None
            dim = self.hybrid_model.embedding_dimension
            if len(query_vector) != dim:
                raise InvalidArgumentError(
                    f"query_vector dimension {len(query_vector)} does not match the "
                    f"OracleDBEmbedder model's dimension {dim}"
                )
        request = sql.hybrid_request(self.n, query, query_vector)
        return normalized_distances(self.hybrid_search(request, k, pred))

    def current_tx(self) -> OracleTx | None:
        """The open ``transaction`` of this thread, if any."""
        tx: OracleTx | None = getattr(self._local, "tx", None)
        return tx

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        """One unit of work; a unique-key violation (ORA-00001, a concurrent writer
        took an id between the existence check and the insert) becomes the
        ``ValueError`` of docs/concepts.md#ids-and-times, after the rollback. A
        dimension recorded in it counts as recorded only once it commits."""
        outer = self.current_tx()
        with self.session.transaction() as conn:
            tx = OracleTx(conn, self)
            self._local.tx = tx
            try:
                yield tx
            except Exception as exc:
                if error_code(exc) == 1:
                    raise IdsTakenError(f"record ids already exist ({exc})") from exc
                raise
            finally:
                self._local.tx = outer
        if tx.recorded_dim is not None:
            self.recorded_dim = tx.recorded_dim

    def database_key(self) -> Hashable | None:
        """As ``Backend.database_key``: the database, its container, the server host
        and instance, the schema (``sql.database_identity``) and the prefix; None
        when the server names no database."""
        rows = self._all(sql.database_identity())
        if not rows or rows[0][0] is None:
            return None
        return ("oracle", *rows[0], self.n.prefix)

    def close(self) -> None:
        self.session.close()

    def _all(self, stmt: Any) -> list[tuple[Any, ...]]:
        with self.session.connection() as conn:
            return fetchall(conn, stmt)

    def get(self, family: str, record_id: str, record_type: str, now: datetime) -> Record | None:
        rows = self._all(sql.get_record(self.n, family, record_id, record_type, sql.naive_utc(now)))
        return record_from_row(family, rows[0]) if rows else None

    def get_in_family(self, family: str, record_id: str, now: datetime) -> Record | None:
        """One visible record by family and id, whatever its type: one query."""
        rows = self._all(sql.get_record(self.n, family, record_id, None, sql.naive_utc(now)))
        return record_from_row(family, rows[0]) if rows else None

    def list(self, pred: Predicate, limit: int | None) -> builtins.list[Record]:
        (record_type,) = tuple(pred.record_types)
        rows = self._all(sql.list_records(self.n, pred, limit, sql.naive_utc(pred.now)))
        family = family_of_type(record_type)
        return [record_from_row(family, r) for r in reversed(rows)]

    def count_thread_messages(self, thread_id: str, now: datetime) -> int:
        rows = self._all(sql.count_messages(self.n, thread_id, sql.naive_utc(now)))
        return int(rows[0][0])

    def thread_messages(
        self, thread_id: str, start: int | None, end: int | None, now: datetime
    ) -> builtins.list[Record]:
        with self.session.connection() as conn:

            def count() -> int:
                row = fetchone(conn, sql.count_messages(self.n, thread_id, sql.naive_utc(now)))
                return int(row[0]) if row else 0

            window = message_window(start, end, count)
            if window is None:
                return []
            rows = fetchall(
                conn, sql.thread_messages(self.n, thread_id, *window, sql.naive_utc(now))
            )
        return [record_from_row(MESSAGE, r) for r in rows]

    def thread_messages_by_seq(
        self,
        thread_id: str,
        after: int | None,
        through: int | None,
        limit: int | None,
        newest: bool,
        now: datetime,
    ) -> builtins.list[Record]:
        stmt = sql.thread_messages_by_seq(
            self.n, thread_id, after, through, limit, newest, sql.naive_utc(now)
        )
        records = [record_from_row(MESSAGE, r) for r in self._all(stmt)]
        return records[::-1] if newest else records

    def get_thread(self, thread_id: str) -> ThreadRow | None:
        rows = self._all(sql.get_thread(self.n, thread_id))
        return thread_row(rows[0]) if rows else None

    def list_threads(
        self, user_id: Maybe[str | None], agent_id: Maybe[str | None]
    ) -> builtins.list[ThreadRow]:
        return [thread_row(r) for r in self._all(sql.list_threads(self.n, user_id, agent_id))]

    def unembedded(self, limit: int | None) -> builtins.list[tuple[str, str]]:
        if not self.local_vectors:
            return []
        return [(str(f), str(i)) for f, i in self._all(sql.unembedded(self.n, limit))]

    def load(self, keys: Sequence[Hashable]) -> dict[Hashable, Record]:
        by_family: dict[str, list[int]] = {}
        for key in keys:
            family, pk = split_key(key)
            by_family.setdefault(family, []).append(pk)
        out: dict[Hashable, Record] = {}
        with self.session.connection() as conn:
            for family, pks in by_family.items():
                for part in chunked(pks, sql.IN_LIST):
                    for row in fetchall(conn, sql.load_records(self.n, family, part)):
                        out[(family, int(row[0]))] = record_from_row(family, row)
        return out

    def row_vectors(
        self, keys: Sequence[Hashable], now: datetime
    ) -> dict[Hashable, builtins.list[Vector]]:
        if not self.local_vectors:
            return {}
        at = sql.naive_utc(now)
        by_family: dict[str, list[int]] = {}
        for key in keys:
            family, pk = split_key(key)
            by_family.setdefault(family, []).append(pk)
        out: dict[Hashable, builtins.list[Vector]] = {}
        with self.session.connection() as conn:
            for family, pks in by_family.items():
                for pk, chunks in chunks_by_record(conn, self.n, family, pks, True).items():
                    vectors = [
                        np.asarray(c[3], dtype=np.float32)
                        for c in chunks
                        if c[3] is not None and (c[4] is None or c[4] > at)
                    ]
                    if vectors:
                        out[(family, pk)] = vectors
        return out

    def rank_vector(
        self, queries: Sequence[Vector], k: int, pred: Predicate
    ) -> builtins.list[builtins.list[tuple[Hashable, float]]]:
        if not self.local_vectors:
            return [[] for _ in queries]
        out = []
        with self.session.connection() as conn:
            for q in queries:
                rows = fetchall(conn, sql.rank_vector(self.n, to_array(q), k, pred))
                ranked: builtins.list[tuple[Hashable, float]] = [
                    ((fam, int(pk)), max(0.0, float(d))) for fam, pk, d in rows
                ]
                out.append(ranked)
        return out

    def rank_keyword(
        self, terms: Sequence[str], k: int, pred: Predicate
    ) -> builtins.list[tuple[Hashable, float]]:
        query = sql.text_query(terms)
        if query is None:
            return []
        try:
            rows = self._all(sql.rank_keyword(self.n, query, k, pred))
        except Exception as exc:
            # DRG-10817: every term is a stopword of the index; nothing can match.
            if error_code(exc) == _ODCI_ERROR and "DRG-10817" in str(exc):
                return []
            raise
        return [((fam, int(pk)), float(score)) for fam, pk, score in rows]

    def hybrid_search(
        self, request: dict[str, Any], k: int, pred: Predicate
    ) -> builtins.list[tuple[Hashable, float]]:
        """Rank with ``DBMS_HYBRID_VECTOR.SEARCH``, then keep hits passing ``pred``.

        The hybrid API has no filter on 23ai, so the request asks for ``topN`` rows
        and grows it (x4) until ``k`` records survive the filter or the index has no
        more rows: filtering never hides a match that a larger ``topN`` would show.

        Returns:
            ``(record key, best hybrid score of its search rows)`` pairs, best first.
        """
        top_n = max(4 * k, 64)
        with self.session.connection() as conn:
            while True:
                req = json.dumps(
                    {**request, "return": {"values": ["rowid", "score"], "topN": top_n}}
                )
                row = fetchone(conn, sql.hybrid_search(req))
                hits_text = lob_text(row[0]) if row else None
                hits = json.loads(hits_text) if hits_text else []
                best: dict[Hashable, float] = {}
                if hits and hits_text:
                    for fam, pk, score in fetchall(conn, sql.hybrid_hits(self.n, hits_text, pred)):
                        key = (fam, int(pk))
                        best[key] = max(best.get(key, 0.0), float(score or 0.0))
                if len(best) >= k or len(hits) < top_n or top_n >= 1_000_000:
                    break
                top_n *= 4
        return sorted(best.items(), key=lambda kv: -kv[1])

    def dump_page(
        self, after: Hashable | None, limit: int, user_ids: Sequence[str] | None
    ) -> tuple[builtins.list[DumpRow], Hashable | None]:
        index, pk = cast("tuple[int, int | None]", after or (0, None))
        with self.session.connection() as conn:
            while index < len(od.FAMILIES):
                family = od.FAMILIES[index]
                rows = fetchall(conn, od.page(self.n, family, pk, limit, user_ids))
                if rows:
                    out = dump_rows(conn, self.n, family, rows, self.local_vectors)
                    return out, (index, int(rows[-1][0]))
                index, pk = index + 1, None
        return [], after

    def dump_counts(self, user_ids: Sequence[str] | None, now: datetime) -> dict[str, int]:
        out: dict[str, int] = {}
        with self.session.connection() as conn:
            for family in od.FAMILIES:
                stmt = od.counts(self.n, family, user_ids, sql.naive_utc(now))
                for rtype, count in fetchall(conn, stmt):
                    if int(count):
                        out[str(rtype)] = int(count)
        return out


class OracleTx(Tx):
    """Write primitives inside one open transaction on ``conn``."""

    def __init__(self, conn: Any, backend: OracleBackend) -> None:
        self.c = conn
        self.b = backend
        self.n = backend.n
        self.local_vectors = backend.local_vectors
        self.recorded_dim = backend.recorded_dim
        """The recorded dimension as this transaction sees it (the backend takes it on
        commit; a rollback drops what this transaction recorded)."""

    def record_dim(self, dim: int) -> None:
        """Make ``dim`` the schema's vector dimension in this transaction, before the
        rows that need it (docs/oracle.md#vector-dimension).

        Unless already known, the recorded one is read under a row lock
        (``sql.lock_meta``), so writers that learn a dimension take turns and each
        reads what the one before committed. Another dimension is refused by the
        store's check (which adopts the recorded one); with none recorded, ``dim`` is.

        Raises:
            InvalidArgumentError: naming both dimensions when another is recorded.
        """
        recorded = self.recorded_dim
        if recorded is None:
            fetchone(self.c, sql.lock_meta(self.n))
            row = fetchone(self.c, sql.meta_value(self.n, "vector_dim"))
            recorded = parse_dim(row[0] if row else None)
        self.b.check_dim(None if recorded is None else str(recorded), dim)
        if recorded is None:
            meta = [{"meta_key": "vector_dim", "meta_value": str(dim)}]
            run(self.c, sql.upsert_meta(self.n, meta))
        self.recorded_dim = dim

    def insert_chunk_rows(self, rows: list[dict[str, Any]], batch_size: int) -> None:
        """Insert search rows. Vectors written before the schema records a dimension
        (a flexible column whose store knew its dimension at open) record it first."""
        if not rows:
            return
        if self.local_vectors and self.recorded_dim is None:
            dim = next((len(r["embedding"]) for r in rows if r.get("embedding") is not None), None)
            if dim is not None:
                self.record_dim(dim)
        run_batched(self.c, sql.insert_chunks(self.n, rows, self.local_vectors), batch_size)

    def existing_ids(self, family: str, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for part in chunked(list(ids), sql.IN_LIST):
            found.update(r[0] for r in fetchall(self.c, sql.ids_to_pks(self.n, family, part)))
        return found

    def hold_thread(self, thread_id: str) -> bool:
        # The row lock (FOR UPDATE): delete_thread locks the row before deleting
        # anything, so it waits for this transaction (and this one for it).
        return fetchone(self.c, sql.lock_thread(self.n, thread_id)) is not None

    def hold_thread_row(self, thread_id: str) -> ThreadRow | None:
        if not self.hold_thread(thread_id):
            return None
        rows = fetchall(self.c, sql.get_thread(self.n, thread_id))
        return thread_row(rows[0]) if rows else None

    def insert(self, plans: Sequence[RowPlan], created_at: datetime, batch_size: int) -> None:
        for plan in plans:  # before any statement: no window on a schema without them
            windows.refuse_without_columns(self.n, *windows.of(plan))
        created = sql.naive_utc(created_at)
        next_seq: dict[str | None, int] = {}
        by_family: dict[str, list[dict[str, Any]]] = {}
        if any(p.family == MESSAGE for p in plans):
            run(self.c, sql.lock_messages(self.n))
        for plan in plans:
            seq = None
            if plan.family == MESSAGE:
                if plan.thread_id not in next_seq:
                    row = fetchone(self.c, sql.next_seq(self.n, plan.thread_id))
                    next_seq[plan.thread_id] = int(row[0]) if row and row[0] is not None else 0
                seq = next_seq[plan.thread_id]
                next_seq[plan.thread_id] = seq + 1
            by_family.setdefault(plan.family, []).append(
                {
                    "id": plan.id,
                    "record_type": plan.record_type,
                    "content": plan.content,
                    "content_set": int(plan.content is not None),
                    "role": plan.role,
                    "seq_no": seq,
                    "thread_id": plan.thread_id,
                    "user_id": plan.user_id,
                    "agent_id": plan.agent_id,
                    "event_ts": plan.timestamp,
                    "event_ts_set": int(plan.timestamp is not None),
                    "metadata": json.loads(plan.metadata) if plan.metadata is not None else None,
                    "created_at": created,
                    "expires_at": sql.naive_utc(plan.expires_at) if plan.expires_at else None,
                    **windows.binds(self.n, *windows.of(plan)),
                }
            )
        for family, rows in by_family.items():
            run_batched(self.c, sql.insert_records(self.n, family, rows), batch_size)
        for thread_id, following in next_seq.items():
            if thread_id is not None:
                run(self.c, sql.set_thread_seq(self.n, thread_id, following - 1))
        pks = self._pks(plans)
        keys = [pks.get((plan.family, plan.id)) for plan in plans]
        expiries = [sql.naive_utc(plan.expires_at) if plan.expires_at else None for plan in plans]
        quoting, dropped = self._resolve_quotes(
            [
                (plan.id if plan.family == MESSAGE else None, key, exp, plan.chunks)
                for plan, key, exp in zip(plans, keys, expiries, strict=True)
            ]
        )
        chunk_rows = [
            self.chunk_row(
                plan.family,
                pks[(plan.family, plan.id)],
                plan.record_type,
                seq,
                chunk,
                plan.chunk_scope,
                quoting[(i, seq)].expires_at if (i, seq) in quoting else expiries[i],
                windows.of(plan),
            )
            for i, plan in enumerate(plans)
            for seq, chunk in enumerate(plan.chunks)
            if (i, seq) not in dropped
        ]
        self.insert_chunk_rows(chunk_rows, batch_size)
        self._link(quoting, [(plan.family, key) for plan, key in zip(plans, keys, strict=True)])

    def _resolve_quotes(
        self, rows: Sequence[QuotingRow]
    ) -> tuple[dict[tuple[int, int], ResolvedChunk], set[tuple[int, int]]]:
        """``quotes.resolve_quotes`` of ``rows``, the quoted messages read and locked
        in this transaction."""
        stored: dict[str, tuple[Hashable, Any]] = {}
        for part in chunked(quoted_ids(rows), sql.IN_LIST):
            for mid, pk, exp in fetchall(self.c, oq.message_keys(self.n, part)):
                stored[mid] = (int(pk), exp)
        return resolve_quotes(rows, stored)

    def _link(
        self, quoting: dict[tuple[int, int], ResolvedChunk], keys: Sequence[tuple[str, Any]]
    ) -> None:
        """Write the ``CHUNK_SOURCES`` links of the quoting rows just inserted."""
        links = [
            {
                "source_pk": src,
                "record_family": keys[r.plan][0],
                "record_pk": keys[r.plan][1],
                "seq": r.seq,
            }
            for r in quoting.values()
            for src in r.source_keys
        ]
        if links:
            run_batched(self.c, oq.insert_links(self.n, links), 256)

    def drop_quoting(self, key: Hashable) -> None:
        family, pk = split_key(key)
        if family == MESSAGE:
            run(self.c, oq.drop_quoting_key(self.n, pk))

    def clamp_quoting(self, key: Hashable) -> None:
        family, pk = split_key(key)
        for chunk_pk, rec_family, rec_pk in fetchall(self.c, oq.quoting_rows(self.n, family, pk)):
            own = fetchone(self.c, sql.record_expiry(self.n, rec_family, int(rec_pk)))
            sources = [r[0] for r in fetchall(self.c, oq.source_expiries(self.n, int(chunk_pk)))]
            expires = earliest(own[0] if own else None, *sources)
            run(self.c, oq.set_row_expiry(self.n, int(chunk_pk), expires))

    def _pks(self, plans: Sequence[RowPlan]) -> dict[tuple[str, str], int]:
        pks: dict[tuple[str, str], int] = {}
        for family in dict.fromkeys(p.family for p in plans if p.chunks):
            ids = [p.id for p in plans if p.family == family and p.chunks]
            for part in chunked(ids, sql.IN_LIST):
                for rid, pk in fetchall(self.c, sql.ids_to_pks(self.n, family, part)):
                    pks[(family, rid)] = int(pk)
        return pks

    def chunk_row(
        self,
        family: str,
        record_pk: int,
        record_type: str,
        seq: int,
        chunk: ChunkPlan,
        scope: tuple[str | None, str | None, str | None],
        expires_at: datetime | None,
        window: windows.Window = (None, None),
    ) -> dict[str, Any]:
        """The binds of one search row of the record ``(family, record_pk)`` at
        position ``seq`` (``window``: its record's, copied); the vector only when the
        store keeps its own vectors."""
        row: dict[str, Any] = {
            "record_family": family,
            "record_pk": record_pk,
            "record_type": record_type,
            "seq": seq,
            "chunk_text": chunk.text,
            "thread_id": scope[0],
            "user_id": scope[1],
            "agent_id": scope[2],
            "expires_at": expires_at,
            **windows.binds(self.n, *window),
        }
        if self.local_vectors:
            row["embedding"] = to_array(chunk.vector)
        return row

    def fetch(self, family: str, record_id: str) -> StoredRow | None:
        row = fetchone(self.c, sql.fetch_row(self.n, family, record_id))
        if row is None:
            return None
        pk, rtype, content, content_set, ts, ts_set, meta, created, tid, uid, aid = row[:11]
        valid_from, valid_until = row[12:14]  # after expires_at
        if rtype == "user_profile":
            scope: tuple[str | None, str | None, str | None] = (None, record_id, None)
        elif rtype == "agent_profile":
            scope = (None, None, record_id)
        else:
            scope = (tid, uid, aid)
        created_at = utc(created)
        assert created_at is not None
        return StoredRow(
            key=(family, int(pk)),
            family=family,
            record_type=rtype,
            content=stored_text(content, content_set),
            timestamp=stored_text(ts, ts_set),
            metadata=json_value(meta),
            created_at=created_at,
            scope=scope,
            id=record_id,
            valid_from=windows.aware(valid_from),
            valid_until=windows.aware(valid_until),
            expires_at=utc(row[11]),
        )

    def fetch_locked(self, family: str, record_id: str) -> StoredRow | None:
        """``fetch``: it reads the row ``FOR UPDATE`` already (``sql.fetch_row``), so
        the row stays locked until the transaction ends (store/versions.py)."""
        return self.fetch(family, record_id)

    def chunk_texts(self, key: Hashable) -> builtins.list[str | None]:
        family, pk = split_key(key)
        return [lob_text(r[0]) for r in fetchall(self.c, sql.chunk_texts(self.n, family, pk))]

    def has_vectors(self, key: Hashable) -> bool:
        if not self.local_vectors:  # the database embeds; no vector of ours to lose
            return False
        family, pk = split_key(key)
        found = fetchone(self.c, sql.chunk_vector_count(self.n, family, pk))
        return bool(found and found[0])

    def replace_chunks(self, row: StoredRow, chunks: Sequence[ChunkPlan]) -> None:
        family, pk = split_key(row.key)
        current = fetchone(self.c, sql.record_expiry(self.n, family, pk))
        expires = current[0] if current else None
        window = self._window(family, pk)
        run(self.c, sql.delete_chunks_of(self.n, family, pk))
        own_id = row.id if family == MESSAGE else None
        quoting, dropped = self._resolve_quotes([(own_id, pk, expires, chunks)])
        rows = [
            self.chunk_row(
                family,
                pk,
                row.record_type,
                seq,
                c,
                row.scope,
                quoting[(0, seq)].expires_at if (0, seq) in quoting else expires,
                window,
            )
            for seq, c in enumerate(chunks)
            if (0, seq) not in dropped
        ]
        self.insert_chunk_rows(rows, 256)
        self._link(quoting, [(family, pk)])

    def _window(self, family: str, pk: int) -> windows.Window:
        """A record's stored window (naive UTC; open on a schema without windows)."""
        if not self.n.windows:
            return (None, None)
        found = fetchone(self.c, windows.record_window(self.n, family, pk))
        return (found[0], found[1]) if found else (None, None)

    def update_row(self, row: StoredRow, fields: dict[str, Any]) -> None:
        family, pk = split_key(row.key)
        values: dict[str, Any] = {}
        given = {c: fields[c] for c in windows.COLUMNS if c in fields}
        windows.refuse_without_columns(self.n, *given.values())
        if self.n.windows:
            values.update({c: windows.naive(v) for c, v in given.items()})
        if "content" in fields:
            values["content"] = fields["content"]
            values["content_set"] = int(fields["content"] is not None)
        if "metadata" in fields:
            meta = fields["metadata"]
            values["metadata"] = json.loads(meta) if meta is not None else None
        if "timestamp" in fields:
            values["event_ts"] = fields["timestamp"]
            values["event_ts_set"] = int(fields["timestamp"] is not None)
        if "expires_at" in fields:
            exp = fields["expires_at"]
            values["expires_at"] = sql.naive_utc(exp) if exp is not None else None
        if values:
            run(self.c, sql.update_record(self.n, family, pk, values))
        if "expires_at" in values:
            run(self.c, sql.update_chunk_expiry(self.n, family, pk, values["expires_at"]))
        if any(c in values for c in windows.COLUMNS):
            run(self.c, windows.update_chunk_windows(self.n, family, pk, values))

    def delete_record(
        self, family: str, record_id: str, record_type: str | None, thread_id: Maybe[str]
    ) -> int:
        row = fetchone(self.c, sql.find_pk(self.n, family, record_id, record_type, thread_id))
        if row is None:
            return 0
        pk = int(row[0])
        if family == MESSAGE:
            run(self.c, oq.drop_quoting_key(self.n, pk))
        run(self.c, sql.delete_chunks_of(self.n, family, pk))
        return int(run(self.c, sql.delete_by_pk(self.n, family, pk)).rowcount or 0)

    def delete_records(
        self,
        family: str,
        record_ids: Sequence[str],
        record_type: str | None,
        thread_id: Maybe[str],
    ) -> int:
        deleted = 0
        for part in chunked(list(record_ids), sql.IN_LIST):
            found = fetchall(self.c, sql.find_pks(self.n, family, part, record_type, thread_id))
            for pks in chunked([int(r[0]) for r in found], sql.IN_LIST):
                if family == MESSAGE:
                    run(self.c, oq.drop_quoting(self.n, *sql.pk_list(pks)))
                run(self.c, sql.delete_chunks_of_pks(self.n, family, pks))
                deleted += int(run(self.c, sql.delete_by_pks(self.n, family, pks)).rowcount or 0)
        return deleted

    def delete_thread(self, thread_id: str) -> int:
        # Lock the row first: a writer holding it (hold_thread) commits before these
        # deletes run, and they see its rows, so nothing is left without its thread.
        fetchone(self.c, sql.lock_thread(self.n, thread_id))
        run(self.c, oq.drop_quoting(self.n, "thread_id = :thread_id", {"thread_id": thread_id}))
        count = 0
        for stmt in sql.delete_thread(self.n, thread_id):
            count = int(run(self.c, stmt).rowcount or 0)
        return count

    def delete_actor_scope(self, column: str, actor_id: str) -> None:
        for (tid,) in fetchall(self.c, sql.actor_threads(self.n, column, actor_id)):
            self.delete_thread(tid)
        sql_column = {"user_id": "user_id", "agent_id": "agent_id"}[column]
        run(self.c, oq.drop_quoting(self.n, f"{sql_column} = :actor_id", {"actor_id": actor_id}))
        for stmt in sql.delete_actor_rows(self.n, column, actor_id):
            run(self.c, stmt)

    def insert_thread(self, row: ThreadRow) -> None:
        run(
            self.c,
            sql.insert_thread(
                self.n,
                {
                    "id": row.thread_id,
                    "user_id": row.user_id,
                    "agent_id": row.agent_id,
                    "metadata": row.metadata,
                    "config": row.config,
                    "state": row.state,
                    "created_at": sql.naive_utc(datetime.fromisoformat(row.created_at)),
                },
            ),
        )

    def update_thread(
        self,
        thread_id: str,
        config: Maybe[dict[str, Any]],
        state: Maybe[dict[str, Any]],
        expected_state: Maybe[dict[str, Any]],
    ) -> int:
        row = fetchone(self.c, sql.thread_state_for_update(self.n, thread_id))
        if row is None:
            return 0
        if expected_state is not NOT_SET and (json_value(row[0]) or {}) != expected_state:
            return 0
        values: dict[str, Any] = {}
        if config is not NOT_SET:
            values["config"] = config
        if state is not NOT_SET:
            values["state"] = state
        if not values:
            return 1
        return int(run(self.c, sql.update_thread(self.n, thread_id, values)).rowcount or 0)

    def purge(self, now: datetime) -> int:
        stmts = sql.purge(self.n, sql.naive_utc(now))
        run(self.c, stmts[0])
        where, binds, types = oq.expired_messages(sql.naive_utc(now))
        run(self.c, oq.drop_quoting(self.n, where, binds, types))
        return sum(int(run(self.c, s).rowcount or 0) for s in stmts[1:])

    def write_meta(self, values: dict[str, str]) -> None:
        rows = [{"meta_key": k, "meta_value": v} for k, v in sorted(values.items())]
        run(self.c, sql.upsert_meta(self.n, rows))

    def restore(self, rows: Sequence[DumpRow], batch_size: int) -> None:
        restore(self, rows, batch_size)
