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
- TTL: the store's own expiry (SPEC §3.7): expired items are invisible at once and
  purged by ``purge_expired``. LangGraph TTLs are minutes and ``oam``'s are whole
  days, so an item's expiry is written as ``ttl_days`` anchored on a record timestamp
  set to ``expiry - ttl_days`` (``TimeToLiveAnchor.TIMESTAMP``); reads refresh it
  when ``refresh_ttl`` (or ``TTLConfig.refresh_on_read``) says so.

Search with a ``query`` is ranked by the ``oam`` store (its embedder, or KEYWORD /
HYBRID), or by ``IndexConfig.embed`` when the store has no embedder; a store that
can rank nothing lists matches, newest first, as LangGraph's ``InMemoryStore`` does
without an index. Filters: plain values, ``$eq`` and ``$ne`` run in the store's
query (SPEC §4); ``$gt``/``$gte``/``$lt``/``$lte`` are checked in Python on the
candidates (all of them, before ``offset``/``limit``).
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

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

from langchain_oam._search import relevance, store_ranks_text, text_kind
from langchain_oam._steps import Steps, lc, oam, run_async, run_sync
from langchain_oam.embeddings import LangChainEmbedder
from oam_core import (
    OracleAgentMemory,
    OracleMemoryStore,
    Record,
    SearchStrategy,
    SQLiteMemoryStore,
    TimeToLiveAnchor,
)

__all__ = ["OAMStore"]

_ID_NAMESPACE = uuid.UUID("6f1d3c52-8a0e-4d8e-9a57-3c3f1b0e2a11")
_LG = "langgraph"
_COMPARISONS = {"$gt", "$gte", "$lt", "$lte"}
_MEMORY_LIKE = ("memory", "guideline", "fact", "preference")
_SCAN = 10_000
"""Candidates fetched when a filter must be finished in Python (SPEC §10 list cap)."""
_MINUTES_PER_DAY = 24 * 60


def record_id(namespace: Sequence[str], key: str) -> str:
    """The ``oam`` record id of a LangGraph item: UUID5 of ``[namespace, key]``."""
    return str(uuid.uuid5(_ID_NAMESPACE, json.dumps([list(namespace), key], ensure_ascii=False)))


def _iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat(timespec="microseconds")


def _prefix_filter(prefix: Sequence[str]) -> dict[str, Any]:
    return {_LG: {"path": {str(i): label for i, label in enumerate(prefix)}}}


