"""``OracleThread``: one conversation backed by a memory store (seed 000; SPEC §6-§7).

Every public operation is written once, as a *generator of calls* (``Steps``): it
yields ``Call`` values (a store or LLM method plus arguments) and receives their
results. ``run_sync`` performs each call with the plain method; ``run_async`` awaits
the ``*_async`` twin (or runs the sync method in a worker thread when the target has
no twin). So ``add_messages`` and ``add_messages_async`` share all their logic (SPEC
§9; STYLE §1), and sync methods stay plain blocking code that also works when called
from inside a running event loop.

The LLM pipeline (extraction, running summary) is not part of this module yet: its
seams are ``OracleThread._after_messages_added`` (runs after the raw messages are
persisted) and the ``summary.RUNNING_SUMMARY_STATE_KEY`` entry of the thread row's state,
which ``get_summary`` and ``get_context_card`` already read.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio.to_thread

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.llm import ILlm
from oam_core.apis.records import MEMORY_TYPES, MESSAGE, MessageRecord, Record
from oam_core.apis.thread import IThread, Message, MessageLike, to_message
from oam_core.llms.bounded import DEFAULT_LLM_CALL_TIMEOUT, BoundedLlm, check_call_timeout
from oam_core.memory.config import MemoryExtractionMode, check_extraction_mode
from oam_core.memory.contextcard import OracleContextCard
from oam_core.memory.diagnostics import pipeline_warning
from oam_core.memory.indexing import CONTEXT_MESSAGES, message_index_texts
from oam_core.memory.pipeline import PipelineJob, check_messages_fit, pipeline_steps
from oam_core.memory.provenance import is_superseded
from oam_core.memory.steps import Call, Steps, call, run_async, run_sync
from oam_core.memory.summary import (
    OracleSummary,
    RunningSummary,
    running_summary_from_state,
    transcript_line,
)
from oam_core.memory.threadconfig import (
    ThreadConfig,
    _check_int,
    _check_record_id,
    _check_store_kwargs,
    _reject_kwargs,
    check_id,
    check_scope,
)
from oam_core.memory.tokens import tokens_for_chars, truncate_tail
from oam_core.memory.worker import ExtractionWorker, check_wait_timeout
from oam_core.store.options import SearchStrategy
from oam_core.store.planning import check_text, dump_metadata

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

__all__ = [
    "DEFAULT_MESSAGE_WINDOW",
    "Call",
    "OracleThread",
    "Steps",
    "ThreadConfig",
    "add_memory_steps",
    "call",
    "check_id",
    "check_scope",
    "run_async",
    "run_sync",
]

T = TypeVar("T")

DEFAULT_MESSAGE_WINDOW = 100
"""Messages returned by ``get_messages`` when the window is left open (SPEC §10)."""

_TRANSCRIPT_PAGE = 100
"""Messages read per store call while collecting a budget-bounded transcript."""

_MAX_QUERY_TOKENS = 2000
"""Bound on the context card's retrieval query (its most recent part is kept)."""
_SUPERSEDED_OVERFETCH = 3
"""Memory results fetched per slot, so superseded memories can be dropped."""

_MESSAGE_KEYS = frozenset(
    {
        "contents",
        "record_type",
        "record_ids",
        "thread_ids",
        "user_ids",
        "agent_ids",
        "roles",
        "timestamps",
        "metadata",
    }
)
_BATCH_FIELDS = frozenset(f.name for f in dataclasses.fields(PendingRecordBatch))
"""``store_kwargs`` of thread writes that are per-record fields of the batch."""
_MEMORY_KEYS = frozenset(
    {"contents", "record_type", "record_ids", "thread_ids", "user_ids", "agent_ids", "roles"}
)


# ------------------------------------------------------------------------ messages


def _prepare_messages(messages: object) -> list[Message]:
    """Coerce to ``Message`` objects and give every message an id (uuid4 if missing).

    ``store.add`` takes ids all-or-none (SPEC §2), so missing ids are generated here.
    """
    if isinstance(messages, (str, bytes, Mapping, Message)) or not isinstance(messages, Iterable):
        raise ValueError(
            f"messages must be a list of Message objects or dicts, got {type(messages).__name__}"
        )
    prepared: list[Message] = []
    for i, value in enumerate(cast(Iterable[MessageLike], messages)):
        message = to_message(value)
        for name in ("role", "content", "id", "timestamp"):
            text = getattr(message, name)
            if text is not None:
                check_text(text, f"messages[{i}].{name}")
        dump_metadata(message.metadata, f"messages[{i}].metadata")
        if message.id is None:
            message = Message(
                role=message.role,
                content=message.content,
                timestamp=message.timestamp,
                metadata=message.metadata,
                id=str(uuid.uuid4()),
            )
        prepared.append(message)
    return prepared


