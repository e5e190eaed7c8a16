"""LlamaIndex chat stores over ``oam`` threads: one thread per key (docs/llama_index.md#chat-store-and-memory-block).

Two interfaces, two classes, one implementation (``_ThreadChat``):

* ``OAMChatStore``: a ``BaseChatStore``, for ``ChatMemoryBuffer.from_defaults(
  chat_store=..., chat_store_key=...)`` and everything else that takes LlamaIndex's
  classic chat store (as ``RedisChatStore`` or ``PostgresChatStore`` do).
* ``OAMDBChatStore``: an ``AsyncDBChatStore``, for ``Memory.from_defaults(
  chat_store=..., session_id=...)`` (its short-term queue, with ACTIVE/ARCHIVED
  status).

Messages are appended with ``OracleThread.add_messages`` (so extraction runs when the
client has an LLM) and read back in insertion order (docs/store.md#reading-updating-deleting). The ACTIVE/ARCHIVED
status lives in each message's metadata (``messages.py``), where the store's filter
selects it. A key whose thread belongs to another user or agent is refused on every
read, write and delete (docs/failure-modes.md#c27).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseComponent
from llama_index.core.storage.chat_store.base import BaseChatStore
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus

from llama_index_oam._util import (
    as_client,
    check_row_owner,
    thread_for,
)
from llama_index_oam.messages import (
    check_status,
    status_filter,
    to_chat_message,
    to_oam_message,
    with_status,
)
from oam_core import OracleAgentMemory, OracleMemoryStore, OracleThread, Record
from oam_core.apis.records import MessageRecord
from oam_core.checks import check_int, check_nonblank, check_optional_int, check_scope
from oam_core.errors import InvalidArgumentError
from oam_core.memory.messages import prepare_messages
from oam_core.steps import in_worker_thread


class _ThreadChat:
    """The sync implementation both chat stores share: each key is the ``oam`` thread
    of that id, created on the first write in the scope ``user_id``/``agent_id``.

    Positions (``idx``, ``offset``) count the key's messages in insertion order; every
    returned ``ChatMessage`` is a fresh copy.
    """

    def __init__(
        self, memory: OracleAgentMemory, user_id: str | None, agent_id: str | None
    ) -> None:
        self._memory = memory
        self.user_id = user_id
        self.agent_id = agent_id
        self._known: set[str] = set()  # keys seen to exist (see ``thread_for``)

    def records(self, key: str) -> list[MessageRecord]:
        """Every message of ``key``, oldest first ([] for an unknown key).

        Raises:
            ValueError: for a blank key or a thread of another user or agent.
        """
        check_nonblank(key, "key")
        if not check_row_owner(self._memory, key, self.user_id, self.agent_id, self._known):
            return []
        return self._memory.store.list_thread_messages(key)

    def selected(
        self, key: str, status: MessageStatus | None, n: int | None = None
    ) -> list[Record]:
        """The key's messages with ``status`` (None: all), oldest first; the status is
        selected by the store's metadata filter, so the queue is read without the
        archived history.

        Raises:
            ValueError: for an invalid status (also for a key without messages) or
                as ``records``.
        """
        status = check_status(status, none=True)
        check_nonblank(key, "key")
        if status is None:
            rows: list[Record] = list(self.records(key))
        elif not check_row_owner(self._memory, key, self.user_id, self.agent_id, self._known):
            return []
        else:
            rows = self._memory.store.list(
                "message", limit=None, thread_id=key, metadata_filter=status_filter(status)
            )
        return rows if n is None else rows[:n]

    def thread(self, key: str) -> OracleThread:
        """The thread ``key``, created in this scope when missing, unless this store
        has seen it exist before (then it was deleted meanwhile: ``ThreadDeletedError``;
        see ``thread_for``)."""
        key = check_nonblank(key, "key")
        return thread_for(self._memory, key, self.user_id, self.agent_id, self._known)

    def get(
        self, key: str, status: MessageStatus | None, limit: int | None, offset: int | None
    ) -> list[ChatMessage]:
        """Copies of the messages of ``key`` with ``status`` after ``offset``, at most
        ``limit``.

        Raises:
            ValueError: for a negative or non-int ``limit``/``offset``, or as ``records``.
        """
        for name, value in (("limit", limit), ("offset", offset)):
            check_optional_int(value, name, minimum=0)
        rows = self.selected(key, status)[offset or 0 :]
        if limit is not None:
            rows = rows[:limit]
        return [to_chat_message(r) for r in rows]

    def add(self, key: str, messages: Sequence[ChatMessage], status: MessageStatus) -> None:
        """Append ``messages`` with ``status`` in one thread write.

        Raises:
            ValueError: for a non-message or an invalid status, or as ``thread``.
        """
        checked = check_status(status, none=False)
        # Every message is checked before the thread is created: a refused one
        # leaves nothing, not even a new thread row claiming the key.
        prepared = prepare_messages(
            [to_oam_message(_check_message(m), checked, i) for i, m in enumerate(messages)]
        )
        if prepared:
            self.thread(key).add_messages(prepared)

    def delete_rows(self, key: str, rows: Sequence[Record]) -> None:
        """Delete ``rows`` (messages of thread ``key``) in one transaction."""
        self._memory.store.delete_records("message", [r.id for r in rows], thread_id=key)

    def delete_status(self, key: str, status: MessageStatus | None) -> list[ChatMessage]:
        """Delete the messages of ``key`` with ``status`` (None: all); return them."""
        rows = self.selected(key, status)
        self.delete_rows(key, rows)
        return [to_chat_message(r) for r in rows]

    def set(self, key: str, messages: Sequence[ChatMessage], status: MessageStatus) -> None:
        """Replace every message of ``key`` with ``messages``: the new messages are
        written first, then the ones read before are deleted, so a failed write (an
        embedder or database error) leaves the old messages in place, never an
        empty key; a message another writer adds meanwhile is kept."""
        checked = check_status(status, none=False)
        converted = prepare_messages(
            [to_oam_message(_check_message(m), checked, i) for i, m in enumerate(messages)]
        )  # every message checked before the thread is created
        thread = self.thread(key) if converted else None  # fails before anything is written
        old = self.records(key)
        if thread is not None:
            thread.add_messages(converted)
        self.delete_rows(key, old)

    def delete_at(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message at position ``idx`` and return it (None out of range)."""
        check_int(idx, "idx")
        rows = self.records(key)
        if not -len(rows) <= idx < len(rows):
            return None
        row = rows[idx]
        self.delete_rows(key, [row])
        return to_chat_message(row)

    def delete_oldest(self, key: str, n: int) -> list[ChatMessage]:
        """Delete the oldest ``n`` ACTIVE messages and return them."""
        rows = self.selected(key, MessageStatus.ACTIVE, check_int(n, "n", minimum=0))
        self.delete_rows(key, rows)
        return [to_chat_message(r) for r in rows]

    def archive_oldest(self, key: str, n: int) -> list[ChatMessage]:
        """Mark the oldest ``n`` ACTIVE messages ARCHIVED and return them."""
        rows = self.selected(key, MessageStatus.ACTIVE, check_int(n, "n", minimum=0))
        for r in rows:
            self._memory.store.update(
                "message", r.id, metadata=with_status(r, MessageStatus.ARCHIVED)
            )
        return [to_chat_message(r) for r in rows]

    def keys(self) -> list[str]:
        """Ids of the threads in this scope that hold messages."""
        scope = {
            name: value
            for name, value in (("user_id", self.user_id), ("agent_id", self.agent_id))
            if value is not None
        }
        store = self._memory.store
        return [
            row.thread_id
            for row in self._memory.list_threads(**scope)
            if store.count_thread_messages(row.thread_id) > 0
        ]


