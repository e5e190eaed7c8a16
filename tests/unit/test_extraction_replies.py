"""Extraction and summary replies, prompt budgets (docs/memory-pipeline.md#what-a-pass-does): pure functions, no LLM."""

from __future__ import annotations

import json
import warnings
from importlib import resources
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
    extraction_schema,
    parse_extraction_reply,
    render_extraction_prompt,
)
from oam_core.memory.jsonrepair import UnusableReplyError
from oam_core.memory.placeholders import is_placeholder, placeholders_of
from oam_core.memory.runningsummary import MAX_TOPICS, normalize_topics, parse_summary_reply
from oam_core.memory.summary import RunningSummary
from oam_core.memory.templates import load_prompt


def _one(text: str, record_type: Any = "fact", **extra: Any) -> str:
    return json.dumps({"memories": [{"text": text, "record_type": record_type, **extra}]})


def _fact(text: str, **fields: Any) -> ExtractedMemory:
    return ExtractedMemory(text, "fact", None, **fields)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (_one("Ana likes tea"), [_fact("Ana likes tea")]),
        ('{"memories": []}', []),
        # fences and prose
        ("```json\n" + _one("e") + "\n```", [_fact("e")]),
        ("Here you go: " + _one("f") + " Hope it helps!", [_fact("f")]),
        # types: case, spaces and plurals are folded
        (_one("g", "Preferences"), [ExtractedMemory("g", "preference", None)]),
        (_one("g2", " FACT "), [_fact("g2")]),
        # timestamps and valid_from: parsed to UTC ISO, junk dropped; omitted = None
        (
            _one("j", timestamp="2024-03-10", valid_from="2024-03-01T10:00:00+02:00"),
            [
                ExtractedMemory(
                    "j",
                    "fact",
                    "2024-03-10T00:00:00+00:00",
                    valid_from="2024-03-01T08:00:00+00:00",
                )
            ],
        ),
        (_one("k", timestamp="next tuesday", valid_from="soon"), [_fact("k")]),
        (_one("k2", timestamp=None, valid_from=None), [_fact("k2")]),
        # decisions: case folded; missing or null = ADD (replies without decisions still work)
        (
            _one("l", reason=" moved ", decision=" update", target_id=" m-1 "),
            [_fact("l", decision="UPDATE", target_id="m-1", reason="moved")],
        ),
        (_one("l2", decision=None), [_fact("l2")]),
        (_one("l3", decision="NOOP", target_id=""), [_fact("l3", decision="NOOP")]),
        (
            _one("l4", decision="delete", target_id="x"),
            [_fact("l4", decision="DELETE", target_id="x")],
        ),
        # the old supersedes labels and other extra keys are ignored; a reason that
        # is not a string is left out
        (_one("x", confidence=0.9, supersedes=["M1"], reason=5), [_fact("x")]),
        # repeats are kept here (decisions.py turns them into NOOP), surrogates dropped
        (
            '{"memories": [{"text": "n", "record_type": "fact"}, '
            '{"text": "N", "record_type": "fact"}]}',
            [_fact("n"), _fact("N")],
        ),
        (
            '{"memories": [{"text": "o\\ud800p", "record_type": "memory"}]}',
            [ExtractedMemory("op", "memory", None)],
        ),
    ],
)
def test_extraction_reply_cases(reply: str, expected: list[ExtractedMemory]) -> None:
    assert parse_extraction_reply(reply) == expected


