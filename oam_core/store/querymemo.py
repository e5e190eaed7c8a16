"""The query embeddings a store made last (docs/store.md#searching).

One user action often searches with the same words more than once: a search for
memories and messages together ranks each kind with its own store search, a context
card searches messages and memories for the same query, an agent repeats a question.
Each such search used to embed the query again (7-10 ms of CPU with the ``local``
model). A store keeps the vectors of its last ``SIZE`` queries, by embedder object
and texts, and hands out copies; a query longer than ``MAX_CHARS`` characters is not
kept. Only query embeddings are kept: what a write embeds is never reused.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from oam_core.apis.embedder import IEmbedder

__all__ = ["MAX_CHARS", "SIZE", "QueryMemo"]

SIZE = 64
"""Queries kept per store object (the least recently used goes first)."""

MAX_CHARS = 65536
"""Longest query (all its texts together, in characters) that is kept: the memo
holds at most ``SIZE * MAX_CHARS`` characters of keys (8 MiB of text at most)."""


class QueryMemo:
    """A store object's last ``SIZE`` query embeddings; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[int, tuple[str, ...]], tuple[IEmbedder, np.ndarray]] = (
            OrderedDict()
        )

    def embed(
        self,
        embedder: IEmbedder,
        texts: Sequence[str],
        make: Callable[[Sequence[str]], np.ndarray],
    ) -> np.ndarray:
        """The query vectors of ``texts`` by ``embedder``: a copy of the kept ones,
        else ``make(texts)`` (float32 array of shape ``(len(texts), dim)``), kept
        when the texts hold at most ``MAX_CHARS`` characters."""
        key = (id(embedder), tuple(texts))
        with self._lock:
            hit = self._kept.get(key)
            if hit is not None and hit[0] is embedder:
                self._kept.move_to_end(key)
                kept: np.ndarray = hit[1].copy()
                return kept
        vectors = make(texts)
        if sum(map(len, texts)) <= MAX_CHARS:
            with self._lock:
                self._kept[key] = (embedder, vectors.copy())
                while len(self._kept) > SIZE:
                    self._kept.popitem(last=False)
        return vectors

    def clear(self) -> None:
        """Forget every kept query (the store's embedder changed)."""
        with self._lock:
            self._kept.clear()
