"""The extraction prompt and its reply (docs/memory-pipeline.md#what-a-pass-does).

Pure functions, no I/O: ``render_extraction_prompt`` assembles the prompt within a
token budget, ``parse_extraction_reply`` turns the model's text into validated
``ExtractedMemory`` values. The pass that calls the LLM and stores the result is in
``memory/pipeline.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from oam_core.apis.records import MEMORY_TYPES, Record
from oam_core.memory.diagnostics import pipeline_warning
from oam_core.memory.jsonrepair import parse_json_reply
from oam_core.memory.summary import RunningSummary
from oam_core.memory.templates import load_prompt
from oam_core.memory.tokens import tokens_for_chars
from oam_core.store.ttl import iso, parse_iso_timestamp

__all__ = [
    "EXTRACTION_PROMPT",
    "MAX_MEMORIES_PER_PASS",
    "RELATED_MEMORY_COUNT",
    "ExtractedMemory",
    "PromptMessage",
    "extraction_schema",
    "normalize_timestamp",
    "parse_extraction_reply",
    "related_label",
    "render_extraction_prompt",
    "render_messages",
    "reply_schema",
]

EXTRACTION_PROMPT = "extraction_v1"
"""Template of the extraction prompt (``prompts/extraction_v1.txt``)."""
RELATED_MEMORY_COUNT = 7
"""Existing memories shown to one extraction pass (docs/memory-pipeline.md#what-a-pass-does)."""
MAX_MEMORIES_PER_PASS = 100
"""Memories kept from one reply; the rest are dropped with a warning."""
MAX_MEMORY_CHARS = 2000
"""Longest memory text kept (characters); longer texts are cut."""

_SURROGATES = re.compile(r"[\ud800-\udfff\x00]")
"""Lone surrogates, and NUL (PostgreSQL cannot store it): dropped from model text."""
_LABEL = re.compile(r"^M(\d{1,3})$")
_TYPE_ALIASES = {
    "memories": "memory",
    "event": "memory",
    "facts": "fact",
    "guidelines": "guideline",
    "instruction": "guideline",
    "preferences": "preference",
}


@dataclass(frozen=True)
class PromptMessage:
    """A message as shown to the LLM: its content may be shortened (docs/memory-pipeline.md#what-a-pass-does).

    Attributes:
        id: The stored message's id.
        role: Its role.
        timestamp: Its event time (ISO-8601) or None.
        content: The prompt-time text (never written back to the store).
    """

    id: str
    role: str
    timestamp: str | None
    content: str


@dataclass(frozen=True)
class ExtractedMemory:
    """One memory returned by the model, validated.

    Attributes:
        text: Non-blank text, at most ``MAX_MEMORY_CHARS`` characters.
        record_type: ``memory``, ``guideline``, ``fact`` or ``preference``.
        timestamp: Event time as normalized ISO-8601 (UTC), or None.
        supersedes: Labels (``"M1"``..) of the related memories it replaces.
    """

    text: str
    record_type: str
    timestamp: str | None
    supersedes: tuple[str, ...]


def related_label(position: int) -> str:
    """The label of the related memory at ``position`` (0-based) in the prompt."""
    return f"M{position + 1}"


def extraction_schema() -> dict[str, Any]:
    """JSON schema of the extraction reply, passed as ``response_json_schema``.

    Bounded lengths and item counts keep small local models from looping (see
    ``shared/models/README.md``).
    """
    return {
        "type": "object",
        "properties": {
            "memories": {
                "type": "array",
                "maxItems": 20,
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "minLength": 1, "maxLength": 300},
                        "record_type": {"type": "string", "enum": sorted(MEMORY_TYPES)},
                        "timestamp": {"type": ["string", "null"], "maxLength": 40},
                        "supersedes": {
                            "type": "array",
                            "maxItems": RELATED_MEMORY_COUNT,
                            "items": {"type": "string", "maxLength": 4},
                        },
                    },
                    "required": ["text", "record_type", "timestamp", "supersedes"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["memories"],
        "additionalProperties": False,
    }


def reply_schema() -> dict[str, Any]:
    """The schema a reply must fit to be used (``jsonschema``): the prompt's schema
    (``extraction_schema``) without its generation-time bounds.

    Differences, all deliberate: length and count bounds are dropped (they keep small
    models from looping; long texts are cut to ``MAX_MEMORY_CHARS`` and long lists to
    ``MAX_MEMORIES_PER_PASS`` instead); ``timestamp`` and ``supersedes`` may be
    omitted (None and ``[]``); unknown extra keys are ignored. Everything else is
    required as asked: an object with a ``memories`` array whose items are objects
    with a non-blank string ``text`` and a ``record_type`` among the memory types
    (compared after folding case and plurals, see ``_normalize_reply``).
    """
    return {
        "type": "object",
        "properties": {
            "memories": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "pattern": r"\S"},
                        "record_type": {"type": "string", "enum": sorted(MEMORY_TYPES)},
                        "timestamp": {"type": ["string", "null"]},
                        "supersedes": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["text", "record_type"],
                },
            }
        },
        "required": ["memories"],
    }


