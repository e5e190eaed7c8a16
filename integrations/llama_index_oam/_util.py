"""Small helpers shared by the adapters: worker-thread calls and thread lookup."""

from __future__ import annotations

from typing import TypeVar

from oam_core import NOT_SET, OracleAgentMemory, OracleMemoryStore, OracleThread
from oam_core.checks import check_thread_owner
from oam_core.errors import InvalidArgumentError, ThreadDeletedError

T = TypeVar("T")


def as_client(value: object) -> OracleAgentMemory:
    """``value`` if it is an ``OracleAgentMemory``; a client without LLM or extraction
    over it if it is an ``OracleMemoryStore``.

    Raises:
        ValueError: for anything else.
    """
    if isinstance(value, OracleAgentMemory):
        return value
    if isinstance(value, OracleMemoryStore):
        return OracleAgentMemory(store=value, extract_memories=False)
    raise InvalidArgumentError(
        f"memory must be an OracleAgentMemory (or an OracleMemoryStore), got {type(value).__name__}"
    )


def thread_for(
    memory: OracleAgentMemory,
    thread_id: str,
    user_id: str | None,
    agent_id: str | None,
    known: set[str] | None = None,
) -> OracleThread:
    """The thread ``thread_id``, created in scope ``user_id``/``agent_id`` (omitted when
    None: ``create_thread`` generates them) if it does not exist yet.

    Callers check the messages they will write (``prepare_messages``) before calling
    this, so a refused message never leaves a new, empty thread behind.

    Args:
        memory: The client.
        thread_id: The thread (a LlamaIndex key or session id).
        user_id, agent_id: Scope of a thread created here; for an existing thread, a
            given id must equal the thread's.
        known: The ids this adapter object has seen exist (updated here). A thread
            in it that is gone was deleted by someone else meanwhile: it is not
            created again (``ThreadDeletedError``), as a LangChain history's write
            to its deleted thread fails (docs/llama_index.md#chat-store-and-memory-block).

    Raises:
        ThreadDeletedError: (a ``ValueError``) for a thread in ``known`` that no
            longer exists; nothing is written.
        ValueError: as ``get_thread``/``create_thread`` (e.g. extraction on without an
            LLM, docs/concepts.md#the-client-and-threads).
    """
    try:
        thread = memory.get_thread(thread_id)
    except KeyError:
        if known is not None and thread_id in known:
            raise ThreadDeletedError(
                f"thread {thread_id!r} was deleted (delete_thread, or delete_user/"
                "delete_agent with cascade) after this store used it; nothing was written. "
                "Create it again with create_thread to go on."
            ) from None
    else:
        check_thread_owner(thread.thread_id, thread.user_id, thread.agent_id, user_id, agent_id)
        if known is not None:
            known.add(thread_id)
        return thread
    try:
        thread = memory.create_thread(
            thread_id=thread_id,
            user_id=NOT_SET if user_id is None else user_id,
            agent_id=NOT_SET if agent_id is None else agent_id,
        )
    except ValueError:
        if memory.get_thread_row(thread_id) is None:
            raise
        thread = memory.get_thread(thread_id)  # another caller created it meanwhile
        check_thread_owner(thread.thread_id, thread.user_id, thread.agent_id, user_id, agent_id)
    if known is not None:
        known.add(thread_id)
    return thread


def check_row_owner(
    memory: OracleAgentMemory,
    thread_id: str,
    user_id: str | None,
    agent_id: str | None,
    known: set[str] | None = None,
) -> bool:
    """Whether thread ``thread_id`` exists; raises ``InvalidArgumentError``
    (``checks.check_thread_owner``) when it belongs to someone else.

    Args:
        known: As ``thread_for``: an existing thread of this scope is added to it, so
            a thread the adapter only read and another client then deletes is not
            created again by the adapter's next write (``ThreadDeletedError``).
    """
    row = memory.get_thread_row(thread_id)
    if row is None:
        return False
    check_thread_owner(thread_id, row.user_id, row.agent_id, user_id, agent_id)
    if known is not None:
        known.add(thread_id)
    return True


__all__ = [
    "as_client",
    "check_row_owner",
    "thread_for",
]
