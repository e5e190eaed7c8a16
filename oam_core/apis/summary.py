"""Abstract thread summary (Oracle's SDK ``apis.summary.Summary``; docs/context-card.md#summaries)."""

from __future__ import annotations

import abc


class Summary(abc.ABC):
    """A synthesized summary of a thread."""

    @property
    @abc.abstractmethod
    def content(self) -> str:
        """The summary text."""

    def __str__(self) -> str:
        return self.content
