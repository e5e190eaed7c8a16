"""The extraction prompt and its reply (docs/memory-pipeline.md#what-a-pass-does).

Pure functions, no I/O: ``render_extraction_prompt`` assembles the prompt within a
token budget, showing the related memories with their ids; ``parse_extraction_reply``
turns the model's text into validated ``ExtractedMemory`` items, each with its update
decision (docs/memory-pipeline.md#update-decisions). ``memory/decisions.py`` checks
the decisions against what the prompt showed; the pass that calls the LLM and stores
the result is in ``memory/pipeline.py``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import jsonschema
import jsonschema.validators

from oam_core.apis.records import MEMORY_TYPES, Record
from oam_core.apis.timestamps import normalize_timestamp as stored_form
from oam_core.memory.diagnostics import pipeline_warning
from oam_core.memory.jsonrepair import UnusableReplyError, parse_json_reply
from oam_core.memory.placeholders import is_placeholder, placeholder_pattern, placeholders_of
from oam_core.memory.summary import RunningSummary
from oam_core.memory.templates import load_prompt
from oam_core.memory.tokens import tokens_for_chars
from oam_core.store.ttl import parse_iso_timestamp

__all__ = [
    "ADD",
    "DECISIONS",
    "DELETE",
    "EXTRACTION_PROMPT",
    "MAX_MEMORIES_PER_PASS",
    "MAX_TEXT_CHARS_ASKED",
    "NOOP",
    "RELATED_MEMORY_COUNT",
    "UPDATE",
    "ExtractedMemory",
    "PromptMessage",
    "extraction_schema",
    "item_schema",
    "items_asked",
    "normalize_timestamp",
    "parse_extraction_reply",
    "render_extraction_prompt",
    "render_messages",
    "reply_schema",
]

EXTRACTION_PROMPT = "extraction_v2"
"""Template of the extraction prompt (``prompts/extraction_v2.txt``); recorded in each
extracted memory's provenance (``$agent_memory.extraction_prompt``)."""
RELATED_MEMORY_COUNT = 7
"""Existing memories shown to one extraction pass (docs/memory-pipeline.md#what-a-pass-does)."""
MAX_MEMORIES_PER_PASS = 100
"""Items kept from one reply; the rest are dropped with a warning."""
MAX_MEMORY_CHARS = 2000
"""Longest memory text kept (characters); longer texts are cut."""
MAX_ITEMS_ASKED = 20
"""``maxItems`` of the reply schema: the most items one reply may hold."""
ITEMS_ASKED_PER_MESSAGE = 3
"""Items the reply schema allows per new message (up to ``MAX_ITEMS_ASKED``)."""
MAX_TEXT_CHARS_ASKED = 300
"""``maxLength`` of an item's ``text`` in the reply schema (characters)."""
MAX_REASON_CHARS = 500
"""Longest ``reason`` kept (characters); longer ones are cut."""

ADD = "ADD"
"""Store ``text`` as a new memory."""
UPDATE = "UPDATE"
"""Store ``text`` and supersede ``target_id`` with it."""
DELETE = "DELETE"
"""Invalidate ``target_id``; store nothing."""
NOOP = "NOOP"
"""Change nothing."""
DECISIONS = (ADD, UPDATE, DELETE, NOOP)
"""The decisions an extraction reply item can carry (docs/memory-pipeline.md#update-decisions)."""

_SURROGATES = re.compile(r"[\ud800-\udfff\x00]")
"""Lone surrogates, and NUL (PostgreSQL cannot store it): dropped from model text."""
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
    """One item of the model's reply, validated (docs/memory-pipeline.md#update-decisions).

    Attributes:
        text: Non-blank text, at most ``MAX_MEMORY_CHARS`` characters, for ``ADD``
            and ``UPDATE``; for ``DELETE`` and ``NOOP`` whatever text the item had
            (cleaned; ``""`` for none), which nothing stores.
        record_type: ``memory``, ``guideline``, ``fact`` or ``preference``.
        timestamp: Event time as normalized ISO-8601 (UTC), or None.
        decision: ``ADD``, ``UPDATE``, ``DELETE`` or ``NOOP`` as the model said
            (``ADD`` when the item has none); ``memory/decisions.py`` checks it
            against the memories the prompt showed.
        target_id: The existing memory an ``UPDATE`` or ``DELETE`` is about, as
            the model wrote it (stripped), or None.
        reason: The model's reason, at most ``MAX_REASON_CHARS`` characters, or None.
        valid_from: From when the memory holds, normalized ISO-8601 (UTC), or None.
    """

    text: str
    record_type: str
    timestamp: str | None
    decision: str = ADD
    target_id: str | None = None
    reason: str | None = None
    valid_from: str | None = None


