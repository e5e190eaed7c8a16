"""Extraction and summary replies, prompt budgets (SPEC §7): pure functions, no LLM."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oam_core.apis.records import Record
from oam_core.memory.diagnostics import MemoryPipelineWarning
from oam_core.memory.extraction import (
    MAX_MEMORIES_PER_PASS,
    ExtractedMemory,
    PromptMessage,
    parse_extraction_reply,
    render_extraction_prompt,
)
from oam_core.memory.jsonrepair import UnusableReplyError
from oam_core.memory.runningsummary import MAX_TOPICS, normalize_topics, parse_summary_reply
from oam_core.memory.summary import RunningSummary


def _one(text: str, record_type: str = "fact", **extra: Any) -> str:
    return json.dumps({"memories": [{"text": text, "record_type": record_type, **extra}]})


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (_one("Ana likes tea"), [ExtractedMemory("Ana likes tea", "fact", None, ())]),
        # a bare list, a single object, plain strings
        ('[{"text": "a", "record_type": "memory"}]', [ExtractedMemory("a", "memory", None, ())]),
        (
            '{"text": "b", "record_type": "guideline"}',
            [ExtractedMemory("b", "guideline", None, ())],
        ),
        ('{"memories": ["c"]}', [ExtractedMemory("c", "memory", None, ())]),
        ('{"memories": {"text": "d"}}', [ExtractedMemory("d", "memory", None, ())]),
        ('{"memories": null}', []),
        ('{"memories": []}', []),
        # fences and prose
        ("```json\n" + _one("e") + "\n```", [ExtractedMemory("e", "fact", None, ())]),
        ("Here you go: " + _one("f") + " Hope it helps!", [ExtractedMemory("f", "fact", None, ())]),
        # types: case, plurals, unknown
        (_one("g", "Preferences"), [ExtractedMemory("g", "preference", None, ())]),
        (_one("h", "opinion"), [ExtractedMemory("h", "memory", None, ())]),
        (_one("i", None), [ExtractedMemory("i", "memory", None, ())]),
        # timestamps: parsed to UTC ISO, junk dropped
        (
            _one("j", timestamp="2024-03-10"),
            [ExtractedMemory("j", "fact", "2024-03-10T00:00:00.000000+00:00", ())],
        ),
        (_one("k", timestamp="next tuesday"), [ExtractedMemory("k", "fact", None, ())]),
        # supersedes labels: normalized, unknown shapes dropped, deduplicated
        (
            _one("l", supersedes=["m1", "M2", "x", 3, "M2"]),
            [ExtractedMemory("l", "fact", None, ("M1", "M2"))],
        ),
        (_one("m", supersedes="M3"), [ExtractedMemory("m", "fact", None, ("M3",))]),
        # blanks, non-dicts, duplicates, lone surrogates
        (
            '{"memories": [{"text": "  "}, 5, {"no": "text"}, {"text": "n"}, {"text": "N"}]}',
            [ExtractedMemory("n", "memory", None, ())],
        ),
        ('{"memories": [{"text": "o\\ud800p"}]}', [ExtractedMemory("op", "memory", None, ())]),
    ],
)
def test_extraction_reply_cases(reply: str, expected: list[ExtractedMemory]) -> None:
    assert parse_extraction_reply(reply) == expected


@pytest.mark.parametrize(
    "reply", ["", "I cannot help with that.", "42", '{"summary": "x"}', "[1, 2"]
)
def test_unusable_extraction_replies(reply: str) -> None:
    with pytest.raises(UnusableReplyError):
        parse_extraction_reply(reply)


def test_more_than_the_cap_is_cut_with_a_warning() -> None:
    reply = json.dumps({"memories": [{"text": f"t{i}"} for i in range(MAX_MEMORIES_PER_PASS + 7)]})
    with pytest.warns(MemoryPipelineWarning, match=f"{MAX_MEMORIES_PER_PASS + 7} memories"):
        memories = parse_extraction_reply(reply)
    assert [m.text for m in memories] == [f"t{i}" for i in range(MAX_MEMORIES_PER_PASS)]


@given(st.lists(st.text(min_size=1, max_size=30), max_size=20))
def test_topics_are_normalized_in_order(values: list[str]) -> None:
    topics = normalize_topics(values)
    assert len(topics) <= MAX_TOPICS
    assert len(set(topics)) == len(topics)
    assert all(t == t.strip().lower() and t for t in topics)
    expected: list[str] = []
    for value in values:
        norm = " ".join(value.split()).lower()
        norm = "".join(
            ch for ch in norm if not 0xD800 <= ord(ch) <= 0xDFFF and ch != "\x00"
        ).strip()
        if norm and norm not in expected:
            expected.append(norm)
    assert list(topics) == expected[:MAX_TOPICS]


def test_summary_replies() -> None:
    reply = json.dumps({"summary": " Ana plans a trip. ", "topics": ["Travel", " travel ", "Food"]})
    assert parse_summary_reply(reply) == RunningSummary("Ana plans a trip.", ("travel", "food"))
    for bad in ('{"summary": "  "}', '{"topics": []}', "[1]", "nothing"):
        with pytest.raises(UnusableReplyError):
            parse_summary_reply(bad)


def _msg(i: int, text: str) -> PromptMessage:
    return PromptMessage(f"id{i}", "user", "2024-01-01T00:00:00+00:00", text)


def _record(i: int, text: str) -> Record:
    return Record(id=f"r{i}", record_type="fact", content=text)


def test_prompt_budget_drops_earlier_then_related_then_summary() -> None:
    new = [_msg(0, "the new message")]
    earlier = [_msg(i, f"earlier message number {i} " * 4) for i in range(1, 6)]
    related = [_record(i, f"related memory {i} " * 4) for i in range(7)]
    summary = RunningSummary("A running summary. " * 10, ("travel",))
    full, shown = render_extraction_prompt(
        new, earlier=earlier, related=related, summary=summary
    ) or ("", 0)
    assert shown == 7 and "earlier message number 1" in full
    size = round(len(full) / 3.5)

    cut = render_extraction_prompt(
        new, earlier=earlier, related=related, summary=summary, token_limit=size - 40
    )
    assert cut is not None and round(len(cut[0]) / 3.5) <= size - 40
    assert "earlier message number 1 " not in cut[0] and "earlier message number 5" in cut[0]
    assert cut[1] == 7

    no_earlier = render_extraction_prompt(new, related=related, summary=summary)
    assert no_earlier is not None
    tight = round(len(no_earlier[0]) / 3.5) - 30
    dropped = render_extraction_prompt(
        new, earlier=earlier, related=related, summary=summary, token_limit=tight
    )
    assert dropped is not None and "<earlier_messages>\n" not in dropped[0]
    assert dropped[1] < 7 and "A running summary." in dropped[0]

    bare = render_extraction_prompt(new)
    assert bare is not None
    minimal = render_extraction_prompt(
        new,
        earlier=earlier,
        related=related,
        summary=summary,
        token_limit=round(len(bare[0]) / 3.5),
    )
    assert minimal is not None and minimal[1] == 0 and "<summary>\n" not in minimal[0]
    assert render_extraction_prompt(new, token_limit=round(len(bare[0]) / 3.5) - 5) is None
