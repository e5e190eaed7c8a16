"""Which embedder a store's vectors come from (docs/store.md#embedder-identity).

Vectors of two models are not comparable, even at the same dimension: a store read
with another model than the one that wrote it ranks at random. So the store records
its embedder's identity in the schema metadata (key ``embedder``) with the first
vector its embedder writes:

* ``id``: ``IEmbedder.embedder_id`` (``"local/all-MiniLM-L6-v2"``, ``"hashing/384"``,
  a LiteLLM model id; an embedder of your own gives its class name unless it
  overrides ``embedder_id``);
* ``dimension``: the vector length;
* ``fingerprint``: the first ``FINGERPRINT_LENGTH`` components of the L2-normalised
  embedding of ``PROBE_TEXT``, which tells apart two embedders that share an id.

Opening the store with an embedder of another id or dimension fails at once; the first
time a store object embeds, the fingerprint of its embedder is compared with the
recorded one (cosine similarity at least ``FINGERPRINT_MIN_COSINE``: hosted models are
not bit-for-bit deterministic). ``allow_embedder_change=True`` skips both checks, and
the store then records the new embedder with its next vector.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from oam_core.apis.embedder import IEmbedder
from oam_core.errors import EmbedderMismatchError, SchemaError

__all__ = [
    "FINGERPRINT_LENGTH",
    "FINGERPRINT_MIN_COSINE",
    "META_KEY",
    "PROBE_TEXT",
    "EmbedderCheck",
    "EmbedderIdentity",
]

META_KEY = "embedder"
"""The schema-metadata key holding the identity (JSON)."""
PROBE_TEXT = "The quick brown fox jumps."
"""The fixed text whose embedding is the fingerprint (short: fits every chunk size)."""
FINGERPRINT_LENGTH = 32
"""Components of the probe embedding kept in the metadata."""
FINGERPRINT_MIN_COSINE = 0.99
"""Least cosine similarity of two fingerprints of the same model."""


@dataclass(frozen=True)
class EmbedderIdentity:
    """An embedder as recorded in a store.

    Attributes:
        embedder_id: The embedder's ``embedder_id``.
        dimension: Its vector length.
        fingerprint: Leading components of its normalised probe embedding, or None
            when not known.
    """

    embedder_id: str
    dimension: int
    fingerprint: tuple[float, ...] | None = None

    def describe(self) -> str:
        """``'local/all-MiniLM-L6-v2' (384 dimensions)``."""
        return f"{self.embedder_id!r} ({self.dimension} dimensions)"

    def to_json(self) -> str:
        """The metadata value (a JSON object, at most a few hundred characters)."""
        value: dict[str, Any] = {"id": self.embedder_id, "dimension": self.dimension}
        if self.fingerprint is not None:
            value["fingerprint"] = list(self.fingerprint)
        return json.dumps(value, separators=(",", ":"))

    @staticmethod
    def from_json(text: str | None, where: str) -> EmbedderIdentity | None:
        """Read a metadata value written by ``to_json`` (None stays None).

        Raises:
            SchemaError: (a ValueError) naming ``where`` when the value is not such
                an object.
        """
        if text is None:
            return None
        try:
            value = json.loads(text)
            fingerprint = value.get("fingerprint")
            return EmbedderIdentity(
                embedder_id=str(value["id"]),
                dimension=int(value["dimension"]),
                fingerprint=None if fingerprint is None else tuple(float(x) for x in fingerprint),
            )
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise SchemaError(
                f"{where}: the recorded embedder identity is unreadable ({text[:80]!r})"
            ) from exc


def identity_of(embedder: IEmbedder, probe: Sequence[float] | None = None) -> EmbedderIdentity:
    """The identity of ``embedder``; with ``probe`` (its embedding of ``PROBE_TEXT``)
    including the fingerprint."""
    return EmbedderIdentity(
        embedder_id=embedder.embedder_id,
        dimension=embedder.embedding_dimension,
        fingerprint=None if probe is None else fingerprint(probe),
    )


def fingerprint(vector: Sequence[float]) -> tuple[float, ...]:
    """The leading ``FINGERPRINT_LENGTH`` components of ``vector`` after L2
    normalisation, rounded to 6 decimals."""
    arr = np.asarray(vector, dtype=np.float64).reshape(-1)
    norm = float(np.linalg.norm(arr))
    if norm > 0:
        arr = arr / norm
    return tuple(round(float(x), 6) for x in arr[:FINGERPRINT_LENGTH])


def same_fingerprint(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether two fingerprints come from the same model (cosine >= the tolerance)."""
    if len(a) != len(b):
        return False
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    if na == 0 or nb == 0:
        return na == nb
    return dot / (na * nb) >= FINGERPRINT_MIN_COSINE


