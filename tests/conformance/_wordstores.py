"""Helpers of the keyword tests of words in many scripts (marks, symbols): a store's
results as ids, and an embedder whose vector list ignores the query's words."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from oam_core.embedders.hashing import HashingEmbedder


def found(results: Sequence[tuple[Any, Any]]) -> list[str]:
    """The ids of a search's ``(record, distance)`` pairs, in order."""
    return [r.id for r, _ in results]


class WholeTextVector(HashingEmbedder):
    """A text's vector hashes the whole text, not its words: the vector list ranks the
    records in an order unrelated to the query's words, so a record comes first in a
    HYBRID search only through the keyword list."""

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> Any:
        digests = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        words = [" ".join(d[i : i + 4] for i in range(0, 40, 4)) for d in digests]
        return super().embed(words, is_query=is_query)
