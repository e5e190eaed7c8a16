"""LLM interface (docs/concepts.md#embedders; docs/llms.md)."""

from __future__ import annotations

import abc
from typing import Any

import anyio.to_thread


class ILlm(abc.ABC):
    """A text-generation model used for extraction, summaries, shortening and query
    rewriting (docs/context-card.md#query-rewriting)."""

    @abc.abstractmethod
    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        """Return the model's reply to ``prompt``.

        Args:
            prompt: The full prompt text.
            response_json_schema: When given, the reply must be JSON following it.
        """

    async def generate_async(
        self, prompt: str, *, response_json_schema: dict[str, Any] | None = None
    ) -> str:
        """Async twin of ``generate``; by default runs it in a worker thread."""
        return await anyio.to_thread.run_sync(
            lambda: self.generate(prompt, response_json_schema=response_json_schema)
        )
