"""Abstract thread summary (seed 000, ``apis.summary.Summary``)."""

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
