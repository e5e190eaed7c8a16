"""Thread-level data types and interface (docs/concepts.md#the-client-and-threads; Oracle's SDK ``apis.thread``)."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oam_core.apis.timestamps import normalize_timestamp
from oam_core.errors import InvalidArgumentError

if TYPE_CHECKING:
    from oam_core.apis.contextcard import ContextCard
    from oam_core.apis.summary import Summary


COMMON_ROLES = ("user", "assistant", "system", "tool")
"""The roles chat formats share; any other non-blank role string is stored as given
(chat frameworks have more, such as LlamaIndex's ``developer`` or a LangChain
``ChatMessage`` role; docs/concepts.md#records)."""


def check_role(role: object, argument: str = "role") -> str:
    """The library's rule for a message role (``Message``, ``add_messages``): a
    non-blank string (NUL and lone surrogates are refused where
    text is stored).

    Args:
        role: The value to check.
        argument: Names the value in the error message.

    Returns:
        ``role`` unchanged.

    Raises:
        InvalidArgumentError: naming ``argument`` and the value when it is not a non-blank str.
    """
    if not isinstance(role, str) or not role.strip():
        raise InvalidArgumentError(f"{argument} must be a non-empty string, got {role!r}")
    return role


def check_known_role(role: object, argument: str = "role") -> str:
    """The rule for a message role read from outside Python (``oam ingest`` files,
    ``oam mcp`` tools): one of ``COMMON_ROLES``. The library itself takes any
    non-blank role (``check_role``), because chat frameworks write others
    (``developer``, ``chatbot``, ``model``); data from a file or another program gets
    the stricter check, so a typo such as ``"bot"`` is caught at the edge
    (docs/concepts.md#records).

    Args:
        role: The value to check.
        argument: Names the value in the error message.

    Returns:
        ``role`` unchanged.

    Raises:
        InvalidArgumentError: naming ``argument`` and the value when it is not one of
            ``COMMON_ROLES``.
    """
    if role not in COMMON_ROLES:
        allowed = ", ".join(repr(r) for r in COMMON_ROLES)
        raise InvalidArgumentError(f"{argument} must be one of {allowed}, got {role!r}")
    return str(role)


@dataclass(frozen=True)
class Message:
    """One chat message.

    Args:
        role: Who spoke, e.g. ``"user"``, ``"assistant"``, ``"system"``, ``"tool"``;
            any non-blank string (``check_role``).
        content: The text. ``""`` is allowed; ``None`` is not (docs/concepts.md#records).
        timestamp: Optional event time: an ISO-8601 string or a ``datetime`` (naive =
            UTC). Kept normalized to a UTC ISO-8601 string
            (``"2026-03-01T07:30:00+00:00"``; docs/store.md#timestamps).
        metadata: Optional JSON-compatible dict. Framework fields (tool calls,
            ``tool_call_id``, ``name``) travel under the reserved key ``"$message"``.
        id: Optional caller-chosen id; generated (uuid4) when omitted.

    Raises:
        InvalidArgumentError: if ``role`` is not a non-empty string, ``content`` is not a str,
            or ``timestamp`` is not an ISO-8601 string or a ``datetime``.
    """

    role: str
    content: str
    timestamp: str | None = None
    metadata: dict[str, Any] | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        check_role(self.role, "Message role")
        if not isinstance(self.content, str):
            raise InvalidArgumentError(
                f"Message content must be a str ('' is allowed), got {self.content!r}"
            )
        if self.timestamp is not None:
            object.__setattr__(
                self, "timestamp", normalize_timestamp(self.timestamp, "Message timestamp")
            )
        if self.metadata is not None and not isinstance(self.metadata, dict):
            raise InvalidArgumentError(
                f"Message metadata must be a dict or None, got {self.metadata!r}"
            )
        if self.id is not None and (not isinstance(self.id, str) or not self.id):
            raise InvalidArgumentError(
                f"Message id must be a non-empty str or None, got {self.id!r}"
            )


MESSAGE_KEY = "$message"
"""Metadata key under which a message keeps its chat-framework fields: the speaker
``name``, tool calls, ``tool_call_id`` (docs/concepts.md#records)."""


def participant_name(metadata: Mapping[str, Any] | None) -> str | None:
    """The speaker name a message's metadata carries (``metadata["$message"]["name"]``,
    stripped), or None (docs/concepts.md#records).

    Args:
        metadata: A record's or message's metadata, or None.
    """
    fields = (metadata or {}).get(MESSAGE_KEY)
    if isinstance(fields, Mapping):
        name = fields.get("name")
        if isinstance(name, str) and name.strip():
            return name.strip()
    return None


MessageT = Mapping[str, Any]
"""A message given as a dict with ``role`` and ``content`` (optional ``id``,
``timestamp``, ``metadata``)."""

MessageLike = Message | MessageT


def to_message(value: MessageLike) -> Message:
    """Coerce a ``Message`` or a message dict to a ``Message``.

    Raises:
        InvalidArgumentError: for a dict without ``role``/``content``, unknown keys, or bad values.
        TypeError: for anything that is neither a ``Message`` nor a mapping.
    """
    if isinstance(value, Message):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"messages must be Message objects or dicts, got {type(value).__name__}")
    if "role" not in value:
        raise InvalidArgumentError(f"message dict is missing 'role': {dict(value)!r}")
    if "content" not in value:
        raise InvalidArgumentError(f"message dict is missing 'content': {dict(value)!r}")
    unknown = set(value) - {"role", "content", "timestamp", "metadata", "id"}
    if unknown:
        raise InvalidArgumentError(f"message dict has unknown keys {sorted(unknown)!r}")
    return Message(
        role=value["role"],
        content=value["content"],
        timestamp=value.get("timestamp"),
        metadata=value.get("metadata"),
        id=value.get("id"),
    )


class IThread(abc.ABC):
    """A conversation thread: raw messages plus the memories derived from them."""

    thread_id: str
    user_id: str | None
    agent_id: str | None

    @abc.abstractmethod
    def add_messages(self, messages: Sequence[MessageLike], **store_kwargs: Any) -> list[str]:
        """Persist messages in order; return their ids."""

    @abc.abstractmethod
    async def add_messages_async(
        self, messages: Sequence[MessageLike], **store_kwargs: Any
    ) -> list[str]:
        """Async twin of ``add_messages``."""

    @abc.abstractmethod
    def get_messages(self, start: int | None = ..., end: int | None = ...) -> list[Message]:
        """Return stored messages in chronological order (windows: docs/concepts.md#the-client-and-threads)."""

    @abc.abstractmethod
    def get_summary(self, except_last: int = 0, token_budget: int = 1000) -> Summary:
        """Return the thread summary."""

    @abc.abstractmethod
    def get_context_card(
        self,
        fallback_message_count: int = 5,
        max_relevant_results: int = 5,
        max_recent_messages: int = 0,
        **kwargs: Any,
    ) -> ContextCard:
        """Return the thread's context card."""
