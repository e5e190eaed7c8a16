"""What a message is retrieved by (SPEC §2 [oam], §3.1).

A message is stored as written. Its retrieval text is the content, prefixed with the
speaker's name when the message carries one (``metadata["$message"]["name"]``, the
chat frameworks' participant ``name``), so "What did Caroline paint?" finds the turn
that Caroline wrote even when the turn itself never says her name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from oam_core.apis.thread import Message

MESSAGE_KEY = "$message"
"""Reserved metadata key holding chat-framework message fields (name, tool calls, ...)."""


def speaker_name(message: Message) -> str | None:
    """The participant name of ``message``, or None."""
    fields = (message.metadata or {}).get(MESSAGE_KEY)
    if isinstance(fields, Mapping):
        name = fields.get("name")
        if isinstance(name, str) and name.strip():
            return name.strip()
    return None


def message_index_texts(messages: Sequence[Message]) -> list[str | None] | None:
    """Retrieval texts for ``messages`` (None entries: the content itself), or None when
    no message names its speaker (the store then indexes the contents)."""
    names = [speaker_name(m) for m in messages]
    if not any(names):
        return None
    return [
        f"{n}: {m.content}" if n and m.content else None
        for n, m in zip(names, messages, strict=True)
    ]
