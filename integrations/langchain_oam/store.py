"""``OAMStore``: a LangGraph ``BaseStore`` (long-term memory across threads) on ``oam``.

Each LangGraph item is one ``oam`` record of a memory-like type (``memory`` by
default):

- record id: a UUID5 of the namespace and key, so a (namespace, key) pair names one
  record and a put replaces it (``store.upsert``, one transaction per batch of puts);
- ``metadata["value"]``: the item's value; ``metadata["langgraph"]``: its namespace
  (also as ``path`` = ``{"0": label0, "1": label1, ...}`` so a namespace prefix is a
  metadata filter), key, ``created_at``, ``updated_at`` and TTL in minutes;
- content and search rows: the text of the indexed fields (``IndexConfig.fields``,
  default the whole value as JSON; a put's ``index`` overrides it; ``index=False``
  stores no search rows), one search row per extracted text;
- scope: with ``user_index``/``agent_index``, the namespace label at that position is
  the record's ``user_id``/``agent_id``, so ``oam``'s user-scoped search, context
  cards and ``delete_user(cascade=True)`` see the LangGraph memories too;
- ``metadata["$agent_memory"]``: the mark ``{"managed": true}`` (``MANAGED_MARK``)
  on every put: the graph manages its items, so the chat's extraction pass, which
  shows an item in the same user and agent scope to its model, never updates nor
  invalidates it (it may add a memory beside it; docs/langchain.md#langgraph-store).
  Items are read back from ``value`` and ``langgraph`` only, so the mark never shows;
- TTL: the store's own expiry (docs/store.md#ttl-and-retention): expired items are invisible at once and
  purged by ``purge_expired``. LangGraph TTLs are minutes and ``oam``'s are whole
  days, so an item's expiry is written as ``ttl_days`` anchored on a record timestamp
  set to ``expiry - ttl_days`` (``TimeToLiveAnchor.TIMESTAMP``); reads refresh it
  when ``refresh_ttl`` (or ``TTLConfig.refresh_on_read``) says so.

Search with a ``query`` is ranked when there is an index (``IndexConfig``), or a
given ``oam`` store that ranks text itself (its embedder, or KEYWORD / HYBRID);
scores are LangGraph's: the cosine similarity for vector search, as
``InMemoryStore`` and ``PostgresStore`` report it (``1 - distance``; KEYWORD and
HYBRID: the normalized score). A store this adapter opens itself (no ``memory``, or
``from_conn_string``) ranks by the query's vector alone, so order and scores are
``InMemoryStore``'s for the same embedding function. As in ``InMemoryStore``,
matching items that the ranking does not reach (``index=False``, or no query term
for KEYWORD) follow with score None; without an index the query is ignored and
matches are listed newest (last put) first, as ``PostgresStore`` lists them. A
search reads only the ``offset + limit`` records its page needs; a negative
``limit`` or ``offset`` is an ``InvalidArgumentError`` (docs/langchain.md#langgraph-store). Filters are LangGraph's (plain values
matched exactly, ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``) and the rest
of the ``oam`` language (docs/filters.md), applied to the item's value inside the
store's query, before ``offset``/``limit``.

Values are stored as JSON the way ``PostgresStore`` writes them (``orjson``):
``datetime``, ``date``, ``UUID``, dataclasses and enums become JSON values
(``datetime`` as its ISO 8601 text) and are read back as such.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import math
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    validate_op_namespace,
)

from langchain_oam._search import (
    current_at,
    distance_kind,
    filter_dict,
    relevance,
    store_ranks_text,
)
from langchain_oam.embeddings import LangChainEmbedder
from oam_core import (
    OracleAgentMemory,
    OracleMemoryStore,
    Record,
    SchemaPolicy,
    SQLiteMemoryStore,
    TimeToLiveAnchor,
)
from oam_core.apis.metadatajson import check_stored_json, managed
from oam_core.checks import check_int, check_optional_int, check_text
from oam_core.errors import ConfigurationError, InvalidArgumentError
from oam_core.steps import Steps, call, paired, run_async, run_sync

__all__ = ["OAMStore"]

_ID_NAMESPACE = uuid.UUID("6f1d3c52-8a0e-4d8e-9a57-3c3f1b0e2a11")
_LG = "langgraph"
_MEMORY_LIKE = ("memory", "guideline", "fact", "preference")
_MINUTES_PER_DAY = 24 * 60
_LAST_EXPIRY = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc)
"""The last expiry an item gets: ``put`` refuses a later one and a refresh on read
clamps to it (a whole second: the store keeps expiries as float epoch seconds, which
round a later instant of that day up into year 10000)."""
_DEFAULT_SWEEP_MINUTES = 5.0
"""Sweep interval of ``start_ttl_sweeper`` without one given (``PostgresStore``'s)."""
logger = logging.getLogger("oam")


def record_id(namespace: Sequence[str], key: str) -> str:
    """The ``oam`` record id of a LangGraph item: UUID5 of ``[namespace, key]``."""
    return str(uuid.uuid5(_ID_NAMESPACE, json.dumps([list(namespace), key], ensure_ascii=False)))


def _lg_fields(record: Record) -> dict[str, Any]:
    """The LangGraph fields of a record written by this store (its metadata holds
    them: the store lists only such records)."""
    assert record.metadata is not None
    fields: dict[str, Any] = record.metadata[_LG]
    return fields


def _check_labels(op: Op) -> None:
    """Refuse a key or namespace label no store can hold (a NUL, a lone surrogate),
    naming it, before anything is read or written.

    Raises:
        InvalidArgumentError: naming ``key`` or ``namespace[i]``.
    """
    labels = getattr(op, "namespace", None) or getattr(op, "namespace_prefix", None) or ()
    for i, label in enumerate(labels):
        if isinstance(label, str):
            check_text(label, f"namespace[{i}]")
    key = getattr(op, "key", None)
    if isinstance(key, str):
        check_text(key, "key")


def _iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat(timespec="microseconds")


def _prefix_filter(prefix: Sequence[str]) -> dict[str, Any]:
    return {_LG: {"path": {str(i): label for i, label in enumerate(prefix)}}}


def _as_json(value: Mapping[str, Any]) -> dict[str, Any]:
    """An item value as JSON: values JSON lacks (``datetime``, ``date``, ``UUID``,
    dataclasses, enums, numpy scalars) converted as ``orjson`` converts them (the
    serializer of LangGraph's server store), everything else kept exactly.

    Raises:
        ValueError: for a value that has no JSON form (naming it), a non-finite
            float or an int outside signed 64 bits (naming its key, ``value['v']``),
            or a NUL or lone surrogate in a key or string (naming its path,
            ``value['text']``). A non-string key becomes a
            string, as ``json.dumps`` turns it (docs/langchain.md#langgraph-store).
    """

    def convert(obj: Any) -> Any:
        try:
            return orjson.loads(orjson.dumps(obj))
        except TypeError:
            raise TypeError(f"{type(obj).__name__} value {obj!r}") from None

    try:
        # NaN and infinities pass here, to be named by their key below
        text = json.dumps(dict(value), default=convert, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"value is not JSON-serializable: {exc}") from None
    converted: dict[str, Any] = json.loads(text)
    # e.g. a NaN or an int past 64 bits (named by its key, value['v']), a NUL (named
    # by its path, value['text'], not the store's metadata[0]['value'])
    for key, item in converted.items():
        check_text(key, f"value key {key!r}")
        check_stored_json(item, f"value[{key!r}]")
    return converted


def _matches_condition(namespace: tuple[str, ...], cond: MatchCondition) -> bool:
    path = tuple(cond.path)
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if cond.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)


