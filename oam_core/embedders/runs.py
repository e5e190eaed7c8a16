"""Runs of texts through a token model once, with one vector per span of the run
("late chunking"; docs/retrieval.md#context-rows-pooled-from-one-model-run).

A *run* is a list of text parts that the model reads as one input: ``[CLS]``, the
word pieces of every part in order, ``[SEP]``. Parts are tokenized one by one; for a
WordPiece tokenizer that splits at whitespace this is the tokenization of the parts
joined by newlines. A *span* names some parts of the run (by index); its vector is
the mean of the hidden states of those parts' tokens (with ``[CLS]`` when the span
holds the first part and ``[SEP]`` when it holds the last, so a span of every part
pools what a plain embedding of the joined text pools), L2-normalised.

These helpers are pure (numpy only); ``LocalEmbedder.embed_runs`` runs the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from oam_core.errors import InvalidArgumentError

__all__ = ["PackedRun", "pack_run", "pool_spans", "span_positions"]


@dataclass(frozen=True)
class PackedRun:
    """One run as model input.

    Attributes:
        ids: ``[CLS]``, every part's word-piece ids, ``[SEP]``.
        starts: Per part, the position in ``ids`` of its first token.
        ends: Per part, the position just past its last token (equal to its start
            for a part without tokens).
    """

    ids: list[int]
    starts: list[int]
    ends: list[int]


def pack_run(part_ids: Sequence[Sequence[int]], cls_id: int, sep_id: int) -> PackedRun:
    """The model input of a run whose parts tokenize to ``part_ids`` (each without
    special tokens)."""
    ids = [cls_id]
    starts: list[int] = []
    ends: list[int] = []
    for piece in part_ids:
        starts.append(len(ids))
        ids.extend(piece)
        ends.append(len(ids))
    ids.append(sep_id)
    return PackedRun(ids, starts, ends)


def span_positions(run: PackedRun, span: Sequence[int]) -> list[int]:
    """Token positions a span pools: its parts' tokens in order, with ``[CLS]`` when
    it holds part 0 and ``[SEP]`` when it holds the last part.

    Raises:
        InvalidArgumentError: for an empty span or a part index out of range.
    """
    count = len(run.starts)
    if not span or any(not 0 <= p < count for p in span):
        raise InvalidArgumentError(f"span {list(span)!r} names no part of a {count}-part run")
    positions = [0] if 0 in span else []
    for part in sorted(set(span)):
        positions.extend(range(run.starts[part], run.ends[part]))
    if count - 1 in span:
        positions.append(len(run.ids) - 1)
    return positions


def pool_spans(
    hidden: npt.NDArray[np.float32], run: PackedRun, spans: Sequence[Sequence[int]]
) -> npt.NDArray[np.float32]:
    """Mean-pooled, L2-normalised vectors of ``spans`` from one run's hidden states.

    Args:
        hidden: float32 ``(tokens, dim)``, the model's last hidden states for
            ``run.ids`` (padding removed or ignored: only listed positions are read).
        run: The packed run.
        spans: Per output row, the part indices it pools (non-empty).

    Returns:
        float32 ``(len(spans), dim)``, unit rows (a zero mean stays zero).

    Raises:
        InvalidArgumentError: for an empty span or a part index out of range.
    """
    out = np.zeros((len(spans), hidden.shape[1]), dtype=np.float32)
    for row, span in enumerate(spans):
        mean = hidden[span_positions(run, span)].astype(np.float64).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        out[row] = (mean / max(norm, 1e-12)).astype(np.float32)
    return out
