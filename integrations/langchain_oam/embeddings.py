"""Embedding wrappers in both directions between LangChain and ``oam``.

``LangChainEmbedder`` makes a LangChain ``Embeddings`` usable as an ``oam``
``IEmbedder`` (docs/concepts.md#embedders), so a store can embed with any LangChain model;
``OAMEmbeddings`` makes an ``IEmbedder`` (for example ``oam``'s offline local model or
the ``HashingEmbedder``) usable wherever LangChain expects ``Embeddings``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from oam_core import IEmbedder
from oam_core.checks import check_optional_int
from oam_core.errors import InvalidArgumentError

__all__ = ["LangChainEmbedder", "OAMEmbeddings"]

_PROBE = "dimension probe"
MODEL_NAME_ATTRIBUTES = ("model", "model_name")
"""Attributes of a LangChain ``Embeddings`` that name its model, in the order read."""


def _matrix(rows: Sequence[Sequence[float]], dim: int | None, n: int) -> npt.NDArray[np.float32]:
    """``rows`` as a float32 ``(n, dim)`` matrix; ValueError when the shape is wrong."""
    if n == 0:
        return np.zeros((0, dim or 0), dtype=np.float32)
    arr = np.asarray(rows, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[0] != n or (dim is not None and arr.shape[1] != dim):
        raise InvalidArgumentError(
            f"the LangChain embeddings returned shape {arr.shape}, expected ({n}, {dim})"
        )
    return arr


class LangChainEmbedder(IEmbedder):
    """An ``oam`` ``IEmbedder`` backed by a LangChain ``Embeddings`` (docs/concepts.md#embedders).

    Documents go through ``embed_documents``; queries (``is_query=True``) through
    ``embed_query``, one call per query text; ``embed_async`` uses the model's own
    ``aembed_documents``/``aembed_query``.

    Args:
        embeddings: The LangChain embedding model.
        dimension: Vector length. When omitted it is read from the model's ``size``
            or ``dims`` attribute if it has one, else measured once by embedding a
            short probe text (one model call, on first use).
        max_input_tokens: The longest input the model embeds whole; the store cuts
            retrieval text into chunks of ``min(4000, max_input_tokens * 3.5)``
            characters (docs/concepts.md#embedders).

    Its ``embedder_id`` (recorded by the store, docs/store.md#embedder-identity) is
    ``langchain:<class>:<model>`` from the model's ``model`` or ``model_name``
    attribute (``langchain:<class>`` without one); an ``OAMEmbeddings`` keeps the id
    of the ``oam`` embedder it wraps, so wrapping one for LangChain and back changes
    nothing.

    Raises:
        ValueError: for a non-``Embeddings`` model or a non-positive dimension or
            token limit.
    """

    def __init__(
        self,
        embeddings: Embeddings,
        *,
        dimension: int | None = None,
        max_input_tokens: int = 512,
    ) -> None:
        if not isinstance(embeddings, Embeddings):
            raise InvalidArgumentError(
                f"embeddings must be a LangChain Embeddings, got {type(embeddings).__name__}"
            )
        for name, value in (("dimension", dimension), ("max_input_tokens", max_input_tokens)):
            check_optional_int(value, name, minimum=1)
        self.embeddings = embeddings
        self.max_input_tokens = max_input_tokens
        if dimension is None and isinstance(embeddings, OAMEmbeddings):
            dimension = embeddings.embedder.embedding_dimension
        if dimension is None:
            for attr in ("size", "dims", "dimensions"):
                value = getattr(embeddings, attr, None)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    dimension = value
                    break
        self._dimension = dimension

    @property
    def embedder_id(self) -> str:
        """``langchain:<class>:<model>``, ``langchain:<class>``, or the wrapped ``oam``
        embedder's id (see the class docstring)."""
        if isinstance(self.embeddings, OAMEmbeddings):
            return self.embeddings.embedder.embedder_id
        name = f"langchain:{type(self.embeddings).__name__}"
        for attr in MODEL_NAME_ATTRIBUTES:
            model = getattr(self.embeddings, attr, None)
            if isinstance(model, str) and model.strip():
                return f"{name}:{model.strip()}"
        return name

    @property
    def embedding_dimension(self) -> int:
        """Vector length (measured with one probe call when not known up front)."""
        if self._dimension is None:
            self._dimension = len(self.embeddings.embed_query(_PROBE))
        return self._dimension

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Embed ``texts``; returns float32 ``(len(texts), embedding_dimension)``.

        Raises:
            ValueError: when the model returns vectors of another shape.
        """
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.embedding_dimension), dtype=np.float32)
        if is_query:
            rows = [self.embeddings.embed_query(t) for t in texts]
        else:
            rows = self.embeddings.embed_documents(texts)
        return _matrix(rows, self.embedding_dimension, len(texts))

    async def embed_async(
        self, texts: Sequence[str], *, is_query: bool = False
    ) -> npt.NDArray[np.float32]:
        """Async twin of ``embed`` through the model's native async methods."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.embedding_dimension), dtype=np.float32)
        if is_query:
            rows = [await self.embeddings.aembed_query(t) for t in texts]
        else:
            rows = await self.embeddings.aembed_documents(texts)
        return _matrix(rows, self.embedding_dimension, len(texts))


class OAMEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` backed by an ``oam`` ``IEmbedder``.

    ``embed_query`` embeds with ``is_query=True`` (asymmetric models, docs/concepts.md#embedders).

    Args:
        embedder: The ``oam`` embedder, e.g. ``LocalEmbedder()`` or
            ``HashingEmbedder(64)``.

    Raises:
        ValueError: for anything that is not an ``IEmbedder``.
    """

    def __init__(self, embedder: IEmbedder) -> None:
        if not isinstance(embedder, IEmbedder):
            raise InvalidArgumentError(
                f"embedder must be an oam IEmbedder, got {type(embedder).__name__}"
            )
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents; one list of floats per text."""
        return [[float(x) for x in row] for row in self.embedder.embed(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query text."""
        return [float(x) for x in self.embedder.embed([text], is_query=True)[0]]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async twin of ``embed_documents`` (the embedder's ``embed_async``)."""
        return [[float(x) for x in row] for row in await self.embedder.embed_async(texts)]

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of ``embed_query``."""
        rows = await self.embedder.embed_async([text], is_query=True)
        return [float(x) for x in rows[0]]
