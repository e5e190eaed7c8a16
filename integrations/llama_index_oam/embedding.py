"""``OAMEmbedding``: an ``oam`` embedder as a LlamaIndex embedding model (docs/concepts.md#embedders).

Lets ``VectorStoreIndex`` embed nodes and queries with the same model as the store
(e.g. ``OAMEmbedding(store.embedder)``), so vectors written by LlamaIndex and by
``oam`` itself are comparable.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.bridge.pydantic import PrivateAttr

from oam_core import IEmbedder
from oam_core.errors import InvalidArgumentError


class OAMEmbedding(BaseEmbedding):
    """LlamaIndex ``BaseEmbedding`` over an ``oam`` ``IEmbedder``.

    Queries are embedded with ``is_query=True``, texts without (docs/concepts.md#embedders).

    Args:
        embedder: The ``oam`` embedder.
        **kwargs: ``BaseEmbedding`` options (``embed_batch_size``, ...).

    Raises:
        ValueError: if ``embedder`` is not an ``IEmbedder``.
    """

    _embedder: IEmbedder = PrivateAttr()

    def __init__(self, embedder: IEmbedder, **kwargs: Any) -> None:
        if not isinstance(embedder, IEmbedder):
            raise InvalidArgumentError(
                f"embedder must be an IEmbedder, got {type(embedder).__name__}"
            )
        kwargs.setdefault("model_name", type(embedder).__name__)
        super().__init__(**kwargs)
        self._embedder = embedder

    @classmethod
    def class_name(cls) -> str:
        """The LlamaIndex component name."""
        return "OAMEmbedding"

    def _embed(self, texts: list[str], *, is_query: bool) -> list[Embedding]:
        vectors = np.asarray(self._embedder.embed(texts, is_query=is_query), dtype=np.float32)
        return [[float(x) for x in row] for row in vectors]

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._embed([query], is_query=True)[0]

    async def _aget_query_embedding(self, query: str) -> Embedding:
        vectors = await self._embedder.embed_async([query], is_query=True)
        return [float(x) for x in np.asarray(vectors, dtype=np.float32)[0]]

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._embed([text], is_query=False)[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._embed(list(texts), is_query=False)


__all__ = ["OAMEmbedding"]