def _as_message(record: Record, *, timestamp_fallback: bool = False) -> Message:
    """A stored message record as a ``Message`` (``created_at`` fills a missing time
    when ``timestamp_fallback``)."""
    role = record.role if isinstance(record, MessageRecord) and record.role else "unknown"
    timestamp = record.timestamp
    if timestamp is None and timestamp_fallback:
        timestamp = record.created_at
    return Message(
        role=role,
        content=record.content if record.content is not None else "",
        timestamp=timestamp,
        metadata=record.metadata,
        id=record.id,
    )


def _window(start: object, end: object) -> dict[str, Any]:
    """Translate ``get_messages(start, end)`` into ``list_thread_messages`` arguments.

    SPEC §6: both omitted -> the last 100; ``end`` omitted -> 100 messages from
    ``start``; ``end`` None or -1 -> everything from ``start``; otherwise Python slice
    semantics (negative values count from the end).
    """
    if start is NOT_SET or start is None:
        if end is NOT_SET:
            return {"start": -DEFAULT_MESSAGE_WINDOW, "end": None}
        first = 0
    else:
        first = _check_int("start", start)
    last: int | None
    if end is NOT_SET:
        stop = first + DEFAULT_MESSAGE_WINDOW
        last = stop if first >= 0 or stop < 0 else None
    elif end is None or _check_int("end", end) == -1:
        last = None
    else:
        last = _check_int("end", end)
    return {"start": first, "end": last}


def _can_search(store: OracleMemoryStore) -> bool:
    """Whether ``store.search`` can rank a text query (VECTOR needs an embedder)."""
    strategy = getattr(store, "search_strategy", SearchStrategy.VECTOR)
    return store.embedder is not None or strategy is not SearchStrategy.VECTOR


def _result_key(item: tuple[Record, float]) -> tuple[float, str, str]:
    record, distance = item
    return (distance, record.record_type, record.id)


# -------------------------------------------------------------------------- thread


