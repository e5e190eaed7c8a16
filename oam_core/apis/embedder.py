"""Embedding model interface (docs/concepts.md#embedders)."""

from __future__ import annotations

import abc
from collections.abc import Sequence

import anyio.to_thread
import numpy as np
import numpy.typing as npt

CHARS_PER_TOKEN = 3.5
"""Characters per token used for every token estimate (docs/store.md#defaults)."""


class IEmbedder(abc.ABC):
    """Turns texts into vectors.

    Implementations set ``max_input_tokens`` to the longest input they embed without
    truncation; the store cuts retrieval text into chunks of
    ``min(4000, max_input_tokens * 3.5)`` characters so that no call exceeds it.
    """

    max_input_tokens: int = 512

    @property
    @abc.abstractmethod
    def embedding_dimension(self) -> int:
        """Length of every vector this embedder returns."""

    @abc.abstractmethod
    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Embed texts.

        Args:
            texts: The texts, in order. May be empty.
            is_query: True when the texts are search queries (asymmetric models).

        Returns:
            float32 array of shape ``(len(texts), embedding_dimension)``.
        """

    async def embed_async(
        self, texts: Sequence[str], *, is_query: bool = False
    ) -> npt.NDArray[np.float32]:
        """Async twin of ``embed``; by default runs ``embed`` in a worker thread."""
        return await anyio.to_thread.run_sync(lambda: self.embed(texts, is_query=is_query))

    @property
    def embedder_id(self) -> str:
        """A stable name of the model behind this embedder, recorded by the store with
        its first vector so that it can refuse another model later
        (docs/store.md#embedder-identity).

        The built-in embedders give the id ``embedder=`` accepts (``"local"`` models
        as ``"local/<model>"``, ``"hashing/<dim>"``, the LiteLLM model id). This
        default is the class name: override it when one class can run several models
        (e.g. return the model name), so that the store tells them apart by name
        rather than only by their vectors.
        """
        return type(self).__qualname__

    @property
    def chunk_chars(self) -> int:
        """Chunk size in characters: ``min(4000, int(max_input_tokens * 3.5))``."""
        return max(1, min(4000, int(self.max_input_tokens * CHARS_PER_TOKEN)))


def check_texts(texts: Sequence[str]) -> list[str]:
    """The texts of an ``embed`` (or rerank) call as a list.

    Raises:
        TypeError: if ``texts`` is a single str or holds a non-string.
    """
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not a single str")
    items = list(texts)
    for text in items:
        if not isinstance(text, str):
            raise TypeError(f"texts must hold strings, got {type(text).__name__}: {text!r}")
    return items
