"""Which embedder a store's vectors come from (docs/store.md#embedder-identity).

Vectors of two models are not comparable, even at the same dimension: a store read
with another model than the one that wrote it ranks at random. So the store records
its embedder's identity in the schema metadata (key ``embedder``) with the first
vector its embedder writes:

* ``id``: ``IEmbedder.embedder_id`` (``"local/all-MiniLM-L6-v2"``, ``"hashing/384"``,
  a LiteLLM model id; an embedder of your own gives its class name unless it
  overrides ``embedder_id``);
* ``dimension``: the vector length;
* ``probe`` and ``probe_fingerprint``: one text of that first write (the shortest, at
  most ``PROBE_MAX_JSON`` characters as JSON) and the first ``FINGERPRINT_LENGTH``
  components of its L2-normalised embedding, which tell apart two embedders that
  share an id (``EmbedderIdentity.fingerprint``; an earlier release's key
  ``fingerprint`` is the fingerprint of its fixed sentence).

The embedder only ever sees texts the caller wrote or searched: the probe is taken
from a write, and its vector is the one that write stores (no extra text is sent).
Opening the store with an embedder of another id or dimension fails at once; the
first time a store object embeds, its embedder's embedding of the recorded probe is
compared with the fingerprint (cosine similarity at least ``FINGERPRINT_MIN_COSINE``:
hosted models are not bit-for-bit deterministic), in the same call as the write's own
texts (or the one it already holds when the write repeats it). A store recorded by an
earlier release holds the fingerprint of a fixed sentence the caller never wrote: it
is not checked, and the next write records a probe of its own.
``allow_embedder_change=True`` skips both checks, and the store then records the new
embedder with its next vector.
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
    "PROBE_MAX_JSON",
    "EmbedderCheck",
    "EmbedderIdentity",
    "ProbeStep",
]

META_KEY = "embedder"
"""The schema-metadata key holding the identity (JSON)."""
PROBE_MAX_JSON = 1000
"""Longest probe text, as JSON characters (ASCII escapes): the identity fits the
Oracle store's ``VARCHAR2(4000)`` metadata value."""
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
        fingerprint: Leading components of its normalised embedding of ``probe``, or
            None when not known.
        probe: The text (one the caller wrote) whose embedding ``fingerprint`` is;
            None when not known (an identity recorded by an earlier release holds the
            fingerprint of a fixed sentence, not checked any more).
    """

    embedder_id: str
    dimension: int
    fingerprint: tuple[float, ...] | None = None
    probe: str | None = None

    @property
    def checkable(self) -> bool:
        """Whether the fingerprint can be checked: its probe text is known."""
        return self.fingerprint is not None and self.probe is not None

    def describe(self) -> str:
        """``'local/all-MiniLM-L6-v2' (384 dimensions)``."""
        return f"{self.embedder_id!r} ({self.dimension} dimensions)"

    def to_json(self) -> str:
        """The metadata value (a JSON object, at most a few hundred characters)."""
        value: dict[str, Any] = {"id": self.embedder_id, "dimension": self.dimension}
        if self.fingerprint is not None and self.probe is not None:
            # Not under "fingerprint": an earlier release would check that one against
            # its fixed sentence, and refuse the store after a downgrade.
            value["probe"] = self.probe
            value["probe_fingerprint"] = list(self.fingerprint)
        elif self.fingerprint is not None:
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
            probe = value.get("probe")
            fingerprint = value.get("fingerprint" if probe is None else "probe_fingerprint")
            return EmbedderIdentity(
                embedder_id=str(value["id"]),
                dimension=int(value["dimension"]),
                fingerprint=None if fingerprint is None else tuple(float(x) for x in fingerprint),
                probe=None if probe is None else str(probe),
            )
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise SchemaError(
                f"{where}: the recorded embedder identity is unreadable ({text[:80]!r})"
            ) from exc


def identity_of(
    embedder: IEmbedder, probe: str | None = None, vector: Sequence[float] | None = None
) -> EmbedderIdentity:
    """The identity of ``embedder``; with ``probe`` and ``vector`` (its embedding of
    ``probe``) including the fingerprint."""
    return EmbedderIdentity(
        embedder_id=embedder.embedder_id,
        dimension=embedder.embedding_dimension,
        fingerprint=None if vector is None else fingerprint(vector),
        probe=None if vector is None else probe,
    )


def pick_probe(texts: Sequence[str]) -> int | None:
    """The index of the text of a write to record as the probe: the shortest non-blank
    one of at most ``PROBE_MAX_JSON`` JSON characters (first of equals); None when
    there is none."""
    best: int | None = None
    for i, text in enumerate(texts):
        if not text.strip() or len(json.dumps(text)) > PROBE_MAX_JSON:
            continue
        if best is None or len(text) < len(texts[best]):
            best = i
    return best


@dataclass(frozen=True)
class ProbeStep:
    """What the next embedder call of a store object does for the identity
    (``EmbedderCheck.step``).

    Attributes:
        record: Index of the text of this write to record as the probe (its vector
            gives the fingerprint); None when none is recorded by this call.
        verify: The recorded probe text to embed (as a document) and compare with
            the fingerprint; None when nothing is verified by this call.
        bare: Record the id and dimension without a fingerprint (a first write
            holding no text short enough to be the probe).
    """

    record: int | None = None
    verify: str | None = None
    bare: bool = False


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

    def step(self, texts: Sequence[str], writing: bool) -> ProbeStep | None:
        """What the next embedder call, of ``texts``, does for the identity: verify a
        recorded fingerprint once per store object (any call), or record the
        identity with a write (the first one, one after ``allow_embedder_change``, or
        one of a store whose fingerprint cannot be checked). None: nothing."""
        if self._verified:
            return None
        stored = self.stored
        if stored is not None and stored.checkable and not self.allow_change:
            return ProbeStep(verify=stored.probe)
        if not writing:
            return None
        index = pick_probe(texts)
        if index is None:
            return ProbeStep(bare=stored is None or self.allow_change)
        return ProbeStep(record=index)

    def record(
        self, embedder: IEmbedder, probe: str | None, vector: Sequence[float] | None
    ) -> None:
        """Prepare to record the embedder's identity with the current write: with the
        fingerprint of ``probe`` (a text of the write, embedded as ``vector``), or
        only the id and dimension when both are None."""
        current = identity_of(embedder, probe, vector)
        if current != self.stored:
            self._pending = current
        self._verified = current.checkable

    def verify(self, embedder: IEmbedder, vector: Sequence[float]) -> None:
        """Compare the embedder's embedding of the recorded probe with the recorded
        fingerprint.

        Raises:
            EmbedderMismatchError: (a ValueError) naming both embedders when the
                fingerprints differ.
        """
        stored = self.stored
        assert stored is not None and stored.fingerprint is not None
        current = identity_of(embedder, stored.probe, vector)
        assert current.fingerprint is not None
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
