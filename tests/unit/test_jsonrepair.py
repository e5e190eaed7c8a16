"""parse_json_reply: every repair in a case table, refusals, and round-trip properties.

docs/llms.md#reading-json-out-of-a-reply (malformed extraction output is repaired where possible), docs/failure-modes.md#c20 (reply
wrapped in a code fence; reply with prose around it).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oam_core.memory.jsonrepair import UnusableReplyError, parse_json_reply

MEMORIES = {"memories": [{"text": "likes green tea", "record_type": "preference"}]}
MEMORIES_JSON = json.dumps(MEMORIES)

REPAIRS: list[tuple[str, str, Any]] = [
    ("clean object", MEMORIES_JSON, MEMORIES),
    ("clean array", "[1, 2]", [1, 2]),
    ("json code fence", f"```json\n{MEMORIES_JSON}\n```", MEMORIES),
    ("bare code fence", f"```\n{MEMORIES_JSON}\n```", MEMORIES),
    ("fence after prose", f"Here you go: ```json\n{MEMORIES_JSON}\n``` Done.", MEMORIES),
    ("fence marker inside a string", '```json\n{"x": "a ``` b"}\n```', {"x": "a ``` b"}),
    ("leading prose", f"Sure! Here is the JSON:\n{MEMORIES_JSON}", MEMORIES),
    ("trailing prose", f"{MEMORIES_JSON}\nHope that helps!", MEMORIES),
    ("prose with braces before", 'Use {name} here: {"ok": true}', {"ok": True}),
    ("prose with a bracketed list before", 'The set [a, b]: {"ok": 1}', {"ok": 1}),
    ("second object ignored", '{"a": 1} and then {"b": 2}', {"a": 1}),
    ("trailing junk brace", '{"a": "x"} trailing } junk', {"a": "x"}),
    ("invalid escape", r'{"a": "x\q y"}', {"a": "x\\q y"}),
    ("lone backslash", r'{"a": "back\ slash"}', {"a": "back\\ slash"}),
    ("windows path", r'{"a": "c:\path\qux"}', {"a": "c:\\path\\qux"}),
    # A valid escape is taken as JSON means it, even where a path was meant.
    ("valid escape in a path", r'{"a": "c:\path\file"}', {"a": "c:\\path\x0cile"}),
    ("short unicode escape", r'{"a": "\u12"}', {"a": "\\u12"}),
    ("valid escapes kept", r'{"a": "q\"uote\\n\u00e9\nx"}', {"a": 'q"uote\\né\nx'}),
    ("escaped backslash before letter", r'{"a": "x\\q", "b": "y\q"}', {"a": "x\\q", "b": "y\\q"}),
    ("lone surrogate escape", r'{"a": "sur\ud800 x"}', {"a": "sur x"}),
    ("lone low surrogate escape", r'{"a": "\udc00x"}', {"a": "x"}),
    ("raw lone surrogate", '{"a": "sur\ud800 x"}', {"a": "sur x"}),
    ("surrogate in a key", r'{"k\ud800": 1}', {"k": 1}),
    ("escaped surrogate pair kept", r'{"a": "\ud83d\ude00"}', {"a": "😀"}),
    ("raw surrogate pair joined", '{"a": "\ud83d\ude00"}', {"a": "😀"}),
    ("trailing commas", '{"a": [1, 2, ], }', {"a": [1, 2]}),
    ("smart quotes", "{“a”: “b”}", {"a": "b"}),
    ("smart quotes inside a string kept", '{"t": "He said “hi”"}', {"t": "He said “hi”"}),
    ("single quotes", "{'a': 'b'}", {"a": "b"}),
    ("unquoted keys", '{memories: [{text: "x"}]}', {"memories": [{"text": "x"}]}),
    ("missing comma", '{"a": 1 "b": 2}', {"a": 1, "b": 2}),
    ("python literals", '{"a": True, "b": None}', {"a": True, "b": None}),
    ("line comment after", '{"a": 1} // done', {"a": 1}),
    ("NaN becomes null", '{"a": NaN, "b": [Infinity]}', {"a": None, "b": [None]}),
    ("raw newline in string", '{"a": "line\nbreak"}', {"a": "line\nbreak"}),
    ("think block first", '<think>maybe {x} or [y]</think>\n{"a": 1}', {"a": 1}),
    ("think text inside JSON kept", '{"a": "<think>x"}', {"a": "<think>x"}),
    ("byte order mark", '\ufeff{"a": 1}', {"a": 1}),
    ("empty object", "{}", {}),
    ("empty array", "[]", []),
    ("nested arrays", "[[1], [2, [3]]]", [[1], [2, [3]]]),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in REPAIRS], ids=[c[0] for c in REPAIRS]
)
def test_repairs(text: str, expected: Any) -> None:
    assert parse_json_reply(text, expect=(dict, list)) == expected


UNUSABLE: list[tuple[str, str]] = [
    ("empty", ""),
    ("whitespace", "  \n "),
    ("refusal prose", "I cannot help with that."),
    ("braces in prose", "I think {maybe} this"),
    ("brackets in prose", "The set [a, b] is here"),
    ("key value prose", "key: value"),
    ("scalar only", "42"),
    ("string only", '"just a string"'),
    ("unclosed think", '<think>{"a": 1} is what I would say'),
    ("truncated object", '{"a": "unterminated'),
    ("truncated list keeps no inner object", '{"memories": [{"text": "a"}, {"text": "b'),
    ("truncated fence", '```json\n{"memories": [{"text": "a'),
]


@pytest.mark.parametrize("text", [c[1] for c in UNUSABLE], ids=[c[0] for c in UNUSABLE])
def test_unusable(text: str) -> None:
    with pytest.raises(UnusableReplyError) as info:
        parse_json_reply(text, expect=(dict, list))
    assert info.value.reply == text
    assert isinstance(info.value, ValueError)


def test_error_says_why_and_quotes_the_reply() -> None:
    with pytest.raises(UnusableReplyError, match=r"cut off .*: '\{\"a\": \"unter"):
        parse_json_reply('{"a": "unterminated')
    with pytest.raises(UnusableReplyError, match="no usable JSON dict: 'no'"):
        parse_json_reply("no")
    with pytest.raises(UnusableReplyError, match="no usable JSON dict or list: 'no'"):
        parse_json_reply("no", expect=(dict, list))
    with pytest.raises(UnusableReplyError, match=r"\.\.\.$"):
        parse_json_reply("x" * 500)


def test_allow_incomplete_closes_truncated_json() -> None:
    value = parse_json_reply('{"memories": [{"text": "a"}, {"text": "b', allow_incomplete=True)
    assert value == {"memories": [{"text": "a"}, {"text": "b"}]}


@pytest.mark.parametrize(
    ("text", "expect", "expected"),
    [
        ('[1] says: {"a": 1}', dict, {"a": 1}),
        ('[2024-01-01] note: {"a": 1}', dict, {"a": 1}),
        ('[1] says: {"a": 1}', (dict, list), [1]),
        ('{"a": 1} then [2]', list, [2]),
        ('[{"text": "x"}]', list, [{"text": "x"}]),
    ],
)
def test_expect_selects_the_type(text: str, expect: Any, expected: Any) -> None:
    assert parse_json_reply(text, expect=expect) == expected


def test_default_expects_an_object() -> None:
    assert parse_json_reply('[1] says: {"a": 1}') == {"a": 1}
    with pytest.raises(UnusableReplyError):
        parse_json_reply("[1, 2]")


def test_expect_mismatch_is_unusable() -> None:
    with pytest.raises(UnusableReplyError, match="no usable JSON dict:"):
        parse_json_reply("[1, 2]", expect=dict)


def test_rejects_non_strings() -> None:
    with pytest.raises(TypeError, match="bytes"):
        parse_json_reply(b'{"a": 1}')  # type: ignore[arg-type]


def test_repairs_are_logged_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="oam"):
        parse_json_reply('{"a": [1,],}')
        parse_json_reply('{"a": 1}')
    assert [r.getMessage() for r in caplog.records] == ["model reply repaired by json_repair"]


# ---------------------------------------------------------------------------------------
# Round trip: any JSON value, however dumped and wrapped, parses back equal.

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)


def _nest(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(children, max_size=4) | st.dictionaries(
        st.text(max_size=8), children, max_size=4
    )


VALUES = st.recursive(SCALARS, _nest, max_leaves=20)
CONTAINERS = st.one_of(
    st.lists(VALUES, max_size=4), st.dictionaries(st.text(max_size=8), VALUES, max_size=4)
)
PROSE = st.text(
    alphabet=st.characters(exclude_characters="{[<\ufeff", exclude_categories=["Cs"]),
    max_size=40,
)


@st.composite
def dumped(draw: st.DrawFn, value: Any) -> str:
    return json.dumps(
        value,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 2])),
        separators=draw(st.sampled_from([None, (",", ":")])),
    )


@settings(max_examples=200, deadline=None)
@given(data=st.data(), value=CONTAINERS)
def test_round_trip_plain(data: st.DataObject, value: Any) -> None:
    assert parse_json_reply(data.draw(dumped(value)), expect=(dict, list)) == value


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    value=CONTAINERS,
    before=PROSE,
    after=st.text(max_size=40),
    fence=st.sampled_from(["", "```", "```json"]),
)
def test_round_trip_wrapped(
    data: st.DataObject, value: Any, before: str, after: str, fence: str
) -> None:
    body = data.draw(dumped(value))
    if fence:
        body = f"{fence}\n{body}\n```"
    assert parse_json_reply(f"{before}{body}{after}", expect=(dict, list)) == value