class OracleThread(IThread):
    """A thread backed by a memory store (seed 000; SPEC §6).

    Messages are stored one record per message; memories added by hand (and, with an
    LLM, extracted ones) are stored as typed memory records scoped to the thread's
    user, agent and thread. Constructing a thread does no I/O:
    ``OracleAgentMemory.create_thread`` writes the thread row, ``get_thread`` reads
    it back. Thread-scoped writes (``add_messages``, ``add_memory``) check the row
    in the transaction that writes the records, so no record ever exists without
    its thread row: a handle whose row was deleted since it was opened fails with
    ValueError (nothing is written); a handle built directly creates its row.

    Args:
        store: The store that persists the thread's records.
        thread_id: Thread id; a uuid4 is generated when omitted.
        user_id: User the thread belongs to; a uuid4 is generated when omitted;
            ``None`` = no user (SPEC §1).
        agent_id: Agent the thread belongs to; a uuid4 is generated when omitted;
            ``None`` = no agent.
        metadata: JSON-like metadata of the thread.
        persist_messages_in_config: Accepted for compatibility; store-backed threads
            never copy messages into their config.
        llm: LLM used for memory extraction and the running summary, or None.
        memory_extraction_window: See ``ThreadConfig``.
        context_summary_update_frequency: See ``ThreadConfig``.
        memory_extraction_frequency: See ``ThreadConfig``.
        memory_extraction_token_limit: See ``ThreadConfig``.
        context_card_token_limit: See ``ThreadConfig``.
        max_message_token_length: See ``ThreadConfig``.
        message_shortening_input_token_limit: See ``ThreadConfig``.
        enable_context_summary: See ``ThreadConfig``.
        client: The ``OracleAgentMemory`` that opened the thread, if any.
        extract_memories: Whether memories are extracted when an LLM is configured.
        state: Persisted pipeline state of the thread row (as read by ``get_thread``).
        extraction_mode: ``MemoryExtractionMode`` (or its name): ``INLINE`` finishes
            the LLM passes before ``add_messages`` returns; ``BACKGROUND`` queues them
            on a worker (``wait_for_memory_extraction`` waits for it).
        stored: The thread row exists (the client created or read it): once it is
            deleted, writes through this handle fail instead of recreating it.
        llm_call_timeout: Seconds one pipeline LLM call may take (None: no bound);
            an overrun fails that pass like an LLM error (docs/memory-pipeline.md).

    Raises:
        ValueError: naming the argument, for a ``None`` or blank ``thread_id``, a
            blank scope id, a non-dict ``metadata``, an ``llm`` that is not an ``ILlm``, or an invalid
            option value.
    """

    def __init__(
        self,
        store: OracleMemoryStore,
        thread_id: Maybe[str] = NOT_SET,
        user_id: Maybe[str | None] = NOT_SET,
        agent_id: Maybe[str | None] = NOT_SET,
        metadata: dict[str, Any] | None = None,
        persist_messages_in_config: bool = False,
        llm: ILlm | None = None,
        memory_extraction_window: int = -1,
        context_summary_update_frequency: int = -1,
        memory_extraction_frequency: int = -1,
        memory_extraction_token_limit: int = 100_000,
        context_card_token_limit: int = 100_000,
        max_message_token_length: int = 15_000,
        message_shortening_input_token_limit: int = 30_000,
        enable_context_summary: bool = False,
        client: Any | None = None,
        *,
        extract_memories: bool = True,
        state: Mapping[str, Any] | None = None,
        extraction_mode: MemoryExtractionMode | str = MemoryExtractionMode.INLINE,
        stored: bool = False,
        llm_call_timeout: float | None = DEFAULT_LLM_CALL_TIMEOUT,
    ) -> None:
        self.thread_id: str = check_id("thread_id", thread_id)
        self.user_id: str | None = check_scope("user_id", user_id, str(uuid.uuid4()))
        self.agent_id: str | None = check_scope("agent_id", agent_id, str(uuid.uuid4()))
        if metadata is not None and not isinstance(metadata, dict):
            raise ValueError(f"metadata must be a dict or None, got {metadata!r}")
        if llm is not None and not isinstance(llm, ILlm):
            raise ValueError(f"llm must be an ILlm or None, got {type(llm).__name__}")
        if not isinstance(extract_memories, bool):
            raise ValueError(f"extract_memories must be a bool, got {extract_memories!r}")
        self.config = ThreadConfig(
            max_message_token_length=max_message_token_length,
            message_shortening_input_token_limit=message_shortening_input_token_limit,
            memory_extraction_window=memory_extraction_window,
            context_summary_update_frequency=context_summary_update_frequency,
            memory_extraction_frequency=memory_extraction_frequency,
            memory_extraction_token_limit=memory_extraction_token_limit,
            context_card_token_limit=context_card_token_limit,
            enable_context_summary=enable_context_summary,
        )
        self.metadata = metadata
        self.llm = llm
        self.extract_memories = extract_memories
        self.client = client
        self.persist_messages_in_config = False
        self._store = store
        self._state: dict[str, Any] = dict(state or {})
        self.extraction_mode: MemoryExtractionMode = check_extraction_mode(extraction_mode)
        self._own_worker: ExtractionWorker | None = None
        self._stored = bool(stored)
        self.llm_call_timeout = check_call_timeout(llm_call_timeout)

    @property
    def store(self) -> OracleMemoryStore:
        """The store backing this thread."""
        return self._store

    def __repr__(self) -> str:
        return (
            f"OracleThread(thread_id={self.thread_id!r}, user_id={self.user_id!r}, "
            f"agent_id={self.agent_id!r})"
        )

    # ------------------------------------------------------------- add_messages

    def add_messages(self, messages: Sequence[MessageLike], **store_kwargs: Any) -> list[str]:
        """Persist messages, in order, in one store write (seed 000; SPEC §6).

        Messages without an id get a uuid4. The raw messages are written first, in one
        transaction, before any LLM work, so they are never lost. An empty list is a
        no-op (no store write, no LLM call).

        Example (seed 000)::

            >>> len(thread.add_messages([{"role": "user", "content": "I love pizza."}]))
            1

        Args:
            messages: ``Message`` objects, or dicts with ``role`` and ``content``
                (optional ``id``, ``timestamp``, ``metadata``).
            **store_kwargs: Write options forwarded to ``store.add`` (e.g.
                ``ttl_days``); the scope, role, timestamp and metadata arguments are
                set by the thread and cannot be passed.

        Returns:
            The message ids, in input order.

        Raises:
            ValueError: for a malformed message, duplicate ids, a reserved
                ``store_kwargs`` key, or an option the store rejects; nothing is
                written.
            TypeError: for a message that is neither a ``Message`` nor a dict.
        """
        return run_sync(self._add_messages_steps(messages, store_kwargs))

    async def add_messages_async(
        self, messages: Sequence[MessageLike], **store_kwargs: Any
    ) -> list[str]:
        """Async twin of ``add_messages`` (same semantics)."""
        return await run_async(self._add_messages_steps(messages, store_kwargs))

    def _add_messages_steps(
        self, messages: object, store_kwargs: Mapping[str, Any]
    ) -> Steps[list[str]]:
        prepared = _prepare_messages(messages)
        _check_store_kwargs("add_messages", store_kwargs, _MESSAGE_KEYS)
        if not prepared:
            return []
        self._check_client_open()
        job = self._pipeline_job()
        if job is not None and job.extract:
            check_messages_fit([m.content for m in prepared], self.config)
        index_kwargs: dict[str, Any] = {}
        if "index_texts" not in store_kwargs:
            last: list[MessageRecord] = yield from call(
                self._store, "list_thread_messages", self.thread_id, CONTEXT_MESSAGES
            )
            index_kwargs["index_texts"] = message_index_texts(
                prepared, [_as_message(m) for m in last], self._store.chunk_chars
            )
        ids = yield from self._thread_write_steps(
            {
                "texts": [m.content for m in prepared],
                "record_type": MESSAGE,
                "record_ids": [m.id for m in prepared],
                "user_ids": self.user_id,
                "agent_ids": self.agent_id,
                "roles": [m.role for m in prepared],
                "timestamps": [m.timestamp for m in prepared],
                "metadata": [m.metadata for m in prepared],
                **index_kwargs,
            },
            store_kwargs,
        )
        yield from self._after_messages_added(list(ids), prepared)
        return list(ids)

    def _persisted_config(self) -> dict[str, Any]:
        """The thread's options in the form ``create_thread`` persists on its row."""
        config: dict[str, Any] = self.config.as_kwargs()
        return config

    def _thread_write_steps(
        self, fields: Mapping[str, Any], store_kwargs: Mapping[str, Any]
    ) -> Steps[list[str]]:
        """Write one batch of this thread's records together with the check of its
        row, in one transaction (``OracleMemoryStore.add_to_thread``; BUGCASES C16,
        C22): records never exist without their thread row.

        A handle opened from its stored row (``create_thread``/``get_thread``) whose
        row was deleted since (``delete_thread``, a cascading ``delete_user``) fails
        with ValueError and writes nothing. A handle built directly on a store
        creates its missing row, in the same transaction, from its scope, metadata
        and options.

        ``store_kwargs`` that are ``PendingRecordBatch`` fields (``ttl_days``,
        ``index_texts``, ...) go into the batch; the rest (``batch_size``) to the
        store.
        """
        batch_fields = dict(fields)
        extra: dict[str, Any] = {}
        for key, value in store_kwargs.items():
            (batch_fields if key in _BATCH_FIELDS else extra)[key] = value
        batch = PendingRecordBatch(thread_ids=self.thread_id, **batch_fields)
        missing_row = None
        if not self._stored:
            missing_row = {
                "user_id": self.user_id,
                "agent_id": self.agent_id,
                "metadata": self.metadata,
                "config": self._persisted_config(),
            }
        ids: list[str] = yield from call(
            self._store, "add_to_thread", self.thread_id, [batch], missing_row=missing_row, **extra
        )
        self._stored = True
        return ids

    def _check_client_open(self) -> None:
        """Refuse writes through a closed client before anything is stored (its
        background worker is gone, and its store may be closed)."""
        if self.client is not None and getattr(self.client, "closed", False):
            raise ValueError(
                f"thread {self.thread_id!r}: its OracleAgentMemory is closed; reopen the "
                "thread from an open client"
            )

    def _pipeline_job(self) -> PipelineJob | None:
        """The LLM work this thread does after new messages, or None (no LLM, or
        neither extraction nor the running summary is on)."""
        summarize = self.config.enable_context_summary
        if self.llm is None or not (self.extract_memories or summarize):
            return None
        llm = self.llm
        if self.llm_call_timeout is not None:
            llm = BoundedLlm(llm, self.llm_call_timeout)
        return PipelineJob(
            store=self._store,
            thread_id=self.thread_id,
            user_id=self.user_id,
            agent_id=self.agent_id,
            llm=llm,
            extract=self.extract_memories,
            summarize=summarize,
            config=self.config,
        )

    def _after_messages_added(self, ids: list[str], messages: list[Message]) -> Steps[None]:
        """Run the LLM pipeline after ``messages`` were persisted (SPEC §6-§7).

        ``INLINE``: the due extraction and summary passes run now (sync or async, as
        the caller). ``BACKGROUND``: they are queued on the worker. Either way a
        failing pass only warns (``MemoryPipelineWarning``): the messages are stored
        and the persisted watermark keeps them for the next pass.
        """
        del ids, messages
        job = self._pipeline_job()
        if job is None:
            return
        if self.extraction_mode is MemoryExtractionMode.BACKGROUND:
            self._worker().submit(self.thread_id, lambda: run_sync(pipeline_steps(job)))
            return
        try:
            yield from pipeline_steps(job)
        except Exception as exc:
            pipeline_warning(f"thread {self.thread_id!r}: memory pipeline failed: {exc!r}")

    def _worker(self) -> ExtractionWorker:
        """The client's background worker, or this handle's own when it has no client."""
        if self.client is not None and hasattr(self.client, "_extraction_worker"):
            worker: ExtractionWorker = self.client._extraction_worker()
            return worker
        if self._own_worker is None:
            self._own_worker = ExtractionWorker()
        return self._own_worker

    def wait_for_memory_extraction(self, timeout: float | None = None) -> bool:
        """Wait until this thread's queued background passes have finished (issue 3).

        With ``INLINE`` extraction there is never anything to wait for.

        Args:
            timeout: Seconds to wait at most; None waits until done.

        Returns:
            True when no work of this thread is left, False if ``timeout`` expired.

        Raises:
            ValueError: for a negative ``timeout``.
        """
        if self.client is None and self._own_worker is None:
            check_wait_timeout(timeout)
            return True
        return self._worker().wait(timeout, key=self.thread_id)

    async def wait_for_memory_extraction_async(self, timeout: float | None = None) -> bool:
        """Async twin of ``wait_for_memory_extraction`` (waits in a worker thread)."""
        return await anyio.to_thread.run_sync(lambda: self.wait_for_memory_extraction(timeout))

    # --------------------------------------------------------------- add_memory

    def add_memory(
        self,
        content: str,
        user_id: Maybe[str | None] = NOT_SET,
        agent_id: Maybe[str | None] = NOT_SET,
        thread_id: Maybe[str | None] = NOT_SET,
        memory_id: Maybe[str | None] = NOT_SET,
        **store_kwargs: Any,
    ) -> str:
        """Add and index a memory record, scoped to this thread by default (seed 000).

        Example (seed 000)::

            >>> thread.add_memory("Remember this preference", memory_id="mem-thread-docs")
            'mem-thread-docs'

        Args:
            content: The memory text.
            user_id: Scope override; omitted = this thread's user, ``None`` = unscoped.
            agent_id: Scope override; omitted = this thread's agent, ``None`` =
                unscoped.
            thread_id: Scope override; omitted = this thread, ``None`` = unscoped.
            memory_id: Caller-chosen stable id; generated when omitted or None.
            **store_kwargs: Write options forwarded to ``store.add`` (``metadata``,
                ``timestamps``, ``ttl_days``, ``ttl_anchor``, ``index_texts``,
                ``embeddings``, ...).

        Returns:
            The memory id.

        Raises:
            ValueError: for non-str content, a bad id, a reserved ``store_kwargs``
                key, or an id that already exists; nothing is written.
        """
        return run_sync(
            self._add_memory_steps(content, user_id, agent_id, thread_id, memory_id, store_kwargs)
        )

    async def add_memory_async(
        self,
        content: str,
        user_id: Maybe[str | None] = NOT_SET,
        agent_id: Maybe[str | None] = NOT_SET,
        thread_id: Maybe[str | None] = NOT_SET,
        memory_id: Maybe[str | None] = NOT_SET,
        **store_kwargs: Any,
    ) -> str:
        """Async twin of ``add_memory`` (same semantics)."""
        return await run_async(
            self._add_memory_steps(content, user_id, agent_id, thread_id, memory_id, store_kwargs)
        )

    def _add_memory_steps(
        self,
        content: object,
        user_id: object,
        agent_id: object,
        thread_id: object,
        memory_id: object,
        store_kwargs: Mapping[str, Any],
    ) -> Steps[str]:
        scoped_thread = check_scope("thread_id", thread_id, self.thread_id)
        self._check_client_open()
        return (
            yield from add_memory_steps(
                self._store,
                content,
                user_id=check_scope("user_id", user_id, self.user_id),
                agent_id=check_scope("agent_id", agent_id, self.agent_id),
                thread_id=scoped_thread,
                memory_id=memory_id,
                store_kwargs=store_kwargs,
                method="add_memory",
                write=self._thread_write_steps if scoped_thread == self.thread_id else None,
            )
        )

    # ------------------------------------------------------------- get_messages

    def get_messages(
        self, start: Maybe[int | None] = NOT_SET, end: Maybe[int | None] = NOT_SET
    ) -> list[Message]:
        """Return stored messages in chronological (insertion) order (SPEC §6).

        Windows: both omitted -> the last 100; ``end`` omitted -> up to 100 messages
        from ``start``; ``end=None`` or ``end=-1`` -> every message from ``start``;
        otherwise ``messages[start:end]`` with Python slice semantics (negative
        values count from the end). Only the window is read from the store.

        Example (seed 000)::

            >>> len(thread.add_messages([{"role": "user", "content": "Stored message example"}]))
            1
            >>> messages = thread.get_messages()
            >>> messages[-1].content
            'Stored message example'

        Args:
            start: 0-based first index (negative counts from the end); ``None`` is
                the same as omitted.
            end: Exclusive end index, ``None``/``-1`` for "to the end".

        Returns:
            The messages, oldest first, with their ids, roles, timestamps and metadata.

        Raises:
            ValueError: if ``start`` or ``end`` is not an int (or None).
        """
        return run_sync(self._get_messages_steps(start, end))

    async def get_messages_async(
        self, start: Maybe[int | None] = NOT_SET, end: Maybe[int | None] = NOT_SET
    ) -> list[Message]:
        """Async twin of ``get_messages`` (same semantics)."""
        return await run_async(self._get_messages_steps(start, end))

    def _get_messages_steps(self, start: object, end: object) -> Steps[list[Message]]:
        window = _window(start, end)
        records: list[Record] = yield from call(
            self._store, "list_thread_messages", self.thread_id, **window
        )
        return [_as_message(r) for r in records]

    # ---------------------------------------------------------------- deletions

    def delete_message(self, message_id: str) -> int:
        """Delete a message of this exact thread by id (seed 000).

        Only the raw message row goes; memories derived from it stay searchable
        (use ``OracleAgentMemory.delete_thread`` to remove everything).

        Example (seed 000)::

            >>> thread.delete_message("123")
            0

        Returns:
            1 if deleted; 0 if the id is unknown or belongs to another thread.

        Raises:
            ValueError: if ``message_id`` is not a non-empty str.
        """
        return run_sync(self._delete_message_steps(message_id))

    async def delete_message_async(self, message_id: str) -> int:
        """Async twin of ``delete_message`` (same semantics)."""
        return await run_async(self._delete_message_steps(message_id))

    def _delete_message_steps(self, message_id: object) -> Steps[int]:
        record_id = _check_record_id("message_id", message_id)
        deleted: int = yield from call(
            self._store, "delete_scoped", MESSAGE, record_id, thread_id=self.thread_id
        )
        return deleted

    def delete_memory(self, memory_id: str) -> int:
        """Delete a memory-like record (memory, fact, preference, guideline) of this
        exact thread by id (seed 000).

        Example (seed 000)::

            >>> thread.delete_memory("456")
            0

        Returns:
            1 if deleted; 0 if the id is unknown or the record's ``thread_id`` is not
            exactly this thread.

        Raises:
            ValueError: if ``memory_id`` is not a non-empty str.
        """
        return run_sync(self._delete_memory_steps(memory_id))

    async def delete_memory_async(self, memory_id: str) -> int:
        """Async twin of ``delete_memory`` (same semantics)."""
        return await run_async(self._delete_memory_steps(memory_id))

    def _delete_memory_steps(self, memory_id: object) -> Steps[int]:
        record_id = _check_record_id("memory_id", memory_id)
        deleted: int = yield from call(
            self._store, "delete_scoped", "memory", record_id, thread_id=self.thread_id
        )
        return deleted

    # ------------------------------------------------------------------ summary

    def get_summary(
        self, except_last: int = 0, token_budget: int = 1000, **kwargs: Any
    ) -> OracleSummary:
        """Return a best-effort summary of the thread (seed 000; SPEC §7).

        The summary is the running summary kept by the LLM pipeline when there is one
        (and ``except_last`` is 0). Otherwise it is the transcript of the thread's
        messages, except the last ``except_last``, as ``role (timestamp): content``
        lines (the timestamp is the message's own, else its store time). Only the
        newest messages that can fit the budget are read.

        If the text's estimated tokens exceed a positive ``token_budget``, its newest
        part is kept: the result is ``"(truncated)\\n"`` plus the tail, at most
        ``int(token_budget * 3.5)`` characters in all (``""`` if the budget cannot hold
        the marker and one character).

        Example (seed 000)::

            >>> len(thread.add_messages([{"role": "assistant", "content": "Summary source message"}]))
            1
            >>> summary = thread.get_summary()
            >>> bool(summary.content)
            True

        Args:
            except_last: Number of most recent messages left out (>= 0).
            token_budget: Soft bound in tokens; ``<= 0`` disables it.
            **kwargs: Reserved for future options.

        Returns:
            The summary.

        Raises:
            TypeError: for any unexpected keyword argument.
            ValueError: if ``except_last`` is not an int >= 0 or ``token_budget`` is
                not an int.
        """
        _reject_kwargs("get_summary", kwargs)
        return run_sync(self._summary_steps(except_last, token_budget))

    async def get_summary_async(
        self, except_last: int = 0, token_budget: int = 1000, **kwargs: Any
    ) -> OracleSummary:
        """Async twin of ``get_summary`` (same semantics)."""
        _reject_kwargs("get_summary_async", kwargs)
        return await run_async(self._summary_steps(except_last, token_budget))

    def _summary_steps(self, except_last: object, token_budget: object) -> Steps[OracleSummary]:
        skip = _check_int("except_last", except_last, minimum=0)
        budget = _check_int("token_budget", token_budget)
        running = None
        if skip == 0:
            running = yield from self._running_summary_steps()
        if running is not None:
            text = running.summary
        else:
            text = yield from self._transcript_steps(skip, budget)
        return OracleSummary(truncate_tail(text, budget))

    def _running_summary_steps(self) -> Steps[RunningSummary | None]:
        row = yield from call(self._store, "get_thread_row", self.thread_id)
        state = row.state if row is not None else self._state
        return running_summary_from_state(state)

    def _transcript_steps(self, except_last: int, token_budget: int) -> Steps[str]:
        """Transcript lines of the messages before the last ``except_last``.

        With a positive budget, pages are read newest first and reading stops once
        the collected text alone is over the budget (so truncation is certain and
        only its tail matters).
        """
        if token_budget <= 0:
            records: list[Record] = yield from call(
                self._store,
                "list_thread_messages",
                self.thread_id,
                start=0,
                end=-except_last if except_last else None,
            )
            return "\n".join(transcript_line(r) for r in records)
        lines: list[str] = []
        size = -1
        offset = except_last
        while True:
            page: list[Record] = yield from call(
                self._store,
                "list_thread_messages",
                self.thread_id,
                start=-(offset + _TRANSCRIPT_PAGE),
                end=-offset if offset else None,
            )
            for record in reversed(page):
                line = transcript_line(record)
                lines.append(line)
                size += len(line) + 1
            if len(page) < _TRANSCRIPT_PAGE or tokens_for_chars(size) > token_budget:
                break
            offset += _TRANSCRIPT_PAGE
        lines.reverse()
        return "\n".join(lines)

    # ------------------------------------------------------------- context card

    def get_context_card(
        self,
        fallback_message_count: int = 5,
        max_relevant_results: int = 5,
        max_recent_messages: int = 0,
        **kwargs: Any,
    ) -> OracleContextCard:
        """Return the thread's context card (seed 000; SPEC §7).

        Parts, rendered by ``OracleContextCard``:

        * summary and topics: the running summary when the LLM pipeline keeps one;
          otherwise the last ``fallback_message_count`` messages before the recent
          ones, as ``role (timestamp): content`` lines, bounded by
          ``context_card_token_limit`` (newest part kept);
        * relevant information: up to ``max_relevant_results`` records found by
          searching with the summary and topics (fallback: the text of those recent
          messages). Memory-like records must belong to this thread's user and agent
          exactly, from any of their threads; message results come from this thread
          only and skip messages already shown in the card. Results are merged by
          distance. Skipped when the store cannot rank text (VECTOR without an
          embedder);
        * recent messages: the last ``max_recent_messages`` messages, verbatim.

        The whole rendered card stays within ``context_card_token_limit`` estimated
        tokens (``<= 0`` = no bound): over it, the texts are fairly shortened with a
        visible ``(truncated)`` marker and the lowest-priority items dropped when even
        their markup does not fit (see ``OracleContextCard``'s ``token_limit``); a
        card with nothing left is ``""``.

        Example (seed 000)::

            >>> thread.add_memory("User likes pizza", memory_id="mem-context-docs")
            'mem-context-docs'
            >>> len(thread.add_messages([{"role": "user", "content": "Tell me about pizza"}]))
            1
            >>> "User likes pizza" in thread.get_context_card().content
            True

        Args:
            fallback_message_count: Messages used for the fallback summary and query.
            max_relevant_results: Most retrieved records to include.
            max_recent_messages: Trailing raw messages to include verbatim.
            **kwargs: Reserved for future options.

        Returns:
            The card; ``card.content`` is the rendered text.

        Raises:
            TypeError: for any unexpected keyword argument.
            ValueError: if a count is not an int >= 0.
        """
        _reject_kwargs("get_context_card", kwargs)
        return run_sync(
            self._context_card_steps(
                fallback_message_count, max_relevant_results, max_recent_messages
            )
        )

    async def get_context_card_async(
        self,
        fallback_message_count: int = 5,
        max_relevant_results: int = 5,
        max_recent_messages: int = 0,
        **kwargs: Any,
    ) -> OracleContextCard:
        """Async twin of ``get_context_card`` (same semantics)."""
        _reject_kwargs("get_context_card_async", kwargs)
        return await run_async(
            self._context_card_steps(
                fallback_message_count, max_relevant_results, max_recent_messages
            )
        )

    def _context_card_steps(
        self,
        fallback_message_count: object,
        max_relevant_results: object,
        max_recent_messages: object,
    ) -> Steps[OracleContextCard]:
        n_fallback = _check_int("fallback_message_count", fallback_message_count, minimum=0)
        n_results = _check_int("max_relevant_results", max_relevant_results, minimum=0)
        n_recent = _check_int("max_recent_messages", max_recent_messages, minimum=0)

        running = yield from self._running_summary_steps()
        fetched: list[Record] = []
        if n_fallback + n_recent > 0:
            fetched = yield from call(
                self._store,
                "list_thread_messages",
                self.thread_id,
                start=-(n_fallback + n_recent),
                end=None,
            )
        recent = fetched[len(fetched) - n_recent :] if n_recent else []
        earlier = fetched[: len(fetched) - len(recent)]
        summary_records = earlier[len(earlier) - n_fallback :] if n_fallback else []

        shown: set[str] = {r.id for r in recent}
        if running is not None:
            summary, topics = running.summary, list(running.topics)
            query = "\n".join([summary, *topics])
        else:
            summary_text = "\n".join(transcript_line(r) for r in summary_records)
            summary = truncate_tail(summary_text, self.config.context_card_token_limit)
            topics = []
            shown.update(r.id for r in summary_records)
            query = "\n".join(
                r.content for r in summary_records + recent if r.content and r.content.strip()
            )
        query = truncate_tail(query, _MAX_QUERY_TOKENS, marker="")

        results: list[tuple[Record, float]] = []
        if n_results > 0 and query.strip() and _can_search(self._store):
            results = yield from self._relevant_steps(query, n_results, shown)
        return OracleContextCard(
            summary=summary,
            topics=topics,
            relevant_results=results,
            recent_messages=[_as_message(r, timestamp_fallback=True) for r in recent],
            token_limit=self.config.context_card_token_limit,
        )

    def _relevant_steps(
        self, query: str, k: int, shown: set[str]
    ) -> Steps[list[tuple[Record, float]]]:
        """Search memories (user+agent scope) and this thread's messages; merge."""
        found: list[tuple[Record, float]] = yield from call(
            self._store,
            "search",
            query,
            k=k * _SUPERSEDED_OVERFETCH,
            user_id=self.user_id,
            agent_id=self.agent_id,
            exact_user_match=True,
            exact_agent_match=True,
            record_types=set(MEMORY_TYPES),
        )
        messages: list[tuple[Record, float]] = yield from call(
            self._store,
            "search",
            query,
            k=k + len(shown),
            thread_id=self.thread_id,
            user_id=self.user_id,
            agent_id=self.agent_id,
            exact_thread_match=True,
            exact_user_match=True,
            exact_agent_match=True,
            record_types={MESSAGE},
        )
        memories = [item for item in found if not is_superseded(item[0])][:k]
        merged = memories + [item for item in messages if item[0].id not in shown]
        merged.sort(key=_result_key)
        return merged[:k]


