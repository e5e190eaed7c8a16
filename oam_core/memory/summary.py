"""``OracleSummary``: the summary object a thread returns (seed 000; SPEC §6-§7)."""

from __future__ import annotations

from oam_core.apis.summary import Summary

__all__ = ["OracleSummary"]


class OracleSummary(Summary):
    """Summary returned by ``OracleThread.get_summary`` (seed 000, ``core.summary``).

    Example (seed 000)::

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
            raise ValueError(f"content must be a str, got {type(content).__name__}")
        self._content = content

    @property
    def content(self) -> str:
        """The summary text.

        Example (seed 000)::

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
        return self._content == other._content

    def __hash__(self) -> int:
        return hash(self._content)

    def __repr__(self) -> str:
        return f"OracleSummary(content={self._content!r})"
