"""``OracleContextCard``: the XML-like block of thread context (seed 000; SPEC §7).

Rendering is pure: the card is built from plain values and renders the exact shape of
SPEC §7 (2-space indentation, sections ``topics``, ``summary``,
``relevant_information``, ``recent_messages`` in that order, empty sections left out,
an empty card rendered as ``""``). Retrieval lives in ``memory.thread``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeAlias
from xml.sax.saxutils import escape

from oam_core.apis.contextcard import ContextCard
from oam_core.apis.records import MessageRecord, Record
from oam_core.apis.thread import Message

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
    raise ValueError(
        f"relevant_results[{position}] must be a Record or a (Record, distance) pair, got {value!r}"
    )


def _render_message(template: str, message: Message, prefix: str) -> list[str]:
    fields = {
        "id": _esc(message.id),
        "timestamp": _esc(message.timestamp),
        "role": _esc(message.role),
        "content": _esc(message.content),
    }
    indented = "\n".join(_indent_block(template, prefix))
    return [indented.format(**fields)]


def _render_result(record: Record) -> list[str]:
    tag = record.record_type if _TAG.fullmatch(record.record_type or "") else _FALLBACK_TAG
    inner = _ITEM_INDENT + "  "
    lines = [
        f"{_ITEM_INDENT}<{tag}>",
        f"{inner}<record_id>{_esc(record.id)}</record_id>",
        f"{inner}<timestamp>{_esc(record.timestamp or record.created_at)}</timestamp>",
    ]
    if isinstance(record, MessageRecord):
        lines.append(f"{inner}<role>{_esc(record.role)}</role>")
    lines.append(f"{inner}<content>{_esc(record.content)}</content>")
    lines.append(f"{_ITEM_INDENT}</{tag}>")
    return lines


class OracleContextCard(ContextCard):
    """Context card returned by ``OracleThread.get_context_card`` (seed 000; SPEC §7).

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

    Example (seed 000)::

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

    Raises:
        ValueError: if an argument has the wrong type, or ``message_format`` uses a
            placeholder other than ``{id}``, ``{timestamp}``, ``{role}``, ``{content}``.
    """

    def __init__(
        self,
        summary: str = "",
        topics: Sequence[str] | None = None,
        relevant_results: Sequence[RelevantResult] | None = None,
        recent_messages: Sequence[Message] | None = None,
        message_format: str = DEFAULT_MESSAGE_FORMAT,
    ) -> None:
        if not isinstance(summary, str):
            raise ValueError(f"summary must be a str, got {type(summary).__name__}")
        if topics is None:
            topics = ()
        if isinstance(topics, str) or not all(isinstance(t, str) for t in topics):
            raise ValueError(f"topics must be a sequence of str or None, got {topics!r}")
        results = [_normalize_result(value, i) for i, value in enumerate(relevant_results or ())]
        messages = list(recent_messages or ())
        for i, message in enumerate(messages):
            if not isinstance(message, Message):
                raise ValueError(f"recent_messages[{i}] must be a Message, got {message!r}")
        if not isinstance(message_format, str):
            raise ValueError(f"message_format must be a str, got {message_format!r}")
        try:
            message_format.format(id="", timestamp="", role="", content="")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                "message_format may only use the placeholders {id}, {timestamp}, {role} "
                f"and {{content}}, got {message_format!r}"
            ) from exc
        self._summary = summary
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

        Example (seed 000)::

            >>> card = OracleContextCard(summary="ctx", topics=["travel"])
            >>> "<topics>" in card.formatted_content
            True
        """
        return self._content

    def _render(self) -> str:
        lines: list[str] = []
        if self._topics:
            lines.append(f"{_SECTION_INDENT}<topics>")
            lines.extend(f"{_ITEM_INDENT}<topic>{_esc(t)}</topic>" for t in self._topics)
            lines.append(f"{_SECTION_INDENT}</topics>")
        if self._summary.strip():
            lines.append(f"{_SECTION_INDENT}<summary>")
            lines.extend(_indent_block(_esc(self._summary.strip("\n")), _ITEM_INDENT))
            lines.append(f"{_SECTION_INDENT}</summary>")
        if self._results:
            lines.append(f"{_SECTION_INDENT}<relevant_information>")
            for record, _distance in self._results:
                lines.extend(_render_result(record))
            lines.append(f"{_SECTION_INDENT}</relevant_information>")
        if self._messages:
            lines.append(f"{_SECTION_INDENT}<recent_messages>")
            for message in self._messages:
                lines.extend(_render_message(self._message_format, message, _ITEM_INDENT))
            lines.append(f"{_SECTION_INDENT}</recent_messages>")
        if not lines:
            return ""
        return "\n".join(["<context_card>", *lines, "</context_card>"])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OracleContextCard):
            return NotImplemented
        return self._content == other._content

    def __hash__(self) -> int:
        return hash(self._content)

    def __repr__(self) -> str:
        return (
            f"OracleContextCard(summary={self._summary!r}, topics={list(self._topics)!r}, "
            f"relevant_results={len(self._results)}, "
            f"recent_messages={len(self._messages)})"
        )
