"""A deterministic, dependency-free embedder for tests and demos."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import regex

from oam_core.apis.embedder import IEmbedder
from oam_core.checks import check_int

_WORD = regex.compile(r"[\p{L}\p{N}]+")


class HashingEmbedder(IEmbedder):
    """Feature-hashing bag-of-words embedder: no model, no network, stable across runs.

    Texts that share words get a higher cosine similarity; it captures no meaning
    beyond shared (lower-cased) words. Use it in tests, or where a real model is not
    wanted. Each word is hashed (BLAKE2b) to one of ``dim`` signed buckets; the
    vector is L2-normalised. A text with no words maps to the zero vector.

    Args:
        dim: Vector length (positive int).
        max_input_tokens: Longest input in tokens (sets the store's chunk size).

    Raises:
        ValueError: if ``dim`` or ``max_input_tokens`` is not a positive int.
    """

    def __init__(self, dim: int = 64, *, max_input_tokens: int = 512) -> None:
        check_int(dim, "dim", minimum=1)
        check_int(max_input_tokens, "max_input_tokens", minimum=1)
        self._dim = dim
        self.max_input_tokens = max_input_tokens
        self.calls: list[list[str]] = []
        """Every batch passed to ``embed``, in order (handy for asserting on calls)."""

    @property
    def embedding_dimension(self) -> int:
        return self._dim

    @property
    def embedder_id(self) -> str:
        """``"hashing/<dim>"`` (what ``embedder=`` and the CLI's ``--embedder`` take)."""
        return f"hashing/{self._dim}"

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Return a float32 array of shape ``(len(texts), dim)``, rows L2-normalised."""
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self._dim] += 1.0 if (value >> 63) & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out
