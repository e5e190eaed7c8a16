"""LlamaIndex ``ChatMessage`` <-> ``oam`` messages (SPEC §2, §6).

A chat message is stored as one ``oam`` thread message: its role, its text
(``ChatMessage.content``, ``""`` when it has none) and, under the reserved metadata
key ``"$message"`` (SPEC §2 [oam]), the participant ``name`` when
``additional_kwargs`` has one, plus a ``"llama_index"`` object with the chat store's
``status`` and the whole message as LlamaIndex serialises it, so tool calls, images
and other blocks round-trip exactly. Messages without that object (written through
``OracleThread.add_messages`` directly, or by ``OAMMemoryBlock``) read back as plain
text messages with status ARCHIVED: they are history, not the short-term queue.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.storage.chat_store.base_db import MessageStatus

from oam_core import Message, Record
from oam_core.apis.records import MessageRecord

MESSAGE_KEY = "$message"
"""Reserved metadata key for chat-framework message fields (SPEC §2 [oam])."""
LLAMA_KEY = "llama_index"
"""Key under ``MESSAGE_KEY`` holding the chat store's status and the serialised message."""
_ROLES = frozenset(r.value for r in MessageRole)
_ROLE_ALIASES = {"human": "user", "ai": "assistant"}
"""Roles other frameworks store (LangChain's message types), read as LlamaIndex roles;
any other unknown role reads as ``user``."""
SESSION_KWARG = "session_id"
"""``additional_kwargs`` key ``BaseMemoryBlock.aput`` sets; never stored."""


def to_oam_message(message: ChatMessage, status: MessageStatus | None = None) -> Message:
    """The ``oam`` ``Message`` storing ``message`` (with ``status`` when a chat store
    writes it; without, the message is plain history).

    Raises:
        ValueError: if the message cannot be serialised as JSON.
    """
    dumped = message.model_dump(mode="json")
    kwargs = dumped.get("additional_kwargs") or {}
    kwargs.pop(SESSION_KWARG, None)
    fields: dict[str, Any] = {}
    name = kwargs.get("name")
    if isinstance(name, str) and name.strip():
        fields["name"] = name
    if status is not None:
        fields[LLAMA_KEY] = {"status": status.value, "message": dumped}
    return Message(
        role=_role(message),
        content=message.content or "",
        metadata={MESSAGE_KEY: fields} if fields else None,
    )


def _role(message: ChatMessage) -> str:
    role = message.role
    return str(getattr(role, "value", role))


def status_of(record: Record) -> MessageStatus:
    """The chat-store status of a stored message (ARCHIVED when it has none)."""
    stored = _llama_fields(record)
    if stored is not None and stored.get("status") == MessageStatus.ACTIVE.value:
        return MessageStatus.ACTIVE
    return MessageStatus.ARCHIVED


def has_status(record: Record) -> bool:
    """True when the chat store wrote the message (it carries a status)."""
    return _llama_fields(record) is not None


def with_status(record: Record, status: MessageStatus) -> dict[str, Any]:
    """The record's metadata with its chat-store status set to ``status``."""
    metadata = dict(record.metadata or {})
    fields = dict(metadata.get(MESSAGE_KEY) or {})
    llama = dict(
        fields.get(LLAMA_KEY) or {"message": to_chat_message(record).model_dump(mode="json")}
    )
    llama["status"] = status.value
    fields[LLAMA_KEY] = llama
    metadata[MESSAGE_KEY] = fields
    return metadata


def to_chat_message(record: Record) -> ChatMessage:
    """A fresh ``ChatMessage`` for a stored message (callers may mutate it freely)."""
    stored = _llama_fields(record)
    if stored is not None and isinstance(stored.get("message"), dict):
        return ChatMessage.model_validate(stored["message"])
    role = record.role if isinstance(record, MessageRecord) and record.role else "user"
    role = _ROLE_ALIASES.get(role, role)
    return ChatMessage(role=role if role in _ROLES else "user", content=record.content or "")


def _llama_fields(record: Record) -> dict[str, Any] | None:
    fields = (record.metadata or {}).get(MESSAGE_KEY)
    if isinstance(fields, dict) and isinstance(fields.get(LLAMA_KEY), dict):
        return dict(fields[LLAMA_KEY])
    return None


__all__ = [
    "LLAMA_KEY",
    "MESSAGE_KEY",
    "SESSION_KWARG",
    "has_status",
    "status_of",
    "to_chat_message",
    "to_oam_message",
    "with_status",
]
