"""Abstract context card (Oracle's SDK ``apis.contextcard.ContextCard``; docs/context-card.md)."""

from __future__ import annotations

import abc


class ContextCard(abc.ABC):
    """A rendered block of thread context meant to be pasted into a prompt."""

    @property
    @abc.abstractmethod
    def content(self) -> str:
        """The rendered context card text."""

    def __str__(self) -> str:
        return self.content
