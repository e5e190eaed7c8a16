"""Message rows pooled from runs of messages read by the model once
(oam_core/embedders/runs.py, oam_core/memory/latechunk.py, ``LocalEmbedder.embed_runs``;
docs/retrieval.md#context-rows-pooled-from-one-model-run)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from oam_core import OracleAgentMemory
from oam_core.apis.thread import Message
from oam_core.embedders.runs import pack_run, pool_spans, span_positions
from oam_core.errors import InvalidArgumentError
from oam_core.memory import indexing, latechunk
from oam_core.memory.indexing import message_rows, store_row_vectors
from oam_core.memory.latechunk import RunEmbedder, plan_runs, run_row_vectors

try:
    from oam_core.embedders.local import LocalEmbedder

    LocalEmbedder()
    HAVE_LOCAL = True
except ImportError:  # pragma: no cover - the local extra is not installed
    HAVE_LOCAL = False


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    if not HAVE_LOCAL:
        pytest.skip('needs pip install "oam[local]"')
    embedder = LocalEmbedder()
    embedder.load()
    return embedder


def words(texts: Sequence[str]) -> list[int]:
    """A token count for plans: one token a word."""
    return [len(t.split()) for t in texts]


def msg(content: str, name: str | None = None) -> Message:
    metadata = {"$message": {"name": name}} if name else None
    return Message(role="user", content=content, metadata=metadata)


# -- pure helpers ----------------------------------------------------------------------


def test_pack_run_places_parts_between_cls_and_sep() -> None:
    run = pack_run([[5, 6], [], [7]], cls_id=101, sep_id=102)
    assert run.ids == [101, 5, 6, 7, 102]
    assert run.starts == [1, 3, 3] and run.ends == [3, 3, 4]
    assert span_positions(run, [0]) == [0, 1, 2]  # [CLS] with the first part
    assert span_positions(run, [2]) == [3, 4]  # [SEP] with the last
    assert span_positions(run, [1]) == []
    assert span_positions(run, [2, 0]) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("span", [[], [3], [-1]])
def test_a_span_naming_no_part_is_refused(span: list[int]) -> None:
    run = pack_run([[5], [6], [7]], cls_id=101, sep_id=102)
    with pytest.raises(InvalidArgumentError):
        span_positions(run, span)


def test_pool_spans_is_the_normalised_mean_of_the_span_tokens() -> None:
    run = pack_run([[5], [6, 7]], cls_id=101, sep_id=102)
    hidden = np.array([[1, 0], [0, 2], [3, 0], [0, 0], [0, 4]], dtype=np.float32)
    first, second = pool_spans(hidden, run, [[0], [1]])
    # [CLS] (1, 0) + part 0 (0, 2): mean (0.5, 1.0); part 1 (3, 0), (0, 0) + [SEP] (0, 4).
    np.testing.assert_allclose(first, np.array([0.5, 1.0]) / np.hypot(0.5, 1.0), atol=1e-6)
    np.testing.assert_allclose(second, np.array([3.0, 4.0]) / 5.0, atol=1e-6)


# -- planning --------------------------------------------------------------------------


@pytest.fixture
def pooled_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Own rows pooled from the runs too (``POOL_OWN_ROWS``)."""
    monkeypatch.setattr(latechunk, "POOL_OWN_ROWS", True)


def test_by_default_own_rows_are_embedded_as_text_and_context_rows_pooled() -> None:
    turns = [msg("one two"), msg("three"), msg("four five six")]
    rows = message_rows(turns, None, 896)
    plan = plan_runs(rows.texts, rows.pieces, rows.labels, words, budget=100)
    assert plan.runs == [["one two", "three", "four five six"]]
    assert plan.spans == [[[0, 1], [0, 1, 2]]]
    assert plan.targets == [[(1, 1), (2, 1)]]
    assert plan.plain == [(0, 0, "one two"), (1, 0, "three"), (2, 0, "four five six")]


def test_a_run_starts_with_what_its_first_message_quotes_and_holds_the_next_ones(
    pooled_own: None,
) -> None:
    turns = [msg("one two"), msg("three"), msg("four five six"), msg("seven")]
    rows = message_rows(turns, msg("zero"), 896)
    plan = plan_runs(rows.texts, rows.pieces, rows.labels, words, budget=100)
    assert plan.runs == [["zero", "one two", "three", "four five six", "seven"]]
    assert plan.plain == []
    # Own rows pool their own part; context rows the quoted parts and their own.
    assert plan.spans == [[[1], [0, 1], [2], [0, 1, 2], [3], [1, 2, 3], [4], [2, 3, 4]]]
    assert plan.targets == [[(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1)]]


def test_a_full_run_hands_on_to_a_run_starting_with_the_quoted_messages(pooled_own: None) -> None:
    turns = [msg("a b c"), msg("d e f"), msg("g h i"), msg("j k l")]
    rows = message_rows(turns, None, 896)
    plan = plan_runs(rows.texts, rows.pieces, rows.labels, words, budget=9)
    assert plan.runs == [["a b c", "d e f", "g h i"], ["d e f", "g h i", "j k l"]]
    assert plan.spans[1] == [[2], [0, 1, 2]]
    assert plan.targets[1] == [(3, 0), (3, 1)]