BAD_ITEMS: list[tuple[str, Any, str]] = [
    # (case, the bad item, what the warning says); docs/memory-pipeline.md#update-decisions
    ("item without text", {"fact": "Ana likes tea"}, "'text' is a required property"),
    ("text not a string", {"text": 123, "record_type": "fact"}, "is not of type 'string'"),
    ("blank text", {"text": "  ", "record_type": "fact"}, "does not match"),
    ("text of control characters", {"text": "\u0000", "record_type": "fact"}, "blank"),
    ("UPDATE without text", {"decision": "UPDATE", "record_type": "fact"}, "'text' is a required"),
    (
        "ADD with blank text",
        {"decision": "ADD", "text": "", "record_type": "fact"},
        "does not match",
    ),
    (
        "UPDATE text of control characters",
        {"decision": "UPDATE", "text": "\u0000", "record_type": "fact"},
        "blank",
    ),
    ("unknown type", {"text": "h", "record_type": "opinion"}, "'opinion' is not one of"),
    ("missing type", {"text": "i"}, "'record_type' is a required property"),
    ("null type", {"text": "i", "record_type": None}, "None is not of type"),
    ("unknown decision", {"text": "d", "record_type": "fact", "decision": "MERGE"}, "MERGE"),
    ("decision a list", {"text": "d", "record_type": "fact", "decision": ["ADD"]}, "ADD"),
    ("target_id a number", {"text": "d", "record_type": "fact", "target_id": 3}, "not of type"),
    ("timestamp a number", {"text": "t", "record_type": "fact", "timestamp": 2024}, "2024"),
    ("valid_from an object", {"text": "t", "record_type": "fact", "valid_from": {}}, "{}"),
    ("string item", "c", "'c' is not of type 'object'"),
    ("number item", 5, "5 is not of type 'object'"),
]