def extraction_schema(target_ids: Sequence[str] = (), new_messages: int = 0) -> dict[str, Any]:
    """JSON schema of the extraction reply, passed as ``response_json_schema``.

    ``reason`` comes first so that the model writes it before it decides. Bounded
    lengths and item counts keep small local models from looping until the token
    limit (they fill a schema's arrays up to ``maxItems``; see
    ``shared/models/README.md``): at most ``ITEMS_ASKED_PER_MESSAGE`` items per new
    message and ``MAX_ITEMS_ASKED`` in all. ``target_id`` may only be one of
    ``target_ids`` (the ids of the memories the prompt shows) or null. An item is
    one of two shapes (``anyOf``), with the same keys in the same order: ``ADD`` or
    ``UPDATE`` with a non-empty ``text``, or ``DELETE`` or ``NOOP`` whose ``text`` may
    be empty (it stores nothing; the prompt asks text only of the first two).

    Args:
        target_ids: The ids of the related memories shown in the prompt, in order.
        new_messages: How many new messages the prompt holds (``<= 0``: no per-message
            bound, ``MAX_ITEMS_ASKED``).
    """
    max_items = items_asked(new_messages)
    ids = list(dict.fromkeys(target_ids))
    target: dict[str, Any] = (
        {"type": ["string", "null"], "enum": [*ids, None]} if ids else {"type": "null"}
    )
    stores = _item_shape([ADD, UPDATE], target, {"minLength": 1})
    changes = _item_shape([DELETE, NOOP], target, {})
    return {
        "type": "object",
        "properties": {
            "memories": {
                "type": "array",
                "maxItems": max_items,
                "items": {"anyOf": [stores, changes]},
            }
        },
        "required": ["memories"],
        "additionalProperties": False,
    }


def items_asked(new_messages: int) -> int:
    """The ``maxItems`` the reply schema sends for a prompt of ``new_messages`` new
    messages: ``ITEMS_ASKED_PER_MESSAGE`` each, at most ``MAX_ITEMS_ASKED`` (``<= 0``:
    ``MAX_ITEMS_ASKED``)."""
    if new_messages <= 0:
        return MAX_ITEMS_ASKED
    return min(MAX_ITEMS_ASKED, ITEMS_ASKED_PER_MESSAGE * new_messages)


