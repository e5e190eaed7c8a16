"""``OracleThread``: one conversation backed by a memory store
(docs/concepts.md#the-client-and-threads; the API of Oracle's SDK).

Every public operation is written once, as a *generator of calls* (``Steps``, see
``oam_core/steps.py``): it yields ``Call`` values (a bound store or LLM method plus
arguments) and receives their results. ``sync_method``/``async_method`` turn each
``_<name>_steps`` method into the public pair ``<name>``/``<name>_async``, driven by
``run_sync`` (plain blocking calls, also fine inside a running event loop) and
``run_async`` (the async twins). So ``add_messages`` and ``add_messages_async``
share all their logic (docs/concepts.md#sync-and-async).

After the raw messages are persisted, the LLM pipeline (``memory/pipeline.py``:
extraction, running summary) runs inline or on the client's background worker.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio.to_thread

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.llm import ILlm
from oam_core.apis.records import MESSAGE, MessageRecord, Record
from oam_core.apis.thread import IThread, Message, MessageLike
from oam_core.checks import (
    check_bool,
    check_given_id,
    check_int,
    check_optional_seconds,
    check_record_id,
    check_scope,
    check_store_kwargs,
    reject_kwargs,
)
from oam_core.errors import ClientClosedError, ConfigurationError, InvalidArgumentError
from oam_core.llms.bounded import DEFAULT_LLM_CALL_TIMEOUT, BoundedLlm, check_call_timeout
from oam_core.memory.config import MemoryExtractionMode, check_extraction_mode
from oam_core.memory.contextcard import OracleContextCard, can_rank_text
from oam_core.memory.diagnostics import pipeline_warning
from oam_core.memory.indexing import (
    CONTEXT_MESSAGES,
    embeds_in_python,
    message_rows,
    own_row_text,
    store_row_vectors,
)
from oam_core.memory.messages import (
    BATCH_FIELDS,
    DEFAULT_MESSAGE_WINDOW,
    MESSAGE_KEYS,
    add_memory_steps,
    as_message,
    message_fields,
    message_window,
    prepare_messages,
)
from oam_core.memory.pipeline import PipelineJob, check_messages_fit, pipeline_steps
from oam_core.memory.queryrewrite import card_relevant_steps, check_rewrite_llm
from oam_core.memory.summary import (
    OracleSummary,
    RunningSummary,
    running_summary_from_state,
    transcript_line,
)
from oam_core.memory.threadconfig import (
    THREAD_INIT_ORDER,
    ThreadConfig,
    ThreadOptionArgs,
    with_thread_options,
)
from oam_core.memory.tokens import tokens_for_chars, truncate_tail
from oam_core.memory.toolcalls import drop_orphan_results
from oam_core.memory.worker import ExtractionWorker
from oam_core.steps import Steps, async_method, call, run_sync, sync_method
from oam_core.store.threads import NewThreadRow, thread_store

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from oam_core.store.base import OracleMemoryStore

__all__ = ["DEFAULT_MESSAGE_WINDOW", "OracleThread", "ThreadClient"]

_TRANSCRIPT_PAGE = 100
"""Messages read per store call while collecting a budget-bounded transcript."""

_MAX_QUERY_TOKENS = 2000
"""Bound on the context card's retrieval query (its most recent part is kept)."""


@runtime_checkable
class ThreadClient(Protocol):
    """What a thread needs of the client that opened it (``OracleAgentMemory``)."""

    @property
    def closed(self) -> bool:
        """Whether the client was closed (its threads then refuse writes)."""

    def extraction_worker(self) -> ExtractionWorker:
        """The background worker that runs the client's ``BACKGROUND`` passes."""


