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

This module holds the recorded values and how they compare; what one store object
does with its next embedder call (record, verify, nothing) is ``EmbedderCheck`` of
the store runtime (store/runtime.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from oam_core.apis.embedder import IEmbedder
from oam_core.embedders import resolves_recorded_id
from oam_core.errors import SchemaError

__all__ = [
    "FINGERPRINT_LENGTH",
    "FINGERPRINT_MIN_COSINE",
    "META_KEY",
    "PROBE_MAX_JSON",
    "EmbedderIdentity",
    "fingerprint",
    "identity_of",
    "mismatch_message",
    "pick_probe",
    "reopen_hint",
    "same_fingerprint",
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


def reopen_hint(embedder_id: str) -> str:
    """How to open a store that recorded ``embedder_id``, for an error message: the
    CLI's ``--embedder`` for an id it can load (``resolves_recorded_id``), else Python
    with that model (a LangChain model, an in-database or your own embedder).

    Returns:
        ``"(CLI: --embedder hashing/256)"``, ``"(from Python only, with that LangChain
        embeddings model: the CLI cannot load it)"`` or ``"(from Python only: the CLI
        cannot load it)"``.
    """
    if resolves_recorded_id(embedder_id):
        return f"(CLI: --embedder {embedder_id})"
    if embedder_id.startswith("langchain:"):
        return "(from Python only, with that LangChain embeddings model: the CLI cannot load it)"
    return "(from Python only: the CLI cannot load it)"


def mismatch_message(
    where: str, stored: EmbedderIdentity, current: EmbedderIdentity, why: str
) -> str:
    """The ``EmbedderMismatchError`` message: ``where`` holds vectors of ``stored`` but
    the store was opened with ``current`` (``why`` says how they differ), and the fix
    (``reopen_hint``)."""
    fix = f"open it with the same embedder {reopen_hint(stored.embedder_id)}"
    if stored.dimension == current.dimension:
        fix += ", or pass allow_embedder_change=True if the two produce the same vectors"
    return (
        f"{where} holds vectors of embedder {stored.describe()}, but this store was "
        f"opened with embedder {current.describe()}{why}; {fix}"
    )
