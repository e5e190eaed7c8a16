"""How the client opens thread handles: ``create_thread`` writes the thread row,
``get_thread`` reads it back; each option resolves as the explicit argument, else the
value persisted on the row, else ``ThreadConfig``'s default
(docs/concepts.md#the-client-and-threads)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from oam_core import llms  # read at call time: tests stand in for hosted models
from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.llm import ILlm
from oam_core.apis.records import ThreadRow
from oam_core.checks import check_bool, check_given_id, check_required_id
from oam_core.errors import InvalidArgumentError, NotFoundError
from oam_core.memory.clientargs import Extraction, require_llm
from oam_core.memory.config import MemoryExtractionMode
from oam_core.memory.queryrewrite import check_rewrite_llm
from oam_core.memory.thread import OracleThread
from oam_core.memory.threadconfig import ThreadConfig
from oam_core.steps import Steps, call
from oam_core.store.threads import thread_store

if TYPE_CHECKING:
    from oam_core.memory.client import OracleAgentMemory

__all__ = ["new_thread_steps", "reopen_thread_steps", "resolve_query_rewrite"]

_LLM_PLACES = "OracleAgentMemory or to create_thread/get_thread"


def resolve_query_rewrite(
    client: OracleAgentMemory, given: object, persisted: Mapping[str, Any] | None = None
) -> bool:
    """A thread handle's ``query_rewrite``: the explicit argument, else the value
    persisted on its row (a bool given to ``create_thread``), else the client's.

    Raises:
        InvalidArgumentError: for a given value that is not a bool.
    """
    if given is not NOT_SET:
        return check_bool(given, "query_rewrite")
    stored = (persisted or {}).get("query_rewrite")
    return stored if isinstance(stored, bool) else client.query_rewrite


def new_thread_steps(
    client: OracleAgentMemory,
    thread_id: object,
    user_id: object,
    agent_id: object,
    metadata: object,
    llm: object,
    choice: Extraction,
    options: Mapping[str, Any],
    query_rewrite: object = NOT_SET,
) -> Steps[OracleThread]:
    """``create_thread``: check everything, write the row, return its handle.

    Raises:
        ValueError: as ``OracleAgentMemory.create_thread``; nothing is written.
    """
    tid = check_given_id(thread_id, "thread_id")
    uid = check_given_id(user_id, "user_id")
    aid = check_given_id(agent_id, "agent_id")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidArgumentError(f"metadata must be a dict or None, got {metadata!r}")
    thread_llm = client.llm if llm is NOT_SET else llms.resolve_llm(llm)
    extract = client.extract_memories if choice.extract is None else choice.extract
    mode = client.extraction_mode if choice.mode is None else choice.mode
    config = ThreadConfig.resolve(options)
    require_llm(thread_llm, extract)
    rewrite = resolve_query_rewrite(client, query_rewrite)
    check_rewrite_llm(thread_llm, rewrite, _LLM_PLACES)
    persisted = {name: value for name, value in options.items() if value is not NOT_SET}
    persisted.update(choice.persisted())
    if query_rewrite is not NOT_SET:
        persisted["query_rewrite"] = rewrite
    yield from call(
        thread_store(client.store).create_thread_row,
        tid,
        user_id=uid,
        agent_id=aid,
        metadata=metadata,
        config=persisted,
    )
    scope = (tid, uid, aid, metadata)
    return _handle(client, scope, {}, thread_llm, (extract, rewrite), mode, config, choice)


def reopen_thread_steps(
    client: OracleAgentMemory,
    thread_id: object,
    llm: object,
    choice: Extraction,
    options: Mapping[str, Any],
    query_rewrite: object = NOT_SET,
) -> Steps[OracleThread]:
    """``get_thread``: read the row and return its handle.

    Raises:
        NotFoundError: when the thread does not exist.
        ValueError: as ``OracleAgentMemory.get_thread``.
    """
    tid = check_required_id(thread_id, "thread_id")
    thread_llm = client.llm if llm is NOT_SET else llms.resolve_llm(llm)
    ThreadConfig.resolve(options)  # validate overrides before any I/O
    if query_rewrite is not NOT_SET:
        check_rewrite_llm(thread_llm, check_bool(query_rewrite, "query_rewrite"), _LLM_PLACES)
    row: ThreadRow | None = yield from call(thread_store(client.store).get_thread_row, tid)
    if row is None:
        raise NotFoundError(f"unknown thread id {tid!r}")
    persisted = row.config or {}
    config = ThreadConfig.resolve(options, persisted)
    # Seed 003: with llm or extract_memories omitted, the client's setting counts
    # (not what create_thread was given); the other options restore as persisted.
    extract = client.extract_memories if choice.extract is None else choice.extract
    mode = choice.mode or client.extraction_mode
    if choice.mode is None and persisted.get("extraction_mode") in ("INLINE", "BACKGROUND"):
        mode = MemoryExtractionMode(persisted["extraction_mode"])
    require_llm(thread_llm, extract)
    rewrite = resolve_query_rewrite(client, query_rewrite, persisted)
    check_rewrite_llm(thread_llm, rewrite, _LLM_PLACES)
    scope = (row.thread_id, row.user_id, row.agent_id, row.metadata)
    return _handle(client, scope, row.state, thread_llm, (extract, rewrite), mode, config, choice)


def _handle(
    client: OracleAgentMemory,
    scope: tuple[str, str | None, str | None, dict[str, Any] | None],
    state: dict[str, Any],
    llm: ILlm | None,
    switches: tuple[bool, bool],
    extraction_mode: MemoryExtractionMode,
    config: ThreadConfig,
    choice: Extraction,
) -> OracleThread:
    """The handle of a stored thread: ``scope`` is its id, user, agent and metadata;
    ``switches`` its ``extract_memories`` and ``query_rewrite``."""
    thread_id, user_id, agent_id, metadata = scope
    extract_memories, query_rewrite = switches
    timeout = client.llm_call_timeout if choice.timeout is NOT_SET else choice.timeout
    return OracleThread(
        client.store,
        thread_id=thread_id,
        user_id=user_id,
        agent_id=agent_id,
        metadata=metadata,
        llm=llm,
        client=client,
        extract_memories=extract_memories,
        state=state,
        extraction_mode=extraction_mode,
        stored=True,
        llm_call_timeout=timeout,
        query_rewrite=query_rewrite,
        **config.as_options(),
    )
