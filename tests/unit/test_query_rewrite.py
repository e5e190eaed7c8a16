"""Query rewriting (docs/context-card.md#query-rewriting): the reply parser, the
question and context shown to the LLM, the fusion of the two result lists, the
option's plumbing (client, create_thread/get_thread, persistence, no LLM) and the
fallbacks of the card when the LLM fails, hangs or answers garbage.

The model's own replies are tested against recorded traffic in
``test_query_rewrite_recorded.py``; here the LLMs are stand-ins that fail or hang,
or hand the parser fixed text.
"""

from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from oam_core import OracleAgentMemory, OracleThread, SQLiteMemoryStore
from oam_core.apis.llm import ILlm
from oam_core.apis.records import MessageRecord, Record
from oam_core.cli import app
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import ConfigurationError, InvalidArgumentError
from oam_core.memory.diagnostics import MemoryPipelineWarning
from oam_core.memory.jsonrepair import UnusableReplyError
from oam_core.memory.queryrewrite import (
    CONTEXT_TOKENS,
    MAX_QUERY_CHARS,
    QUESTION_TOKENS,
    RewriteInput,
    fuse_results,
    parse_rewrite_reply,
    render_rewrite_prompt,
    rewrite_input,
    rewrite_schema,
)
from oam_core.memory.tokens import estimate_tokens
from oam_core.service.common import open_thread
from oam_core.store.fusion import DistanceKind

# ------------------------------------------------------------------ the parser


@pytest.mark.parametrize(
    ("reply", "query"),
    [
        ('{"query": "peanut allergy food in Lisbon"}', "peanut allergy food in Lisbon"),
        ('Sure!\n```json\n{"query": "vegetarian dinner"}\n```', "vegetarian dinner"),
        ('{"query": "  \\"hiking boots\\"\\n size  "}', 'hiking boots" size'),
        ("{'query': 'single quotes',}", "single quotes"),
        ('Example: {"query": "..."} Answer: {"query": "movie length"}', "movie length"),
        ('{"query": "movie length"} in the form {"query": "..."}', "movie length"),
        ('{"query": "movie length"} {"query": "\u2026"}', "movie length"),
        ('{"query": "cheap flights", "why": "the user asked"}', "cheap flights"),
        ('{"query": "東京 ラーメン"}', "東京 ラーメン"),
    ],
)
def test_a_query_reply_is_read_and_cleaned(reply: str, query: str) -> None:
    assert parse_rewrite_reply(reply) == query


def test_a_long_query_is_cut() -> None:
    query = parse_rewrite_reply('{"query": "' + "word " * 200 + '"}')
    assert len(query) <= MAX_QUERY_CHARS and query.startswith("word word")


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "peanut allergy",  # prose, no JSON
        '{"query": ""}',
        '{"query": "..."}',  # the prompt's placeholder
        '{"query": "?!"}',
        '{"query": "___"}',  # "_" is neither a letter nor a digit
        '{"query": "_-_ \u00b7"}',
        '{"q": "peanuts"}',
        '{"query": ["peanuts"]}',
        '{"query": "peanut all',  # cut off by the token limit
    ],
)
def test_an_unusable_reply_is_refused(reply: str) -> None:
    with pytest.raises(UnusableReplyError):
        parse_rewrite_reply(reply)


def test_the_schema_asks_for_one_bounded_query() -> None:
    schema = rewrite_schema()
    assert schema["required"] == ["query"]
    assert schema["properties"]["query"]["maxLength"] == 200


# ----------------------------------------------- what the LLM is shown


def _message(role: str, content: str, n: int = 0) -> MessageRecord:
    return MessageRecord(id=f"m{n}", record_type="message", content=content, role=role, seq_no=n)


