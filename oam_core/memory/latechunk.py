"""Message row vectors pooled from runs of consecutive messages read by the model once
(docs/retrieval.md#context-rows-pooled-from-one-model-run).

``MessageRows.vectors`` embeds every own row and every context row (the two messages
before a message and itself): about four times a message's text goes through the
model. With an embedder that can read a run of texts once and pool one vector per
span of it (``LocalEmbedder.embed_runs``, found with ``getattr``), consecutive
messages of one ``add_messages`` / ``write_thread`` call are packed into runs of at
most ``RUN_TOKENS`` word pieces: each run starts with the earlier messages the first
of its messages quotes in its context row, then the messages themselves. A message's
context row vector is the mean of the hidden states of the quoted messages' and its
own labelled text's tokens; its own row is embedded as its text (``POOL_OWN_ROWS``
off), or pooled from its own tokens, day prefix included (on). Every message's text
so goes through the model about twice (once with own rows pooled) instead of four
times.

The pooled vectors depend on the run a message falls in: the model reads the whole
run at once (its attention is not causal), so the same message ingested one call at
a time or in calls of 20 gets different context row vectors (own rows too when
pooled). bench/README.md#late-chunked-message-rows
measures what this does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["RUN_TOKENS", "RunEmbedder", "RunPlan", "plan_runs", "run_row_vectors"]

POOL_OWN_ROWS = False
"""Whether a message's own row is pooled from its run too. Off: own rows are embedded
as their text (as before, whatever the calls), only the context rows are pooled; on
the LoCoMo dev set recall_all@10 0.712 (as before) with the ingest ratio 0.52-0.57,
against 0.718 and 0.68-1.03 with own rows pooled, whose vectors then depend on the call
(bench/README.md#late-chunked-message-rows)."""

RUN_TOKENS = 256
"""Most word pieces (without the two special tokens) a run holds; a message that does
not fit beside the earlier messages it quotes starts a new run. Runs longer than the
model's 256-piece window (with the special tokens) are embedded span by span as text
by ``LocalEmbedder.embed_runs``. With own rows as text, 256 gave ingest ratios 0.52 and
0.57 where 128 gave 0.35-0.57, at the same LoCoMo recall (bench/README.md)."""


@runtime_checkable
class RunEmbedder(Protocol):
    """What the pooled path needs of an embedder (``LocalEmbedder`` has it)."""

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces of each text, without special tokens."""
        ...

    def embed_runs(
        self, runs: Sequence[Sequence[str]], spans: Sequence[Sequence[Sequence[int]]]
    ) -> list[npt.NDArray[np.float32]]:
        """Per run, one unit vector per span (``LocalEmbedder.embed_runs``)."""
        ...


@dataclass
class _Run:
    parts: list[str] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)  # indices of labelled-text parts
    tokens: int = 0
    spans: list[list[int]] = field(default_factory=list)
    targets: list[tuple[int, int]] = field(default_factory=list)  # (message, row)


@dataclass(frozen=True)
class RunPlan:
    """Runs to read and where each pooled vector goes.

    Attributes:
        runs: Per run, its parts.
        spans: Per run, the part indices each output vector pools.
        targets: Per run, per span, ``(message index, row index)`` of the row it vectors.
        plain: ``(message index, row index, text)`` of rows embedded as text (chunks
            of long messages).
    """

    runs: list[list[str]]
    spans: list[list[list[int]]]
    targets: list[list[tuple[int, int]]]
    plain: list[tuple[int, int, str]]


def plan_runs(
    texts: Sequence[Sequence[str]],
    pieces: Sequence[Sequence[tuple[str, int | None]]],
    labels: Sequence[str],
    count_tokens: Callable[[Sequence[str]], list[int]],
    budget: int | None = None,
) -> RunPlan:
    """Pack the rows of a run of messages (``MessageRows`` fields) into model runs.

    A message whose own text is one row joins the current run when the run ends with
    the earlier messages its context row quotes and its own parts fit in ``budget``;
    otherwise it starts a run holding those earlier messages. Other rows (chunks of a
    long message) are listed in ``plain``. ``budget``: most word pieces a run holds
    (None: ``RUN_TOKENS``).
    """
    budget = RUN_TOKENS if budget is None else budget
    counted = sorted({t for t in labels if t} | {p for row in pieces for p, _ in row})
    days = {
        i: _day_part(texts[i][0], labels[i])
        for i in range(len(texts))
        if _single(i, texts, pieces, labels)
    }
    counted += [d for d in days.values() if d]
    tokens = dict(zip(counted, count_tokens(counted), strict=True))
    runs: list[_Run] = []
    plain: list[tuple[int, int, str]] = []
    current: _Run | None = None
    for i, rows in enumerate(texts):
        if i not in days:
            plain.extend((i, r, t) for r, t in enumerate(rows))
            continue
        quoted = [t for t, _ in pieces[i][:-1]]
        day = days[i]
        need = tokens[labels[i]] + (tokens[day] if day else 0)
        tail = (
            [current.parts[k] for k in current.labels[len(current.labels) - len(quoted) :]]
            if current
            else []
        )
        if current is None or tail != quoted or current.tokens + need > budget:
            current = _Run()
            runs.append(current)
            for text in quoted:
                current.labels.append(len(current.parts))
                current.parts.append(text)
                current.tokens += tokens[text]
        own: list[int] = []
        if day:
            own.append(len(current.parts))
            current.parts.append(day)
        own.append(len(current.parts))
        current.labels.append(len(current.parts))
        current.parts.append(labels[i])
        current.tokens += need
        if POOL_OWN_ROWS:
            current.spans.append(own)
            current.targets.append((i, 0))
        else:
            plain.append((i, 0, rows[0]))
        if pieces[i]:
            current.spans.append(current.labels[len(current.labels) - len(pieces[i]) :])
            current.targets.append((i, len(rows) - 1))
    runs = [r for r in runs if r.spans]
    return RunPlan(
        [r.parts for r in runs], [r.spans for r in runs], [r.targets for r in runs], plain
    )


def run_row_vectors(
    texts: Sequence[Sequence[str]],
    plan: RunPlan,
    embedder: RunEmbedder,
    embed: Callable[[list[str]], npt.NDArray[np.float32]],
    dim: int,
    *,
    on_progress: Callable[[int], None] | None = None,
    step: int = 4,
) -> list[npt.NDArray[np.float32]]:
    """The vectors of every row of ``plan``.

    Args:
        texts: The rows of each message (``MessageRows.texts``).
        plan: ``plan_runs`` of those rows.
        embedder: Reads the runs (``embed_runs``).
        embed: Embeds the ``plan.plain`` texts (the store's embedder call).
        dim: The vector dimension.
        on_progress: Called with a number of messages done after each group of runs
            covering at least ``step`` messages (the counts add up to
            ``len(texts)``); None: every run in one ``embed_runs`` call.
        step: Messages per progress step (at least 1).

    Returns:
        Per message a float32 array ``(len(texts[i]), dim)``, rows in the order of
        ``texts[i]``.
    """
    out = [np.zeros((len(rows), dim), dtype=np.float32) for rows in texts]
    work = sorted(
        [(min(i for i, _ in targets), "run", r) for r, targets in enumerate(plan.targets)]
        + [(i, "plain", k) for k, (i, _, _) in enumerate(plan.plain)]
    )
    groups: list[list[tuple[int, str, int]]] = [work] if on_progress is None else []
    if on_progress is not None:
        for item in work:
            if not groups or _last_message(groups[-1], plan) - groups[-1][0][0] + 1 >= step:
                groups.append([])
            groups[-1].append(item)
    done = 0
    for group in groups:
        runs = [k for _, kind, k in group if kind == "run"]
        plain = [plan.plain[k] for _, kind, k in group if kind == "plain"]
        if runs:
            vectors = embedder.embed_runs(
                [plan.runs[r] for r in runs], [plan.spans[r] for r in runs]
            )
            for r, pooled in zip(runs, vectors, strict=True):
                for (i, row), vector in zip(plan.targets[r], pooled, strict=True):
                    out[i][row] = vector
        if plain:
            for (i, row, _), vector in zip(plain, embed([t for _, _, t in plain]), strict=True):
                out[i][row] = vector
        if on_progress is not None and group is not groups[-1]:
            reached = max(done, _last_message(group, plan) + 1)
            on_progress(reached - done)
            done = reached
    if on_progress is not None:
        on_progress(len(texts) - done)
    return out


def _last_message(group: Sequence[tuple[int, str, int]], plan: RunPlan) -> int:
    """The highest message index a group of work items vectors."""
    return max(
        max(i for i, _ in plan.targets[k]) if kind == "run" else plan.plain[k][0]
        for _, kind, k in group
    )


def _single(
    i: int,
    texts: Sequence[Sequence[str]],
    pieces: Sequence[Sequence[tuple[str, int | None]]],
    labels: Sequence[str],
) -> bool:
    """Whether message ``i``'s own text is one row (so it can be pooled from a run)."""
    own_rows = len(texts[i]) - (1 if pieces[i] else 0)
    return bool(labels[i]) and own_rows == 1 and texts[i][0].endswith(labels[i])


def _day_part(own_row: str, label: str) -> str:
    """The day prefix of an own row (``"[8 May 2023]"``), or ``""``."""
    return own_row[: len(own_row) - len(label)].strip()