def _split_filter(flt: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """LangGraph filter -> (``oam`` filter on the value, conditions left for Python).

    Raises:
        ValueError: for an operator LangGraph does not define.
    """
    native: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, cond in (flt or {}).items():
        if isinstance(cond, Mapping) and any(str(k).startswith("$") for k in cond):
            ops = dict(cond)
            unknown = set(ops) - _COMPARISONS - {"$eq", "$ne"}
            if unknown:
                raise ValueError(f"filter[{key!r}]: unsupported operators {sorted(unknown)}")
            positive = [ops[o] for o in ("$eq",) if o in ops]
            negative = [ops[o] for o in ("$ne",) if o in ops]
            compare = {o: v for o, v in ops.items() if o in _COMPARISONS}
            if positive and negative:
                rest.setdefault(key, {})["$ne"] = negative[0]
            elif negative:
                native[key] = {"$not": negative[0]}
            if positive:
                native[key] = positive[0]
            if compare:
                rest.setdefault(key, {}).update(compare)
        else:
            native[key] = cond
    return native, rest


def _compare(value: Any, op: str, operand: Any) -> bool:
    if op == "$ne":
        return bool(value != operand)
    try:
        a, b = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _python_filter(value: Mapping[str, Any], rest: Mapping[str, Any]) -> bool:
    return all(
        key in value and all(_compare(value[key], op, operand) for op, operand in ops.items())
        for key, ops in rest.items()
    )


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
    """LangGraph ``BaseStore`` over an ``oam`` client or store (issue 4; see the
    module docstring for the mapping).

    Example::

        >>> store = OAMStore()
        >>> store.put(("memories", "alice"), "dog", {"text": "Alice's dog is Biscuit"})
        >>> store.get(("memories", "alice"), "dog").value
        {'text': "Alice's dog is Biscuit"}
        >>> [i.key for i in store.search(("memories",), query="dog")]
        ['dog']

    Args:
        memory: An ``OracleAgentMemory`` or ``OracleMemoryStore``; omitted: a new
            in-memory SQLite store, embedding with ``index["embed"]`` when given,
            else ranking queries by KEYWORD (BM25).
        index: LangGraph ``IndexConfig``: ``fields`` (JSON paths whose text is
            indexed; default ``["$"]``, the whole value), ``embed`` (LangChain
            ``Embeddings``, function or provider string; used when the ``oam``
            store has no embedder) and ``dims``.
        ttl: LangGraph ``TTLConfig``: ``default_ttl`` (minutes),
            ``refresh_on_read`` (default True). Expired items are always omitted.
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
            raise ValueError(
                f"record_type must be one of {list(_MEMORY_LIKE)}, got {record_type!r}"
            )
        for name, value in (("user_index", user_index), ("agent_index", agent_index)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise ValueError(f"{name} must be a non-negative int or None, got {value!r}")
        self.index_config = index
        self.ttl_config = ttl
        self.record_type = record_type
        self.user_index = user_index
        self.agent_index = agent_index
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self._fields: list[str] = list((index or {}).get("fields") or ["$"])
        embed = (index or {}).get("embed")
        self._embeddings: Embeddings | None = ensure_embeddings(embed) if embed else None
        self._owns_store = memory is None
        if memory is None:
            if index is not None and self._embeddings is None:
                raise ValueError("index needs 'embed' when OAMStore opens its own store")
            embedder = (
                LangChainEmbedder(self._embeddings, dimension=index.get("dims"))
                if self._embeddings is not None and index is not None
                else None
            )
            self.store: OracleMemoryStore = SQLiteMemoryStore(
                ":memory:",
                embedder=embedder,
                search_strategy=SearchStrategy.VECTOR if embedder else SearchStrategy.KEYWORD,
            )
        elif isinstance(memory, OracleAgentMemory):
            self.store = memory.store
        elif isinstance(memory, OracleMemoryStore):
            self.store = memory
        else:
            raise ValueError(
                f"memory must be an OracleAgentMemory or OracleMemoryStore, got {type(memory).__name__}"
            )

    def close(self) -> None:
        """Close the ``oam`` store if this object opened it."""
        if self._owns_store:
            self.store.close()

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

    def _ttl_kwargs(self, minutes: float | None, now: datetime) -> dict[str, Any]:
        if minutes is None:
            return {"ttl_days": None, "ttl_anchor": TimeToLiveAnchor.CREATED_AT, "timestamps": None}
        if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or minutes < 0:
            raise ValueError(f"ttl must be a non-negative number of minutes, got {minutes!r}")
        days = max(1, math.ceil(minutes / _MINUTES_PER_DAY))
        anchor = now + timedelta(minutes=minutes) - timedelta(days=days)
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
        kwargs = self._ttl_kwargs(minutes, self._now())
        yield oam(
            self.store,
            "update",
            self.record_type,
            record.id,
            timestamp=kwargs["timestamps"],
            ttl_days=kwargs["ttl_days"],
            ttl_anchor=kwargs["ttl_anchor"],
        )

    # ------------------------------------------------------------------- ops

    def _get_steps(self, op: GetOp) -> Steps[Item | None]:
        record = yield oam(self.store, "get", self.record_type, record_id(op.namespace, op.key))
        if record is None or _LG not in (record.metadata or {}):
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
                raise ValueError(f"value must be a dict or None, got {op.value!r}")
            rid = record_id(op.namespace, op.key)
            old = yield oam(self.store, "get", self.record_type, rid)
            old_lg = (old.metadata or {}).get(_LG, {}) if old is not None else {}
            texts = self._texts(op.value, op.index)
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
                    "content": "\n".join(texts) if texts else json.dumps(dict(op.value)),
                    "texts": texts,
                    "metadata": {_LG: lg, "value": dict(op.value)},
                    **self._scope(op.namespace),
                    **self._ttl_kwargs(op.ttl, now),
                }
            )
        if rows:
            extra: dict[str, Any] = {}
            if self.store.embedder is None and self._embeddings is not None:
                flat = [t for row in rows for t in row["texts"]]
                vectors = list((yield lc(self._embeddings, "embed_documents", flat)) or [])
                per_row = []
                for row in rows:
                    per_row.append(vectors[: len(row["texts"])])
                    vectors = vectors[len(row["texts"]) :]
                extra["embeddings"] = per_row
            # All puts of the batch in one upsert: one transaction.
            yield oam(
                self.store,
                "upsert",
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
                **extra,
            )
        if deletes:
            yield oam(self.store, "delete_records", self.record_type, deletes)

    def _search_steps(self, op: SearchOp) -> Steps[list[SearchItem]]:
        native, rest = _split_filter(op.filter)
        metadata_filter: dict[str, Any] = _prefix_filter(op.namespace_prefix)
        if native:
            metadata_filter["value"] = native
        wanted = op.offset + op.limit
        if op.limit <= 0:
            return []
        records: list[tuple[Record, float | None]]
        ranks = store_ranks_text(self.store) or self._embeddings is not None
        if op.query and op.query.strip() and ranks:
            k = _SCAN if rest else max(1, wanted)
            kwargs: dict[str, Any] = {
                "record_types": {self.record_type},
                "metadata_filter": metadata_filter,
            }
            if store_ranks_text(self.store):
                hits = yield oam(self.store, "search", op.query, k, **kwargs)
                kind = text_kind(self.store)
            else:
                assert self._embeddings is not None
                vector = yield lc(self._embeddings, "embed_query", op.query)
                hits = yield oam(self.store, "search", None, k, query_vector=vector, **kwargs)
                kind = "cosine"
            records = [(r, relevance(d, kind)) for r, d in hits]
        else:
            listed = yield oam(
                self.store, "list", self.record_type, None, metadata_filter=metadata_filter
            )
            listed.sort(key=lambda r: r.metadata[_LG]["updated_at"], reverse=True)
            records = [(r, None) for r in listed]
        kept = [
            (r, s) for r, s in records if _python_filter((r.metadata or {}).get("value", {}), rest)
        ][op.offset : wanted]
        for record, _ in kept:
            yield from self._refresh(record, op.refresh_ttl)
        return [self._item(r, s, search=True) for r, s in kept]  # type: ignore[misc]

    def _namespaces_steps(self, op: ListNamespacesOp) -> Steps[list[tuple[str, ...]]]:
        listed = yield oam(self.store, "list", self.record_type, None, metadata_filter={_LG: {}})
        found: set[tuple[str, ...]] = set()
        for record in listed:
            ns = tuple(record.metadata[_LG]["namespace"])
            if all(_matches_condition(ns, c) for c in op.match_conditions or ()):
                found.add(ns[: op.max_depth] if op.max_depth is not None else ns)
        return sorted(found)[op.offset : op.offset + op.limit]

    def _batch_steps(self, ops: Iterable[Op]) -> Steps[list[Result]]:
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)
        results: list[Result] = [None] * len(ops)
        i = 0
        while i < len(ops):
            op = ops[i]
            if isinstance(op, PutOp):
                j = i
                while j < len(ops) and isinstance(ops[j], PutOp):
                    j += 1
                yield from self._put_steps([o for o in ops[i:j] if isinstance(o, PutOp)])
                i = j
                continue
            if isinstance(op, GetOp):
                results[i] = yield from self._get_steps(op)
            elif isinstance(op, SearchOp):
                results[i] = yield from self._search_steps(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = yield from self._namespaces_steps(op)
            else:
                raise ValueError(f"unknown operation {op!r}")
            i += 1
        return results

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run LangGraph operations in order; consecutive puts are applied together
        (the last put of a (namespace, key) wins, as in ``InMemoryStore``).

        Raises:
            ValueError: for an invalid namespace, a non-dict value, a negative TTL,
                an unsupported filter operator, or an invalid ``oam`` filter.
        """
        return run_sync(self._batch_steps(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of ``batch`` (``oam``'s async store methods)."""
        return await run_async(self._batch_steps(ops))

    def purge_expired(self) -> int:
        """Delete expired records of the ``oam`` store now (SPEC §3.7)."""
        return self.store.purge_expired()
