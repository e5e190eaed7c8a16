"""Extraction and summary replies, prompt budgets (docs/memory-pipeline.md#what-a-pass-does): pure functions, no LLM."""

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
        ('{"memories": []}', []),
        # fences and prose
        ("```json\n" + _one("e") + "\n```", [ExtractedMemory("e", "fact", None, ())]),
        ("Here you go: " + _one("f") + " Hope it helps!", [ExtractedMemory("f", "fact", None, ())]),
        # types: case, spaces and plurals are folded
        (_one("g", "Preferences"), [ExtractedMemory("g", "preference", None, ())]),
        (_one("g2", " FACT "), [ExtractedMemory("g2", "fact", None, ())]),
        # timestamps: parsed to UTC ISO, junk dropped; omitted = None
        (
            _one("j", timestamp="2024-03-10"),
            [ExtractedMemory("j", "fact", "2024-03-10T00:00:00.000000+00:00", ())],
        ),
        (_one("k", timestamp="next tuesday"), [ExtractedMemory("k", "fact", None, ())]),
        (_one("k2", timestamp=None), [ExtractedMemory("k2", "fact", None, ())]),
        # supersedes labels: normalized, non-labels ignored, deduplicated
        (
            _one("l", supersedes=["m1", "M2", "x", "M2"]),
            [ExtractedMemory("l", "fact", None, ("M1", "M2"))],
        ),
        # extra keys are ignored
        (_one("x", confidence=0.9), [ExtractedMemory("x", "fact", None, ())]),
        # duplicates, lone surrogates
        (
            '{"memories": [{"text": "n", "record_type": "fact"}, '
            '{"text": "N", "record_type": "memory"}]}',
            [ExtractedMemory("n", "fact", None, ())],
        ),
        (
            '{"memories": [{"text": "o\\ud800p", "record_type": "memory"}]}',
            [ExtractedMemory("op", "memory", None, ())],
        ),
    ],
)
def test_extraction_reply_cases(reply: str, expected: list[ExtractedMemory]) -> None:
    assert parse_extraction_reply(reply) == expected


WRONG_SHAPES: list[tuple[str, str]] = [
    # issue 14 (3), docs/failure-modes.md#c23: well-formed JSON of the wrong shape
    ("item without text", '{"memories": [{"fact": "Ana likes tea"}]}'),
    ("singular key", '{"memory": {"text": "Ana likes tea", "record_type": "fact"}}'),
    ("text as key", '{"Ana likes tea": "preference"}'),
    ("text not a string", '{"memories": [{"text": 123, "record_type": "fact"}]}'),
    ("one bad item among good ones", '{"memories": [' + _one("a")[14:-2] + ', {"txt": "b"}]}'),
    ("unknown type", _one("h", "opinion")),
    ("missing type", '{"memories": [{"text": "i"}]}'),
    ("null type", _one("i", None)),
    ("blank text", '{"memories": [{"text": "  ", "record_type": "fact"}]}'),
    ("string items", '{"memories": ["c"]}'),
    ("non-object item", '{"memories": [5]}'),
    ("memories an object", '{"memories": {"text": "d", "record_type": "fact"}}'),
    ("memories null", '{"memories": null}'),
    ("bare list", '[{"text": "a", "record_type": "memory"}]'),
    ("bare item", '{"text": "b", "record_type": "guideline"}'),
    ("supersedes not a list", _one("m", supersedes="M3")),
    ("supersedes of numbers", _one("m", supersedes=[3])),
    ("timestamp a number", _one("t", timestamp=20240310)),
]


@pytest.mark.parametrize("reply", [c[1] for c in WRONG_SHAPES], ids=[c[0] for c in WRONG_SHAPES])
def test_wrongly_shaped_replies_are_unusable(reply: str) -> None:
    with pytest.raises(UnusableReplyError, match=r"does not fit the reply schema|no usable JSON"):
        parse_extraction_reply(reply)


def test_the_error_names_the_offending_item() -> None:
    with pytest.raises(UnusableReplyError, match=r"\$\.memories\[1\]"):
        parse_extraction_reply('{"memories": [' + _one("a")[14:-2] + ', {"txt": "b"}]}')


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        # issue 14 (4), docs/failure-modes.md#c24: an example before the answer
        ('Example format: {"memories": []}\nAnswer: ' + _one("real"), ["real"]),
        (_one("example") + "\nAnswer: " + _one("real"), ["real"]),
        # the last value that fits wins, whatever comes after it
        (_one("real") + ' (I ignored {"note": "x"})', ["real"]),
        ('{"memories": [{"fact": "bad"}]} corrected: ' + _one("fixed"), ["fixed"]),
        (_one("first") + " " + _one("second") + " " + _one("third"), ["third"]),
        ("```json\n" + _one("a") + "\n```\n```json\n" + _one("b") + "\n```", ["b"]),
    ],
    ids=["empty-example-first", "example-first", "trailer", "fixed", "three", "two-fences"],
)
def test_the_last_value_that_fits_wins(reply: str, expected: list[str]) -> None:
    assert [m.text for m in parse_extraction_reply(reply)] == expected


def test_an_answer_cut_off_after_an_example_is_unusable() -> None:
    """An example followed by a truncated answer must not pass as the example."""
    with pytest.raises(UnusableReplyError, match="cut off"):
        parse_extraction_reply('Example: {"memories": []}\nAnswer: {"memories": [{"text": "a')


@pytest.mark.parametrize(
    "reply", ["", "I cannot help with that.", "42", '{"summary": "x"}', "[1, 2"]
)
def test_unusable_extraction_replies(reply: str) -> None:
    with pytest.raises(UnusableReplyError):
        parse_extraction_reply(reply)


def test_more_than_the_cap_is_cut_with_a_warning() -> None:
    reply = json.dumps(
        {
            "memories": [
                {"text": f"t{i}", "record_type": "memory"} for i in range(MAX_MEMORIES_PER_PASS + 7)
            ]
        }
    )
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
    for bad in (
        '{"summary": "  "}',
        '{"topics": []}',
        "[1]",
        "nothing",
        '{"summary": 5}',
        '{"summary": "x", "topics": "travel"}',
        '{"summary": "x", "topics": [1]}',
        '{"summary": "\\u0000"}',
    ):
        with pytest.raises(UnusableReplyError):
            parse_summary_reply(bad)
    example_first = 'e.g. {"summary": "example", "topics": []} -> ' + reply
    assert parse_summary_reply(example_first).summary == "Ana plans a trip."
    assert parse_summary_reply('{"summary": "only"}') == RunningSummary("only", ())


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
