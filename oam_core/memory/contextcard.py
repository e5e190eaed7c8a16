"""``OracleContextCard``: the XML-like block of thread context (docs/context-card.md#format; Oracle's SDK type).

Rendering is pure: the card is built from plain values and renders the exact shape of
docs/context-card.md#format (2-space indentation, sections ``topics``, ``summary``,
``relevant_information``, ``recent_messages`` in that order, empty sections left out,
an empty card rendered as ``""``). Retrieval lives in ``memory.thread``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias
from xml.sax.saxutils import escape

from oam_core.apis.contextcard import ContextCard
from oam_core.apis.records import MEMORY_TYPES, MESSAGE, MessageRecord, Record
from oam_core.apis.thread import Message, participant_name
from oam_core.checks import check_int, strategy_of
from oam_core.errors import InvalidArgumentError
from oam_core.memory.provenancefusion import fused_search_steps
from oam_core.memory.tokens import (
    TRUNCATION_MARKER,
    budget_chars,
    cut_head_to_fit,
    cut_tail_to_fit,
)
from oam_core.memory.toolcalls import TOOL_RESULT_ROLES, shown_content
from oam_core.steps import Steps
from oam_core.store.options import SearchStrategy

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

__all__ = ["DEFAULT_MESSAGE_FORMAT", "OracleContextCard", "RelevantResult"]

RelevantResult: TypeAlias = Record | tuple[Record, float]
"""A retrieved record, alone or as the ``(record, distance)`` pair ``search`` returns."""

DEFAULT_MESSAGE_FORMAT = (
    "<message>\n"
    "  <timestamp>{timestamp}</timestamp>\n"
    "  <role>{role}</role>\n"
    "  <content>{content}</content>\n"
    "</message>"
)
"""Template of one recent message. Placeholders (all XML-escaped before substitution):
``{id}``, ``{timestamp}`` (``""`` when unknown), ``{role}``, ``{content}``. Each
template line is indented to its place in the card; substituted text is not."""

ITEM_TRUNCATION_MARKER = " …(truncated)"
"""Suffix of a memory or message text whose end was cut to fit the card's budget (the
summary keeps its newest part and starts with ``"(truncated)\n"`` instead)."""

_TAG = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_FALLBACK_TAG = "record"
_SECTION_INDENT = "  "
_ITEM_INDENT = "    "


def _esc(text: str | None) -> str:
    return "" if text is None else escape(text)


def _indent_block(text: str, prefix: str) -> list[str]:
    """Indent every non-empty line of ``text`` by ``prefix``."""
    return [prefix + line if line else line for line in text.split("\n")]


def _normalize_result(value: object, position: int) -> tuple[Record, float | None]:
    if isinstance(value, Record):
        return value, None
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], Record)
        and isinstance(value[1], (int, float))
        and not isinstance(value[1], bool)
    ):
        return value[0], float(value[1])
    raise InvalidArgumentError(
        f"relevant_results[{position}] must be a Record or a (Record, distance) pair, got {value!r}"
    )


def _render_summary(text: str) -> list[str]:
    return _indent_block(_esc(text.strip("\n")), _ITEM_INDENT)


def _render_message(template: str, message: Message, prefix: str, content: str) -> list[str]:
    fields = {
        "id": _esc(message.id),
        "timestamp": _esc(message.timestamp),
        "role": _esc(message.role),
        "content": _esc(content),
    }
    indented = "\n".join(_indent_block(template, prefix))
    return [indented.format(**fields)]


def _render_result(record: Record, content: str) -> list[str]:
    tag = record.record_type if _TAG.fullmatch(record.record_type or "") else _FALLBACK_TAG
    inner = _ITEM_INDENT + "  "
    lines = [
        f"{_ITEM_INDENT}<{tag}>",
        f"{inner}<record_id>{_esc(record.id)}</record_id>",
        f"{inner}<timestamp>{_esc(record.timestamp or record.created_at)}</timestamp>",
    ]
    if isinstance(record, MessageRecord):
        lines.append(f"{inner}<role>{_esc(record.role)}</role>")
        name = participant_name(record.metadata)
        if name is not None:  # docs/context-card.md#speaker-names
            lines.append(f"{inner}<name>{_esc(name)}</name>")
    lines.append(f"{inner}<content>{_esc(content)}</content>")
    lines.append(f"{_ITEM_INDENT}</{tag}>")
    return lines


@dataclass(frozen=True)
class _Item:
    """One shortenable text of the card: the summary, a result or a recent message."""

    key: tuple[str, int]
    text: str
    piece: Callable[[str], list[str]]
    keep_tail: bool = False

    def cost(self, text: str) -> int:
        """Characters ``text`` adds to the card compared with an empty text."""
        return len("\n".join(self.piece(text))) - len("\n".join(self.piece("")))

    def cut(self, allowance: int) -> str:
        """The text shortened (with a marker) to add at most ``allowance`` characters."""
        base = len("\n".join(self.piece("")))

        def fits(candidate: str) -> bool:
            return len("\n".join(self.piece(candidate))) - base <= allowance

        if self.keep_tail:
            return cut_tail_to_fit(self.text, allowance, fits, marker=TRUNCATION_MARKER)
        return cut_head_to_fit(self.text, allowance, fits, marker=ITEM_TRUNCATION_MARKER)


def _fair_allowances(needs: dict[tuple[str, int], int], room: int) -> dict[tuple[str, int], int]:
    """Max-min fair split of ``room`` characters: small texts keep their full size,
    the others each get an equal share of what is left."""
    allowances: dict[tuple[str, int], int] = {}
    ordered = sorted(needs.items(), key=lambda kv: kv[1])
    left = room
    for position, (key, need) in enumerate(ordered):
        share = left // (len(ordered) - position)
        allowances[key] = min(need, share)
        left -= allowances[key]
    return allowances


class OracleContextCard(ContextCard):
    """Context card returned by ``OracleThread.get_context_card`` (docs/context-card.md#format; Oracle's SDK type).

    Rendered shape (2-space indentation; every text XML-escaped; a section is left out
    when it has nothing to show; a card with nothing at all renders as ``""``)::

        <context_card>
          <topics>
            <topic>travel</topic>
          </topics>
          <summary>
            summary text, each line indented by four spaces
          </summary>
          <relevant_information>
            <memory>
              <record_id>id</record_id>
              <timestamp>event time, else store time, else empty</timestamp>
              <content>text</content>
            </memory>
          </relevant_information>
          <recent_messages>
            <message>
              <timestamp>...</timestamp>
              <role>user</role>
              <content>text</content>
            </message>
          </recent_messages>
        </context_card>

    Each relevant result is rendered under its record type as the tag (``<memory>``,
    ``<fact>``, ``<preference>``, ``<guideline>``, ``<message>``, ``<user_profile>``,
    ...); message results also carry ``<role>``.

    Example (as in Oracle's SDK documentation)::

        >>> card = OracleContextCard(summary="ctx")
        >>> "<summary>" in card.content and "ctx" in card.content
        True
        >>> OracleContextCard(summary="").formatted_content
        ''

    Args:
        summary: Summary text embedded in the card; blank means no summary section.
        topics: Retrieval topics of the thread; blank entries are skipped, the rest are
            rendered stripped, in order.
        relevant_results: Retrieved records, each a ``Record`` or a
            ``(Record, distance)`` pair as returned by ``search``, in display order.
        recent_messages: Recent raw messages rendered verbatim, oldest first.
        message_format: Template of one recent message (see ``DEFAULT_MESSAGE_FORMAT``).
        token_limit: Bound of the whole rendered card in estimated tokens (docs/context-card.md#what-goes-in:
            ``max(1, round(len / 3.5))``); ``<= 0`` = no bound. When the card is over
            it, the texts (summary, each result's content, each recent message's
            content) share the characters left after the markup fairly: a text
            shorter than its equal share stays whole, longer ones are cut to the
            share and marked (the summary keeps its newest part after
            ``"(truncated)\n"``; other texts keep their beginning followed by
            ``" …(truncated)"``). When the shares cannot hold a marked text, whole
            items are dropped, lowest priority first: results from the lowest
            ranked up, then recent messages from the oldest (with the tool results
            that would then open the window), then the summary, then the topics. A
            card with nothing left is ``""``. A message's tool calls
            (``metadata["$message"]["tool_calls"]``) are shown after its content, one
            ``tool call: name(arguments)`` line each (docs/context-card.md#tool-calls).

    Raises:
        ValueError: if an argument has the wrong type, or ``message_format`` uses a
            placeholder other than ``{id}``, ``{timestamp}``, ``{role}``, ``{content}``.

    Example::

        >>> card = OracleContextCard(summary="x" * 1000, token_limit=40)
        >>> len(card.content) <= 140 and "(truncated)" in card.content
        True
    """

    def __init__(
        self,
        summary: str = "",
        topics: Sequence[str] | None = None,
        relevant_results: Sequence[RelevantResult] | None = None,
        recent_messages: Sequence[Message] | None = None,
        message_format: str = DEFAULT_MESSAGE_FORMAT,
        token_limit: int = 0,
    ) -> None:
        if not isinstance(summary, str):
            raise InvalidArgumentError(f"summary must be a str, got {type(summary).__name__}")
        if topics is None:
            topics = ()
        if isinstance(topics, str) or not all(isinstance(t, str) for t in topics):
            raise InvalidArgumentError(f"topics must be a sequence of str or None, got {topics!r}")
        results = [_normalize_result(value, i) for i, value in enumerate(relevant_results or ())]
        messages = list(recent_messages or ())
        for i, message in enumerate(messages):
            if not isinstance(message, Message):
                raise InvalidArgumentError(
                    f"recent_messages[{i}] must be a Message, got {message!r}"
                )
        if not isinstance(message_format, str):
            raise InvalidArgumentError(f"message_format must be a str, got {message_format!r}")
        try:
            message_format.format(id="", timestamp="", role="", content="")
        except (KeyError, IndexError, ValueError) as exc:
            raise InvalidArgumentError(
                "message_format may only use the placeholders {id}, {timestamp}, {role} "
                f"and {{content}}, got {message_format!r}"
            ) from exc
        check_int(token_limit, "token_limit")
        self._summary = summary
        self._token_limit = token_limit
        self._topics = tuple(t.strip() for t in topics if t.strip())
        self._results = tuple(results)
        self._messages = tuple(messages)
        self._message_format = message_format
        self._content = self._render()

    @property
    def summary(self) -> str:
        """The summary text given to the card."""
        return self._summary

    @property
    def topics(self) -> list[str]:
        """The non-blank topics, stripped, in order."""
        return list(self._topics)

    @property
    def relevant_results(self) -> list[tuple[Record, float | None]]:
        """The retrieved records with their distance (``None`` when none was given)."""
        return list(self._results)

    @property
    def recent_messages(self) -> list[Message]:
        """The recent raw messages, oldest first."""
        return list(self._messages)

    @property
    def content(self) -> str:
        """The rendered card text (XML-like, for prompt assembly); ``""`` when empty."""
        return self._content

    @property
    def formatted_content(self) -> str:
        """The rendered card text used in prompt-building flows (same as ``content``).

        Example (as in Oracle's SDK documentation)::

            >>> card = OracleContextCard(summary="ctx", topics=["travel"])
            >>> "<topics>" in card.formatted_content
            True
        """
        return self._content

    def _items(self) -> list[_Item]:
        """The shortenable texts, highest priority first (see ``token_limit``)."""
        template = self._message_format
        items: list[_Item] = []
        if self._summary.strip():
            items.append(
                _Item(("summary", 0), self._summary.strip("\n"), _render_summary, keep_tail=True)
            )
        for i in reversed(range(len(self._messages))):
            message = self._messages[i]
            items.append(
                _Item(
                    ("message", i),
                    shown_content(message.content, message.metadata),
                    functools.partial(_render_message, template, message, _ITEM_INDENT),
                )
            )
        for i, (record, _distance) in enumerate(self._results):
            items.append(
                _Item(
                    ("result", i),
                    shown_content(record.content, record.metadata)
                    if isinstance(record, MessageRecord)
                    else record.content or "",
                    functools.partial(_render_result, record),
                )
            )
        return items

    def _render(self) -> str:
        items = self._items()
        full = {item.key: item.text for item in items}
        content = self._assemble(self._topics, full)
        limit = budget_chars(self._token_limit)
        if limit < 0 or len(content) <= limit:
            return content
        needs = {item.key: item.cost(item.text) for item in items}
        active = items
        while active:
            fitted = self._fit(active, needs, limit)
            if fitted is not None:
                return fitted
            active = self._drop_lowest(active)
        for topics in (self._topics, ()):
            content = self._assemble(topics, {})
            if len(content) <= limit:
                return content
        return ""

    def _drop_lowest(self, active: list[_Item]) -> list[_Item]:
        """``active`` without its lowest-priority item; when that is the oldest recent
        message, also without the tool results it leaves at the window's start
        (docs/context-card.md#tool-calls)."""
        dropped, kept = active[-1], active[:-1]
        if dropped.key[0] != "message":
            return kept
        while kept and kept[-1].key[0] == "message":
            if self._messages[kept[-1].key[1]].role not in TOOL_RESULT_ROLES:
                break
            kept = kept[:-1]
        return kept

    def _fit(
        self, active: list[_Item], needs: dict[tuple[str, int], int], limit: int
    ) -> str | None:
        """The card with the ``active`` items' texts fairly cut to fit ``limit``
        characters, or None when some text cannot keep even a marked fragment."""
        room = limit - len(self._assemble(self._topics, {item.key: "" for item in active}))
        if room < 0:
            return None
        allowances = _fair_allowances({item.key: needs[item.key] for item in active}, room)
        texts: dict[tuple[str, int], str] = {}
        for item in active:
            allowance = allowances[item.key]
            text = item.text if allowance >= needs[item.key] else item.cut(allowance)
            if item.text and not text:
                return None
            texts[item.key] = text
        content = self._assemble(self._topics, texts)
        return content if len(content) <= limit else None

    def _assemble(self, topics: Sequence[str], texts: dict[tuple[str, int], str]) -> str:
        """Render the items present in ``texts`` (by key) with those texts."""
        lines: list[str] = []
        if topics:
            lines.append(f"{_SECTION_INDENT}<topics>")
            lines.extend(f"{_ITEM_INDENT}<topic>{_esc(t)}</topic>" for t in topics)
            lines.append(f"{_SECTION_INDENT}</topics>")
        if ("summary", 0) in texts:
            lines.append(f"{_SECTION_INDENT}<summary>")
            lines.extend(_render_summary(texts["summary", 0]))
            lines.append(f"{_SECTION_INDENT}</summary>")
        results = [i for i in range(len(self._results)) if ("result", i) in texts]
        if results:
            lines.append(f"{_SECTION_INDENT}<relevant_information>")
            for i in results:
                lines.extend(_render_result(self._results[i][0], texts["result", i]))
            lines.append(f"{_SECTION_INDENT}</relevant_information>")
        messages = [i for i in range(len(self._messages)) if ("message", i) in texts]
        if messages:
            lines.append(f"{_SECTION_INDENT}<recent_messages>")
            for i in messages:
                lines.extend(
                    _render_message(
                        self._message_format, self._messages[i], _ITEM_INDENT, texts["message", i]
                    )
                )
            lines.append(f"{_SECTION_INDENT}</recent_messages>")
        if not lines:
            return ""
        return "\n".join(["<context_card>", *lines, "</context_card>"])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OracleContextCard):
            return NotImplemented
        return self._content == other.content

    def __hash__(self) -> int:
        return hash(self._content)

    def __repr__(self) -> str:
        return (
            f"OracleContextCard(summary={self._summary!r}, topics={list(self._topics)!r}, "
            f"relevant_results={len(self._results)}, "
            f"recent_messages={len(self._messages)})"
        )


def can_rank_text(store: OracleMemoryStore) -> bool:
    """Whether ``store.search`` can rank a text query: VECTOR and HYBRID need an
    embedder, KEYWORD does not (docs/context-card.md#without-an-embedder)."""
    return store.embedder is not None or strategy_of(store) is SearchStrategy.KEYWORD


def relevant_steps(
    store: OracleMemoryStore,
    query: str,
    k: int,
    shown: set[str],
    scope: tuple[str, str | None, str | None],
) -> Steps[list[tuple[Record, float]]]:
    """The card's relevant information (docs/context-card.md#what-goes-in): the best
    ``k`` of the current memories of the thread's user and agent (from any of their
    threads; the store leaves out versions that no longer hold, before its top-k
    cut, so k current memories come back when k exist: docs/versions.md) and this
    thread's messages not in ``shown``, fused by rank with a memory also counting
    for its source messages (``memory.provenancefusion``,
    docs/retrieval.md#memories-and-messages-together).

    Args:
        store: The thread's store.
        query: The search text (summary and topics, or recent messages).
        k: Most results, >= 1.
        shown: Ids of messages the card already shows.
        scope: ``(thread_id, user_id, agent_id)`` of the thread.

    Returns:
        Up to ``k`` ``(record, distance)`` pairs, best first, the distance a fused
        one (``DistanceKind.FUSED``) when both kinds were found.
    """
    thread_id, user_id, agent_id = scope
    actor = {
        "user_id": user_id,
        "agent_id": agent_id,
        "exact_user_match": True,
        "exact_agent_match": True,
    }
    results: list[tuple[Record, float]] = list(
        (
            yield from fused_search_steps(
                store.search,
                query,
                k,
                memory_search={**actor, "record_types": set(MEMORY_TYPES)},
                message_search={
                    **actor,
                    "thread_id": thread_id,
                    "exact_thread_match": True,
                    "record_types": {MESSAGE},
                },
                drop=shown,
            )
        )
    )
    return results