class OracleThread(IThread):
    """A thread backed by a memory store (docs/concepts.md#the-client-and-threads;
    the API of Oracle's SDK).

    Messages are stored one record per message; memories added by hand (and, with an
    LLM, extracted ones) are stored as typed memory records scoped to the thread's
    user, agent and thread. Constructing a thread does no I/O:
    ``OracleAgentMemory.create_thread`` writes the thread row, ``get_thread`` reads
    it back. Thread-scoped writes (``add_messages``, ``add_memory``) check the row
    in the transaction that writes the records, so no record ever exists without
    its thread row: a handle whose row was deleted since it was opened fails with
    ``ThreadDeletedError`` (a ValueError; nothing is written); a handle built
    directly creates its row.

    Args:
        store: The store that persists the thread's records.
        thread_id: Thread id; a uuid4 is generated when omitted.
        user_id: User the thread belongs to; a uuid4 is generated when omitted;
            ``None`` = no user.
        agent_id: Agent the thread belongs to; a uuid4 is generated when omitted;
            ``None`` = no agent.
        metadata: JSON-like metadata of the thread.
        persist_messages_in_config: Accepted for compatibility; store-backed threads
            never copy messages into their config.
        llm: LLM used for memory extraction and the running summary, or None.
        client: The ``OracleAgentMemory`` that opened the thread (a
            ``ThreadClient``), if any.
        extract_memories: Whether memories are extracted when an LLM is configured.
        state: Persisted pipeline state of the thread row (as read by ``get_thread``).
        extraction_mode: ``MemoryExtractionMode`` (or its name): ``INLINE`` finishes
            the LLM passes before ``add_messages`` returns; ``BACKGROUND`` queues them
            on a worker (``wait_for_memory_extraction`` waits for it).
        stored: The thread row exists (the client created or read it): once it is
            deleted, writes through this handle fail instead of recreating it.
        llm_call_timeout: Seconds one pipeline LLM call may take (None: no bound);
            an overrun fails that pass like an LLM error (docs/memory-pipeline.md).
        query_rewrite: (An oam addition.) The context card also searches with a query
            the LLM writes from the last user message and the messages before it,
            fused with its own results (docs/context-card.md#query-rewriting); needs
            ``llm``.
        **options: The thread options of ``ThreadConfig``
            (``memory_extraction_window``, ..., ``enable_context_summary``), named
            parameters between ``llm`` and ``client``; omitted ones take
            ``ThreadConfig``'s defaults.

    Raises:
        ValueError: naming the argument, for a ``None`` or blank ``thread_id``, a
            blank scope id, a non-dict ``metadata``, an ``llm`` that is not an ``ILlm``, or an invalid
            option value; ``ConfigurationError`` for ``query_rewrite=True`` without
            an ``llm``.
    """

    @with_thread_options(
        after="llm", positional=("client",), order=THREAD_INIT_ORDER, defaults=True
    )
    def __init__(
        self,
        store: OracleMemoryStore,
        thread_id: Maybe[str] = NOT_SET,
        user_id: Maybe[str | None] = NOT_SET,
        agent_id: Maybe[str | None] = NOT_SET,
        metadata: dict[str, Any] | None = None,
        persist_messages_in_config: bool = False,
        llm: ILlm | None = None,
        *,
        client: ThreadClient | None = None,
        extract_memories: bool = True,
        state: Mapping[str, Any] | None = None,
        extraction_mode: MemoryExtractionMode | str = MemoryExtractionMode.INLINE,
        stored: bool = False,
        llm_call_timeout: float | None = DEFAULT_LLM_CALL_TIMEOUT,
        query_rewrite: bool = False,
        **options: Unpack[ThreadOptionArgs],
    ) -> None:
        self.thread_id: str = check_given_id(thread_id, "thread_id")
        self.user_id: str | None = check_scope(user_id, "user_id", str(uuid.uuid4()))
        self.agent_id: str | None = check_scope(agent_id, "agent_id", str(uuid.uuid4()))
        if metadata is not None and not isinstance(metadata, dict):
            raise InvalidArgumentError(f"metadata must be a dict or None, got {metadata!r}")
        if llm is not None and not isinstance(llm, ILlm):
            raise InvalidArgumentError(f"llm must be an ILlm or None, got {type(llm).__name__}")
        if not isinstance(extract_memories, bool):
            raise InvalidArgumentError(f"extract_memories must be a bool, got {extract_memories!r}")
        self.config = ThreadConfig(**options)
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
        self.query_rewrite: bool = check_bool(query_rewrite, "query_rewrite")
        check_rewrite_llm(llm, self.query_rewrite, "the thread (or its OracleAgentMemory)")

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

    def _add_messages_steps(
        self, /, messages: Sequence[MessageLike], **store_kwargs: Any
    ) -> Steps[list[str]]:
        """Persist messages, in order, in one store write (docs/concepts.md#the-client-and-threads).

        Messages without an id get a uuid4. The raw messages are written first, in one
        transaction, before any LLM work, so they are never lost. An empty list is a
        no-op (no store write, no LLM call).

        Example (as in Oracle's SDK documentation)::

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
        prepared = prepare_messages(messages)
        check_store_kwargs(store_kwargs, "add_messages", MESSAGE_KEYS)
        if not prepared:
            return []
        self._check_client_open()
        job = self._pipeline_job()
        if job is not None and job.extract:
            check_messages_fit([m.content for m in prepared], self.config)
        index_kwargs: dict[str, Any] = {}
        # Caller rows (index_texts=) or caller vectors (embeddings=, not None) are the
        # message's only search rows: no context row (docs/retrieval.md).
        if "index_texts" not in store_kwargs and store_kwargs.get("embeddings") is not None:
            index_kwargs["index_texts"] = [own_row_text(m) for m in prepared]
        elif "index_texts" not in store_kwargs:
            last: list[MessageRecord] = yield from call(
                self._store.list_thread_messages, self.thread_id, CONTEXT_MESSAGES
            )
            rows = message_rows(prepared, [as_message(m) for m in last], self._store.chunk_chars)
            index_kwargs["index_texts"] = rows.texts
            if "embeddings" not in store_kwargs and embeds_in_python(self._store):
                # Context rows vectored from the own rows (one model pass per message).
                vectors = yield from call(store_row_vectors, self._store, rows)
                index_kwargs["embeddings"] = vectors
        fields = {**message_fields(prepared), "user_ids": self.user_id, "agent_ids": self.agent_id}
        ids = yield from self._thread_write_steps({**fields, **index_kwargs}, store_kwargs)
        yield from self._after_messages_added(list(ids), prepared)
        return list(ids)

    add_messages = sync_method(_add_messages_steps)
    add_messages_async = async_method(_add_messages_steps)

    def _persisted_config(self) -> dict[str, Any]:
        """The thread's options in the form ``create_thread`` persists on its row
        (``query_rewrite`` only when on)."""
        config = self.config.as_kwargs()
        if self.query_rewrite:
            config["query_rewrite"] = True
        return config

    def _thread_write_steps(
        self, fields: Mapping[str, Any], store_kwargs: Mapping[str, Any]
    ) -> Steps[list[str]]:
        """Write one batch of this thread's records together with the check of its
        row, in one transaction (``ThreadStore.add_to_thread``; C16, C22 in docs/failure-modes.md):
        records never exist without their thread row.

        A handle opened from its stored row (``create_thread``/``get_thread``) whose
        row was deleted since (``delete_thread``, a cascading ``delete_user``) fails
        with ``ThreadDeletedError`` and writes nothing. A handle built directly on a
        store creates its missing row, in the same transaction, from its scope,
        metadata and options.

        ``store_kwargs`` that are ``PendingRecordBatch`` fields (``ttl_days``,
        ``index_texts``, ...) go into the batch; the rest (``batch_size``) to the
        store.
        """
        batch_fields = dict(fields)
        extra: dict[str, Any] = {}
        for key, value in store_kwargs.items():
            (batch_fields if key in BATCH_FIELDS else extra)[key] = value
        batch = PendingRecordBatch(thread_ids=self.thread_id, **batch_fields)
        missing_row = None
        if not self._stored:
            missing_row = NewThreadRow(
                user_id=self.user_id,
                agent_id=self.agent_id,
                metadata=self.metadata,
                config=self._persisted_config(),
            )
        ids: list[str] = yield from call(
            thread_store(self._store).add_to_thread,
            self.thread_id,
            [batch],
            missing_row=missing_row,
            **extra,
        )
        self._stored = True
        return ids

    def _check_client_open(self) -> None:
        """Refuse writes through a closed client before anything is stored (its
        background worker is gone, and its store may be closed)."""
        if isinstance(self.client, ThreadClient) and self.client.closed:
            raise ClientClosedError(
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
        """Run the LLM pipeline after ``messages`` were persisted
        (docs/memory-pipeline.md).

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
        except ConfigurationError:
            raise  # the setup is wrong (e.g. no API key): the caller must hear of it
        except Exception as exc:
            pipeline_warning(f"thread {self.thread_id!r}: memory pipeline failed: {exc!r}")

    def _worker(self) -> ExtractionWorker:
        """The client's background worker, or this handle's own when it has no client."""
        if isinstance(self.client, ThreadClient):
            return self.client.extraction_worker()
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
            check_optional_seconds(timeout, "timeout", zero=True)
            return True
        return self._worker().wait(timeout, key=self.thread_id)

    async def wait_for_memory_extraction_async(self, timeout: float | None = None) -> bool:
        """Async twin of ``wait_for_memory_extraction`` (waits in a worker thread)."""
        return await anyio.to_thread.run_sync(lambda: self.wait_for_memory_extraction(timeout))

    # --------------------------------------------------------------- add_memory

    def _add_memory_steps(
        self,
        /,
        content: str,
        user_id: Maybe[str | None] = NOT_SET,
        agent_id: Maybe[str | None] = NOT_SET,
        thread_id: Maybe[str | None] = NOT_SET,
        memory_id: Maybe[str | None] = NOT_SET,
        **store_kwargs: Any,
    ) -> Steps[str]:
        """Add and index a memory record, scoped to this thread by default (docs/concepts.md#the-client-and-threads).

        Example (docs/concepts.md#the-client-and-threads)::

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
            ValueError: for non-str or blank content, a bad id, a reserved
                ``store_kwargs`` key, or an id that already exists; nothing is written.
        """
        scoped_thread = check_scope(thread_id, "thread_id", self.thread_id)
        self._check_client_open()
        return (
            yield from add_memory_steps(
                self._store,
                content,
                user_id=check_scope(user_id, "user_id", self.user_id),
                agent_id=check_scope(agent_id, "agent_id", self.agent_id),
                thread_id=scoped_thread,
                memory_id=memory_id,
                store_kwargs=store_kwargs,
                method="add_memory",
                write=self._thread_write_steps if scoped_thread == self.thread_id else None,
            )
        )

    add_memory = sync_method(_add_memory_steps)
    add_memory_async = async_method(_add_memory_steps)

    # ------------------------------------------------------------- get_messages

    def _get_messages_steps(
        self, /, start: Maybe[int | None] = NOT_SET, end: Maybe[int | None] = NOT_SET
    ) -> Steps[list[Message]]:
        """Return stored messages in chronological (insertion) order (docs/concepts.md#the-client-and-threads).

        Windows: both omitted -> the last 100; ``end`` omitted -> up to 100 messages
        from ``start``; ``end=None`` or ``end=-1`` -> every message from ``start``;
        otherwise ``messages[start:end]`` with Python slice semantics (negative
        values count from the end). Only the window is read from the store.

        Example (as in Oracle's SDK documentation)::

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
        first, last = message_window(start, end)
        records: list[MessageRecord] = yield from call(
            self._store.list_thread_messages, self.thread_id, start=first, end=last
        )
        return [as_message(r) for r in records]

    get_messages = sync_method(_get_messages_steps)
    get_messages_async = async_method(_get_messages_steps)

    # ---------------------------------------------------------------- deletions

    def _delete_message_steps(self, /, message_id: str) -> Steps[int]:
        """Delete a message of this exact thread by id (docs/concepts.md#the-client-and-threads).

        Only the raw message row goes; memories derived from it stay searchable
        (use ``OracleAgentMemory.delete_thread`` to remove everything).

        Example (docs/concepts.md#the-client-and-threads)::

            >>> thread.delete_message("123")
            0

        Returns:
            1 if deleted; 0 if the id is unknown or belongs to another thread.

        Raises:
            ValueError: if ``message_id`` is not a non-empty str.
        """
        record_id = check_record_id(message_id, "message_id")
        deleted: int = yield from call(
            thread_store(self._store).delete_scoped, MESSAGE, record_id, thread_id=self.thread_id
        )
        return deleted

    delete_message = sync_method(_delete_message_steps)
    delete_message_async = async_method(_delete_message_steps)

    def _delete_memory_steps(self, /, memory_id: str) -> Steps[int]:
        """Delete a memory-like record (memory, fact, preference, guideline) of this
        exact thread by id (docs/concepts.md#the-client-and-threads).

        Example (as in Oracle's SDK documentation)::

            >>> thread.delete_memory("456")
            0

        Returns:
            1 if deleted; 0 if the id is unknown or the record's ``thread_id`` is not
            exactly this thread.

        Raises:
            ValueError: if ``memory_id`` is not a non-empty str.
        """
        record_id = check_record_id(memory_id, "memory_id")
        deleted: int = yield from call(
            thread_store(self._store).delete_scoped, "memory", record_id, thread_id=self.thread_id
        )
        return deleted

    delete_memory = sync_method(_delete_memory_steps)
    delete_memory_async = async_method(_delete_memory_steps)

    # ------------------------------------------------------------------ summary

    def _get_summary_steps(
        self, /, except_last: int = 0, token_budget: int = 1000, **kwargs: Any
    ) -> Steps[OracleSummary]:
        """Return a best-effort summary of the thread (docs/context-card.md).

        The summary is the running summary kept by the LLM pipeline when there is one
        (and ``except_last`` is 0). Otherwise it is the transcript of the thread's
        messages, except the last ``except_last``, as ``role (timestamp): content``
        lines (the timestamp is the message's own, else its store time). Only the
        newest messages that can fit the budget are read.

        If the text's estimated tokens exceed a positive ``token_budget``, its newest
        part is kept: the result is ``"(truncated)\\n"`` plus the tail, at most
        ``int(token_budget * 3.5)`` characters in all (``""`` if the budget cannot hold
        the marker and one character).

        Example (as in Oracle's SDK documentation)::

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
        reject_kwargs(kwargs, "get_summary")
        return (yield from self._summary_steps(except_last, token_budget))

    # Bound first, so mypy takes the narrower return type from the steps method
    # rather than from ``IThread``'s declaration.
    _get_summary = sync_method(_get_summary_steps)
    get_summary = _get_summary
    get_summary_async = async_method(_get_summary_steps)

    def _summary_steps(self, except_last: object, token_budget: object) -> Steps[OracleSummary]:
        skip = check_int(except_last, "except_last", minimum=0)
        budget = check_int(token_budget, "token_budget")
        running = None
        if skip == 0:
            running = yield from self._running_summary_steps()
        if running is not None:
            text = running.summary
        else:
            text = yield from self._transcript_steps(skip, budget)
        return OracleSummary(truncate_tail(text, budget))

    def _running_summary_steps(self) -> Steps[RunningSummary | None]:
        row = yield from call(thread_store(self._store).get_thread_row, self.thread_id)
        state = row.state if row is not None else self._state
        return running_summary_from_state(state)

    def _transcript_steps(self, except_last: int, token_budget: int) -> Steps[str]:
        """Transcript lines of the messages before the last ``except_last``.

        With a positive budget, pages are read newest first and reading stops once
        the collected text alone is over the budget (so truncation is certain and
        only its tail matters).
        """
        if token_budget <= 0:
            records: list[MessageRecord] = yield from call(
                self._store.list_thread_messages,
                self.thread_id,
                start=0,
                end=-except_last if except_last else None,
            )
            return "\n".join(transcript_line(r) for r in records)
        lines: list[str] = []
        size = -1
        offset = except_last
        while True:
            page: list[MessageRecord] = yield from call(
                self._store.list_thread_messages,
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

    def _get_context_card_steps(
        self,
        /,
        fallback_message_count: int = 5,
        max_relevant_results: int = 5,
        max_recent_messages: int = 0,
        **kwargs: Any,
    ) -> Steps[OracleContextCard]:
        """Return the thread's context card (docs/context-card.md).

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
          distance. Left out when the store cannot rank text: a VECTOR or HYBRID
          store without an embedder (docs/context-card.md#without-an-embedder);
        * recent messages: the last ``max_recent_messages`` messages, verbatim; tool
          results at the start of that window (their call fell outside it) go to the
          summary part instead (docs/context-card.md#tool-calls).

        The whole rendered card stays within ``context_card_token_limit`` estimated
        tokens (``<= 0`` = no bound): over it, the texts are fairly shortened with a
        visible ``(truncated)`` marker and the lowest-priority items dropped when even
        their markup does not fit (see ``OracleContextCard``'s ``token_limit``); a
        card with nothing left is ``""``.

        Example (Oracle's SDK documentation's, on a client with an embedder: a store
        that cannot rank text leaves the relevant information out)::

            >>> from oam_core import OracleAgentMemory
            >>> client = OracleAgentMemory(
            ...     connection=":memory:", embedder="hashing", extract_memories=False
            ... )
            >>> thread = client.create_thread(thread_id="card-docs", user_id="u1")
            >>> thread.add_memory("User likes pizza", memory_id="mem-context-docs")
            'mem-context-docs'
            >>> len(thread.add_messages([{"role": "user", "content": "Tell me about pizza"}]))
            1
            >>> "User likes pizza" in thread.get_context_card().content
            True
            >>> client.close()

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
        reject_kwargs(kwargs, "get_context_card")
        return (
            yield from self._card_steps(
                fallback_message_count, max_relevant_results, max_recent_messages
            )
        )

    _get_context_card = sync_method(_get_context_card_steps)  # (see ``_get_summary``)
    get_context_card = _get_context_card
    get_context_card_async = async_method(_get_context_card_steps)

    def _card_steps(
        self,
        fallback_message_count: object,
        max_relevant_results: object,
        max_recent_messages: object,
    ) -> Steps[OracleContextCard]:
        n_fallback = check_int(fallback_message_count, "fallback_message_count", minimum=0)
        n_results = check_int(max_relevant_results, "max_relevant_results", minimum=0)
        n_recent = check_int(max_recent_messages, "max_recent_messages", minimum=0)

        running = yield from self._running_summary_steps()
        fetched: list[MessageRecord] = []
        if n_fallback + n_recent > 0:
            fetched = yield from call(
                self._store.list_thread_messages,
                self.thread_id,
                start=-(n_fallback + n_recent),
                end=None,
            )
        recent = fetched[max(0, len(fetched) - n_recent) :] if n_recent else []
        recent = drop_orphan_results(recent, lambda r: r.role)
        earlier = fetched[: len(fetched) - len(recent)]
        summary_records = earlier[max(0, len(earlier) - n_fallback) :] if n_fallback else []

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
        if n_results > 0 and query.strip() and can_rank_text(self._store):
            results = yield from card_relevant_steps(
                self._store,
                query,
                n_results,
                shown,
                (self.thread_id, self.user_id, self.agent_id),
                self._rewrite_llm(),
            )
        return OracleContextCard(
            summary=summary,
            topics=topics,
            relevant_results=results,
            recent_messages=[as_message(r, timestamp_fallback=True) for r in recent],
            token_limit=self.config.context_card_token_limit,
        )

    def _rewrite_llm(self) -> ILlm | None:
        """The LLM that rewrites the card's query, bounded by ``llm_call_timeout``;
        None when ``query_rewrite`` is off (docs/context-card.md#query-rewriting)."""
        if not self.query_rewrite or self.llm is None:
            return None
        if self.llm_call_timeout is None:
            return self.llm
        return BoundedLlm(self.llm, self.llm_call_timeout)