def _item_shape(
    decisions: Sequence[str], target: dict[str, Any], text_bounds: dict[str, int]
) -> dict[str, Any]:
    """One item shape of ``extraction_schema``: ``decisions`` allowed, ``text`` a
    string bounded by ``text_bounds`` and ``MAX_TEXT_CHARS_ASKED`` characters."""
    properties: dict[str, Any] = {
        "reason": {"type": "string", "maxLength": 200},
        "decision": {"type": "string", "enum": list(decisions)},
        "target_id": target,
        "text": {"type": "string", **text_bounds, "maxLength": MAX_TEXT_CHARS_ASKED},
        "record_type": {"type": "string", "enum": sorted(MEMORY_TYPES)},
        "timestamp": {"type": ["string", "null"], "maxLength": 40},
        "valid_from": {"type": ["string", "null"], "maxLength": 40},
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def item_schema() -> dict[str, Any]:
    """The schema one reply item must fit to be used (``jsonschema``); an item that
    does not is dropped with a warning (``parse_extraction_reply``).

    Looser than the prompt's schema (``extraction_schema``), deliberately: length
    bounds are dropped (long texts are cut to ``MAX_MEMORY_CHARS``); only
    ``record_type`` (a memory type, compared after folding case and plurals) and,
    unless the decision is ``DELETE`` or ``NOOP``, ``text`` (a non-blank string) are
    required: a ``DELETE`` or ``NOOP`` stores nothing, so its ``text`` may be
    missing, blank or anything else (ignored). ``decision`` may be missing or null
    (``ADD``); ``target_id``, ``timestamp`` and ``valid_from`` may be missing;
    ``reason`` may be anything (only a string is kept); unknown extra keys are ignored.
    A ``text`` that is only a placeholder (``"..."``, as in the prompt's answer form;
    ``memory/placeholders.py``) does not fit: it is no memory.
    """
    return {
        "type": "object",
        "properties": {
            "decision": {"enum": [*DECISIONS, None]},
            "target_id": {"type": ["string", "null"]},
            "record_type": {"type": "string", "enum": sorted(MEMORY_TYPES)},
            "timestamp": {"type": ["string", "null"]},
            "valid_from": {"type": ["string", "null"]},
        },
        "required": ["record_type"],
        "if": {"properties": {"decision": {"enum": [DELETE, NOOP]}}, "required": ["decision"]},
        "then": {},
        "else": {
            "properties": {
                "text": {
                    "type": "string",
                    "pattern": r"\S",
                    "not": {"pattern": placeholder_pattern(_placeholders())},
                }
            },
            "required": ["text"],
        },
    }


def _placeholders() -> frozenset[str]:
    """The placeholders of the extraction prompt's answer form (its ``text`` and
    ``reason``), such as ``"..."``."""
    return placeholders_of(EXTRACTION_PROMPT, ("text", "reason"))


def _answer_forms() -> tuple[Any, ...]:
    """The extraction prompt's answer form, never taken as the answer."""
    form = load_prompt(EXTRACTION_PROMPT).answer_form
    return () if form is None else (form,)


def _stores_text(item: dict[str, Any]) -> bool:
    """Whether a valid item's text is its memory (not a ``DELETE`` or ``NOOP``)."""
    return item.get("decision") not in (DELETE, NOOP)


def reply_schema() -> dict[str, Any]:
    """The schema a reply must fit to be used at all (``jsonschema``): an object whose
    ``memories`` array is empty or holds at least one item that fits ``item_schema``.

    A reply none of whose items is usable is unusable as a whole (the pass is
    retried rather than counted as "0 memories"); within a usable reply each item is
    checked on its own (``parse_extraction_reply``).
    """
    return {
        "type": "object",
        "properties": {
            "memories": {
                "type": "array",
                "anyOf": [{"maxItems": 0}, {"contains": item_schema()}],
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


def _related_block(record: Record) -> str:
    when = f" timestamp={quoteattr(record.timestamp)}" if record.timestamp else ""
    return (
        f"    <memory id={quoteattr(_SURROGATES.sub('', record.id))} "
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
        related: Existing memories, most related first; each is shown with its id.
        summary: The thread's running summary, if any.
        token_limit: Bound on the prompt's estimated tokens.

    Returns:
        ``(prompt, shown)`` with the number of related memories kept (the first
        ``shown`` of ``related``), or None when even the new messages alone do not fit.
    """
    template = load_prompt(EXTRACTION_PROMPT)
    new_text = "".join(render_messages(new, "    "))
    earlier_blocks = render_messages(earlier, "    ")
    related_blocks = [_related_block(r) for r in related]
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
    """Fold each item's ``record_type`` (case, spaces, plurals: ``"Preferences"`` ->
    ``preference``) and ``decision`` (case, spaces: ``" update"`` -> ``UPDATE``)
    before the reply is validated; nothing else is changed."""
    if not isinstance(value, dict) or not isinstance(value.get("memories"), list):
        return value
    items = []
    for item in value["memories"]:
        if isinstance(item, dict):
            item = dict(item)
            if isinstance(item.get("record_type"), str):
                name = item["record_type"].strip().lower()
                item["record_type"] = _TYPE_ALIASES.get(name, name)
            if isinstance(item.get("decision"), str):
                item["decision"] = item["decision"].strip().upper()
        items.append(item)
    return {**value, "memories": items}


def normalize_timestamp(value: object) -> str | None:
    """The stored ISO-8601 UTC form of an event time (the store's, ``apis/timestamps``:
    seconds, microseconds only when not zero), or None when it is not a parsable date."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return stored_form(parse_iso_timestamp(_clean(value)))
    except (ValueError, OverflowError):
        return None


def _item_problem(item: Any, max_text_chars: int | None) -> str | None:
    """Why ``item`` (already normalized) cannot be used, or None when it can."""
    if isinstance(item, dict) and _stores_text(item) and isinstance(item.get("text"), str):
        text = _clean(item["text"])
        if text and is_placeholder(text, _placeholders()):
            return f"its text {text[:20]!r} is only a placeholder (as in the prompt's answer form)"
    validator = _validator()
    error = jsonschema.exceptions.best_match(validator.iter_errors(item))
    if error is not None:
        where = "".join(f"[{p!r}]" for p in error.absolute_path)
        return f"{where}: {error.message}" if where else error.message
    if _stores_text(item) and not _clean(item["text"])[:MAX_MEMORY_CHARS].strip():
        return "its text is blank once control characters are removed"
    if _stores_text(item) and max_text_chars is not None:
        length = len(_clean(item["text"]))
        if length > max_text_chars:
            return f"its text has {length} characters, more than the {max_text_chars} its schema allows"
    return None


@functools.cache
def _validator() -> Any:
    schema = item_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _optional_text(value: Any, limit: int) -> str | None:
    if not isinstance(value, str):
        return None
    text = _clean(value)[:limit].strip()
    return None if is_placeholder(text, _placeholders()) else text


def parse_extraction_reply(
    text: str, *, max_items: int = MAX_MEMORIES_PER_PASS, max_text_chars: int | None = None
) -> list[ExtractedMemory]:
    """Turn the model's reply into validated items (docs/memory-pipeline.md#update-decisions).

    Repairs what ``parse_json_reply`` can (code fences, prose around the JSON, bad
    escapes, lone surrogates), then picks the reply's JSON value that fits
    ``reply_schema``: when the reply holds several (an example before the answer),
    the last one that fits is used, never one equal to the prompt's answer form
    (docs/memory-pipeline.md#placeholders-and-echoed-forms). Each item of it is then checked against
    ``item_schema``: an item that does not fit (not an object, no, blank or
    placeholder (``"..."``) ``text`` for an ``ADD`` or ``UPDATE``, an unknown ``record_type`` or
    ``decision``, a ``timestamp`` that is not
    a string, ...) is dropped with one ``MemoryPipelineWarning`` naming it, and the
    other items are kept. Within a kept item an unparsable ``timestamp`` or
    ``valid_from`` becomes None, a missing or null ``decision`` is ``ADD`` (replies of
    the older shape without decisions still work), a blank ``target_id`` is None.
    The bounds of the schema sent are enforced: items beyond ``max_items`` are dropped
    (the first ``max_items`` kept) with one warning, and an ``ADD`` or ``UPDATE`` item
    whose cleaned ``text`` is longer than ``max_text_chars`` is dropped with one
    warning (a runaway reply, not a memory); without ``max_text_chars`` longer texts
    are cut to ``MAX_MEMORY_CHARS``. Whether a decision's target was shown, and repeated texts, are checked later
    (``memory/decisions.py``), against the memories the prompt showed.

    Args:
        text: The model's reply.
        max_items: The ``maxItems`` of the schema sent (``items_asked``); at least 1.
        max_text_chars: The ``maxLength`` of ``text`` in the schema sent
            (``MAX_TEXT_CHARS_ASKED``), or None for no such bound.

    Raises:
        UnusableReplyError: when no JSON value of the reply fits ``reply_schema``
            (no usable JSON, or items none of which is usable), or when every item
            is dropped (over the bounds above, or blank once cleaned).
    """
    data = parse_json_reply(
        text, schema=reply_schema(), normalize=_normalize_reply, forms=_answer_forms()
    )
    items = data["memories"]
    if len(items) > max_items:
        pipeline_warning(
            f"the model returned {len(items)} memories in one pass, more than the "
            f"{max_items} its schema allows; keeping the first {max_items}"
        )
        items = items[:max_items]
    memories: list[ExtractedMemory] = []
    for index, item in enumerate(items):
        problem = _item_problem(item, max_text_chars)
        if problem is not None:
            pipeline_warning(f"extraction reply item {index} dropped: {problem}")
            continue
        memories.append(
            ExtractedMemory(
                text=_optional_text(item.get("text"), MAX_MEMORY_CHARS) or "",
                record_type=item["record_type"],
                timestamp=normalize_timestamp(item.get("timestamp")),
                decision=item.get("decision") or ADD,
                target_id=_optional_text(item.get("target_id"), MAX_MEMORY_CHARS),
                reason=_optional_text(item.get("reason"), MAX_REASON_CHARS),
                valid_from=normalize_timestamp(item.get("valid_from")),
            )
        )
    if items and not memories:
        raise UnusableReplyError(
            "unusable model reply: none of its items is usable (warned above)", text
        )
    return memories