def _esc(text: str) -> str:
    return escape(_SURROGATES.sub("", text))


def render_messages(messages: Sequence[PromptMessage], indent: str = "  ") -> list[str]:
    """One XML block per message (timestamp, role, escaped content), in order."""
    blocks = []
    for m in messages:
        blocks.append(
            f"{indent}<message>\n"
            f"{indent}  <timestamp>{_esc(m.timestamp or 'unknown')}</timestamp>\n"
            f"{indent}  <role>{_esc(m.role)}</role>\n"
            f"{indent}  <content>{_esc(m.content)}</content>\n"
            f"{indent}</message>\n"
        )
    return blocks


def _related_block(position: int, record: Record) -> str:
    when = f" timestamp={quoteattr(record.timestamp)}" if record.timestamp else ""
    return (
        f"    <memory label={quoteattr(related_label(position))} "
        f"type={quoteattr(record.record_type)}{when}>{_esc(record.content or '')}</memory>\n"
    )


def render_extraction_prompt(
    new: Sequence[PromptMessage],
    *,
    earlier: Sequence[PromptMessage] = (),
    related: Sequence[Record] = (),
    summary: RunningSummary | None = None,
    token_limit: int = 0,
) -> tuple[str, int] | None:
    """Assemble the extraction prompt (docs/memory-pipeline.md#what-a-pass-does).

    When the prompt would exceed ``token_limit`` estimated tokens (``<= 0``: no
    limit), context is dropped, oldest first: earlier messages from the oldest, then
    related memories from the least related, then the running summary.

    Args:
        new: The messages to extract from, in order (non-empty).
        earlier: Older messages shown as context, in order.
        related: Existing memories, most related first; labelled ``M1``.. in order.
        summary: The thread's running summary, if any.
        token_limit: Bound on the prompt's estimated tokens.

    Returns:
        ``(prompt, shown)`` with the number of related memories kept (labels stay
        aligned with ``related``), or None when even the new messages alone do not fit.
    """
    template = load_prompt(EXTRACTION_PROMPT)
    new_text = "".join(render_messages(new, "    "))
    earlier_blocks = render_messages(earlier, "    ")
    related_blocks = [_related_block(i, r) for i, r in enumerate(related)]
    summary_text = ""
    if summary is not None:
        topics = ", ".join(summary.topics)
        summary_text = f"<summary>\n{_esc(summary.summary)}\n" + (
            f"Topics: {_esc(topics)}\n</summary>\n" if topics else "</summary>\n"
        )

    def render(n_earlier: int, n_related: int, with_summary: bool) -> str:
        kept_earlier = earlier_blocks[len(earlier_blocks) - n_earlier :] if n_earlier else []
        memories = (
            "<existing_memories>\n" + "".join(related_blocks[:n_related]) + "</existing_memories>\n"
            if n_related
            else ""
        )
        earlier_text = (
            "<earlier_messages>\n" + "".join(kept_earlier) + "</earlier_messages>\n"
            if kept_earlier
            else ""
        )
        return template.render(
            summary=summary_text if with_summary else "",
            existing_memories=memories,
            earlier_messages=earlier_text,
            new_messages=new_text,
        )

    n_earlier, n_related, with_summary = len(earlier_blocks), len(related_blocks), True
    if token_limit <= 0:
        return render(n_earlier, n_related, with_summary), n_related
    # Sizes are additive in characters, so drop parts by arithmetic, render once.
    size = len(render(n_earlier, n_related, with_summary))
    wrapper = len("<earlier_messages>\n</earlier_messages>\n")
    while tokens_for_chars(size) > token_limit and n_earlier:
        size -= len(earlier_blocks[len(earlier_blocks) - n_earlier])
        n_earlier -= 1
        if not n_earlier:
            size -= wrapper
    wrapper = len("<existing_memories>\n</existing_memories>\n")
    while tokens_for_chars(size) > token_limit and n_related:
        n_related -= 1
        size -= len(related_blocks[n_related])
        if not n_related:
            size -= wrapper
    if tokens_for_chars(size) > token_limit and with_summary:
        with_summary = False
        size -= len(summary_text)
    prompt = render(n_earlier, n_related, with_summary)
    if tokens_for_chars(len(prompt)) > token_limit:
        return None
    return prompt, n_related


