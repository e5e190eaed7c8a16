"""How a message's search rows get their vectors when messages are written
(oam_core/memory/indexing.py ``MessageRows.vectors``; docs/store.md#search-rows-that-quote-other-messages):
own rows are embedded, context rows are vectored from the own rows' vectors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from oam_core import OracleAgentMemory
from oam_core.apis.thread import Message
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import InvalidArgumentError
from oam_core.ingest import Conversation
from oam_core.ingest_writer import write_conversations
from oam_core.memory import indexing
from oam_core.memory.indexing import EMBED_STEP, message_rows


class CountingEmbedder:
    """The hashing embedder, recording every text it is asked to embed, per call."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.calls: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        return np.asarray(self.inner.embed(list(texts)), dtype=np.float32)


def msg(content: str, name: str | None = None) -> Message:
    metadata = {"$message": {"name": name}} if name else None
    return Message(role="user", content=content, metadata=metadata)


def unit(v: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = v / np.linalg.norm(v)
    return out


def test_context_row_vector_is_the_sqrt_length_weighted_mean_of_the_own_rows() -> None:
    turns = [msg("I adopted a dog.", "Ana"), msg("What breed?", "Ben"), msg("A beagle.", "Ana")]
    rows = message_rows(turns, None, 896)
    embed = CountingEmbedder()
    vectors = rows.vectors(embed)
    # One model pass, over the own rows only: no context row text is embedded.
    assert embed.calls == [["Ana: I adopted a dog.", "Ben: What breed?", "Ana: A beagle."]]
    own = embed.inner.embed([r[0] for r in rows.texts])
    assert [v.shape for v in vectors] == [(1, own.shape[1]), (2, own.shape[1]), (2, own.shape[1])]
    for i in range(3):
        np.testing.assert_allclose(vectors[i][0], own[i], atol=1e-6)
    lengths = [len("Ana: I adopted a dog."), len("Ben: What breed?"), len("Ana: A beagle.")]
    expected = unit(sum(n**0.5 * own[k].astype(np.float64) for k, n in enumerate(lengths)))
    np.testing.assert_allclose(vectors[2][1], expected, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors[2][1]), 1.0, atol=1e-6)


def test_previous_and_cut_parts_are_embedded_as_quoted() -> None:
    # The previous message comes from the store: its quoted text is embedded once.
    rows = message_rows([msg("hi"), msg("x")], msg("hello"), 896)
    assert rows.texts == [["hi", "hello\nhi"], ["x", "hello\nhi\nx"]]
    embed = CountingEmbedder()
    vectors = rows.vectors(embed)
    assert embed.calls == [["hi", "hello", "x"]]
    hi, hello, x = embed.inner.embed(["hi", "hello", "x"])
    np.testing.assert_allclose(vectors[0][1], unit(5**0.5 * hello + 2**0.5 * hi), atol=1e-6)
    np.testing.assert_allclose(vectors[1][1], unit(5**0.5 * hello + 2**0.5 * hi + x), atol=1e-6)
    # A part cut to fit is embedded as cut, not as the message's whole text.
    rows = message_rows([msg("b" * 40), msg("c" * 10)], None, 25)
    cut = rows.texts[1][1].split("\n")[0]
    assert cut != "b" * 40
    embed = CountingEmbedder()
    rows.vectors(embed)
    assert cut in embed.calls[0]


