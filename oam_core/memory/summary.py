"""Thread summaries (docs/context-card.md#summaries; docs/memory-pipeline.md#running-summary): the ``OracleSummary`` value type, the
transcript-line format of the no-LLM fallback, and the running summary that the LLM
pipeline keeps in the thread row's state."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oam_core.apis.records import MessageRecord, Record
from oam_core.apis.summary import Summary
from oam_core.apis.thread import participant_name
from oam_core.errors import InvalidArgumentError
from oam_core.memory.toolcalls import shown_content

__all__ = [
    "RUNNING_SUMMARY_STATE_KEY",
    "OracleSummary",
    "RunningSummary",
    "running_summary_from_state",
    "transcript_line",
]

RUNNING_SUMMARY_STATE_KEY = "context_summary"
"""Key of the running summary in a thread row's ``state``: a JSON object
``{"summary": str, "topics": [str, ...]}`` written by the summary pipeline (docs/memory-pipeline.md#running-summary)."""


@dataclass(frozen=True)
class RunningSummary:
    """The running summary of a thread and its retrieval topics (docs/memory-pipeline.md#running-summary).

    Attributes:
        summary: Non-blank summary text.
        topics: Non-blank topics, in the pipeline's order.
    """

    summary: str
    topics: tuple[str, ...]


def running_summary_from_state(state: Mapping[str, Any] | None) -> RunningSummary | None:
    """Read the running summary from a thread row's ``state``.

    Returns:
        The summary, or None when the pipeline has not written one (or it is blank or
        malformed; malformed topics are dropped).
    """
    entry = (state or {}).get(RUNNING_SUMMARY_STATE_KEY)
    if not isinstance(entry, Mapping):
        return None
    summary = entry.get("summary")
    topics = entry.get("topics")
    if not isinstance(summary, str) or not summary.strip():
        return None
    if not isinstance(topics, list):
        topics = []
    clean = tuple(t for t in topics if isinstance(t, str) and t.strip())
    return RunningSummary(summary, clean)


def transcript_line(record: Record) -> str:
    """Format a stored message as ``role (timestamp): content`` (the fallback of docs/context-card.md#what-goes-in).

    The timestamp is the message's own event time, else its store time
    (``created_at``); with neither, the line is ``role: content``. A message that
    names its speaker (``metadata["$message"]["name"]``) reads
    ``Caroline (user, timestamp): content`` (docs/context-card.md#speaker-names); an
    assistant's tool calls follow the content on the same line, ``tool call:
    name(arguments)`` each (docs/context-card.md#tool-calls).
    """
    role = record.role if isinstance(record, MessageRecord) and record.role else "unknown"
    when = record.timestamp or record.created_at
    content = shown_content(record.content, record.metadata, sep=" ")
    name = participant_name(record.metadata)
    if name is not None:
        return f"{name} ({role}, {when}): {content}" if when else f"{name} ({role}): {content}"
    return f"{role} ({when}): {content}" if when else f"{role}: {content}"


class OracleSummary(Summary):
    """Summary returned by ``OracleThread.get_summary`` (docs/context-card.md#summaries; Oracle's SDK ``core.summary``).

    Example (as in Oracle's SDK documentation)::

        >>> summary = OracleSummary(content="Plan the Rome itinerary.")
        >>> summary.content
        'Plan the Rome itinerary.'
        >>> str(summary)
        'Plan the Rome itinerary.'
        >>> OracleSummary(content="Thread recap").formatted_content
        'Thread recap'

    Args:
        content: The summary text synthesized from the thread transcript; may be ``""``.

    Raises:
        ValueError: if ``content`` is not a str.
    """

    __slots__ = ("_content",)

    def __init__(self, content: str) -> None:
        if not isinstance(content, str):
            raise InvalidArgumentError(f"content must be a str, got {type(content).__name__}")
        self._content = content

    @property
    def content(self) -> str:
        """The summary text.

        Example (as in Oracle's SDK documentation)::

            >>> OracleSummary(content="Keep the tea preference in mind.").content
            'Keep the tea preference in mind.'
        """
        return self._content

    @property
    def formatted_content(self) -> str:
        """The summary text as used when assembling prompts (same as ``content``)."""
        return self._content

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OracleSummary):
            return NotImplemented
        return self._content == other.content

    def __hash__(self) -> int:
        return hash(self._content)

    def __repr__(self) -> str:
        return f"OracleSummary(content={self._content!r})"