def add_memory_steps(
    store: OracleMemoryStore,
    content: object,
    *,
    user_id: str | None,
    agent_id: str | None,
    thread_id: str | None,
    memory_id: object,
    store_kwargs: Mapping[str, Any],
    method: str,
    write: Callable[[Mapping[str, Any], Mapping[str, Any]], Steps[list[str]]] | None = None,
) -> Steps[str]:
    """Write one ``memory`` record with the given scope (shared by thread and client).

    ``write(fields, store_kwargs)``, when given, performs the write of the batch
    ``fields`` (``PendingRecordBatch`` fields without ``thread_ids``), e.g. together
    with the check of the thread row; otherwise ``store.add`` does.

    Raises:
        ValueError: for non-str content, a blank ``memory_id``, or a reserved
            ``store_kwargs`` key; nothing is written.
    """
    if not isinstance(content, str):
        raise ValueError(f"content must be a str, got {type(content).__name__}")
    _check_store_kwargs(method, store_kwargs, _MEMORY_KEYS)
    ids_kwarg: dict[str, Any] = {}
    if memory_id is not NOT_SET and memory_id is not None:
        ids_kwarg["record_ids"] = [_check_record_id("memory_id", memory_id)]
    if write is not None:
        fields = {
            "texts": [content],
            "record_type": "memory",
            "user_ids": user_id,
            "agent_ids": agent_id,
            **ids_kwarg,
        }
        written = yield from write(fields, store_kwargs)
        return written[0]
    ids: list[str] = yield from call(
        store,
        "add",
        [content],
        "memory",
        thread_ids=thread_id,
        user_ids=user_id,
        agent_ids=agent_id,
        **ids_kwarg,
        **store_kwargs,
    )
    return ids[0]