class OAMStore(BaseStore):
    """LangGraph ``BaseStore`` over an ``oam`` client or store (see the module
    docstring for the mapping; user guide in docs/langchain.md).

    Example::

        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> store = OAMStore(index={"embed": DeterministicFakeEmbedding(size=16), "dims": 16})
        >>> store.put(("memories", "alice"), "dog", {"text": "Alice's dog is Biscuit"})
        >>> store.get(("memories", "alice"), "dog").value
        {'text': "Alice's dog is Biscuit"}
        >>> [i.key for i in store.search(("memories",), query="Alice's dog is Biscuit")]
        ['dog']

    Args:
        memory: An ``OracleAgentMemory`` or ``OracleMemoryStore``; omitted: a new
            in-memory SQLite store, embedding with ``index["embed"]`` when given.
        index: LangGraph ``IndexConfig``: ``fields`` (JSON paths whose text is
            indexed; default ``["$"]``, the whole value), ``embed`` (LangChain
            ``Embeddings``, function or provider string; used when the ``oam``
            store has no embedder) and ``dims``. Without it (and without a given
            store that ranks text) queries are ignored, as in ``InMemoryStore``.
        ttl: LangGraph ``TTLConfig``: ``default_ttl`` (minutes),
            ``refresh_on_read`` (default True), ``sweep_interval_minutes``.
            Expired items are always omitted.
        record_type: The memory-like ``oam`` record type of items.
        user_index, agent_index: Namespace position holding the user (agent) id
            of an item; None = items are not scoped in that dimension.
        clock: Zero-argument callable returning an aware ``datetime``; TTL
            arithmetic uses it (default: UTC now). Give the ``oam`` store's clock
            when the store has an injected one.

    Raises:
        ValueError: for a non-store ``memory``, a record type that is not
            memory-like, a negative index position, or an index config without
            ``embed`` when ``memory`` is omitted but ``index`` is given.
        InvalidArgumentError: (a ``ValueError``) naming ``ttl['default_ttl']`` when
            it is not a finite, non-negative number of minutes or its expiry falls
            past the last representable date (year 9999).
    """

    supports_ttl: bool = True

    def __init__(
        self,
        memory: OracleAgentMemory | OracleMemoryStore | None = None,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        record_type: str = "memory",
        user_index: int | None = None,
        agent_index: int | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        if record_type not in _MEMORY_LIKE:
            raise InvalidArgumentError(
                f"record_type must be one of {list(_MEMORY_LIKE)}, got {record_type!r}"
            )
        for name, value in (("user_index", user_index), ("agent_index", agent_index)):
            check_optional_int(value, name, minimum=0)
        self.index_config = index
        self.ttl_config = ttl
        self.record_type = record_type
        self.user_index = user_index
        self.agent_index = agent_index
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        if ttl is not None:  # what every put without its own ttl would apply
            self._ttl_kwargs(ttl.get("default_ttl"), self._now(), name="ttl['default_ttl']")
            _sweep_minutes(None, ttl)
        self._fields: list[str] = list((index or {}).get("fields") or ["$"])
        embed = (index or {}).get("embed")
        self._embeddings: Embeddings | None = ensure_embeddings(embed) if embed else None
        self._owned: OracleAgentMemory | OracleMemoryStore | None = None
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()
        self._sweeper_future: concurrent.futures.Future[None] | None = None
        if memory is None:
            if index is not None and self._embeddings is None:
                raise ConfigurationError("index needs 'embed' when OAMStore opens its own store")
            self.store: OracleMemoryStore = SQLiteMemoryStore(
                ":memory:", embedder=self._own_embedder()
            )
            self._owned = self.store
        elif isinstance(memory, OracleAgentMemory):
            self.store = memory.store
        elif isinstance(memory, OracleMemoryStore):
            self.store = memory
        else:
            raise InvalidArgumentError(
                f"memory must be an OracleAgentMemory or OracleMemoryStore, got {type(memory).__name__}"
            )
        self._ranks = index is not None or (memory is not None and store_ranks_text(self.store))
        # A store this object opens promises InMemoryStore's (PostgresStore's) ranking:
        # the cosine similarity of the query vector, not the store's own text ranking.
        self._by_vector = memory is None and index is not None

    def _own_embedder(self) -> LangChainEmbedder | None:
        """The embedder of a store this object opens (the index's model, if any)."""
        if self._embeddings is None or self.index_config is None:
            return None
        return LangChainEmbedder(self._embeddings, dimension=self.index_config.get("dims"))

    @classmethod
    @contextlib.contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        schema_policy: SchemaPolicy | str = SchemaPolicy.CREATE_IF_NECESSARY,
        **kwargs: Any,
    ) -> Iterator[OAMStore]:
        """Open an ``OAMStore`` on a database, as ``PostgresStore.from_conn_string``.

        Example::

            >>> with OAMStore.from_conn_string("sqlite://:memory:") as store:
            ...     store.setup()
            ...     store.put(("users", "123"), "prefs", {"theme": "dark"})
            ...     store.get(("users", "123"), "prefs").value
            {'theme': 'dark'}

        Args:
            conn_string: A database URL or path as ``OracleAgentMemory(connection=)``
                takes it (``postgresql://...``, ``sqlite:///...``, ``oracle://...``).
            index: As the constructor; its ``embed`` becomes the store's embedder.
            ttl: As the constructor.
            schema_policy: ``SchemaPolicy`` (or name) of the store; the default
                creates the tables on a fresh database, as ``PostgresStore.setup``.
            **kwargs: ``record_type``, ``user_index``, ``agent_index``, ``clock``.

        Yields:
            The store; it, its TTL sweeper and its database connections are closed
            when the block ends.

        Raises:
            ValueError: as ``OracleAgentMemory(connection=...)`` (an unsupported URL,
                a missing schema under ``REQUIRE_EXISTING``) or the constructor.
        """
        embed = (index or {}).get("embed")
        if index is not None and not embed:
            raise ConfigurationError("index needs 'embed' when OAMStore opens its own store")
        embedder = (
            LangChainEmbedder(ensure_embeddings(embed), dimension=index.get("dims"))
            if index is not None
            else None
        )
        client = OracleAgentMemory(
            connection=conn_string,
            embedder=embedder,
            extract_memories=False,
            schema_policy=schema_policy,
        )
        try:
            store = cls(client, index=index, ttl=ttl, **kwargs)
        except BaseException:
            client.close()
            raise
        store._owned = client
        store._by_vector = index is not None
        try:
            yield store
        finally:
            store.close()

    def setup(self) -> None:
        """Kept for ``PostgresStore`` code (``store.setup()`` once before first use):
        the schema is already in place, created or checked when the store opened
        (its ``schema_policy``), so there is nothing left to run."""

    def close(self) -> None:
        """Stop the TTL sweeper and close the ``oam`` store if this object opened it."""
        self.stop_ttl_sweeper()
        if self._owned is not None:
            self._owned.close()

    # -------------------------------------------------------------------- TTL

    def sweep_ttl(self) -> int:
        """Delete expired items (and every other expired record of the ``oam`` store)
        now, as ``PostgresStore.sweep_ttl``.

        Returns:
            The number of records deleted.
        """
        return self.store.purge_expired()

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep expired items in a background thread, as ``PostgresStore``'s sweeper:
        first at once, then every ``sweep_interval_minutes`` (else the TTL config's,
        else 5) until ``stop_ttl_sweeper``. Without a TTL config nothing starts.

        Returns:
            A future resolved when the sweeper stops (already resolved without a TTL
            config); a second call while it runs returns the same future.

        Raises:
            InvalidArgumentError: naming ``sweep_interval_minutes`` (or the TTL
                config's) when it is not a finite number of minutes > 0 that a
                thread can wait (at most ``threading.TIMEOUT_MAX`` seconds, about
                292 years): checked here, not inside the sweeper thread.
        """
        if not self.ttl_config:
            if sweep_interval_minutes is not None:
                _sweep_minutes(sweep_interval_minutes, {})
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            done.set_result(None)
            return done
        if self._sweeper is not None and self._sweeper.is_alive():
            assert self._sweeper_future is not None
            return self._sweeper_future
        minutes = _sweep_minutes(sweep_interval_minutes, self.ttl_config)
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._sweeper_stop.clear()

        def loop() -> None:
            try:
                while not self._sweeper_stop.is_set():
                    try:
                        self.sweep_ttl()
                    except Exception:  # keep sweeping; the next pass may succeed
                        logger.exception("OAMStore TTL sweep failed")
                    self._sweeper_stop.wait(minutes * 60)
            finally:
                future.set_result(None)

        self._sweeper_future = future
        self._sweeper = threading.Thread(target=loop, name="oam-ttl-sweeper", daemon=True)
        self._sweeper.start()
        return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the TTL sweeper thread.

        Args:
            timeout: Seconds to wait for it to finish (None: until it does).

        Returns:
            True when no sweeper runs any more.
        """
        thread = self._sweeper
        if thread is None:
            return True
        self._sweeper_stop.set()
        thread.join(timeout)
        if thread.is_alive():
            return False
        self._sweeper = None
        return True

    # --------------------------------------------------------------- mapping

    def _now(self) -> datetime:
        return self._clock()

    def _scope(self, namespace: Sequence[str]) -> dict[str, str | None]:
        def at(i: int | None) -> str | None:
            return namespace[i] if i is not None and i < len(namespace) else None

        return {"user_ids": at(self.user_index), "agent_ids": at(self.agent_index)}

    def _texts(self, value: Mapping[str, Any], index: Any) -> list[str]:
        if index is False:
            return []
        fields = list(index) if isinstance(index, list) else self._fields
        texts: list[str] = []
        for path in fields:
            texts.extend(t for t in get_text_at_path(dict(value), path) if t.strip())
        return texts

    def _ttl_kwargs(
        self, minutes: float | None, now: datetime, name: str = "ttl", clamp: bool = False
    ) -> dict[str, Any]:
        """The ``oam`` TTL arguments of an item put (or refreshed) at ``now`` with a
        LangGraph TTL of ``minutes`` (None: never expires).

        Args:
            clamp: For a refresh on read: an expiry past the last representable
                date is set to that date instead of refused, so reading an item
                ``put`` accepted never fails (docs/langchain.md#langgraph-store).

        Raises:
            InvalidArgumentError: naming ``name`` for a TTL that is not a finite,
                non-negative number of minutes, or (without ``clamp``) whose expiry
                falls past the last date the store can hold (year 9999; the core's
                ``ttl_days`` rule).
        """
        if minutes is None:
            return {"ttl_days": None, "ttl_anchor": TimeToLiveAnchor.CREATED_AT, "timestamps": None}
        if (
            isinstance(minutes, bool)
            or not isinstance(minutes, (int, float))
            or not math.isfinite(minutes)
            or minutes < 0
        ):
            raise InvalidArgumentError(
                f"{name} must be a finite, non-negative number of minutes (or None), got {minutes!r}"
            )
        days = max(1, math.ceil(minutes / _MINUTES_PER_DAY))
        try:
            expires = now + timedelta(minutes=minutes)
            if expires > _LAST_EXPIRY:
                raise OverflowError
        except OverflowError:
            if not clamp:
                raise InvalidArgumentError(
                    f"{name}={minutes!r} minutes from {_iso(now)} is past the last representable date"
                ) from None
            expires = _LAST_EXPIRY
        try:
            anchor = expires - timedelta(days=days)
        except OverflowError:
            raise InvalidArgumentError(
                f"{name}={minutes!r} minutes from {_iso(now)} is past the last representable date"
            ) from None
        return {
            "ttl_days": days,
            "ttl_anchor": TimeToLiveAnchor.TIMESTAMP,
            "timestamps": _iso(anchor),
        }

    @staticmethod
    def _item(record: Record, score: float | None = None, search: bool = False) -> Item:
        meta = record.metadata or {}
        lg = meta[_LG]
        fields = {
            "namespace": tuple(lg["namespace"]),
            "key": lg["key"],
            "value": meta.get("value", {}),
            "created_at": datetime.fromisoformat(lg["created_at"]),
            "updated_at": datetime.fromisoformat(lg["updated_at"]),
        }
        return SearchItem(score=score, **fields) if search else Item(**fields)

    def _refresh(self, record: Record, refresh: bool | None) -> Steps[None]:
        """Push an item's expiry forward by its TTL after a read."""
        if refresh is None:
            refresh = (self.ttl_config or {}).get("refresh_on_read", True)
        minutes = (record.metadata or {}).get(_LG, {}).get("ttl")
        if not refresh or minutes is None:
            return
        kwargs = self._ttl_kwargs(minutes, self._now(), clamp=True)
        yield from call(
            self.store.update,
            self.record_type,
            record.id,
            timestamp=kwargs["timestamps"],
            ttl_days=kwargs["ttl_days"],
            ttl_anchor=kwargs["ttl_anchor"],
        )

    # ------------------------------------------------------------------- ops

    def _get_steps(self, op: GetOp) -> Steps[Item | None]:
        record = yield from call(self.store.get, self.record_type, record_id(op.namespace, op.key))
        if record is None or _LG not in (record.metadata or {}):
            return None
        if not current_at(record, self.store.clock_now()):  # the clock searches read by
            return None
        yield from self._refresh(record, op.refresh_ttl)
        return self._item(record)

    def _put_steps(self, ops: Sequence[PutOp]) -> Steps[None]:
        latest: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            latest[(tuple(op.namespace), op.key)] = op
        deletes = [record_id(ns, key) for (ns, key), op in latest.items() if op.value is None]
        puts = [op for op in latest.values() if op.value is not None]
        now = self._now()
        rows: list[dict[str, Any]] = []
        for op in puts:
            if not isinstance(op.value, Mapping):
                raise InvalidArgumentError(f"value must be a dict or None, got {op.value!r}")
            value = _as_json(op.value)
            rid = record_id(op.namespace, op.key)
            old = yield from call(self.store.get, self.record_type, rid)
            old_lg = (old.metadata or {}).get(_LG, {}) if old is not None else {}
            texts = self._texts(value, op.index)
            lg = {
                "namespace": list(op.namespace),
                "path": {str(i): label for i, label in enumerate(op.namespace)},
                "key": op.key,
                "created_at": old_lg.get("created_at", _iso(now)),
                "updated_at": _iso(now),
                "ttl": op.ttl,
            }
            rows.append(
                {
                    "id": rid,
                    "content": "\n".join(texts) if texts else json.dumps(value),
                    "texts": texts,
                    "metadata": managed({_LG: lg, "value": value}),
                    **self._scope(op.namespace),
                    **self._ttl_kwargs(op.ttl, now),
                }
            )
        if rows:
            extra: dict[str, Any] = {}
            if self.store.embedder is None and self._embeddings is not None:
                flat = [t for row in rows for t in row["texts"]]
                vectors = list(
                    (
                        yield from call(
                            paired(
                                self._embeddings.embed_documents, self._embeddings.aembed_documents
                            ),
                            flat,
                        )
                    )
                    or []
                )
                per_row = []
                for row in rows:
                    per_row.append(vectors[: len(row["texts"])])
                    vectors = vectors[len(row["texts"]) :]
                extra["embeddings"] = per_row
            # All puts of the batch in one upsert: one transaction.
            yield from call(
                self.store.upsert,
                [row["content"] for row in rows],
                self.record_type,
                index_texts=[row["texts"] for row in rows],
                record_ids=[row["id"] for row in rows],
                user_ids=[row["user_ids"] for row in rows],
                agent_ids=[row["agent_ids"] for row in rows],
                metadata=[row["metadata"] for row in rows],
                ttl_days=[row["ttl_days"] for row in rows],
                ttl_anchor=[row["ttl_anchor"] for row in rows],
                timestamps=[row["timestamps"] for row in rows],
                valid_from=None,  # a TTL anchor, not a validity window: readable at once
                **extra,
            )
        if deletes:
            yield from call(self.store.delete_records, self.record_type, deletes)

    def _search_steps(self, op: SearchOp) -> Steps[list[SearchItem]]:
        if op.limit == 0:
            return []
        metadata_filter: dict[str, Any] = _prefix_filter(op.namespace_prefix)
        if op.filter:
            # the oam language, on the value
            metadata_filter["value"] = filter_dict(op.filter, "filter")
        wanted = op.offset + op.limit
        records: list[tuple[Record, float | None]] = []
        if op.query and op.query.strip() and self._ranks:
            kwargs: dict[str, Any] = {
                "record_types": {self.record_type},
                "metadata_filter": metadata_filter,
            }
            if store_ranks_text(self.store) and not self._by_vector:
                hits = yield from call(self.store.search, op.query, wanted, **kwargs)
            else:
                assert self._embeddings is not None
                vector = yield from call(
                    paired(self._embeddings.embed_query, self._embeddings.aembed_query), op.query
                )
                hits = yield from call(
                    self.store.search, None, wanted, query_vector=vector, **kwargs
                )
            records = [(r, relevance(d, distance_kind(d))) for r, d in hits]
        if len(records) < wanted:
            # Matches the ranking did not reach follow unscored, newest (last put)
            # first, as InMemoryStore appends items it holds no vectors for. A put
            # writes its record anew, so the store's newest ``wanted`` rows are the
            # last put; at most ``len(records)`` of them are ranked already, so they
            # hold every unranked item the page needs. Like the ranked search, the
            # list holds only items valid now (an item ended by invalidate_memory or
            # replaced by update_memory is left out; docs/versions.md).
            listed = yield from call(
                self.store.list,
                self.record_type,
                wanted,
                metadata_filter=metadata_filter,
                as_of=self.store.runtime.now(),
            )
            seen = {r.id for r, _ in records}
            records += [(r, None) for r in reversed(listed) if r.id not in seen]
        kept = records[op.offset : wanted]
        for record, _ in kept:
            yield from self._refresh(record, op.refresh_ttl)
        return [self._item(r, s, search=True) for r, s in kept]  # type: ignore[misc]

    def _namespaces_steps(self, op: ListNamespacesOp) -> Steps[list[tuple[str, ...]]]:
        # Items only: records holding a namespace, current ones (as get and search).
        listed = yield from call(
            self.store.list,
            self.record_type,
            None,
            metadata_filter={_LG: {"namespace": {"$exists": True}}},
            as_of=self.store.clock_now(),
        )
        found: set[tuple[str, ...]] = set()
        for record in listed:
            labels = _lg_fields(record).get("namespace")
            if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
                continue  # another writer's "langgraph" metadata, not an item
            ns = tuple(labels)
            if all(_matches_condition(ns, c) for c in op.match_conditions or ()):
                found.add(ns[: op.max_depth] if op.max_depth is not None else ns)
        return sorted(found)[op.offset : op.offset + op.limit]

    def _batch_steps(self, ops: Iterable[Op]) -> Steps[list[Result]]:
        ops = list(ops)
        now = self._now()
        for op in ops:
            validate_op_namespace(op)
            _check_labels(op)
            if isinstance(op, PutOp) and op.value is not None:
                self._ttl_kwargs(op.ttl, now)  # refused before anything is read or written
            if isinstance(op, (SearchOp, ListNamespacesOp)):
                check_int(op.limit, "limit", minimum=0)
                check_int(op.offset, "offset", minimum=0)
            if isinstance(op, SearchOp) and not isinstance(op.query, (str, type(None))):
                raise InvalidArgumentError(f"query must be a str or None, got {op.query!r}")
            if isinstance(op, ListNamespacesOp):
                check_optional_int(op.max_depth, "max_depth", minimum=0)
        results: list[Result] = [None] * len(ops)
        puts: list[PutOp] = []
        # As InMemoryStore and PostgresStore: the reads of a batch see the store as it
        # was before the batch; its puts are applied together afterwards.
        for i, op in enumerate(ops):
            if isinstance(op, PutOp):
                puts.append(op)
            elif isinstance(op, GetOp):
                results[i] = yield from self._get_steps(op)
            elif isinstance(op, SearchOp):
                results[i] = yield from self._search_steps(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = yield from self._namespaces_steps(op)
            else:
                raise InvalidArgumentError(f"unknown operation {op!r}")
        if puts:
            yield from self._put_steps(puts)
        return results

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run LangGraph operations: the reads in order, on the store as it was before
        the batch, then every put together in one transaction (the last put of a
        (namespace, key) wins), as ``InMemoryStore`` and ``PostgresStore`` do.

        Raises:
            InvalidArgumentError: (a ``ValueError``) for a negative or non-int
                ``limit`` or ``offset`` of a search or namespace listing, or
                ``max_depth`` of a listing, or a search ``query`` that is not a str
                or None, before any operation of the batch runs.
            InvalidArgumentError: naming ``ttl`` for a put whose TTL is negative,
                infinite, NaN or expires past the last representable date (year
                9999), before any operation of the batch runs.
            ValueError: for an invalid namespace, a non-dict value, an unsupported
                filter operator, or an invalid ``oam`` filter.
        """
        return run_sync(self._batch_steps(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of ``batch`` (``oam``'s async store methods)."""
        return await run_async(self._batch_steps(ops))

    def purge_expired(self) -> int:
        """Delete expired records of the ``oam`` store now (docs/store.md#ttl-and-retention)."""
        return self.store.purge_expired()


def _sweep_minutes(given: object, ttl: Mapping[str, Any]) -> float:
    """The sweeper's interval in minutes: ``given``, else the TTL config's
    ``sweep_interval_minutes``, else 5.

    Raises:
        InvalidArgumentError: naming the argument (or ``ttl['sweep_interval_minutes']``)
            for anything but a finite number > 0 whose seconds a thread can wait
            (``threading.TIMEOUT_MAX``); a bigger one overflowed in the thread.
    """
    name, value = "sweep_interval_minutes", given
    if value is None:
        name, value = "ttl['sweep_interval_minutes']", ttl.get("sweep_interval_minutes")
    if value is None:
        return float(_DEFAULT_SWEEP_MINUTES)
    if (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and math.isfinite(value)
        and value > 0
        and value * 60 <= threading.TIMEOUT_MAX
    ):
        return float(value)
    raise InvalidArgumentError(
        f"{name} must be a finite number of minutes > 0 and at most "
        f"{threading.TIMEOUT_MAX / 60:.0f}, got {value!r}"
    )