def test_the_last_user_message_is_the_question_and_the_ones_before_it_its_context() -> None:
    messages = [
        _message("user", "I'm flying to Lisbon in May.", 0),
        _message("assistant", "Lovely! How can I help?", 1),
        _message("user", "  ", 2),
        _message("user", "What should I eat\nthere?", 3),
        _message("assistant", "Try Tasca da Esquina.", 4),  # the reply: after the question
    ]
    source = rewrite_input(messages, "card query")
    assert source.question == "What should I eat there?"
    assert source.context == (
        ("user", "I'm flying to Lisbon in May."),
        ("assistant", "Lovely! How can I help?"),
    )
    prompt = render_rewrite_prompt(source)
    assert "Question: What should I eat there?" in prompt
    assert "user: I'm flying to Lisbon in May.\nassistant: Lovely! How can I help?" in prompt
    assert "Tasca" not in prompt
    assert '{"query": "..."}' in prompt


def test_without_a_user_message_the_card_query_is_the_question() -> None:
    source = rewrite_input([_message("assistant", "Hello", 0)], "summary text\ntopic")
    assert source == RewriteInput("summary text topic", (("assistant", "Hello"),))
    assert "(none)" in render_rewrite_prompt(RewriteInput("q"))


def test_question_and_context_are_bounded_newest_context_kept() -> None:
    long = [_message("assistant", f"reply {n} " + "x" * 3000, n) for n in range(6)]
    asked = _message("user", "start " + "y" * 5000 + " the ask?", 6)
    source = rewrite_input([*long, asked], "")
    assert source.question.endswith("the ask?")
    assert estimate_tokens(source.question) <= QUESTION_TOKENS
    shown = sum(estimate_tokens(f"{role}: {text}") for role, text in source.context)
    assert 0 < shown <= CONTEXT_TOKENS
    assert source.context[-1][1].startswith("reply 5 ")  # the newest message stays


# ----------------------------------------------------------------- the fusion


def _results(*ids: str) -> list[tuple[Record, float]]:
    return [(Record(id=i, record_type="memory", content=i), 0.1 * n) for n, i in enumerate(ids)]


def test_records_both_queries_found_come_first() -> None:
    fused = fuse_results(_results("a", "b", "c", "d"), _results("x", "c", "y", "z"), 4)
    assert [r.id for r, _ in fused] == ["c", "a", "x", "b"]
    distances = [d for _, d in fused]  # fused: 1 - score / (2 / 61), ascending
    c = 1 / 63 + 1 / 62
    assert distances == pytest.approx([1 - c * 61 / 2, 0.5, 0.5, 1 - 61 / 62 / 2])
    assert {d.kind for d in distances} == {DistanceKind.FUSED}


