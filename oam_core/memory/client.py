"""``OracleAgentMemory``: the agent-memory client (docs/concepts.md#the-client-and-threads;
the API of Oracle's SDK).

The client owns (or borrows) a store, creates and reopens threads, and manages user
and agent profiles and free-standing memories. Like ``OracleThread``, every operation
is written once as a generator of store calls (``oam_core/steps.py``), and
``sync_method``/``async_method`` make the public sync and async pair of it
(docs/concepts.md#sync-and-async).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from oam_core import llms  # read at call time: tests stand in for hosted models
from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.embedder import IEmbedder
from oam_core.apis.llm import ILlm
from oam_core.apis.memory import IAgentMemory
from oam_core.apis.records import ThreadRow
from oam_core.apis.thread import MessageLike
from oam_core.checks import (
    check_bool,
    check_given_id,
    check_optional_seconds,
    check_required_id,
    check_scope,
    reject_kwargs,
)
from oam_core.errors import ClientClosedError, ConfigurationError, InvalidArgumentError
from oam_core.llms.bounded import DEFAULT_LLM_CALL_TIMEOUT
from oam_core.memory.clientargs import (
    THREAD_EXTRA_KWARGS,
    DatabaseArgs,
    Extraction,
    client_store,
    local_embedder_installed,
)
from oam_core.memory.clientmemories import ClientMemories
from oam_core.memory.config import MemoryExtractionConfig, MemoryExtractionMode
from oam_core.memory.diagnostics import pipeline_warning
from oam_core.memory.indexing import embeds_in_python, message_rows, store_row_vectors
from oam_core.memory.messages import add_memory_steps, message_fields, prepare_messages
from oam_core.memory.opening import new_thread_steps, reopen_thread_steps
from oam_core.memory.queryrewrite import check_rewrite_llm
from oam_core.memory.thread import OracleThread
from oam_core.memory.threadconfig import (
    OpenThreadArgs,
    split_options,
    with_thread_options,
)
from oam_core.memory.worker import ExtractionWorker
from oam_core.steps import Steps, async_method, call, sync_method
from oam_core.store.base import OracleMemoryStore
from oam_core.store.options import MemoryRetentionConfig, SchemaPolicy, SearchStrategy
from oam_core.store.threads import thread_store

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["OracleAgentMemory"]

DEFAULT_CLOSE_TIMEOUT = 60.0
"""Seconds ``close`` waits for queued background extraction by default."""


class OracleAgentMemory(ClientMemories, IAgentMemory):
    """Agent-memory client over a caller's store or an embedded SQLite database
    (docs/concepts.md#the-client-and-threads; the API of Oracle's SDK).

    Example (as in Oracle's SDK documentation, with the embedded store)::

        >>> client = OracleAgentMemory(connection=":memory:", extract_memories=False)
        >>> client.add_user("u1", "Prefers concise answers.")
        'u1'
        >>> client.create_thread(thread_id="c1", user_id="u1").thread_id
        'c1'

    Args:
        store: A ready store, used as is (and not closed by ``close``).
        connection: Where the client opens its own store: a SQLite file path
            (``str`` or ``pathlib.Path``), ``":memory:"``, or a ``sqlite:///path.db``
            URL (the embedded store); a psycopg pool or connection, or a
            ``postgresql://`` URL (``PostgresMemoryStore``, ``oam[postgres]``); an
            oracledb pool or connection, or an ``oracle://`` URL
            (``OracleDBMemoryStore``, ``oam[oracle]``; docs/oracle.md#opening-a-store).
        embedder: An ``IEmbedder`` or a model id string (``"local"``,
            ``"hashing/64"``, a LiteLLM id such as ``"openai/text-embedding-3-small"``);
            omitted: no embedder (vector search then needs precomputed vectors).
            With ``store``, configure the embedder on the store instead.
        llm: LLM for memory extraction and running summaries, used by every thread
            that does not override it.
        extract_memories: When True, threads need an LLM (client's or thread's);
            False lets threads run without one.
        schema_policy: Only with ``connection``. The embedded SQLite store creates
            and upgrades its own schema, so it accepts ``CREATE_IF_EMPTY`` and
            ``CREATE_IF_NECESSARY``, and ``REQUIRE_EXISTING`` for an existing file.
        table_name_prefix: Only with ``connection``; deprecated alias of
            ``memory_store_id`` (emits ``DeprecationWarning``).
        memory_store_id: Only with ``connection``; prefix of the store's tables, so
            several stores can share a database (docs/store.md#schema).
        search_strategy: Only with ``connection``; ``SearchStrategy`` or its name.
        memory_retention_config: Only with ``connection``; TTL defaults
            (docs/store.md#ttl-and-retention).
        memory_extraction_config: ``MemoryExtractionConfig(extract_memories,
            extraction_mode)``: whether threads extract memories and whether the
            passes run ``INLINE`` (before ``add_messages`` returns, the default) or in
            the ``BACKGROUND`` (``wait_for_memory_extraction`` waits; ``close``
            drains). Threads may override it.
        allow_embedder_change: (An oam addition.) Only with ``connection``; open a store whose
            recorded embedder differs from ``embedder`` (docs/store.md#embedder-identity).
        query_rewrite: (An oam addition; keyword only.) Threads' context cards also
            search with a query the LLM writes from the last user message and the
            messages before it, one LLM call per card
            (docs/context-card.md#query-rewriting); needs ``llm``. Threads may
            override it.

    Raises:
        ValueError: naming the argument, when both or neither of ``store`` and
            ``connection`` are given, a database option comes with ``store``, the
            connection is not supported yet, or a value is invalid; nothing is opened.
            ``ConfigurationError`` for ``query_rewrite=True`` without ``llm``.
        ImportError: when a string ``embedder`` needs an optional dependency that is
            not installed.
    """

    def __init__(
        self,
        store: Maybe[OracleMemoryStore] = NOT_SET,
        connection: Maybe[Any] = NOT_SET,
        embedder: Maybe[IEmbedder | str | None] = NOT_SET,
        llm: Maybe[ILlm | None] = NOT_SET,
        extract_memories: bool = True,
        schema_policy: Maybe[SchemaPolicy | str] = NOT_SET,
        table_name_prefix: Maybe[str] = NOT_SET,
        memory_store_id: Maybe[str] = NOT_SET,
        search_strategy: Maybe[SearchStrategy | str] = NOT_SET,
        memory_retention_config: Maybe[MemoryRetentionConfig] = NOT_SET,
        memory_extraction_config: Maybe[MemoryExtractionConfig] = NOT_SET,
        allow_embedder_change: Maybe[bool] = NOT_SET,
        *,
        query_rewrite: bool = False,
    ) -> None:
        has_store = store is not NOT_SET and store is not None
        has_connection = connection is not NOT_SET and connection is not None
        if has_store == has_connection:
            raise ConfigurationError(
                "pass exactly one of store and connection, got "
                + ("both" if has_store else "neither")
            )
        self.llm: ILlm | None = llms.resolve_llm(None if llm is NOT_SET else llm)
        check_bool(extract_memories, "extract_memories")
        self.query_rewrite: bool = check_bool(query_rewrite, "query_rewrite")
        check_rewrite_llm(self.llm, self.query_rewrite, "OracleAgentMemory")
        choice = Extraction.parse(NOT_SET, memory_extraction_config)
        if choice.extract is True and not extract_memories:
            raise ConfigurationError(
                "extract_memories=False contradicts memory_extraction_config"
                ".extract_memories=True; pass one of them"
            )
        self.extract_memories: bool = extract_memories and choice.extract is not False
        self.extraction_mode: MemoryExtractionMode = choice.mode or MemoryExtractionMode.INLINE
        self.llm_call_timeout: float | None = (
            DEFAULT_LLM_CALL_TIMEOUT if choice.timeout is NOT_SET else choice.timeout
        )
        self._worker: ExtractionWorker | None = None
        self._worker_lock = threading.Lock()
        self._store, self._owns_store = client_store(
            store,
            connection,
            embedder,
            DatabaseArgs(
                schema_policy,
                table_name_prefix,
                memory_store_id,
                search_strategy,
                memory_retention_config,
                allow_embedder_change,
            ),
        )
        self._closed = False

    @classmethod
    def open(cls, url: str | os.PathLike[str], **kwargs: Any) -> OracleAgentMemory:
        """Open a client from one database URL or path (an oam addition; docs/concepts.md#opening).

        ``"sqlite:///path.db"`` (relative), ``"sqlite:////abs/path.db"``,
        ``"sqlite://:memory:"``, ``":memory:"`` or a bare path open the embedded
        store; ``"postgresql://..."`` opens ``PostgresMemoryStore`` and
        ``"oracle://..."`` ``OracleDBMemoryStore``. Unlike the constructor, ``open``
        creates or upgrades the store (``schema_policy=CREATE_IF_NECESSARY``) unless
        ``schema_policy`` is given, and defaults ``embedder`` to the offline
        ``"local"`` model when ``oam[local]`` is installed (docs/concepts.md#opening).

        Example::

            >>> with OracleAgentMemory.open("sqlite://:memory:", extract_memories=False) as m:
            ...     m.add_agent("a1", "Support assistant")
            'a1'

        Args:
            url: The database URL or path.
            **kwargs: Any other ``OracleAgentMemory`` argument except ``store`` and
                ``connection``.

        Raises:
            ValueError: for an unsupported URL or conflicting arguments.
        """
        for name in ("store", "connection"):
            if name in kwargs:
                raise InvalidArgumentError(f"open() takes the database as url; do not pass {name}=")
        if "embedder" not in kwargs and local_embedder_installed():
            kwargs["embedder"] = "local"
        kwargs.setdefault("schema_policy", SchemaPolicy.CREATE_IF_NECESSARY)
        return cls(connection=url, **kwargs)

    @property
    def store(self) -> OracleMemoryStore:
        """The store behind this client."""
        return self._store

    @property
    def embedder(self) -> IEmbedder | None:
        """The store's embedder, if any."""
        return self._store.embedder

    def __repr__(self) -> str:
        return f"OracleAgentMemory(store={type(self._store).__name__})"

    # ---------------------------------------------------------------- lifecycle

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called; a closed client refuses new threads and its
        threads refuse writes."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosedError("this OracleAgentMemory is closed; open a new client")

    def extraction_worker(self) -> ExtractionWorker:
        """An oam addition: the background worker that runs the ``BACKGROUND`` passes of this
        client's threads (created on first use; ``ThreadClient``)."""
        with self._worker_lock:
            if self._worker is None:
                self._worker = ExtractionWorker()
            return self._worker

    def wait_for_memory_extraction(self, timeout: float | None = None) -> bool:
        """Wait until every queued background pass of this client's threads has
        finished (``MemoryExtractionMode.BACKGROUND``; issue 3).

        Args:
            timeout: Seconds to wait at most; None waits until done.

        Returns:
            True when no work is left, False if ``timeout`` expired first.

        Raises:
            ValueError: for a negative ``timeout``.
        """
        check_optional_seconds(timeout, "timeout", zero=True)
        worker = self._worker
        return True if worker is None else worker.wait(timeout)

    async def wait_for_memory_extraction_async(self, timeout: float | None = None) -> bool:
        """Async twin of ``wait_for_memory_extraction`` (waits in a worker thread)."""
        return await anyio.to_thread.run_sync(lambda: self.wait_for_memory_extraction(timeout))

    def close(self, timeout: float | None = DEFAULT_CLOSE_TIMEOUT) -> None:
        """Finish queued background passes, waiting at most ``timeout`` seconds, then
        close the store if this client opened it (idempotent); a store passed as
        ``store=`` stays open.

        Work still queued or running when the time is up (a hung LLM call, say) is
        abandoned with a ``MemoryPipelineWarning``: its messages are stored and
        stay pending, so the next pass on those threads, from any client, extracts
        them (docs/memory-pipeline.md, "Time bounds").

        Args:
            timeout: Seconds to wait for the background worker; None waits as long
                as it takes.

        Raises:
            ValueError: for a negative or non-numeric ``timeout`` (nothing is closed).
        """
        bound = check_optional_seconds(timeout, "timeout", zero=True)
        if self._closed:
            return
        self._closed = True
        if self._worker is not None and not self._worker.close(bound):
            pipeline_warning(
                f"close(): background memory extraction did not finish within {bound:g} s; "
                "the remaining messages stay pending and are extracted by the next pass"
            )
        if self._owns_store:
            self._store.close()

    async def close_async(self, timeout: float | None = DEFAULT_CLOSE_TIMEOUT) -> None:
        """Async twin of ``close`` (waits in a worker thread)."""
        await anyio.to_thread.run_sync(lambda: self.close(timeout))

    def __enter__(self) -> OracleAgentMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> OracleAgentMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close_async()

    # ----------------------------------------------------------------- profiles

    def _add_user_steps(self, /, user_id: str, information: str) -> Steps[str]:
        """Store (or replace) a user profile; its record id is ``user_id``
        (docs/concepts.md#the-client-and-threads).

        Example (as in Oracle's SDK documentation)::

            >>> client.add_user("u1", "Prefers concise answers.")
            'u1'

        Raises:
            ValueError: for a blank id or non-str information.
        """
        return (
            yield from self._profile_steps(self._store.add_user, "user_id", user_id, information)
        )

    add_user = sync_method(_add_user_steps)
    add_user_async = async_method(_add_user_steps)

    def _add_agent_steps(self, /, agent_id: str, information: str) -> Steps[str]:
        """Store (or replace) an agent profile; its record id is ``agent_id`` (as in Oracle's SDK).

        Example (as in Oracle's SDK documentation)::

            >>> client.add_agent("a1", "Support assistant")
            'a1'

        Raises:
            ValueError: for a blank id or non-str information.
        """
        return (
            yield from self._profile_steps(self._store.add_agent, "agent_id", agent_id, information)
        )

    add_agent = sync_method(_add_agent_steps)
    add_agent_async = async_method(_add_agent_steps)

    def _profile_steps(
        self, add: Callable[[str, str], str], name: str, actor_id: object, info: object
    ) -> Steps[str]:
        self._check_open()
        actor = check_given_id(actor_id if actor_id is not NOT_SET else None, name)
        if not isinstance(info, str):
            raise InvalidArgumentError(f"information must be a str, got {type(info).__name__}")
        result: str = yield from call(add, actor, info)
        return result

    def _delete_user_steps(self, /, user_id: str, cascade: bool = True) -> Steps[int]:
        """Delete a user profile; with ``cascade`` also the user's threads and every
        record scoped to the user, even when the profile is missing, as Oracle's SDK does (docs/store.md#reading-updating-deleting).

        Example (as in Oracle's SDK documentation)::

            >>> client.add_user("u-delete", "Prefers concise answers.")
            'u-delete'
            >>> client.delete_user("u-delete")
            1

        Returns:
            Profile rows deleted (0 or 1).

        Raises:
            ValueError: for a blank id or a non-bool ``cascade``.
        """
        return (yield from self._delete_actor_steps("user_profile", "user_id", user_id, cascade))

    delete_user = sync_method(_delete_user_steps)
    delete_user_async = async_method(_delete_user_steps)

    def _delete_agent_steps(self, /, agent_id: str, cascade: bool = True) -> Steps[int]:
        """Delete an agent profile; with ``cascade`` also the agent's threads and every
        record scoped to the agent, even when the profile is missing, as Oracle's SDK does (docs/store.md#reading-updating-deleting).

        Example (as in Oracle's SDK documentation)::

            >>> client.add_agent("a-delete", "Support assistant")
            'a-delete'
            >>> client.delete_agent("a-delete")
            1

        Returns:
            Profile rows deleted (0 or 1).

        Raises:
            ValueError: for a blank id or a non-bool ``cascade``.
        """
        return (yield from self._delete_actor_steps("agent_profile", "agent_id", agent_id, cascade))

    delete_agent = sync_method(_delete_agent_steps)
    delete_agent_async = async_method(_delete_agent_steps)

    def _delete_actor_steps(
        self, record_type: str, name: str, actor_id: object, cascade: object
    ) -> Steps[int]:
        self._check_open()
        actor = check_given_id(actor_id if actor_id is not NOT_SET else None, name)
        flag = check_bool(cascade, "cascade")
        deleted: int = yield from call(self._store.delete, record_type, actor, flag)
        return deleted

    # ----------------------------------------------------------------- memories

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
        """Add a memory record with the given scope (docs/concepts.md#the-client-and-threads).

        Omitted or ``None`` scope ids leave the memory unscoped in that dimension.

        Example (as in Oracle's SDK documentation)::

            >>> client.add_memory("User likes pizza", memory_id="mem-1")
            'mem-1'

        Args:
            content: The memory text.
            user_id: User scope, if any.
            agent_id: Agent scope, if any.
            thread_id: Thread scope, if any.
            memory_id: Caller-chosen stable id; generated when omitted.
            **store_kwargs: Write options forwarded to ``store.add`` (``metadata``,
                ``timestamps``, ``ttl_days``, ...).

        Returns:
            The memory id.

        Raises:
            ValueError: for non-str or blank content, a bad id, a reserved
                ``store_kwargs`` key, or an id that already exists; nothing is written.
        """
        self._check_open()
        return (
            yield from add_memory_steps(
                self._store,
                content,
                user_id=check_scope(user_id, "user_id", None),
                agent_id=check_scope(agent_id, "agent_id", None),
                thread_id=check_scope(thread_id, "thread_id", None),
                memory_id=memory_id,
                store_kwargs=store_kwargs,
                method="add_memory",
            )
        )

    add_memory = sync_method(_add_memory_steps)
    add_memory_async = async_method(_add_memory_steps)

    def _delete_memory_steps(self, /, memory_id: str) -> Steps[int]:
        """Delete a memory-like record (memory, fact, preference or guideline) by id
        (docs/concepts.md#the-client-and-threads).

        Example (as in Oracle's SDK documentation)::

            >>> memory_id = client.add_memory("Temporary memory", memory_id="mem-delete")
            >>> client.delete_memory(memory_id)
            1

        Returns:
            Rows deleted (0 or 1).

        Raises:
            ValueError: for a blank id.
        """
        self._check_open()
        record_id = check_required_id(memory_id, "memory_id")
        deleted: int = yield from call(thread_store(self._store).delete_scoped, "memory", record_id)
        return deleted

    delete_memory = sync_method(_delete_memory_steps)
    delete_memory_async = async_method(_delete_memory_steps)

    # ------------------------------------------------------------------ threads

    @with_thread_options(
        after="extract_memories", positional=("memory_extraction_config",), var_keyword="kwargs"
    )
    def _create_thread_steps(
        self,
        /,
        thread_id: Maybe[str] = NOT_SET,
        user_id: Maybe[str] = NOT_SET,
        agent_id: Maybe[str] = NOT_SET,
        metadata: dict[str, Any] | None = None,
        llm: Maybe[ILlm | None] = NOT_SET,
        extract_memories: Maybe[bool] = NOT_SET,
        *,
        memory_extraction_config: Maybe[MemoryExtractionConfig] = NOT_SET,
        query_rewrite: Maybe[bool] = NOT_SET,
        **kwargs: Unpack[OpenThreadArgs],
    ) -> Steps[OracleThread]:
        """Create and register a thread (docs/concepts.md#the-client-and-threads; the API of Oracle's SDK).

        Omitted ids are generated (uuid4). Omitted options take ``ThreadConfig``'s
        defaults; options given here are persisted on the thread row so
        ``get_thread`` restores them. ``llm`` and ``extract_memories`` apply to the
        returned handle only: ``get_thread`` uses the client's unless given again.

        Example (as in Oracle's SDK documentation)::

            >>> thread = client.create_thread(thread_id="c1", user_id="u1")
            >>> thread.thread_id
            'c1'

        Args:
            thread_id: Thread id.
            user_id: User the thread belongs to.
            agent_id: Agent the thread belongs to.
            metadata: JSON-like metadata kept on the thread row.
            llm: LLM for this thread; omitted = the client's; None = none.
            extract_memories: Per-thread extraction switch; omitted = the client's.
            memory_extraction_config: Per-thread ``MemoryExtractionConfig``.
            query_rewrite: (An oam addition; keyword only.) The thread's context
                cards also search with a query its LLM writes
                (docs/context-card.md#query-rewriting); omitted = the client's;
                given, it is persisted and ``get_thread`` restores it.
            **kwargs: The thread options of ``ThreadConfig``
                (``max_message_token_length``, ..., ``enable_context_summary``: named
                parameters after ``extract_memories``); ``persist_messages_in_config``
                is accepted and ignored.

        Returns:
            The new ``OracleThread``.

        Raises:
            ValueError: for an explicit ``None`` or blank id, an invalid option, no
                LLM while extraction or ``query_rewrite`` is on, or an existing
                thread id; nothing is written.
            TypeError: for an unknown keyword argument.
        """
        options, extra = split_options(kwargs)
        reject_kwargs(extra, "create_thread", THREAD_EXTRA_KWARGS)
        choice = Extraction.parse(extract_memories, memory_extraction_config)
        self._check_open()
        return (
            yield from new_thread_steps(
                self, thread_id, user_id, agent_id, metadata, llm, choice, options, query_rewrite
            )
        )

    create_thread = sync_method(_create_thread_steps)
    create_thread_async = async_method(_create_thread_steps)

    @with_thread_options(
        after="extract_memories", positional=("memory_extraction_config",), var_keyword="kwargs"
    )
    def _get_thread_steps(
        self,
        /,
        thread_id: str,
        llm: Maybe[ILlm | None] = NOT_SET,
        extract_memories: Maybe[bool] = NOT_SET,
        *,
        memory_extraction_config: Maybe[MemoryExtractionConfig] = NOT_SET,
        query_rewrite: Maybe[bool] = NOT_SET,
        **kwargs: Unpack[OpenThreadArgs],
    ) -> Steps[OracleThread]:
        """Reopen a thread created earlier (docs/concepts.md#the-client-and-threads; the API of Oracle's SDK).

        Each runtime option resolves as: the explicit argument here, else the value
        persisted by ``create_thread``, else the default. ``llm`` and
        ``extract_memories`` are not restored: omitted, they are the client's (as in
        the reference SDK). Overrides apply to this handle only; they are not written
        back. The pipeline state on the thread row is restored.

        Example (as in Oracle's SDK documentation)::

            >>> created = client.create_thread(thread_id="c1", user_id="u1")
            >>> loaded = client.get_thread("c1")
            >>> loaded.user_id
            'u1'

        Args:
            thread_id: The thread's id.
            llm: LLM for this handle; omitted = the client's; None = none.
            extract_memories: Extraction switch for this handle; omitted = the
                client's.
            memory_extraction_config: Per-handle ``MemoryExtractionConfig``.
            query_rewrite: (An oam addition; keyword only.) Override for this handle;
                omitted = the value ``create_thread`` persisted, else the client's
                (docs/context-card.md#query-rewriting).
            **kwargs: Overrides of the ``ThreadConfig`` options (named parameters
                after ``extract_memories``); ``persist_messages_in_config`` is accepted
                and ignored.

        Raises:
            NotFoundError: (a ``KeyError``) if no thread has this id.
            ValueError: for a blank id, an invalid override, or no LLM while
                extraction or ``query_rewrite`` is on.
            TypeError: for an unknown keyword argument.
        """
        options, extra = split_options(kwargs)
        reject_kwargs(extra, "get_thread", THREAD_EXTRA_KWARGS)
        choice = Extraction.parse(extract_memories, memory_extraction_config)
        self._check_open()
        return (
            yield from reopen_thread_steps(self, thread_id, llm, choice, options, query_rewrite)
        )

    get_thread = sync_method(_get_thread_steps)
    get_thread_async = async_method(_get_thread_steps)

    def _delete_thread_steps(self, /, thread_id: str) -> Steps[int]:
        """Delete a thread with its messages, memories and search rows (docs/store.md#reading-updating-deleting).

        Example (as in Oracle's SDK documentation)::

            >>> thread = client.create_thread(thread_id="c-delete")
            >>> client.delete_thread(thread.thread_id)
            1

        Returns:
            Thread rows deleted (0 or 1).

        Raises:
            ValueError: for a blank id.
        """
        self._check_open()
        tid = check_required_id(thread_id, "thread_id")
        deleted: int = yield from call(self._store.delete_thread, tid)
        return deleted

    delete_thread = sync_method(_delete_thread_steps)
    delete_thread_async = async_method(_delete_thread_steps)

    def _list_threads_steps(
        self, /, user_id: Maybe[str | None] = NOT_SET, agent_id: Maybe[str | None] = NOT_SET
    ) -> Steps[list[ThreadRow]]:
        """An oam addition: the stored threads, oldest first (docs/concepts.md#the-client-and-threads).

        Args:
            user_id: Only this user's threads (``None``: threads without a user).
            agent_id: Only this agent's threads (``None``: threads without an agent).

        Returns:
            The thread rows (ids, scope, metadata, config, state, created_at).

        Raises:
            ValueError: for a non-str id.
        """
        self._check_open()
        rows: list[ThreadRow] = yield from call(
            thread_store(self._store).list_thread_rows,
            user_id=check_scope(user_id, "user_id", None) if user_id is not NOT_SET else NOT_SET,
            agent_id=(
                check_scope(agent_id, "agent_id", None) if agent_id is not NOT_SET else NOT_SET
            ),
        )
        return rows

    list_threads = sync_method(_list_threads_steps)
    list_threads_async = async_method(_list_threads_steps)

    def _get_thread_row_steps(self, /, thread_id: str) -> Steps[ThreadRow | None]:
        """An oam addition: the stored row of a thread (its ids, scope, metadata, runtime config,
        pipeline state and ``created_at``), or None when there is no such thread; it
        never creates one (docs/concepts.md#the-client-and-threads).

        Raises:
            ValueError: for an empty or non-str id.
        """
        self._check_open()
        row: ThreadRow | None = yield from call(thread_store(self._store).get_thread_row, thread_id)
        return row

    get_thread_row = sync_method(_get_thread_row_steps)
    get_thread_row_async = async_method(_get_thread_row_steps)

    def _write_thread_steps(
        self,
        /,
        thread_id: str,
        messages: Sequence[MessageLike],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        replace: bool = False,
        on_progress: Callable[[int], None] | None = None,
    ) -> Steps[list[str]]:
        """An oam addition: store a whole conversation as one thread: the thread row and all its
        messages in ONE transaction, indexed as ``add_messages`` indexes them (speaker
        names, context rows). With ``replace``, a thread of this id (its messages,
        memories and search rows) is deleted in the same transaction, so a failure
        leaves the old thread as it was; a thread of another user is never replaced
        (docs/concepts.md#writing-a-whole-thread).

        No LLM is called: the thread's pipeline extracts the messages on its next
        pass (``add_messages`` on a handle from ``get_thread``).

        Args:
            thread_id: The thread's id.
            messages: ``Message`` objects or dicts (``role``, ``content``, optional
                ``id``, ``timestamp``, ``metadata``), in order.
            user_id: The thread's user, or None.
            agent_id: The thread's agent, or None.
            metadata: JSON-like metadata of the thread row.
            replace: Replace an existing thread instead of refusing it.
            on_progress: Called with a number of messages each time that many more
                are embedded (every ``indexing.EMBED_STEP`` messages; never when the
                store embeds in the database or has no embedder), before the write.

        Returns:
            The message ids, in input order.

        Raises:
            ValueError: for a bad id, a malformed message, an existing thread
                without ``replace``, or (with ``replace``) an existing thread of
                another user; nothing is written.
        """
        self._check_open()
        tid = check_required_id(thread_id, "thread_id")
        if not isinstance(replace, bool):
            raise InvalidArgumentError(f"replace must be a bool, got {replace!r}")
        if on_progress is not None and not callable(on_progress):
            raise InvalidArgumentError(f"on_progress must be callable or None, got {on_progress!r}")
        prepared = prepare_messages(messages)
        rows = message_rows(prepared, None, self._store.chunk_chars)
        vectors: dict[str, Any] = {}
        if prepared and embeds_in_python(self._store):
            # Context rows vectored from the own rows (one model pass per message).
            vectors["embeddings"] = yield from call(
                store_row_vectors, self._store, rows, on_progress
            )
        batch = PendingRecordBatch(
            thread_ids=tid,
            user_ids=user_id,
            agent_ids=agent_id,
            index_texts=rows.texts,
            **vectors,
            **message_fields(prepared),
        )
        ids: list[str] = yield from call(
            thread_store(self._store).write_thread,
            tid,
            [batch] if prepared else [],
            user_id=user_id,
            agent_id=agent_id,
            metadata=metadata,
            replace=replace,
        )
        return ids

    write_thread = sync_method(_write_thread_steps)
    write_thread_async = async_method(_write_thread_steps)
