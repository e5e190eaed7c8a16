"""``OracleContextCard`` and ``OracleSummary`` rendering (docs/context-card.md#format, docs/context-card.md#summaries)."""

from __future__ import annotations

import doctest
import xml.etree.ElementTree as ET
from typing import Any
from xml.sax.saxutils import escape

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oam_core.apis.records import MessageRecord, Record
from oam_core.apis.thread import Message
from oam_core.memory import contextcard as contextcard_module
from oam_core.memory import summary as summary_module
from oam_core.memory.contextcard import OracleContextCard
from oam_core.memory.summary import OracleSummary
from oam_core.memory.tokens import estimate_tokens

T0 = "2026-01-02T03:04:05+00:00"


def test_seed_examples() -> None:
    card = OracleContextCard(summary="ctx")
    assert ("<summary>" in card.content and "ctx" in card.content) is True
    assert OracleContextCard(summary="").formatted_content == ""
    card = OracleContextCard(summary="ctx", topics=["travel"])
    assert ("<topics>" in card.formatted_content) is True
    summary = OracleSummary(content="Plan the Rome itinerary.")
    assert summary.content == "Plan the Rome itinerary."
    assert str(summary) == "Plan the Rome itinerary."
    assert OracleSummary(content="Keep the tea preference in mind.").content == (
        "Keep the tea preference in mind."
    )
    assert OracleSummary(content="Thread recap").formatted_content == "Thread recap"


@pytest.mark.parametrize("module", [contextcard_module, summary_module])
def test_docstring_examples_run(module: Any) -> None:
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner()
    report: list[str] = []
    tests = [t for t in finder.find(module) if t.examples]
    for test in tests:
        runner.run(test, out=report.append)
    assert tests and runner.failures == 0, "".join(report)


def test_full_card_exact_shape() -> None:
    card = OracleContextCard(
        summary="Trip planning.\nBudget & dates <TBD>",
        topics=["travel", "  ", " rome "],
        relevant_results=[
            (Record(id="m1", record_type="memory", content="Likes trains", timestamp=T0), 0.1),
            (Record(id="f1", record_type="fact", content="Born 1990", created_at=T0), 0.2),
            Record(id="p1", record_type="preference", content="Window seat"),
            (
                MessageRecord(
                    id="g9", record_type="message", content="book it", role="user", timestamp=T0
                ),
                0.4,
            ),
            (Record(id="u1", record_type="user_profile", content="Ana"), 0.5),
        ],
        recent_messages=[
            Message("user", 'Any "cheap" flights?', timestamp=T0),
            Message("assistant", "line one\nline two"),
        ],
    )
    assert card.content == (
        "<context_card>\n"
        "  <topics>\n"
        "    <topic>travel</topic>\n"
        "    <topic>rome</topic>\n"
        "  </topics>\n"
        "  <summary>\n"
        "    Trip planning.\n"
        "    Budget &amp; dates &lt;TBD&gt;\n"
        "  </summary>\n"
        "  <relevant_information>\n"
        "    <memory>\n"
        "      <record_id>m1</record_id>\n"
        f"      <timestamp>{T0}</timestamp>\n"
        "      <content>Likes trains</content>\n"
        "    </memory>\n"
        "    <fact>\n"
        "      <record_id>f1</record_id>\n"
        f"      <timestamp>{T0}</timestamp>\n"
        "      <content>Born 1990</content>\n"
        "    </fact>\n"
        "    <preference>\n"
        "      <record_id>p1</record_id>\n"
        "      <timestamp></timestamp>\n"
        "      <content>Window seat</content>\n"
        "    </preference>\n"
        "    <message>\n"
        "      <record_id>g9</record_id>\n"
        f"      <timestamp>{T0}</timestamp>\n"
        "      <role>user</role>\n"
        "      <content>book it</content>\n"
        "    </message>\n"
        "    <user_profile>\n"
        "      <record_id>u1</record_id>\n"
        "      <timestamp></timestamp>\n"
        "      <content>Ana</content>\n"
        "    </user_profile>\n"
        "  </relevant_information>\n"
        "  <recent_messages>\n"
        "    <message>\n"
        f"      <timestamp>{T0}</timestamp>\n"
        "      <role>user</role>\n"
        '      <content>Any "cheap" flights?</content>\n'
        "    </message>\n"
        "    <message>\n"
        "      <timestamp></timestamp>\n"
        "      <role>assistant</role>\n"
        "      <content>line one\n"
        "line two</content>\n"
        "    </message>\n"
        "  </recent_messages>\n"
        "</context_card>"
    )
    assert card.formatted_content == card.content
    assert str(card) == card.content
    assert card.topics == ["travel", "rome"]
    assert [d for _, d in card.relevant_results] == [0.1, 0.2, None, 0.4, 0.5]
    root = ET.fromstring(card.content)
    assert [child.tag for child in root] == [
        "topics",
        "summary",
        "relevant_information",
        "recent_messages",
    ]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, ""),
        ({"summary": "   \n "}, ""),
        ({"topics": ["", " "]}, ""),
        ({"relevant_results": [], "recent_messages": []}, ""),
        (
            {"topics": ["a"]},
            "<context_card>\n  <topics>\n    <topic>a</topic>\n  </topics>\n</context_card>",
        ),
        (
            {"summary": "\nctx\n"},
            "<context_card>\n  <summary>\n    ctx\n  </summary>\n</context_card>",
        ),
        (
            {"summary": "a\n\nb"},
            "<context_card>\n  <summary>\n    a\n\n    b\n  </summary>\n</context_card>",
        ),
    ],
)
def test_sections_and_empty_card(kwargs: dict[str, Any], expected: str) -> None:
    assert OracleContextCard(**kwargs).content == expected


