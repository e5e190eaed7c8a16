"""Rerankers: a second stage that re-scores a search's best candidates (docs/retrieval.md).

A store built with ``reranker=`` hands the query and the text of its best
``reranker.candidates`` records to ``reranker.score`` and returns them in the order
of those scores. ``CrossEncoderReranker`` runs a cross-encoder (query and passage
read together by one transformer) on ONNX Runtime, fully offline, from a model file
pinned by its sha256; it is imported on first access, so importing this package
imports neither ONNX Runtime nor tokenizers.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from oam_core._lazy import lazy_attributes
from oam_core.checks import check_int
from oam_core.errors import InvalidArgumentError

if TYPE_CHECKING:
    from oam_core.rerankers.crossencoder import CrossEncoderReranker

__all__ = ["CrossEncoderReranker", "IReranker", "check_reranker"]

_LAZY = {"CrossEncoderReranker": "oam_core.rerankers.crossencoder"}

DEFAULT_CANDIDATES = 30
"""How many first-stage results a reranker re-scores unless it says otherwise."""


class IReranker(abc.ABC):
    """Re-scores (query, passage) pairs; higher scores are more relevant.

    Attributes:
        candidates: How many of the first stage's best records the store re-scores
            (at least the search's ``k``).
    """

    candidates: int = DEFAULT_CANDIDATES

    @abc.abstractmethod
    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Relevance of each text to the query.

        Args:
            query: The search query.
            texts: Candidate passages, in any order; may be empty.

        Returns:
            float32 array of shape ``(len(texts),)``: real-valued scores (logits),
            higher = more relevant. The store maps a score ``s`` to the distance
            ``1 - sigmoid(s)``.
        """


def check_reranker(reranker: object) -> IReranker | None:
    """Validate a store's ``reranker=`` argument.

    Raises:
        ValueError: if it is neither None nor an ``IReranker`` with a positive int
            ``candidates``.
    """
    if reranker is None:
        return None
    if not isinstance(reranker, IReranker):
        raise InvalidArgumentError(f"reranker must be an IReranker or None, got {reranker!r}")
    check_int(reranker.candidates, "reranker.candidates", minimum=1)
    return reranker


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