class _ScopedChatStore(BaseComponent):
    """The fields and constructor both chat stores share (see ``OAMDBChatStore``)."""

    user_id: str | None = None
    agent_id: str | None = None

    _core: _ThreadChat = PrivateAttr()

    def __init__(
        self,
        memory: OracleAgentMemory | OracleMemoryStore,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        client = as_client(memory)
        fields: dict[str, Any] = {
            "user_id": check_scope(user_id, "user_id", kind="a non-blank str"),
            "agent_id": check_scope(agent_id, "agent_id", kind="a non-blank str"),
        }
        super().__init__(**fields)
        self._core = _ThreadChat(client, self.user_id, self.agent_id)


class OAMDBChatStore(_ScopedChatStore, AsyncDBChatStore):
    """``AsyncDBChatStore`` keeping each key's messages in the ``oam`` thread of that
    id: ``Memory.from_defaults(chat_store=OAMDBChatStore(memory), session_id=...)``.

    Every returned ``ChatMessage`` is a fresh copy (``Memory`` mutates what it gets).
    Positions (``delete_message``'s ``idx``, ``offset``) count the key's messages in
    insertion order. A thread is created on the first write to a key, in the scope
    ``user_id`` / ``agent_id`` (omitted: generated ids, as ``create_thread``).

    Args:
        memory: The ``OracleAgentMemory`` holding the threads. With extraction on it
            needs an LLM (docs/concepts.md#the-client-and-threads); without one, create it with
            ``extract_memories=False``. A bare ``OracleMemoryStore`` is wrapped in a
            client without LLM or extraction.
        user_id: User of the threads this store creates (and the only user whose
            threads it reads).
        agent_id: Agent of the threads this store creates (likewise).

    Raises:
        ValueError: if ``memory`` is neither an ``OracleAgentMemory`` nor an
            ``OracleMemoryStore``, or a scope id is not a non-blank string.
    """

    @classmethod
    def class_name(cls) -> str:
        """The LlamaIndex component name."""
        return "OAMDBChatStore"

    # -- AsyncDBChatStore API ----------------------------------------------------------

    async def get_messages(
        self,
        key: str,
        status: MessageStatus | None = MessageStatus.ACTIVE,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[ChatMessage]:
        """Messages of ``key`` with ``status`` (None: any), oldest first, after skipping
        ``offset`` and at most ``limit``; an unknown key has none.

        Raises:
            ValueError: for a blank key, a negative ``limit``/``offset``, or a
                ``status`` other than a ``MessageStatus`` (or its string) or None,
                also for an unknown key.
        """
        return await in_worker_thread(self._core.get, key, status, limit, offset)

    async def count_messages(
        self, key: str, status: MessageStatus | None = MessageStatus.ACTIVE
    ) -> int:
        """How many messages ``key`` has with ``status`` (None: any)."""
        return len(await in_worker_thread(self._core.selected, key, status))

    async def add_message(
        self, key: str, message: ChatMessage, status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Append ``message`` to the thread ``key`` (created if missing).

        Raises:
            ValueError: for a blank key or an invalid status; as ``create_thread``
                when the client needs an LLM it lacks.
        """
        await in_worker_thread(self._core.add, key, [message], status)

    async def add_messages(
        self,
        key: str,
        messages: list[ChatMessage],
        status: MessageStatus = MessageStatus.ACTIVE,
    ) -> None:
        """Append ``messages`` in one thread write (one transaction, docs/concepts.md#the-client-and-threads)."""
        await in_worker_thread(self._core.add, key, messages, status)

    async def set_messages(
        self,
        key: str,
        messages: list[ChatMessage],
        status: MessageStatus = MessageStatus.ACTIVE,
    ) -> None:
        """Replace every message of ``key`` (any status) with ``messages``; the
        thread's memories are kept."""
        await in_worker_thread(self._core.set, key, messages, status)

    async def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message at position ``idx`` (any status, insertion order;
        negative counts from the end) and return it; None when out of range."""
        return await in_worker_thread(self._core.delete_at, key, idx)

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        """Delete the messages of ``key`` with ``status`` (None: all); memories stay."""
        await in_worker_thread(self._core.delete_status, key, status)

    async def delete_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Delete the oldest ``n`` ACTIVE messages and return them, oldest first.

        Raises:
            ValueError: if ``n`` is not an int >= 0.
        """
        return await in_worker_thread(self._core.delete_oldest, key, n)

    async def archive_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Mark the oldest ``n`` ACTIVE messages ARCHIVED and return them, oldest first.

        Raises:
            ValueError: if ``n`` is not an int >= 0.
        """
        return await in_worker_thread(self._core.archive_oldest, key, n)

    async def get_keys(self) -> list[str]:
        """Ids of the threads (in this store's user/agent scope) holding messages."""
        return await in_worker_thread(self._core.keys)


class OAMChatStore(_ScopedChatStore, BaseChatStore):
    """LlamaIndex ``BaseChatStore`` keeping each key's messages in the ``oam`` thread of
    that id: ``ChatMemoryBuffer.from_defaults(chat_store=OAMChatStore(memory),
    chat_store_key="session-1")``.

    Example::

        >>> from llama_index.core.base.llms.types import ChatMessage
        >>> from oam_core import OracleAgentMemory
        >>> memory = OracleAgentMemory(connection=":memory:", extract_memories=False)
        >>> chats = OAMChatStore(memory, user_id="ada")
        >>> chats.add_message("session-1", ChatMessage(role="user", content="Hi!"))
        >>> [m.content for m in chats.get_messages("session-1")]
        ['Hi!']

    ``get_messages`` returns every message of the thread (also those ``OAMDBChatStore``
    archived); the async methods are ``BaseChatStore``'s, which run these in a worker
    thread.

    Args:
        memory: As ``OAMDBChatStore``.
        user_id: User of the threads this store creates (and the only user whose
            threads it reads or deletes).
        agent_id: Agent of the threads this store creates (likewise).

    Raises:
        ValueError: as ``OAMDBChatStore``.
    """

    @classmethod
    def class_name(cls) -> str:
        """The LlamaIndex component name."""
        return "OAMChatStore"

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace every message of ``key`` with ``messages`` (memories stay).

        Raises:
            ValueError: for a blank key, a non-message, or a thread of another
                user or agent.
        """
        self._core.set(key, messages, MessageStatus.ACTIVE)

    def get_messages(self, key: str) -> list[ChatMessage]:
        """Every message of ``key``, oldest first (an unknown key has none).

        Raises:
            ValueError: for a blank key or a thread of another user or agent.
        """
        return self._core.get(key, None, None, None)

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Append ``message`` to the thread ``key`` (created if missing); with ``idx``,
        insert it at that position instead (the thread's messages are rewritten).

        Raises:
            ValueError: for a blank key, a non-message, a non-int ``idx``, or a thread
                of another user or agent; as ``create_thread`` when the client
                needs an LLM it lacks.
        """
        if idx is None:
            self._core.add(key, [message], MessageStatus.ACTIVE)
            return
        check_optional_int(idx, "idx")
        current = self.get_messages(key)
        current.insert(idx, _check_message(message))
        self.set_messages(key, current)

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete every message of ``key`` and return them (None when there were none)."""
        return self._core.delete_status(key, None) or None

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message at position ``idx`` (negative counts from the end) and
        return it; None when out of range."""
        return self._core.delete_at(key, idx)

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Delete the newest message of ``key`` and return it (None when empty)."""
        return self._core.delete_at(key, -1)

    def get_keys(self) -> list[str]:
        """Ids of the threads (in this store's user/agent scope) holding messages."""
        return self._core.keys()


def _check_message(message: object) -> ChatMessage:
    if not isinstance(message, ChatMessage):
        raise InvalidArgumentError(
            f"messages must be ChatMessage objects, got {type(message).__name__}"
        )
    return message


__all__ = ["OAMChatStore", "OAMDBChatStore"]