def _mismatch(where: str, stored: EmbedderIdentity, current: EmbedderIdentity, why: str) -> str:
    fix = f"open it with the same embedder (CLI: --embedder {stored.embedder_id})"
    if stored.dimension == current.dimension:
        fix += ", or pass allow_embedder_change=True if the two produce the same vectors"
    return (
        f"{where} holds vectors of embedder {stored.describe()}, but this store was "
        f"opened with embedder {current.describe()}{why}; {fix}"
    )


class EmbedderCheck:
    """The identity bookkeeping of one store object (used by ``OracleMemoryStore``).

    Args:
        where: Names the store in error messages.
    """

    def __init__(self, where: str = "the store") -> None:
        self.where = where
        self.stored: EmbedderIdentity | None = None
        self.allow_change = False
        self._verified = False
        self._pending: EmbedderIdentity | None = None

    def adopt(
        self, meta_value: str | None, embedder: IEmbedder | None, *, allow_change: bool
    ) -> None:
        """Take the recorded identity from the schema metadata at open and check the
        store's embedder against its id and dimension.

        Raises:
            EmbedderMismatchError: (a ValueError) naming both embedders when they
                differ (unless ``allow_change``).
            SchemaError: (a ValueError) when the recorded value is unreadable.
        """
        self.allow_change = allow_change
        self.stored = EmbedderIdentity.from_json(meta_value, self.where)
        self._verified = False
        if self.stored is None or embedder is None or allow_change:
            return
        current = identity_of(embedder)
        if current.dimension != self.stored.dimension:
            raise EmbedderMismatchError(
                _mismatch(self.where, self.stored, current, ", of another dimension")
            )
        if current.embedder_id != self.stored.embedder_id:
            raise EmbedderMismatchError(_mismatch(self.where, self.stored, current, ""))

    def wants_probe(self, writing: bool) -> bool:
        """Whether the next embedder call should also embed ``PROBE_TEXT``: to verify
        a recorded fingerprint once, or to record the identity with a first write."""
        if self._verified:
            return False
        if self.stored is None or self.allow_change:
            return writing
        return self.stored.fingerprint is not None

    def accept_probe(self, embedder: IEmbedder, probe: Sequence[float]) -> None:
        """Compare (or prepare to record) the embedder's probe embedding.

        Raises:
            EmbedderMismatchError: (a ValueError) naming both embedders when the
                fingerprints differ.
        """
        current = identity_of(embedder, probe)
        stored = self.stored
        if stored is None or self.allow_change:
            if stored != current:
                self._pending = current
            self._verified = True
            return
        assert stored.fingerprint is not None and current.fingerprint is not None
        if not same_fingerprint(stored.fingerprint, current.fingerprint):
            raise EmbedderMismatchError(
                _mismatch(self.where, stored, current, ", whose vectors differ (fingerprint)")
            )
        self._verified = True

    def pending(self) -> str | None:
        """The metadata value to write with the vectors of the current write, if any."""
        return None if self._pending is None else self._pending.to_json()

    def recorded(self) -> None:
        """The pending identity was committed."""
        if self._pending is not None:
            self.stored, self._pending = self._pending, None