def test_a_message_and_a_memory_with_one_id_stay_two_results() -> None:
    """Ids are unique per record family: message "x1" and memory "x1" are two records."""
    message = (Record(id="x1", record_type="message", content="I live in Lisbon"), 0.0)
    memory = (Record(id="x1", record_type="memory", content="Ana lives in Lisbon"), 0.1)
    fused = fuse_results([memory, message], [message], 3)
    assert [(r.record_type, r.id) for r, _ in fused] == [("message", "x1"), ("memory", "x1")]


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 7])
def test_a_bad_rewrite_keeps_the_best_half_of_the_original(k: int) -> None:
    original = _results(*(f"o{n}" for n in range(k)))
    rewritten = _results(*(f"r{n}" for n in range(k)))
    fused = [r.id for r, _ in fuse_results(original, rewritten, k)]
    interleaved = [f"{side}{n}" for n in range(k) for side in "or"][:k]
    assert fused == interleaved  # ties go to the original
    assert {f"o{n}" for n in range(-(-k // 2))} <= set(fused)


def test_fusion_with_an_empty_list_is_the_other_list() -> None:
    assert fuse_results(_results("a", "b"), [], 5) == _results("a", "b")
    assert fuse_results([], _results("a", "b"), 1) == _results("a")


# ---------------------------------------------------------------- the option


class Scripted(ILlm):
    """Answers every prompt with ``reply`` (or raises ``error``); counts the calls."""

    def __init__(self, reply: str = '{"query": "q"}', error: Exception | None = None) -> None:
        self.reply, self.error = reply, error
        self.prompts: list[str] = []

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        self.prompts.append(prompt)
        if self.error is not None:
            raise self.error
        return self.reply


class Hanging(ILlm):
    """Never answers until released (for the time bound)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        self.calls += 1
        self.release.wait(30)
        return '{"query": "too late"}'


def _store(tmp_path: Path) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(str(tmp_path / "rw.db"), embedder=HashingEmbedder(64))


def test_query_rewrite_without_an_llm_is_a_configuration_error(tmp_path: Path) -> None:
    path = tmp_path / "never.db"
    with pytest.raises(ConfigurationError, match="query_rewrite"):
        OracleAgentMemory(connection=str(path), extract_memories=False, query_rewrite=True)
    assert not path.exists()  # nothing opened
    store = _store(tmp_path)
    try:
        with pytest.raises(ConfigurationError, match="query_rewrite"):
            OracleThread(store, "t", extract_memories=False, query_rewrite=True)
        client = OracleAgentMemory(store=store, extract_memories=False)
        with pytest.raises(ConfigurationError, match="query_rewrite"):
            client.create_thread(thread_id="c", query_rewrite=True)
        assert client.get_thread_row("c") is None  # nothing written
        with pytest.raises(InvalidArgumentError, match="query_rewrite"):
            OracleAgentMemory(store=store, llm=Scripted(), query_rewrite=1)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="query_rewrite"):
            client.create_thread(thread_id="d", query_rewrite="yes")
    finally:
        store.close()


def test_the_option_is_the_clients_unless_a_thread_chose(tmp_path: Path) -> None:
    store = _store(tmp_path)
    llm = Scripted()
    try:
        plain = OracleAgentMemory(store=store, llm=llm, extract_memories=False)
        assert plain.query_rewrite is False
        assert plain.create_thread(thread_id="off").query_rewrite is False
        on = plain.create_thread(thread_id="on", query_rewrite=True)
        assert on.query_rewrite is True
        assert plain.get_thread_row("on").config["query_rewrite"] is True  # type: ignore[union-attr]
        assert "query_rewrite" not in plain.get_thread_row("off").config  # type: ignore[union-attr]
        assert plain.get_thread("on").query_rewrite is True  # restored
        assert plain.get_thread("on", query_rewrite=False).query_rewrite is False
        assert plain.get_thread("off", query_rewrite=True).query_rewrite is True
        rewriting = OracleAgentMemory(
            store=store, llm=llm, extract_memories=False, query_rewrite=True
        )
        assert rewriting.get_thread("off").query_rewrite is True  # the client's
        with pytest.raises(ConfigurationError, match="query_rewrite"):
            plain.get_thread("on", llm=None)  # the persisted choice needs an LLM
        assert plain.get_thread("on", llm=None, query_rewrite=False).query_rewrite is False
        direct = OracleThread(store, "direct", llm=llm, extract_memories=False, query_rewrite=True)
        direct.add_messages([{"role": "user", "content": "hi"}])
        assert plain.get_thread("direct").query_rewrite is True  # its row says so
    finally:
        store.close()


def _chat(thread: OracleThread) -> None:
    thread.add_memory("Ana is allergic to peanuts", memory_id="allergy")
    thread.add_memory("Ana collects vinyl records", memory_id="vinyl")
    thread.add_messages(
        [
            {"role": "user", "content": "I'm flying to Lisbon in May."},
            {"role": "assistant", "content": "Lovely! How can I help?"},
            {"role": "user", "content": "What should I eat there?"},
        ]
    )


def _cards(tmp_path: Path, llm: ILlm) -> tuple[Any, Any, Any]:
    """The card with the option off, on, and on (async), of the same thread."""
    store = _store(tmp_path)
    client = OracleAgentMemory(store=store, llm=llm, extract_memories=False)
    _chat(client.create_thread(thread_id="t", user_id="ana", agent_id="bot"))
    plain = client.get_thread("t").get_context_card(max_relevant_results=3)
    thread = client.get_thread("t", query_rewrite=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rewritten = thread.get_context_card(max_relevant_results=3)
        rewritten_async = anyio.run(lambda: thread.get_context_card_async(max_relevant_results=3))
    store.close()
    return plain, (rewritten, rewritten_async), caught


@pytest.mark.parametrize(
    "llm",
    [
        Scripted("I would search for food."),  # no JSON
        Scripted('{"query": "   "}'),
        Scripted('{"query": "___"}'),  # no letter or digit
        Scripted(error=RuntimeError("model server down")),
        Scripted(error=ConfigurationError("no API key")),
    ],
    ids=["prose", "blank", "underscores", "error", "missing-key"],
)
def test_a_failed_rewrite_leaves_the_card_as_without_it(tmp_path: Path, llm: Scripted) -> None:
    plain, cards, caught = _cards(tmp_path, llm)
    assert len(llm.prompts) == 2  # one call per card, sync and async
    assert all(card == plain for card in cards)
    assert [r.id for r, _ in cards[0].relevant_results] == [r.id for r, _ in plain.relevant_results]
    rewrite_warnings = [w for w in caught if issubclass(w.category, MemoryPipelineWarning)]
    assert len(rewrite_warnings) == 2 and "query_rewrite" in str(rewrite_warnings[0].message)


def test_the_call_bound_is_the_threads_llm_call_timeout(tmp_path: Path) -> None:
    from oam_core.memory.config import MemoryExtractionConfig

    llm = Hanging()
    store = _store(tmp_path)
    try:
        client = OracleAgentMemory(store=store, llm=llm, extract_memories=False)
        _chat(client.create_thread(thread_id="t", user_id="ana", agent_id="bot"))
        plain = client.get_thread("t").get_context_card(max_relevant_results=3)
        bounded = MemoryExtractionConfig(extract_memories=False, llm_call_timeout=0.2)
        thread = client.get_thread("t", memory_extraction_config=bounded, query_rewrite=True)
        with pytest.warns(MemoryPipelineWarning, match="TimeoutError") as caught:
            card = thread.get_context_card(max_relevant_results=3)
        assert card == plain and llm.calls == 1
        # what happens is said, and nothing else: no pass is retried for a card
        (message,) = [str(w.message) for w in caught]
        assert message == (
            "query_rewrite: no usable query from the LLM (TimeoutError: Hanging did not "
            "answer within 0.2 s (llm_call_timeout)); the context card searches with its "
            "own query only"
        )
    finally:
        llm.release.set()
        store.close()


def test_off_by_default_the_llm_is_not_asked(tmp_path: Path) -> None:
    llm = Scripted()
    store = _store(tmp_path)
    try:
        client = OracleAgentMemory(store=store, llm=llm, extract_memories=False)
        thread = client.create_thread(thread_id="t", user_id="ana", agent_id="bot")
        _chat(thread)
        thread.get_context_card(max_relevant_results=3)
        assert llm.prompts == []
        rewriting = client.get_thread("t", query_rewrite=True)
        rewriting.get_context_card(max_relevant_results=0)  # no search: no rewrite
        assert llm.prompts == []
    finally:
        store.close()


def test_tools_without_an_llm_open_a_thread_created_with_query_rewrite(tmp_path: Path) -> None:
    """``oam card`` and the other tools have no LLM: a thread created with
    ``query_rewrite=True`` opens with it off for their handle (it used to raise
    ConfigurationError), and the stored setting stays for a client with an LLM."""
    db = str(tmp_path / "m.db")
    llm = Scripted('{"query": "Lisbon"}')
    with OracleAgentMemory.open(db, embedder="hashing", llm=llm, extract_memories=False) as m:
        thread = m.create_thread(thread_id="trip", user_id="ana", query_rewrite=True)
        thread.add_messages([{"role": "user", "content": "I fly to Lisbon in May"}])
    with OracleAgentMemory.open(db, embedder="hashing", extract_memories=False) as m:
        with pytest.raises(ConfigurationError, match="query_rewrite"):
            m.get_thread("trip")
        card = open_thread(m, "trip").get_context_card(max_recent_messages=1)
        assert "I fly to Lisbon in May" in card.content
    result = CliRunner().invoke(app, ["card", "trip", "--db", db, "--embedder", "hashing"])
    assert result.exit_code == 0, result.output
    assert "I fly to Lisbon in May" in result.output
    with OracleAgentMemory.open(db, embedder="hashing", llm=llm, extract_memories=False) as m:
        m.get_thread("trip").get_context_card(max_relevant_results=2)
        assert len(llm.prompts) == 1  # still on where an LLM is at hand