def test_steps_keep_order_equal_one_call_and_report_progress_per_call() -> None:
    turns = [
        msg(f"turn number {i} " + "word " * (i % 7), "Ana" if i % 2 else "Ben") for i in range(11)
    ]
    rows = message_rows(turns, None, 896)
    whole = rows.vectors(CountingEmbedder())
    embed = CountingEmbedder()
    done: list[int] = []
    stepped = rows.vectors(embed, on_progress=done.append, step=4)
    assert len(embed.calls) == 3 and done == [4, 4, 3]
    for a, b in zip(whole, stepped, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_a_blank_or_long_message_has_no_context_row_but_others_still_do() -> None:
    turns = [msg("first"), msg("   "), msg("word " * 12), msg("last")]
    rows = message_rows(turns, None, 40)
    embed = CountingEmbedder()
    vectors = rows.vectors(embed)
    assert [v.shape[0] for v in vectors] == [len(t) for t in rows.texts] == [1, 0, 2, 2]
    # The long message is quoted cut: that part is embedded as quoted.
    assert rows.texts[3][1] in {"\n".join([p, "last"]) for p in [rows.texts[3][1].split("\n")[0]]}
    assert rows.texts[3][1].split("\n")[0] in embed.calls[0]


@pytest.mark.parametrize("derive", [True, False])
def test_add_messages_embeds_context_row_text_only_when_not_deriving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, derive: bool
) -> None:
    monkeypatch.setattr(indexing, "DERIVE_CONTEXT_VECTORS", derive)
    embedder = HashingEmbedder()
    original = embedder.embed
    seen: list[str] = []

    def spying(texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        seen.extend(texts)
        return np.asarray(original(texts, is_query=is_query), dtype=np.float32)

    embedder.embed = spying  # type: ignore[method-assign]
    memory = OracleAgentMemory.open(
        f"sqlite:///{tmp_path / 'm.db'}", embedder=embedder, extract_memories=False
    )
    thread = memory.create_thread(user_id="u1")
    thread.add_messages([{"role": "user", "content": "I adopted a dog."}])
    thread.add_messages(
        [{"role": "assistant", "content": "What breed?"}, {"role": "user", "content": "Beagle."}]
    )
    own = ["I adopted a dog.", "What breed?", "Beagle."]
    if derive:
        # Own rows (and the one earlier message quoted from the store), no context row.
        assert seen == ["I adopted a dog.", "What breed?", "I adopted a dog.", "Beagle."]
    else:
        # The default: own rows and each context row's text.
        assert [t for t in seen if t in own] == own
        context = [t for t in seen if t not in own]
        assert len(context) == 2 and all("\n" in t for t in context)
        assert "adopted" in context[0] and "breed" in context[1]
    # The context rows are stored: the replies are found by the words they quote.
    hits = memory.store.search("adopted", k=3, record_types={"message"})
    assert sorted(str(h.content) for h, _ in hits) == ["Beagle.", "I adopted a dog.", "What breed?"]
    memory.close()


def test_write_conversations_reports_progress_while_a_thread_is_embedded(tmp_path: Path) -> None:
    n = 2 * EMBED_STEP + 1
    messages = [{"role": "user", "content": f"message {i}"} for i in range(n)]
    memory = OracleAgentMemory.open(
        f"sqlite:///{tmp_path / 'i.db'}", embedder="hashing", extract_memories=False
    )
    calls: list[tuple[str, int]] = []
    conversation = Conversation(thread_id="t1", messages=messages, user_id="u1", agent_id="a1")
    written, skipped = write_conversations(
        memory, [conversation], on_progress=lambda t, c: calls.append((t, c))
    )
    assert (written, skipped) == (n, 0)
    assert calls == [("t1", EMBED_STEP), ("t1", EMBED_STEP), ("t1", 1)]
    memory.close()


@pytest.mark.parametrize("step", [0, -1, 1.5, True])
def test_a_bad_step_is_refused_before_any_embedding(step: object) -> None:
    embed = CountingEmbedder()
    with pytest.raises(InvalidArgumentError, match="step must be a positive int"):
        message_rows([msg("hi")], None, 896).vectors(embed, step=step)  # type: ignore[arg-type]
    assert embed.calls == []


def test_a_thread_written_with_embedded_context_rows_reads_and_grows_the_same(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    old = [Message(role="user", content="I adopted a dog."), Message(role="user", content="Rex.")]
    memory = OracleAgentMemory.open(url, embedder=HashingEmbedder(), extract_memories=False)
    thread = memory.create_thread(user_id="u1")
    # As before: the context row's text embedded by the store.
    rows = message_rows(old, None, memory.store.chunk_chars).texts
    thread.add_messages(old, index_texts=rows)
    tid = thread.thread_id
    memory.close()
    embedder = HashingEmbedder()
    memory = OracleAgentMemory.open(url, embedder=embedder, extract_memories=False)
    thread = memory.get_thread(tid)
    thread.add_messages([{"role": "user", "content": "He is a beagle."}])
    assert [m.content for m in thread.get_messages()] == [
        "I adopted a dog.",
        "Rex.",
        "He is a beagle.",
    ]
    # The old context row is found by its embedded text, the new one by its words.
    query = embedder.embed(["I adopted a dog.\nRex."])[0]
    hits = memory.store.search(query_vector=query, k=1, record_types={"message"})
    assert [h.content for h, _ in hits] == ["Rex."]
    hits = memory.store.search("adopted", k=3, record_types={"message"})
    assert sorted(str(h.content) for h, _ in hits) == [
        "He is a beagle.",
        "I adopted a dog.",
        "Rex.",
    ]
    memory.close()


def test_without_deriving_the_context_row_text_is_embedded_in_the_same_calls() -> None:
    turns = [msg("I adopted a dog.", "Ana"), msg("What breed?", "Ben"), msg("A beagle.", "Ana")]
    rows = message_rows(turns, None, 896)
    embed = CountingEmbedder()
    done: list[int] = []
    vectors = rows.vectors(embed, on_progress=done.append, step=2, derive_context=False)
    assert embed.calls == [rows.texts[0] + rows.texts[1], rows.texts[2]] and done == [2, 1]
    for texts, got in zip(rows.texts, vectors, strict=True):
        np.testing.assert_allclose(got, embed.inner.embed(texts), atol=1e-6)
