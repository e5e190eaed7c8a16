"""LlamaIndex ``ChatMessage`` <-> ``oam`` messages (docs/llama_index.md#chat-store-and-memory-block).

A chat message is stored as one ``oam`` thread message: its role, its text
(``ChatMessage.content``, ``""`` when it has none) and, under the reserved metadata
key ``"$message"`` (docs/concepts.md#records), the participant ``name`` when
``additional_kwargs`` has one, its ``tool_calls`` and ``tool_call_id`` (the
framework-neutral fields the context card reads, docs/context-card.md#tool-calls) and,
under ``"llama_index"``, the whole message as LlamaIndex serialises it, so tool calls,
images and other blocks round-trip exactly.

Messages written by ``OAMDBChatStore`` also carry their queue status in the top-level
metadata key ``"_llama_index_status"`` (``"active"`` or ``"archived"``), where the
filter language (docs/filters.md) can select it (keys starting with ``$`` cannot be filtered).
Messages without it (written through ``OracleThread.add_messages`` directly, or by
``OAMMemoryBlock``) count as ARCHIVED: they are history, not the short-term queue.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.bridge.pydantic import BaseModel
from llama_index.core.storage.chat_store.base_db import MessageStatus

from oam_core import Message, Record
from oam_core.apis.metadatajson import check_stored_json, json_storable
from oam_core.apis.records import MessageRecord
from oam_core.checks import check_text
from oam_core.errors import InvalidArgumentError

MESSAGE_KEY = "$message"
"""Reserved metadata key for chat-framework message fields (docs/concepts.md#records)."""
LLAMA_KEY = "llama_index"
"""Key under ``MESSAGE_KEY`` holding the message as LlamaIndex serialises it."""
STATUS_KEY = "_llama_index_status"
"""Top-level metadata key holding the chat-store status of a message."""
_ROLES = frozenset(r.value for r in MessageRole)
_ROLE_ALIASES = {"human": "user", "ai": "assistant"}
"""Roles other frameworks store (LangChain's message types), read as LlamaIndex roles;
any other unknown role reads as ``user``."""
SESSION_KWARG = "session_id"
"""``additional_kwargs`` key ``BaseMemoryBlock.aput`` sets on the messages it flushes;
the memory block does not store it (the thread is the session)."""


def to_oam_message(
    message: ChatMessage,
    status: MessageStatus | None = None,
    index: int = 0,
    *,
    drop_session: bool = False,
) -> Message:
    """The ``oam`` ``Message`` storing ``message``, with ``status`` when a chat store
    writes it (without one, the message is plain history); ``index`` is its position
    in the write, for errors. The message is stored as given, except that with
    ``drop_session`` (the memory block) its ``additional_kwargs["session_id"]``, the
    tag ``BaseMemoryBlock.aput`` put there, is left out; the chat stores keep a
    caller's own ``session_id`` like every other kwarg.

    Raises:
        InvalidArgumentError: (a ``ValueError``) naming ``messages[index].additional_kwargs[key]``
            for a value JSON cannot hold (NaN, infinity, a set, bytes, any other
            object but a pydantic model of JSON values), as core ``add_messages``
            refuses such metadata: the value is never stored in a changed form.
    """
    check_kwargs(message.additional_kwargs, f"messages[{index}].additional_kwargs")
    dumped = message.model_dump(mode="json")
    kwargs = dumped.get("additional_kwargs") or {}
    if drop_session:
        kwargs.pop(SESSION_KWARG, None)
    fields: dict[str, Any] = {LLAMA_KEY: dumped}
    name = kwargs.get("name")
    if isinstance(name, str) and name.strip():
        fields["name"] = name
    # The framework-neutral copies other oam readers use (the context card shows calls).
    if isinstance(kwargs.get("tool_calls"), list) and kwargs["tool_calls"]:
        fields["tool_calls"] = kwargs["tool_calls"]
    if isinstance(kwargs.get("tool_call_id"), str):
        fields["tool_call_id"] = kwargs["tool_call_id"]
    metadata: dict[str, Any] = {MESSAGE_KEY: fields}
    if status is not None:
        metadata[STATUS_KEY] = MessageStatus(status).value
    return Message(role=_role(message), content=message.content or "", metadata=metadata)


def check_kwargs(kwargs: Mapping[str, Any], where: str) -> None:
    """Refuse a value of ``kwargs`` (a message's ``additional_kwargs``) that JSON cannot
    hold, naming ``where[key]``; a pydantic model (an LLM's tool call object) is
    checked as its fields.

    Raises:
        InvalidArgumentError: for a non-string key, a non-finite float, an int past
            64 bits, a NUL or lone surrogate (named by its path,
            ``messages[0].additional_kwargs['a']``, not the stored layout), or a
            value that is not a JSON value (a set, bytes, a datetime, any other object).
    """
    if json_storable(kwargs):  # built-in JSON types and storable text: one pass
        return
    for key, value in kwargs.items():
        name = f"{where}[{key!r}]"
        if not isinstance(key, str):
            raise InvalidArgumentError(f"{where}: keys must be strings, got {key!r}")
        check_text(key, f"{where} key {key!r}")
        check_stored_json(_plain(value), name)


def _plain(value: Any) -> Any:
    """``value`` with every pydantic model replaced by its fields (python mode)."""
    if isinstance(value, BaseModel):
        return _plain(value.model_dump())
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def check_status(value: object, *, none: bool) -> MessageStatus | None:
    """A chat store's ``status`` argument as the enum (``MessageStatus`` or its string,
    ``"active"``); None passes when ``none`` (a read of any status).

    Raises:
        InvalidArgumentError: naming ``status`` and the value for anything else.
    """
    if value is None and none:
        return None
    try:
        return MessageStatus(value)
    except (ValueError, TypeError):
        known = ", ".join(repr(s.value) for s in MessageStatus)
        also = " or None" if none else ""
        raise InvalidArgumentError(
            f"status must be a MessageStatus ({known}){also}, got {value!r}"
        ) from None


def status_filter(status: MessageStatus) -> dict[str, Any]:
    """The metadata filter (docs/filters.md) selecting messages with ``status``."""
    if MessageStatus(status) is MessageStatus.ACTIVE:
        return {STATUS_KEY: MessageStatus.ACTIVE.value}
    return {STATUS_KEY: {"$not": MessageStatus.ACTIVE.value}}


def _role(message: ChatMessage) -> str:
    role = message.role
    return str(getattr(role, "value", role))


def status_of(record: Record) -> MessageStatus:
    """The chat-store status of a stored message (ARCHIVED when it has none)."""
    if (record.metadata or {}).get(STATUS_KEY) == MessageStatus.ACTIVE.value:
        return MessageStatus.ACTIVE
    return MessageStatus.ARCHIVED


def with_status(record: Record, status: MessageStatus) -> dict[str, Any]:
    """The record's metadata with its chat-store status set to ``status``."""
    metadata = dict(record.metadata or {})
    metadata[STATUS_KEY] = MessageStatus(status).value
    return metadata


def to_chat_message(record: Record) -> ChatMessage:
    """A fresh ``ChatMessage`` for a stored message (callers may mutate it freely)."""
    fields = (record.metadata or {}).get(MESSAGE_KEY)
    if isinstance(fields, dict) and isinstance(fields.get(LLAMA_KEY), dict):
        return ChatMessage.model_validate(fields[LLAMA_KEY])
    role = record.role if isinstance(record, MessageRecord) and record.role else "user"
    role = _ROLE_ALIASES.get(role, role)
    return ChatMessage(
        role=role if role in _ROLES else "user",
        content=record.content or "",
        additional_kwargs=_neutral_kwargs(fields if isinstance(fields, dict) else {}),
    )


def _neutral_kwargs(fields: dict[str, Any]) -> dict[str, Any]:
    """``additional_kwargs`` from the framework-neutral ``$message`` fields another
    framework wrote (docs/context-card.md#tool-calls): ``name``, ``tool_call_id`` and
    ``tool_calls`` in OpenAI's shape (``{"id", "type": "function", "function":
    {"name", "arguments"}}``, what LlamaIndex's OpenAI-style LLMs read; a call in
    LangChain's shape, ``{"name", "args", "id"}``, is converted)."""
    kwargs: dict[str, Any] = {}
    if isinstance(fields.get("name"), str):
        kwargs["name"] = fields["name"]
    if isinstance(fields.get("tool_call_id"), str):
        kwargs["tool_call_id"] = fields["tool_call_id"]
    calls = [_openai_call(c) for c in fields.get("tool_calls") or [] if isinstance(c, dict)]
    if calls:
        kwargs["tool_calls"] = calls
    return kwargs


def _openai_call(call: dict[str, Any]) -> dict[str, Any]:
    if isinstance(call.get("function"), dict) or "args" not in call:
        return call
    args = call["args"]
    return {
        "id": call.get("id"),
        "type": "function",
        "function": {
            "name": call.get("name"),
            "arguments": args if isinstance(args, str) else json.dumps(args),
        },
    }


__all__ = [
    "LLAMA_KEY",
    "MESSAGE_KEY",
    "SESSION_KWARG",
    "STATUS_KEY",
    "check_kwargs",
    "check_status",
    "status_filter",
    "status_of",
    "to_chat_message",
    "to_oam_message",
    "with_status",
]
