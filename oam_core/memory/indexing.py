"""What a message is retrieved by (docs/retrieval.md#what-a-message-is-indexed-by; docs/store.md#what-is-stored-and-what-is-searched).

A message is stored as written. It gets two kinds of search rows:

* its own text, prefixed with the speaker's name when the message carries one
  (``metadata["$message"]["name"]``, the chat frameworks' participant ``name``), so
  "What did Caroline paint?" finds the turn Caroline wrote even when the turn never
  says her name, and with the day of its timestamp when it has one
  (``"[8 May 2023] Caroline: ..."``), so a question naming the day or month finds
  it by keyword as well; long messages are cut into chunks as the store would;
* one context row: the ``CONTEXT_MESSAGES`` messages of the thread before it (the
  previous exchange) followed by this one, so a short reply ("Yes, twice last
  year!") is found by the question it answers, and a follow-up ("I've been playing
  for a month now") by the topic raised two turns earlier. The row is added only
  when the message fits one chunk; earlier messages that do not fit beside it are
  left out, oldest first (the nearest one is cut from its start). The row is a
  ``store.quotes.QuotingChunk`` naming the messages it quotes, so deleting, changing
  or expiring one of them deletes (or expires) the row too (docs/store.md).

On LoCoMo (bench/locomo_recall.py) a context row of the previous message lifted
HYBRID recall_all@10 from 0.59 to 0.63 and KEYWORD from 0.55 to 0.62; the previous
two messages lift HYBRID from 0.674 to 0.701. It costs one more embedding per
message (the three-turn row has about 29% more word pieces than the two-turn one, so
ingest is about 20% slower). The day prefix lifts HYBRID from 0.633 to 0.658 at no embedding cost
(bench/README.md has the table of steps).
"""

from __future__ import annotations

from collections.abc import Sequence

from oam_core.apis.thread import Message
from oam_core.store.chunking import chunk_text
from oam_core.store.quotes import QuotingChunk
from oam_core.store.signals import MESSAGE_KEY, participant_name
from oam_core.store.temporal import day_label

__all__ = [
    "CONTEXT_MESSAGES",
    "MESSAGE_KEY",
    "labelled_text",
    "message_index_texts",
    "speaker_name",
]

CONTEXT_MESSAGES = 2
"""How many earlier messages of the thread a message's context row holds: the
previous exchange (in a two-party chat, the other side's turn and the speaker's own
turn before it). One measured 0.674, two 0.701, three 0.683 recall_all@10 on LoCoMo
(bench/README.md): further turns dilute the row."""


def speaker_name(message: Message) -> str | None:
    """The participant name of ``message``, or None."""
    return participant_name(message.metadata)


def labelled_text(message: Message) -> str:
    """``"<name>: <content>"`` when the message names its speaker, else the content;
    ``""`` for a message with blank content."""
    if not message.content.strip():
        return ""
    name = speaker_name(message)
    return f"{name}: {message.content}" if name else message.content


def message_index_texts(
    messages: Sequence[Message],
    previous: Message | Sequence[Message] | None,
    chunk_chars: int,
) -> list[list[str]]:
    """The search-row texts of each message (caller-owned chunks for ``store.add``).

    Args:
        messages: The new messages, in thread order.
        previous: The messages stored just before ``messages[0]`` in the thread,
            oldest first (only the last ``CONTEXT_MESSAGES`` are read), a single
            message, or None for none.
        chunk_chars: The store's chunk size in characters; no row is longer.

    Returns:
        One list of row texts per message (empty for a blank message).
    """
    if previous is None:
        earlier: list[Message] = []
    elif isinstance(previous, Message):
        earlier = [previous]
    else:
        earlier = list(previous)
    history = [(labelled_text(m), m.id) for m in earlier[-CONTEXT_MESSAGES:]]
    rows: list[list[str]] = []
    for message in messages:
        own = labelled_text(message)
        day = day_label(message.timestamp) if own else None
        chunks: list[str] = chunk_text(f"[{day}] {own}" if day else own, chunk_chars)
        if own and len(chunks) == 1:
            context = _context(history[-CONTEXT_MESSAGES:], chunk_chars - len(own))
            if context:
                text = "\n".join([*(t for t, _ in context), own])
                chunks.append(QuotingChunk(text, [i for _, i in context if i is not None]))
        rows.append(chunks)
        history.append((own, message.id))
    return rows


def _context(texts: Sequence[tuple[str, str | None]], room: int) -> list[tuple[str, str | None]]:
    """The ``(text, message id)`` pairs of non-blank ``texts`` that fit in ``room``
    characters, each costing its length plus a newline, newest kept first; when not
    even the newest fits whole, its last chunk of ``room - 1`` characters."""
    kept: list[tuple[str, str | None]] = []
    for text, message_id in reversed([t for t in texts if t[0]]):
        if len(text) + 1 <= room:
            kept.insert(0, (text, message_id))
            room -= len(text) + 1
        else:
            if not kept and room > 1:
                kept = [(chunk_text(text, room - 1)[-1], message_id)]
            break
    return kept
