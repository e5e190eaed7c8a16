"""The vector lists a HYBRID search ranks after its first fusion
(docs/retrieval.md#second-stage-vector-lists).

The first fusion ranks every candidate by the question's vector and keyword lists;
its head is the pool the signal lists re-rank (store/fusion.py). Two more vector
rankings of the whole store (not of the pool) then take shares of the question's
vector list's weight, so the vector evidence weighs what it did:

* **the feedback vector list** (``Signal.FEEDBACK_VECTOR``): relevance feedback in
  vector space (Rocchio). The question's unit vector plus the unit mean of the
  context-row vectors of the fused head's best ``FEEDBACK_VECTOR_HEAD`` messages
  (each the exchange around a message, not the message alone) is ranked once more.
  An answer spread over sessions is often said in other words than the question's
  ("adopted another pup" for "How many dogs ..."); the head's exchanges carry the
  words of the topic as it was discussed, which moves the query toward them. A
  keyword version of the same idea is the feedback keyword list
  (``fusion.feedback_terms``).
* **the speaker's vector list** (``Signal.SPEAKER_VECTOR``): for a question naming
  one participant of the candidates (``naming.named_speaker``, the speaker list's
  rule), the question's vector ranked against that participant's messages only,
  in place of half of the question's own list. The speaker list re-ranks the pool; this
  list finds the participant's messages the pool missed, which a two-person
  conversation's other half crowds out of the question's list.

Neither applies to a question asking for advice (its vectors are its topic's,
store/advice.py) or to a query searched in parts; a list that comes back empty is
left out, and the question's list keeps its weight. What each did on every
benchmark task: bench/README.md ("Second-stage vector lists").
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Collection, Hashable, Mapping, Sequence

import numpy as np

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.records import MESSAGE, Record
from oam_core.apis.thread import MESSAGE_KEY
from oam_core.checks import Vector
from oam_core.filters import Field, In, Nested
from oam_core.store.backend import Backend, Predicate
from oam_core.store.fusion import FusionConfig, Signal, query_signals
from oam_core.store.naming import named_speaker

__all__ = [
    "FEEDBACK_VECTOR_BETA",
    "FEEDBACK_VECTOR_HEAD",
    "feedback_vector",
    "speaker_predicate",
    "vector_lists",
]

FEEDBACK_VECTOR_HEAD = 3
"""How many of the fused head's best messages the feedback vector is made from."""

FEEDBACK_VECTOR_BETA = 1.0
"""The weight of the head's direction against the question's in the feedback vector
(both unit vectors): equal, so the list keeps the question's subject while reaching
the words the head's exchanges used for it."""

Ranked = builtins.list[tuple[Hashable, float]]


def vector_lists(
    backend: Backend,
    query: str,
    query_vector: Vector,
    pool: Sequence[Hashable],
    records: Mapping[Hashable, Record],
    speakers: Mapping[Hashable, str | None],
    pred: Predicate,
    fusion: FusionConfig,
) -> builtins.list[tuple[Signal, Ranked]]:
    """The second-stage vector lists of one HYBRID search, as ``(signal, (key,
    cosine distance) pairs)``, nearest first: the speaker's list, then the feedback
    list, each present when it applies and found something.

    Args:
        backend: The store's back end (``rank_vector``, ``row_vectors``).
        query: The text query (a question asking for advice gets none).
        query_vector: The question's embedding, float32 array of shape ``(dim,)``.
        pool: The first fusion's head, best first.
        records: The loaded records of ``pool`` (a key may be missing: skipped).
        speakers: ``fusion.speaker_names(records)``.
        pred: The search's predicate; both lists see only what it allows.
        fusion: Which signals may apply (``FusionConfig.signals``) and the depth.
    """
    which = query_signals(query, fusion.signals)
    present = [key for key in pool if key in records]
    out: builtins.list[tuple[Signal, Ranked]] = []
    if Signal.SPEAKER_VECTOR in which:
        named = named_speaker(query, [speakers.get(key) for key in present])
        # The filter matches the names as stored (" Caroline " reads as "Caroline").
        stored = {_stored_name(records[key]) for key in present if speakers.get(key) in named}
        spoken = speaker_predicate(pred, {n for n in stored if n is not None})
        if spoken is not None:
            ranked = backend.rank_vector([query_vector], fusion.depth, spoken)[0]
            if ranked:
                out.append((Signal.SPEAKER_VECTOR, ranked))
    if Signal.FEEDBACK_VECTOR in which:
        head = [key for key in present if records[key].record_type == MESSAGE]
        head = head[:FEEDBACK_VECTOR_HEAD]
        rows = backend.row_vectors(head, pred.now) if head else {}
        # A message's context row is its last search row (memory/indexing.py); an
        # expired one (it quotes an expired message) is left out, the own row stays.
        context = [rows[key][-1] for key in head if key in rows]
        if context:
            moved = feedback_vector(query_vector, context)
            ranked = backend.rank_vector([moved], fusion.depth, pred)[0]
            if ranked:
                out.append((Signal.FEEDBACK_VECTOR, ranked))
    return out


def feedback_vector(
    query_vector: Vector, head: Sequence[Vector], beta: float = FEEDBACK_VECTOR_BETA
) -> Vector:
    """``unit(unit(q) + beta * unit(mean of unit(v) for v in head))``: the question's
    vector moved toward the head's (Rocchio relevance feedback, positive part only).

    Args:
        query_vector: float32 array of shape ``(dim,)``, not all zeros.
        head: float32 arrays of shape ``(dim,)``, at least one; a zero vector
            counts as no direction.
        beta: The head direction's weight (>= 0).

    Returns:
        A float32 unit vector of shape ``(dim,)`` (the question's own direction when
        the head's vectors cancel out).
    """
    rows = np.asarray(head, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    mean = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0).mean(axis=0)
    q = _unit(np.asarray(query_vector, dtype=np.float64))
    return _unit(q + beta * _unit(mean)).astype(np.float32)


def speaker_predicate(pred: Predicate, names: Collection[str]) -> Predicate | None:
    """``pred`` narrowed to the messages whose participant name, as stored
    (``metadata["$message"]["name"]``), is one of ``names``, or None when ``names``
    is empty or ``pred`` allows no message (no message type, or only records
    without metadata)."""
    if not names or MESSAGE not in pred.record_types or pred.metadata is None:
        return None
    spoken = Field("$message", Nested((Field("name", In(tuple(sorted(names)))),)))
    others = () if pred.metadata is NOT_SET else pred.metadata
    return dataclasses.replace(pred, record_types=frozenset({MESSAGE}), metadata=(*others, spoken))


def _stored_name(record: Record) -> str | None:
    """A message's participant name exactly as its metadata holds it, or None."""
    fields = (record.metadata or {}).get(MESSAGE_KEY)
    name = fields.get("name") if isinstance(fields, Mapping) else None
    return name if isinstance(name, str) else None


def _unit(v: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v