def test_the_day_prefix_is_its_own_part_of_the_own_row_only(pooled_own: None) -> None:
    from datetime import datetime, timezone

    day = datetime(2023, 5, 8, 13, 0, tzinfo=timezone.utc)
    turns = [
        Message(role="user", content="I paint.", timestamp=day),
        Message(role="user", content="Landscapes?", timestamp=day),
    ]
    rows = message_rows(turns, None, 896)
    plan = plan_runs(rows.texts, rows.pieces, rows.labels, words)
    assert plan.runs == [["[8 May 2023]", "I paint.", "[8 May 2023]", "Landscapes?"]]
    # Own rows: day and text; the context row: the two texts (its stored text has no day).
    assert plan.spans == [[[0, 1], [2, 3], [1, 3]]]


def test_long_and_blank_messages_are_not_pooled(pooled_own: None) -> None:
    turns = [msg("x" * 60), msg("   "), msg("short one")]
    rows = message_rows(turns, None, 25)
    plan = plan_runs(rows.texts, rows.pieces, rows.labels, words)
    assert [(i, r) for i, r, _ in plan.plain] == [(0, r) for r in range(len(rows.texts[0]))]
    # The short message quotes the long one cut to fit: it starts its own run.
    assert plan.runs == [[rows.texts[2][1].split("\n")[0], "short one"]]


# -- the model -------------------------------------------------------------------------

EXCHANGE = [
    "Ana: Have you ever been to Paris?",
    "Ben: Yes, twice last year!",
    "Ana: Which museum did you like best?",
]


def test_a_span_of_the_whole_run_is_the_plain_embedding(local: LocalEmbedder) -> None:
    (vectors,) = local.embed_runs([EXCHANGE], [[[0, 1, 2], [1]]])
    plain = local.embed(["\n".join(EXCHANGE)])[0]
    np.testing.assert_allclose(vectors[0], plain, atol=1e-5)
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert local.count_tokens(["Yes, twice last year!"]) == [6]


def test_a_pooled_reply_carries_the_question_it_answers(local: LocalEmbedder) -> None:
    (vectors,) = local.embed_runs([EXCHANGE[:2]], [[[1]]])
    reply_alone = local.embed([EXCHANGE[1]])[0]
    query = local.embed(["trips to Paris"], is_query=True)[0]
    # Read after the question, the short reply is about Paris; alone it is not.
    assert float(query @ vectors[0]) > float(query @ reply_alone) + 0.1


def test_a_run_longer_than_the_model_window_embeds_each_span_as_text(
    local: LocalEmbedder,
) -> None:
    parts = ["alpha " * 150, "beta " * 150]
    (vectors,) = local.embed_runs([parts], [[[1], [0, 1]]])
    plain = local.embed([parts[1], "\n".join(parts)])
    np.testing.assert_allclose(vectors, plain, atol=1e-6)


def test_runs_and_spans_must_pair_up(local: LocalEmbedder) -> None:
    with pytest.raises(InvalidArgumentError):
        local.embed_runs([EXCHANGE], [])
    with pytest.raises(InvalidArgumentError):
        local.embed_runs([EXCHANGE], [[[3]]])


def test_the_local_embedder_has_the_capability_and_others_need_not(
    local: LocalEmbedder,
) -> None:
    from oam_core.embedders.hashing import HashingEmbedder

    assert isinstance(local, RunEmbedder)
    assert not isinstance(HashingEmbedder(), RunEmbedder)


def test_progress_counts_messages_and_matches_one_call(
    local: LocalEmbedder, pooled_own: None
) -> None:
    turns = [msg(f"Message number {i} about topic {i % 3}.") for i in range(11)]
    rows = message_rows(turns, None, 896)
    plan = plan_runs(rows.texts, rows.pieces, rows.labels, local.count_tokens, budget=40)
    assert len(plan.runs) > 2

    def embed(texts: list[str]) -> npt.NDArray[np.float32]:
        return local.embed(texts)

    whole = run_row_vectors(rows.texts, plan, local, embed, 384)
    steps: list[int] = []
    stepped = run_row_vectors(rows.texts, plan, local, embed, 384, on_progress=steps.append)
    assert sum(steps) == 11 and len(steps) > 1
    for a, b in zip(whole, stepped, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("pool_own", [False, True])
def test_add_messages_pools_rows_when_on(
    local: LocalEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool_own: bool
) -> None:
    monkeypatch.setattr(indexing, "LATE_CHUNK", True)
    monkeypatch.setattr(latechunk, "POOL_OWN_ROWS", pool_own)
    memory = OracleAgentMemory.open(
        f"sqlite:///{tmp_path / 'm.db'}", embedder=local, extract_memories=False
    )
    turns = [msg(t.split(": ", 1)[1], t.split(": ", 1)[0]) for t in EXCHANGE]
    rows = message_rows(turns, None, memory.store.chunk_chars)
    vectors = store_row_vectors(memory.store, rows)
    # The third message's context row quotes the whole run: its plain embedding.
    np.testing.assert_allclose(vectors[2][1], local.embed([rows.texts[2][1]])[0], atol=1e-5)
    # The second's quotes part of the run: read with the third, not its plain embedding.
    assert float(vectors[1][1] @ local.embed([rows.texts[1][1]])[0]) < 0.999
    own = float(vectors[1][0] @ local.embed([rows.texts[1][0]])[0])
    if pool_own:  # read in the run: not the plain embedding of its text
        assert own < 0.99
    else:  # embedded as its text, whatever the run
        assert own == pytest.approx(1.0, abs=1e-5)
    thread = memory.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": t} for t in EXCHANGE])
    hits = memory.store.search("Which museum in Paris?", k=1, record_types={"message"})
    assert [str(h.content) for h, _ in hits] == [EXCHANGE[2]]
    memory.close()
