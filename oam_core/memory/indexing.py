"""What a message is retrieved by (SPEC §2 [oam], §3.1).

A message is stored as written. It gets two kinds of search rows:

* its own text, prefixed with the speaker's name when the message carries one
  (``metadata["$message"]["name"]``, the chat frameworks' participant ``name``), so
  "What did Caroline paint?" finds the turn Caroline wrote even when the turn never
  says her name; long messages are cut into chunks as the store would;
* one context row: the previous message of the thread followed by this one, so a
  short reply ("Yes, twice last year!") is found by the question it answers. The row
  is added only when both fit one chunk (the previous message is cut from its start).

On LoCoMo (bench/locomo_recall.py) the context row lifts recall_all@10 from 0.59 to
0.63 for HYBRID and from 0.55 to 0.62 for KEYWORD. It costs one more embedding per
message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from oam_core.apis.thread import Message
from oam_core.store.chunking import chunk_text

MESSAGE_KEY = "$message"
"""Reserved metadata key holding chat-framework message fields (name, tool calls, ...)."""


def speaker_name(message: Message) -> str | None:
    """The participant name of ``message``, or None."""
    return speaker_in(message.metadata)


def speaker_in(metadata: Mapping[str, object] | None) -> str | None:
    """The participant name held in a message's ``metadata`` (``$message.name``), or None."""
    fields = (metadata or {}).get(MESSAGE_KEY)
    if isinstance(fields, Mapping):
        name = fields.get("name")
        if isinstance(name, str) and name.strip():
            return name.strip()
    return None


def labelled_text(message: Message) -> str:
    """``"<name>: <content>"`` when the message names its speaker, else the content;
    ``""`` for a message with blank content."""
    if not message.content.strip():
        return ""
    name = speaker_name(message)
    return f"{name}: {message.content}" if name else message.content


def message_index_texts(
    messages: Sequence[Message], previous: Message | None, chunk_chars: int
) -> list[list[str]]:
    """The search-row texts of each message (caller-owned chunks for ``store.add``).

    Args:
        messages: The new messages, in thread order.
        previous: The message stored just before ``messages[0]`` in the thread, if any.
        chunk_chars: The store's chunk size in characters; no row is longer.

    Returns:
        One list of row texts per message (empty for a blank message).
    """
    rows: list[list[str]] = []
    before = labelled_text(previous) if previous is not None else ""
    for message in messages:
        own = labelled_text(message)
        chunks = chunk_text(own, chunk_chars)
        room = chunk_chars - len(own) - 1
        if before and len(chunks) == 1 and room > 0:
            context = before if len(before) <= room else chunk_text(before, room)[-1]
            chunks.append(f"{context}\n{own}")
        rows.append(chunks)
        before = own
    return rows