def test_custom_message_format() -> None:
    card = OracleContextCard(
        recent_messages=[Message("user", "hi & bye", id="x1")],
        message_format='<m id="{id}">{role}: {content}</m>',
    )
    assert card.content == (
        "<context_card>\n"
        "  <recent_messages>\n"
        '    <m id="x1">user: hi &amp; bye</m>\n'
        "  </recent_messages>\n"
        "</context_card>"
    )


def test_odd_record_type_gets_a_safe_tag() -> None:
    card = OracleContextCard(relevant_results=[Record(id="1", record_type="bad tag", content="x")])
    assert "<record>" in card.content
    ET.fromstring(card.content)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"summary": None},
        {"topics": "travel"},
        {"topics": [1]},
        {"relevant_results": ["text"]},
        {"relevant_results": [(Record(id="1", record_type="memory", content="x"), "0.1")]},
        {"recent_messages": [{"role": "user", "content": "x"}]},
        {"message_format": "{nope}"},
        {"message_format": "{0}"},
        {"message_format": 3},
    ],
)
def test_invalid_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        OracleContextCard(**kwargs)


def test_summary_type() -> None:
    assert OracleSummary("x") == OracleSummary("x")
    assert OracleSummary("x") != OracleSummary("y")
    assert repr(OracleSummary("x")) == "OracleSummary(content='x')"
    assert OracleSummary("").content == ""
    with pytest.raises(ValueError):
        OracleSummary(None)  # type: ignore[arg-type]


@given(
    summary=st.text(),
    topics=st.lists(st.text()),
    contents=st.lists(st.text(), max_size=3),
)
def test_any_text_renders_well_formed_and_round_trips(
    summary: str, topics: list[str], contents: list[str]
) -> None:
    def xml_safe(text: str) -> bool:
        return (
            all(
                c in "\t\n\r"
                or 0x20 <= ord(c) <= 0xD7FF
                or 0xE000 <= ord(c) <= 0xFFFD
                or ord(c) >= 0x10000
                for c in text
            )
            and "\r" not in text
        )

    if not all(xml_safe(x) for x in [summary, *topics, *contents]):
        return
    card = OracleContextCard(
        summary=summary,
        topics=topics,
        relevant_results=[
            Record(id=str(i), record_type="memory", content=c) for i, c in enumerate(contents)
        ],
        recent_messages=[Message("user", c) for c in contents],
    )
    if not card.content:
        return
    root = ET.fromstring(card.content)
    got = [(el.text or "") for el in root.iterfind("relevant_information/memory/content")]
    assert got == contents
    got = [(el.text or "") for el in root.iterfind("recent_messages/message/content")]
    assert got == contents


# -- token_limit bounds the whole card (C06) --------------------------------------------


def _big_card(token_limit: int) -> OracleContextCard:
    return OracleContextCard(
        summary="old & <news> " * 300,
        topics=["travel"],
        relevant_results=[
            (Record(id=f"m{i}", record_type="memory", content=f"mem{i} " * 500, timestamp=T0), i)
            for i in range(3)
        ],
        recent_messages=[
            Message("user", "short", timestamp=T0),
            Message("assistant", "reply <b> " * 2000, timestamp=T0),
        ],
        token_limit=token_limit,
    )


@pytest.mark.parametrize("limit", [9, 20, 60, 120, 250, 500, 1000, 3000])
def test_c06_card_fits_token_limit_and_stays_well_formed(limit: int) -> None:
    content = _big_card(limit).content
    assert len(content) <= int(limit * 3.5)
    if content:
        assert estimate_tokens(content) <= limit
        ET.fromstring(content)
    else:
        assert limit < 23  # not even the topics fit


