"""The topic vector of a question asking for advice (docs/retrieval.md#advice-questions-and-stated-preferences).

An advice question ("I'm planning a trip to Colorado. What outdoor adventures would
you recommend for me?") is answered by a preference the user stated ("I have a fear
of heights"). Its embedding holds two things: the topic (a trip, Colorado, outdoor
adventures) and the act of asking for advice ("What ... would you recommend for
me?"). The second is what every advice question shares, so it says nothing about
which preference answers this one; yet it draws the query vector towards whatever
stored text reads like a request for advice rather than towards what was said on
the topic.

``advice_frame`` keeps only that shared part of the question, its *frame*: the
words that ask (function words, pronouns, the advice words of
``fusion.asks_for_advice``) and its punctuation, in order, without the topic. A
HYBRID search of such a question embeds the frame in the same call as the question
(``search_texts``) and searches with two vectors (``search_vectors``): the
question's, and the question's less its frame's (``frame_removed``), the *topic
vector*; each ranks one list at half the weight of the question's one list
otherwise. Every other query is searched with its own vectors only. English words,
like ``fusion.asks_for_advice``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from oam_core.store.fusion import DEFAULT_FUSION, FusionConfig, asks_for_advice
from oam_core.store.text import FUNCTION_WORDS

__all__ = [
    "ADVICE_WORDS",
    "FRAME_WEIGHT",
    "TOPIC_SHARE",
    "advice_frame",
    "frame_removed",
    "search_texts",
    "search_vectors",
]

FRAME_WEIGHT = 1.0
"""How much of the frame's unit vector ``frame_removed`` subtracts from the
question's unit vector for the topic vector: all of it (bench/README.md: 0.3-1.0
measured; the topic list alone, in place of the question's, lost on the
conversation task at 0.5 and above)."""

TOPIC_SHARE = 0.5
"""The share of a vector list's weight (``FusionConfig.list_weight``) that each of
the question's and the topic's lists weighs, so that the two together weigh what
the question's list weighs otherwise (``fusion.list_weights``)."""

ADVICE_WORDS = frozenset(
    [
        "recommend",
        "recommendation",
        "recommendations",
        "recommended",
        "suggest",
        "suggestion",
        "suggestions",
        "advice",
        "advise",
        "idea",
        "ideas",
        "tip",
        "tips",
        "option",
        "options",
        "help",
        "plan",
        "find",
        "pick",
        "choose",
        "decide",
        "good",
        "best",
        "please",
        "i'm",
        "i've",
        "i'd",
        "you'd",
        "you're",
    ]
)
"""Words that ask for advice, besides ``text.FUNCTION_WORDS``: the vocabulary of
``fusion.asks_for_advice`` and the contracted pronouns."""

_TOKEN = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*|[^\w\s]")


def advice_frame(query: str) -> str:
    """The frame of ``query``: its function words, pronouns, advice words
    (``ADVICE_WORDS``) and punctuation, in their order and joined by spaces; the
    topic words left out.

    "I'm planning a trip to Colorado. What would you recommend for me?" gives
    "I'm a to . What would you recommend for me ?".

    Args:
        query: The text of a question asking for advice (``fusion.asks_for_advice``).

    Returns:
        The frame, ``""`` when ``query`` has none of those words. Never raises
        (docs/retrieval.md#advice-questions-and-stated-preferences).
    """
    kept = [
        token
        for token in _TOKEN.findall(query)
        if not token[0].isalnum() or _word(token) in FUNCTION_WORDS or _word(token) in ADVICE_WORDS
    ]
    return " ".join(kept) if any(t[0].isalnum() for t in kept) else ""


def search_texts(
    query: str, parts: Sequence[str], fusion: FusionConfig = DEFAULT_FUSION
) -> list[str]:
    """What a HYBRID search of ``query`` embeds: its ``parts`` (``text.chunk_text``),
    then, for a question asking for advice (``fusion.asks_for_advice``) that has
    both a frame and a topic (a word outside the frame), its frame
    (``advice_frame``; cut at a space to the longest part's length), in one
    embedder call (docs/retrieval.md#advice-questions-and-stated-preferences).

    Args:
        query: The text query.
        parts: The query's parts, searched each with its own vector.
        fusion: The fusion's settings: with ``advice_topic`` False, only ``parts``.

    Returns:
        The texts to embed, ``parts`` first. Never raises.
    """
    if not fusion.advice_topic or not asks_for_advice(query):
        return list(parts)
    frame = advice_frame(query)
    words = sum(1 for token in _TOKEN.findall(query) if token[0].isalnum())
    framed = sum(1 for token in frame.split(" ") if token[:1].isalnum())
    if not frame or framed == words:
        return list(parts)
    longest = max((len(part) for part in parts), default=len(query))
    if len(frame) > longest:  # embedded like a part: no longer than the longest
        frame = frame[: longest + 1].rsplit(" ", 1)[0] or frame[:longest]
    return [*parts, frame]


def search_vectors(
    vectors: Sequence[npt.NDArray[np.float32]], n_parts: int
) -> tuple[list[npt.NDArray[np.float32]], float]:
    """The vectors a HYBRID search ranks by, from the embeddings of ``search_texts``.

    Args:
        vectors: The embeddings of ``search_texts(query, parts)``: ``n_parts``
            part vectors, then the frame's when the query asks for advice (none at
            all without an embedder).
        n_parts: How many parts the query has (an int >= 1).

    Returns:
        ``(vectors, share)``: the part vectors, then (with a frame) the topic vector
        of each part (``frame_removed``), and the share of a vector list's weight
        each of them weighs: ``TOPIC_SHARE`` with the topic vectors, else 1.0
        (docs/retrieval.md#advice-questions-and-stated-preferences). Never raises.
    """
    if len(vectors) != n_parts + 1:
        return list(vectors), 1.0
    parts, frame = list(vectors[:n_parts]), vectors[n_parts]
    return [*parts, *frame_removed(parts, frame)], TOPIC_SHARE


def _word(token: str) -> str:
    """``token`` lower-cased, with a typographic apostrophe as a plain one."""
    return token.lower().replace("\u2019", "'")


def frame_removed(
    vectors: Sequence[npt.NDArray[np.float32]],
    frame: npt.NDArray[np.float32],
    weight: float = FRAME_WEIGHT,
) -> list[npt.NDArray[np.float32]]:
    """Each of ``vectors`` made unit length, less ``weight`` times the unit ``frame``.

    Args:
        vectors: Query vectors (1-d float arrays of one dimension).
        frame: The frame's vector, the same dimension.
        weight: How much of the frame to remove (a float >= 0).

    Returns:
        One vector per input (float32, not normalised: a cosine ranking does that).
        A vector or a frame of length zero, or a vector that is its frame's
        direction, is returned as it was. Never raises.
    """
    f = np.asarray(frame, dtype=np.float32)
    f_norm = float(np.linalg.norm(f))
    out: list[npt.NDArray[np.float32]] = []
    for vector in vectors:
        v = np.asarray(vector, dtype=np.float32)
        v_norm = float(np.linalg.norm(v))
        if v_norm == 0.0 or f_norm == 0.0:
            out.append(v)
            continue
        topic = (v / v_norm - weight * f / f_norm).astype(np.float32)
        # The question is its frame (to float precision): no topic to rank by.
        out.append(topic if float(np.linalg.norm(topic)) > 1e-3 else v)
    return out
