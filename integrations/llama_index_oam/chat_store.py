"""``OAMChatStore``: LlamaIndex's ``AsyncDBChatStore`` over ``oam`` threads.

``Memory.from_defaults(chat_store=OAMChatStore(memory), session_id=...)`` keeps the
short-term queue in the thread whose id is the key (SPEC §6): messages are appended
with ``OracleThread.add_messages`` (so extraction runs when the client has an LLM) and
read back in insertion order (SPEC §3.4). The ACTIVE/ARCHIVED status lives in each
message's metadata (``messages.py``), where the store's filter selects it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus

from llama_index_oam._util import (
    as_client,
    check_key,
    check_row_owner,
    check_scope_id,
    in_thread,
    thread_for,
)
from llama_index_oam.messages import status_filter, to_chat_message, to_oam_message, with_status
from oam_core import OracleAgentMemory, OracleMemoryStore, OracleThread, Record
from oam_core.apis.records import MessageRecord


class OAMChatStore(AsyncDBChatStore):
    """Chat store keeping each key's messages in the ``oam`` thread of that id.

    Every returned ``ChatMessage`` is a fresh copy (``Memory`` mutates what it gets).
    Positions (``delete_message``'s ``idx``, ``offset``) count the key's messages in
    insertion order. A thread is created on the first write to a key, in the scope
    ``user_id`` / ``agent_id`` (omitted: generated ids, as ``create_thread``).

    Args:
        memory: The ``OracleAgentMemory`` holding the threads. With extraction on it
            needs an LLM (SPEC §5); without one, create it with
            ``extract_memories=False``. A bare ``OracleMemoryStore`` is wrapped in a
            client without LLM or extraction.
        user_id: User of the threads this store creates.
        agent_id: Agent of the threads this store creates.

    Raises:
        ValueError: if ``memory`` is neither an ``OracleAgentMemory`` nor an
            ``OracleMemoryStore``, or a scope id is not a non-blank string.
    """

    user_id: str | None = None
    agent_id: str | None = None

    _memory: OracleAgentMemory = PrivateAttr()

    def __init__(
        self,
        memory: OracleAgentMemory | OracleMemoryStore,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        client = as_client(memory)
        fields: dict[str, Any] = {
            "user_id": check_scope_id("user_id", user_id),
            "agent_id": check_scope_id("agent_id", agent_id),
        }
        super().__init__(**fields)
        self._memory = client

    @classmethod
    def class_name(cls) -> str:
        """The LlamaIndex component name."""
        return "OAMChatStore"

    # -- sync core (run in a worker thread by the async API) -----------------------

    def _records(self, key: str) -> list[MessageRecord]:
        check_key("key", key)
        if not check_row_owner(self._memory, key, self.user_id, self.agent_id):
            return []
        return self._memory.store.list_thread_messages(key)

    def _selected(
        self, key: str, status: MessageStatus | None, n: int | None = None
    ) -> list[Record]:
        """The key's messages with ``status`` (None: all), oldest first; the status is
        selected by the store's metadata filter, so the queue is read without the
        archived history."""
        check_key("key", key)
        if status is None:
            rows: list[Record] = list(self._records(key))
        elif not check_row_owner(self._memory, key, self.user_id, self.agent_id):
            return []
        else:
            rows = self._memory.store.list(
                "message", limit=None, thread_id=key, metadata_filter=status_filter(status)
            )
        return rows if n is None else rows[:n]

    def _thread(self, key: str) -> OracleThread:
        return thread_for(self._memory, check_key("key", key), self.user_id, self.agent_id)

    def _get(
        self, key: str, status: MessageStatus | None, limit: int | None, offset: int | None
    ) -> list[ChatMessage]:
        for name, value in (("limit", limit), ("offset", offset)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise ValueError(f"{name} must be a non-negative int or None, got {value!r}")
        rows = self._selected(key, status)[offset or 0 :]
        if limit is not None:
            rows = rows[:limit]
        return [to_chat_message(r) for r in rows]

    def _add(self, key: str, messages: Sequence[ChatMessage], status: MessageStatus) -> None:
        status = MessageStatus(status)
        converted = [to_oam_message(_check_message(m), status) for m in messages]
        if converted:
            self._thread(key).add_messages(converted)

    def _delete_rows(self, key: str, rows: Sequence[Record]) -> None:
        """Delete ``rows`` (messages of thread ``key``) in one transaction."""
        self._memory.store.delete_records("message", [r.id for r in rows], thread_id=key)

    def _set(self, key: str, messages: Sequence[ChatMessage], status: MessageStatus) -> None:
        converted = [to_oam_message(_check_message(m), MessageStatus(status)) for m in messages]
        thread = self._thread(key) if converted else None  # fails before anything is deleted
        self._delete_rows(key, self._records(key))
        if thread is not None:
            thread.add_messages(converted)

    def _delete_at(self, key: str, idx: int) -> ChatMessage | None:
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise ValueError(f"idx must be an int, got {idx!r}")
        rows = self._records(key)
        if not -len(rows) <= idx < len(rows):
            return None
        row = rows[idx]
        self._delete_rows(key, [row])
        return to_chat_message(row)

    def _delete_oldest(self, key: str, n: int) -> list[ChatMessage]:
        rows = self._selected(key, MessageStatus.ACTIVE, _check_n(n))
        self._delete_rows(key, rows)
        return [to_chat_message(r) for r in rows]

    def _archive_oldest(self, key: str, n: int) -> list[ChatMessage]:
        rows = self._selected(key, MessageStatus.ACTIVE, _check_n(n))
        for r in rows:
            self._memory.store.update(
                "message", r.id, metadata=with_status(r, MessageStatus.ARCHIVED)
            )
        return [to_chat_message(r) for r in rows]

    def _keys(self) -> list[str]:
        scope = {
            name: value
            for name, value in (("user_id", self.user_id), ("agent_id", self.agent_id))
            if value is not None
        }
        store = self._memory.store
        return [
            row.thread_id
            for row in store.list_thread_rows(**scope)
            if store.count_thread_messages(row.thread_id) > 0
        ]

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
            ValueError: for a blank key or a negative ``limit``/``offset``.
        """
        return await in_thread(self._get, key, status, limit, offset)

    async def count_messages(
        self, key: str, status: MessageStatus | None = MessageStatus.ACTIVE
    ) -> int:
        """How many messages ``key`` has with ``status`` (None: any)."""
        return len(await in_thread(self._selected, key, status))

    async def add_message(
        self, key: str, message: ChatMessage, status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """Append ``message`` to the thread ``key`` (created if missing).

        Raises:
            ValueError: for a blank key or an invalid status; as ``create_thread``
                when the client needs an LLM it lacks.
        """
        await in_thread(self._add, key, [message], status)

    async def add_messages(
        self,
        key: str,
        messages: list[ChatMessage],
        status: MessageStatus = MessageStatus.ACTIVE,
    ) -> None:
        """Append ``messages`` in one thread write (one transaction, SPEC §6)."""
        await in_thread(self._add, key, messages, status)

    async def set_messages(
        self,
        key: str,
        messages: list[ChatMessage],
        status: MessageStatus = MessageStatus.ACTIVE,
    ) -> None:
        """Replace every message of ``key`` (any status) with ``messages``; the
        thread's memories are kept."""
        await in_thread(self._set, key, messages, status)

    async def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message at position ``idx`` (any status, insertion order;
        negative counts from the end) and return it; None when out of range."""
        return await in_thread(self._delete_at, key, idx)

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        """Delete the messages of ``key`` with ``status`` (None: all); memories stay."""
        await in_thread(lambda: self._delete_rows(key, self._selected(key, status)))

    async def delete_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Delete the oldest ``n`` ACTIVE messages and return them, oldest first.

        Raises:
            ValueError: if ``n`` is not an int >= 0.
        """
        return await in_thread(self._delete_oldest, key, n)

    async def archive_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Mark the oldest ``n`` ACTIVE messages ARCHIVED and return them, oldest first.

        Raises:
            ValueError: if ``n`` is not an int >= 0.
        """
        return await in_thread(self._archive_oldest, key, n)

    async def get_keys(self) -> list[str]:
        """Ids of the threads (in this store's user/agent scope) holding messages."""
        return await in_thread(self._keys)


def _check_n(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    return n


def _check_message(message: object) -> ChatMessage:
    if not isinstance(message, ChatMessage):
        raise ValueError(f"messages must be ChatMessage objects, got {type(message).__name__}")
    return message


__all__ = ["OAMChatStore"]