def test_c06_unbounded_and_roomy_limits_change_nothing() -> None:
    full = _big_card(0).content
    assert len(full) == 47_299
    assert "(truncated)" not in full
    assert _big_card(-1).content == full
    assert _big_card(13_514).content == full  # round(47_299 / 3.5) == 13_514
    assert _big_card(13_513).content != full


def test_c06_texts_share_the_room_fairly() -> None:
    card = _big_card(500)
    root = ET.fromstring(card.content)
    assert [t.text for t in root.iterfind("topics/topic")] == ["travel"]
    summary = root.findtext("summary") or ""
    assert summary.strip().startswith("(truncated)\n") and summary.rstrip().endswith("<news>")
    memories = [el.text or "" for el in root.iterfind("relevant_information/memory/content")]
    messages = [el.text or "" for el in root.iterfind("recent_messages/message/content")]
    assert messages[0] == "short"  # shorter than its share: kept whole
    assert len(memories) == 3 and all(m.endswith(" …(truncated)") for m in memories)
    assert messages[1].startswith("reply <b> ") and messages[1].endswith(" …(truncated)")
    assert [m[:5] for m in memories] == ["mem0 ", "mem1 ", "mem2 "]
    # Equal shares of rendered (escaped) characters.
    # Equal shares of rendered characters (a cut never splits an escape like "&lt;").
    shares = [len(escape(m)) for m in [*memories, messages[1]]]
    assert max(shares) - min(shares) <= 5
    assert len(card.content) > int(500 * 3.5) - 20  # the room is used


def test_c06_lowest_priority_items_are_dropped_first() -> None:
    def shape(limit: int) -> tuple[list[str | None], list[str | None], bool]:
        root = ET.fromstring(_big_card(limit).content)
        results = [el.findtext("record_id") for el in root.iterfind("relevant_information/*")]
        roles = [el.findtext("role") for el in root.iterfind("recent_messages/message")]
        return results, roles, root.find("summary") is not None

    assert shape(285) == (["m0", "m1", "m2"], ["user", "assistant"], True)
    assert shape(240) == (["m0", "m1"], ["user", "assistant"], True)
    assert shape(200) == (["m0"], ["user", "assistant"], True)
    assert shape(150) == ([], ["user", "assistant"], True)
    assert shape(100) == ([], ["assistant"], True)  # the older message goes first
    assert shape(50) == ([], [], True)
    assert _big_card(25).content == (
        "<context_card>\n  <topics>\n    <topic>travel</topic>\n  </topics>\n</context_card>"
    )
    assert _big_card(20).content == ""


def test_c06_cut_never_splits_an_escape_or_a_grapheme() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    for limit in range(57, 90):
        card = OracleContextCard(
            recent_messages=[Message("user", ("&<" + family) * 200)], token_limit=limit
        )
        text = ET.fromstring(card.content).findtext("recent_messages/message/content") or ""
        body = text.removesuffix(" …(truncated)")
        assert body and (("&<" + family) * 200).startswith(body)
        assert len(body) % 7 in (0, 1, 2)  # "&", "<", then the whole 5-code-point family


def test_c06_invalid_token_limit() -> None:
    with pytest.raises(ValueError, match="token_limit"):
        OracleContextCard(summary="x", token_limit="10")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="token_limit"):
        OracleContextCard(summary="x", token_limit=True)


def _call_message(i: int) -> Message:
    calls = [{"id": f"c{i}", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}]
    return Message("assistant", "", T0, metadata={"$message": {"tool_calls": calls}}, id=f"a{i}")


def test_budget_never_leaves_a_tool_result_opening_the_window() -> None:
    """C05 (docs/failure-modes.md#c05): dropping the oldest recent message under the token limit also
    drops the tool results that would then open the window."""
    messages = [
        _call_message(0),
        Message("tool", "result " * 20, T0, id="t0"),
        Message("tool", "second result", T0, id="t1"),
        Message("assistant", "answer", T0, id="a1"),
    ]
    full = OracleContextCard(recent_messages=messages)
    assert '<content>tool call: lookup({"q": "x"})</content>' in full.content
    for limit in range(1, estimate_tokens(full.content) + 1):
        content = OracleContextCard(recent_messages=messages, token_limit=limit).content
        if not content:
            continue
        roles = [r.text for r in ET.fromstring(content).iter("role")]
        assert roles and roles[0] != "tool", (limit, roles)


def test_transcript_line_shows_tool_calls() -> None:
    record = MessageRecord(
        id="a0",
        record_type="message",
        content="",
        role="assistant",
        timestamp=T0,
        metadata={
            "$message": {
                "tool_calls": [
                    {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"},
                    {"id": "c2", "function": {"name": "now", "arguments": "{}"}},
                    "not a call",
                ]
            }
        },
    )
    assert summary_module.transcript_line(record) == (
        f'assistant ({T0}): tool call: get_weather({{"city": "Paris"}}) tool call: now({{}})'
    )