@pytest.mark.parametrize(
    ("item", "says"), [c[1:] for c in BAD_ITEMS], ids=[c[0] for c in BAD_ITEMS]
)
def test_one_bad_item_is_dropped_with_one_warning_and_the_rest_kept(item: Any, says: str) -> None:
    good = {"text": "Ana likes tea", "record_type": "fact"}
    later = {"text": "Ana has a dog", "record_type": "memory", "decision": "ADD"}
    reply = json.dumps({"memories": [good, item, later]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        memories = parse_extraction_reply(reply)
    assert memories == [_fact("Ana likes tea"), ExtractedMemory("Ana has a dog", "memory", None)]
    (warning,) = [str(w.message) for w in caught]
    assert warning.startswith("extraction reply item 1 dropped: ") and says in warning


CHANGES_WITHOUT_TEXT: list[tuple[str, Any, ExtractedMemory]] = [
    # (case, item, parsed): DELETE and NOOP store nothing, so their text may be
    # missing, blank or not a string (docs/memory-pipeline.md#update-decisions)
    (
        "DELETE, empty text",
        {"decision": "DELETE", "target_id": "car", "text": "", "record_type": "fact"},
        ExtractedMemory("", "fact", None, decision="DELETE", target_id="car"),
    ),
    (
        "DELETE, no text",
        {"decision": "delete", "target_id": " car ", "record_type": "fact", "reason": "sold"},
        ExtractedMemory("", "fact", None, decision="DELETE", target_id="car", reason="sold"),
    ),
    (
        "DELETE, null text",
        {"decision": "DELETE", "target_id": "car", "text": None, "record_type": "facts"},
        ExtractedMemory("", "fact", None, decision="DELETE", target_id="car"),
    ),
    (
        "NOOP, blank text",
        {"decision": "NOOP", "target_id": "m-1", "text": " \u0000 ", "record_type": "memory"},
        ExtractedMemory("", "memory", None, decision="NOOP", target_id="m-1"),
    ),
    (
        "NOOP, text a number",
        {"decision": "NOOP", "target_id": None, "text": 3, "record_type": "memory"},
        ExtractedMemory("", "memory", None, decision="NOOP"),
    ),
    (
        "DELETE with text",
        {"decision": "DELETE", "target_id": "car", "text": "Ana sold it", "record_type": "fact"},
        ExtractedMemory("Ana sold it", "fact", None, decision="DELETE", target_id="car"),
    ),
]


@pytest.mark.parametrize(
    ("item", "parsed"),
    [c[1:] for c in CHANGES_WITHOUT_TEXT],
    ids=[c[0] for c in CHANGES_WITHOUT_TEXT],
)
def test_delete_and_noop_need_no_text_alone_or_beside_other_items(
    item: Any, parsed: ExtractedMemory
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing dropped
        assert parse_extraction_reply(json.dumps({"memories": [item]})) == [parsed]
        good = {"text": "Ana cycles to work", "record_type": "fact"}
        both = parse_extraction_reply(json.dumps({"memories": [good, item]}))
    assert both == [_fact("Ana cycles to work"), parsed]


UNUSABLE: list[tuple[str, str]] = [
    # issue 14 (3), docs/failure-modes.md#c23: no JSON value of the reply is usable
    ("only bad items", '{"memories": [{"fact": "Ana likes tea"}, {"txt": "b"}]}'),
    ("singular key", '{"memory": {"text": "Ana likes tea", "record_type": "fact"}}'),
    ("text as key", '{"Ana likes tea": "preference"}'),
    ("string items", '{"memories": ["c"]}'),
    ("memories an object", '{"memories": {"text": "d", "record_type": "fact"}}'),
    ("memories null", '{"memories": null}'),
    ("bare list", '[{"text": "a", "record_type": "memory"}]'),
    ("bare item", '{"text": "b", "record_type": "guideline"}'),
]


@pytest.mark.parametrize("reply", [c[1] for c in UNUSABLE], ids=[c[0] for c in UNUSABLE])
def test_replies_without_a_usable_item_are_unusable(reply: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no per-item warning: the whole reply fails
        with pytest.raises(
            UnusableReplyError, match=r"does not fit the reply schema|no usable JSON"
        ):
            parse_extraction_reply(reply)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        # issue 14 (4), docs/failure-modes.md#c24: an example before the answer
        ('Example format: {"memories": []}\nAnswer: ' + _one("real"), ["real"]),
        (_one("example") + "\nAnswer: " + _one("real"), ["real"]),
        # the last value that fits wins, whatever comes after it
        (_one("real") + ' (I ignored {"note": "x"})', ["real"]),
        ('{"memories": [{"fact": "bad"}]} corrected: ' + _one("fixed"), ["fixed"]),
        # an answer whose items are all bad does not hide the usable example before it
        (_one("usable") + ' then {"memories": [{"fact": "bad"}]}', ["usable"]),
        (_one("first") + " " + _one("second") + " " + _one("third"), ["third"]),
        ("```json\n" + _one("a") + "\n```\n```json\n" + _one("b") + "\n```", ["b"]),
        # an empty value that fits wins only when no fitting value holds items
        (_one("real") + ' If nothing were worth keeping: {"memories": []}', ["real"]),
        (_one("a") + ' {"memories": []} ' + _one("b") + ' {"memories": []}', ["b"]),
        ('{"memories": []} and again {"memories": []}', []),
    ],
    ids=[
        "empty-example-first",
        "example-first",
        "trailer",
        "fixed",
        "bad-after",
        "three",
        "two-fences",
        "empty-after",
        "empties-around",
        "only-empties",
    ],
)
def test_the_last_value_that_fits_wins(reply: str, expected: list[str]) -> None:
    assert [m.text for m in parse_extraction_reply(reply)] == expected


def _answer_form(template: str) -> str:
    """The answer form a prompt template ends with (its last line), as shipped."""
    path = resources.files("oam_core.memory").joinpath("prompts", f"{template}.txt")
    return path.read_text(encoding="utf-8").strip().splitlines()[-1]


FORM = _answer_form("extraction_v2")
"""The extraction prompt's answer form, which small models echo after (or instead
of) their answer: its ``text`` and ``reason`` are placeholders."""
SUMMARY_FORM = _answer_form("summary_v1")
GOOD = json.dumps(
    {"memories": [{"decision": "ADD", "text": "Ana likes green tea", "record_type": "preference"}]}
)


def test_the_answer_forms_are_the_ones_these_tests_echo() -> None:
    assert json.loads(FORM)["memories"][0]["text"] == "..."
    assert json.loads(SUMMARY_FORM) == {"summary": "...", "topics": ["..."]}
    assert load_prompt("extraction_v2").answer_form == json.loads(FORM)
    assert load_prompt("query_rewrite_v1").answer_form == {"query": "..."}
    assert load_prompt("shorten_v1").answer_form is None
    assert placeholders_of("extraction_v2", ("text", "reason")) == {"..."}
    assert placeholders_of("summary_v1", ("summary", "topics")) == {"..."}
    assert [is_placeholder(t, {"<text>"}) for t in ("<TEXT> ", "\u22ef", ". .", "a.", "")] == [
        True,
        True,
        True,
        False,
        True,
    ]


@pytest.mark.parametrize(
    "reply",
    [
        GOOD + "\n\nI answered in this form:\n" + FORM,
        "In this form: " + FORM + "\nMy answer: " + GOOD,
        GOOD + " " + FORM.replace('"fact"', '"preference"'),
        "```json\n" + GOOD + "\n```\n```json\n" + FORM + "\n```",
    ],
    ids=["answer-then-form", "form-then-answer", "answer-then-form-retyped", "two-fences"],
)
def test_the_prompts_answer_form_is_never_the_answer(reply: str) -> None:
    """docs/failure-modes.md#c24: the form echoed after the answer does not replace it."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parsed = parse_extraction_reply(reply)
    assert parsed == [ExtractedMemory("Ana likes green tea", "preference", None)]


@pytest.mark.parametrize(
    "reply",
    [FORM, "Here is the form: " + FORM, FORM.replace('"ADD"', '"UPDATE"'), _one("\u2026")],
    ids=["form", "form-in-prose", "form-as-update", "ellipsis-only"],
)
def test_a_reply_holding_only_the_answer_form_is_unusable(reply: str) -> None:
    """docs/failure-modes.md#c23: a placeholder is no memory, so a reply of only the
    form is unusable (retried), never a memory ``...``."""
    with pytest.raises(UnusableReplyError):
        parse_extraction_reply(reply)


@pytest.mark.parametrize("placeholder", ["...", "\u2026", " . . . ", "......", "\u2026\u2026 "])
def test_an_item_whose_text_is_a_placeholder_is_dropped(placeholder: str) -> None:
    stub = {"decision": "ADD", "text": placeholder, "record_type": "fact", "reason": "..."}
    later = {"text": "Ana has a dog", "record_type": "memory", "reason": "\u2026"}
    reply = json.dumps(
        {"memories": [{"text": "Ana likes tea", "record_type": "fact"}, stub, later]}
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        memories = parse_extraction_reply(reply)
    assert memories == [_fact("Ana likes tea"), ExtractedMemory("Ana has a dog", "memory", None)]
    (warning,) = [str(w.message) for w in caught]
    assert warning.startswith("extraction reply item 1 dropped: ") and "placeholder" in warning


def test_a_summary_echoing_the_answer_form_is_not_the_summary() -> None:
    """docs/memory-pipeline.md#running-summary: the form echoed after the summary does
    not replace it; the form alone (or a placeholder summary) is unusable; placeholder
    topics are dropped, and topics that are all placeholders keep the previous ones."""
    real = json.dumps({"summary": "Ana likes green tea.", "topics": ["tea", "porto"]})
    expected = RunningSummary("Ana likes green tea.", ("tea", "porto"))
    assert parse_summary_reply(real + "\nFormat used: " + SUMMARY_FORM) == expected
    assert parse_summary_reply(SUMMARY_FORM + " Answer: " + real) == expected
    for bad in (SUMMARY_FORM, '{"summary": "\u2026", "topics": ["tea"]}', '{"summary": " . . "}'):
        with pytest.raises(UnusableReplyError):
            parse_summary_reply(bad)
    before = RunningSummary("Ana plans a trip.", ("travel",))
    mixed = '{"summary": "Ana booked Rome.", "topics": ["...", "Rome", "\u2026"]}'
    assert parse_summary_reply(mixed, previous=before) == RunningSummary(
        "Ana booked Rome.", ("rome",)
    )
    stubs = '{"summary": "Ana booked Rome.", "topics": ["..."]}'
    assert parse_summary_reply(stubs, previous=before) == RunningSummary(
        "Ana booked Rome.", ("travel",)
    )


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


def test_the_sent_schemas_bounds_are_enforced_item_by_item() -> None:
    """max_items / max_text_chars are the schema's maxItems and text maxLength: the
    first max_items items are kept, an ADD or UPDATE text over the bound is dropped,
    a DELETE's ignored text is not checked."""
    items = [
        {"text": "short", "record_type": "fact"},
        {"text": "y" * 11, "record_type": "fact", "decision": "UPDATE", "target_id": "m1"},
        {"text": "y" * 50, "record_type": "fact", "decision": "DELETE", "target_id": "m2"},
        {"text": "exactly10!", "record_type": "fact"},
        {"text": "beyond", "record_type": "fact"},
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        memories = parse_extraction_reply(
            json.dumps({"memories": items}), max_items=4, max_text_chars=10
        )
    said = [str(w.message) for w in caught]
    assert [(m.decision, m.text[:5]) for m in memories] == [
        ("ADD", "short"),
        ("DELETE", "yyyyy"),
        ("ADD", "exact"),
    ]
    assert len(said) == 2 and "5 memories" in said[0] and "first 4" in said[0]
    assert "item 1 dropped" in said[1] and "11 characters" in said[1]
    with (
        pytest.warns(MemoryPipelineWarning, match="item 0 dropped"),
        pytest.raises(UnusableReplyError, match="none of its items is usable"),
    ):
        parse_extraction_reply(json.dumps({"memories": items[1:2]}), max_text_chars=10)


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


def test_a_summary_reply_without_topics_keeps_the_previous_topics() -> None:
    """The summary is updated incrementally: a reply that leaves ``topics`` out keeps
    the previous ones; an explicit empty list clears them."""
    before = RunningSummary("Ana plans a trip.", ("travel", "food"))
    kept = parse_summary_reply('{"summary": "Ana booked Rome."}', previous=before)
    assert kept == RunningSummary("Ana booked Rome.", ("travel", "food"))
    cleared = parse_summary_reply('{"summary": "x", "topics": []}', previous=before)
    assert cleared == RunningSummary("x", ())


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


def test_the_prompt_shows_related_memories_with_their_ids_and_the_schema_limits_targets() -> None:
    related = [
        Record(id="m-1", record_type="fact", content="Ana lives in <Lisbon>"),
        Record(id='m"2', record_type="preference", content="Ana likes tea", timestamp="2024-01-02"),
    ]
    rendered = render_extraction_prompt([_msg(0, "I moved")], related=related)
    assert rendered is not None
    prompt, shown = rendered
    assert shown == 2
    assert '<memory id="m-1" type="fact">Ana lives in &lt;Lisbon&gt;</memory>' in prompt
    assert (
        """<memory id='m"2' type="preference" timestamp="2024-01-02">Ana likes tea</memory>"""
        in prompt
    )
    assert "label=" not in prompt and '"decision": "ADD"' in prompt
    stores, changes = extraction_schema(["m-1", 'm"2', "m-1"])["properties"]["memories"]["items"][
        "anyOf"
    ]
    for item in (stores, changes):
        assert list(item["properties"]) == [
            "reason",
            "decision",
            "target_id",
            "text",
            "record_type",
            "timestamp",
            "valid_from",
        ]
        assert item["required"] == list(item["properties"])
        assert item["properties"]["target_id"]["enum"] == ["m-1", 'm"2', None]
        # every string is bounded and so is the item count (small models loop otherwise)
        assert all("maxLength" in p or "enum" in p for p in item["properties"].values())
    # ADD and UPDATE carry the memory's text; DELETE and NOOP store nothing: text may be "".
    assert stores["properties"]["decision"]["enum"] == ["ADD", "UPDATE"]
    assert stores["properties"]["text"] == {"type": "string", "minLength": 1, "maxLength": 300}
    assert changes["properties"]["decision"]["enum"] == ["DELETE", "NOOP"]
    assert changes["properties"]["text"] == {"type": "string", "maxLength": 300}
    for shape in extraction_schema()["properties"]["memories"]["items"]["anyOf"]:
        assert shape["properties"]["target_id"] == {"type": "null"}
    assert extraction_schema()["properties"]["memories"]["maxItems"] == 20
    assert extraction_schema(new_messages=2)["properties"]["memories"]["maxItems"] == 6
    assert extraction_schema(new_messages=9)["properties"]["memories"]["maxItems"] == 20
