"""What threads and the client turn into records and back: messages given as
``Message`` objects or dicts, ``get_messages`` windows, stored messages read back as
``Message`` objects, and a hand-added memory (docs/concepts.md#the-client-and-threads).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.metadatajson import dump_metadata
from oam_core.apis.records import MESSAGE, MessageRecord, Record
from oam_core.apis.thread import Message, MessageLike, to_message
from oam_core.checks import check_int, check_record_id, check_store_kwargs, check_text
from oam_core.errors import InvalidArgumentError
from oam_core.steps import Steps, call

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

__all__ = [
    "BATCH_FIELDS",
    "DEFAULT_MESSAGE_WINDOW",
    "MESSAGE_KEYS",
    "add_memory_steps",
    "as_message",
    "check_memory_content",
    "message_fields",
    "message_window",
    "prepare_messages",
]

DEFAULT_MESSAGE_WINDOW = 100
"""Messages returned by ``get_messages`` when the window is left open
(docs/store.md#defaults)."""

MESSAGE_KEYS = frozenset(
    {
        "contents",
        "record_type",
        "record_ids",
        "thread_ids",
        "user_ids",
        "agent_ids",
        "roles",
        "timestamps",
        "metadata",
    }
)
"""``store_kwargs`` that ``add_messages`` sets itself."""
BATCH_FIELDS = frozenset(f.name for f in dataclasses.fields(PendingRecordBatch))
"""``store_kwargs`` of thread writes that are per-record fields of the batch."""
_MEMORY_KEYS = frozenset(
    {"contents", "record_type", "record_ids", "thread_ids", "user_ids", "agent_ids", "roles"}
)


def prepare_messages(messages: object) -> list[Message]:
    """Coerce to ``Message`` objects and give every message an id (uuid4 if missing).

    Each message's id is optional on its own (docs/concepts.md#records): given ids are
    kept, missing ones are generated here. An id given twice is refused by the store
    (``duplicate record ids in one call``).

    Raises:
        ValueError: for a non-list, a malformed message, text holding NUL or a lone
            surrogate, or metadata JSON cannot hold.
        TypeError: for a message that is neither a ``Message`` nor a dict.
    """
    if isinstance(messages, (str, bytes, Mapping, Message)) or not isinstance(messages, Iterable):
        raise InvalidArgumentError(
            f"messages must be a list of Message objects or dicts, got {type(messages).__name__}"
        )
    given = [to_message(value) for value in cast(Iterable[MessageLike], messages)]
    for i, message in enumerate(given):  # each value first, then how they go together
        for name in ("role", "content", "id", "timestamp"):
            text = getattr(message, name)
            if text is not None:
                check_text(text, f"messages[{i}].{name}")
        dump_metadata(message.metadata, f"messages[{i}].metadata")
    prepared: list[Message] = []
    for message in given:
        if message.id is None:
            message = Message(
                role=message.role,
                content=message.content,
                timestamp=message.timestamp,
                metadata=message.metadata,
                id=str(uuid.uuid4()),
            )
        prepared.append(message)
    return prepared


def message_fields(messages: Sequence[Message]) -> dict[str, Any]:
    """The per-message ``PendingRecordBatch`` fields of prepared messages (texts,
    type, ids, roles, timestamps, metadata); scope and index texts are the caller's."""
    return {
        "texts": [m.content for m in messages],
        "record_type": MESSAGE,
        "record_ids": [m.id for m in messages],
        "roles": [m.role for m in messages],
        "timestamps": [m.timestamp for m in messages],
        "metadata": [m.metadata for m in messages],
    }


def as_message(record: Record, *, timestamp_fallback: bool = False) -> Message:
    """A stored message record as a ``Message`` (``created_at`` fills a missing time
    when ``timestamp_fallback``)."""
    role = record.role if isinstance(record, MessageRecord) and record.role else "unknown"
    timestamp = record.timestamp
    if timestamp is None and timestamp_fallback:
        timestamp = record.created_at
    return Message(
        role=role,
        content=record.content if record.content is not None else "",
        timestamp=timestamp,
        metadata=record.metadata,
        id=record.id,
    )


def message_window(start: object, end: object) -> tuple[int, int | None]:
    """Translate ``get_messages(start, end)`` into ``list_thread_messages`` positions
    ``(start, end)``.

    Both omitted -> the last 100; ``end`` omitted -> 100 messages from ``start``;
    ``end`` None or -1 -> everything from ``start``; otherwise Python slice semantics
    (negative values count from the end).

    Raises:
        ValueError: if ``start`` or ``end`` is not an int (or None).
    """
    if start is NOT_SET or start is None:
        if end is NOT_SET:
            return -DEFAULT_MESSAGE_WINDOW, None
        first = 0
    else:
        first = check_int(start, "start")
    last: int | None
    if end is NOT_SET:
        stop = first + DEFAULT_MESSAGE_WINDOW
        last = stop if first >= 0 or stop < 0 else None
    elif end is None or check_int(end, "end") == -1:
        last = None
    else:
        last = check_int(end, "end")
    return first, last


def check_memory_content(content: object) -> str:
    """The rule for a memory's text (``add_memory`` in Python and over MCP): a str
    with at least one non-space character (docs/concepts.md#records).

    Raises:
        InvalidArgumentError: (a ValueError) naming ``content``, for a non-str, empty
            or whitespace-only ``content``, or one holding a NUL or a lone surrogate.
    """
    if not isinstance(content, str):
        raise InvalidArgumentError(f"content must be a str, got {type(content).__name__}")
    if not content.strip():
        raise InvalidArgumentError(
            f"content must be non-blank text (a memory without words is never found), "
            f"got {content!r}"
        )
    return check_text(content, "content")


def add_memory_steps(
    store: OracleMemoryStore,
    content: object,
    *,
    user_id: str | None,
    agent_id: str | None,
    thread_id: str | None,
    memory_id: object,
    store_kwargs: Mapping[str, Any],
    method: str,
    write: Callable[[Mapping[str, Any], Mapping[str, Any]], Steps[list[str]]] | None = None,
) -> Steps[str]:
    """Write one ``memory`` record with the given scope (shared by thread and client).

    ``write(fields, store_kwargs)``, when given, performs the write of the batch
    ``fields`` (``PendingRecordBatch`` fields without ``thread_ids``), e.g. together
    with the check of the thread row; otherwise ``store.add`` does.

    Raises:
        ValueError: for non-str or blank (empty or whitespace-only) content, a blank
            ``memory_id``, or a reserved ``store_kwargs`` key; nothing is written.
    """
    content = check_memory_content(content)
    check_store_kwargs(store_kwargs, method, _MEMORY_KEYS)
    ids_kwarg: dict[str, Any] = {}
    if memory_id is not NOT_SET and memory_id is not None:
        ids_kwarg["record_ids"] = [check_record_id(memory_id, "memory_id")]
    if write is not None:
        fields = {
            "texts": [content],
            "record_type": "memory",
            "user_ids": user_id,
            "agent_ids": agent_id,
            **ids_kwarg,
        }
        written = yield from write(fields, store_kwargs)
        return written[0]
    ids: list[str] = yield from call(
        store.add,
        [content],
        "memory",
        thread_ids=thread_id,
        user_ids=user_id,
        agent_ids=agent_id,
        **ids_kwarg,
        **store_kwargs,
    )
    return ids[0]