def _clean(text: str) -> str:
    return _SURROGATES.sub("", text).strip()


def _normalize_reply(value: Any) -> Any:
    """Fold the case, spaces and plural of each item's ``record_type`` string
    (``"Preferences"`` -> ``preference``) before the reply is validated; nothing
    else is changed."""
    if not isinstance(value, dict) or not isinstance(value.get("memories"), list):
        return value
    items = []
    for item in value["memories"]:
        if isinstance(item, dict) and isinstance(item.get("record_type"), str):
            name = item["record_type"].strip().lower()
            item = {**item, "record_type": _TYPE_ALIASES.get(name, name)}
        items.append(item)
    return {**value, "memories": items}


def normalize_timestamp(value: object) -> str | None:
    """ISO-8601 UTC form of an event time, or None when it is not a parsable date."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return iso(parse_iso_timestamp(_clean(value)))
    except (ValueError, OverflowError):
        return None


def _labels(values: list[str]) -> tuple[str, ...]:
    """The related-memory labels (``M1``..) among ``values``, normalized, in order,
    once each; other strings are not labels and are left out."""
    labels = []
    for item in values:
        label = item.strip().upper()
        if _LABEL.match(label) and label not in labels:
            labels.append(label)
    return tuple(labels)


def parse_extraction_reply(text: str) -> list[ExtractedMemory]:
    """Turn the model's reply into memories (docs/memory-pipeline.md#what-a-pass-does).

    Repairs what ``parse_json_reply`` can (code fences, prose around the JSON, bad
    escapes, lone surrogates), then validates against ``reply_schema``: when the
    reply holds several JSON values (an example before the answer), the last one
    that fits is used. One wrongly shaped item (no ``text``, a non-string text, an
    unknown ``record_type``, ...) makes the whole reply unusable, so the pass is
    retried rather than counted as "0 memories". Within a fitting reply, an
    unparsable ``timestamp`` becomes None, ``supersedes`` strings that are not
    labels are ignored, duplicate texts are dropped, and more than
    ``MAX_MEMORIES_PER_PASS`` memories are cut to that many with a
    ``MemoryPipelineWarning``.

    Raises:
        UnusableReplyError: when no JSON value of the reply fits the schema.
    """
    data = parse_json_reply(text, schema=reply_schema(), normalize=_normalize_reply)
    memories: list[ExtractedMemory] = []
    seen: set[str] = set()
    for item in data["memories"]:
        body = _clean(item["text"])[:MAX_MEMORY_CHARS].strip()
        if not body or body.casefold() in seen:
            continue
        seen.add(body.casefold())
        memories.append(
            ExtractedMemory(
                text=body,
                record_type=item["record_type"],
                timestamp=normalize_timestamp(item.get("timestamp")),
                supersedes=_labels(item.get("supersedes") or []),
            )
        )
    if len(memories) > MAX_MEMORIES_PER_PASS:
        pipeline_warning(
            f"the model returned {len(memories)} memories in one pass; keeping the first "
            f"{MAX_MEMORIES_PER_PASS}"
        )
        memories = memories[:MAX_MEMORIES_PER_PASS]
    return memories
