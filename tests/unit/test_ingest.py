"""Tests for ``oam_core.ingest``: format detection, LoCoMo mapping and error messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oam_core.ingest import Conversation, IngestError, load_conversations

REPO = Path(__file__).parents[2]
LOCOMO_DIR = REPO.parent / "shared/data/locomo"

MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "My dog is called Biscuit.", "timestamp": "2025-01-02T09:00:00"},
    {"role": "assistant", "content": "Lovely name!", "metadata": {"turn": 2}},
    {"role": "user", "content": ""},
]


def _locomo_sample(sample_id: str = "conv-1") -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben!"},
                {
                    "speaker": "Ben",
                    "dia_id": "D1:2",
                    "text": "Look at my garden.",
                    "blip_caption": "a photo of tomatoes",
                    "img_url": ["https://example.invalid/x.jpg"],
                },
            ],
            "session_2_date_time": "10:29 am on 9 August, 2023",
            "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "Back from Rome."}],
            "session_3_date_time": "7:00 pm on 1 September, 2023",
            "session_3": [],
            "session_10_date_time": "8:15 am on 2 October, 2023",
            "session_10": [{"speaker": "Ana", "dia_id": "D10:1", "text": "Tenth."}],
            "session_11_date_time": "9:00 am on 3 October, 2023",
        },
        "qa": [],
    }


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_jsonl_is_one_conversation_named_after_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "chat-42.jsonl", "\n".join(json.dumps(m) for m in MESSAGES) + "\n\n")
    [conversation] = load_conversations(path)
    assert conversation == Conversation(
        thread_id="chat-42",
        user_id=None,
        agent_id=None,
        messages=[
            {
                "role": "user",
                "content": "My dog is called Biscuit.",
                "timestamp": "2025-01-02T09:00:00+00:00",
            },
            {"role": "assistant", "content": "Lovely name!", "metadata": {"turn": 2}},
            {"role": "user", "content": ""},
        ],
    )


def test_jsonl_without_suffix_is_detected(tmp_path: Path) -> None:
    path = _write(tmp_path / "chat.txt", "\n".join(json.dumps(m) for m in MESSAGES))
    [conversation] = load_conversations(path, user_id="u1", agent_id="a1")
    assert (conversation.thread_id, conversation.user_id, conversation.agent_id) == (
        "chat",
        "u1",
        "a1",
    )
    assert len(conversation.messages) == 3


def test_single_line_without_suffix_is_one_message(tmp_path: Path) -> None:
    path = _write(tmp_path / "one.json", json.dumps(MESSAGES[0]))
    [conversation] = load_conversations(path)
    assert conversation.messages == [{**MESSAGES[0], "timestamp": "2025-01-02T09:00:00+00:00"}]


def test_json_list_of_messages(tmp_path: Path) -> None:
    path = _write(tmp_path / "list.json", json.dumps(MESSAGES, indent=2))
    [conversation] = load_conversations(path)
    assert conversation.thread_id == "list"
    assert [m["content"] for m in conversation.messages] == [m["content"] for m in MESSAGES]


def test_null_optional_fields_are_dropped(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "n.jsonl",
        json.dumps({"role": "user", "content": "x", "timestamp": None, "metadata": None}),
    )
    assert load_conversations(path)[0].messages == [{"role": "user", "content": "x"}]


def test_locomo_list_one_thread_per_non_empty_session(tmp_path: Path) -> None:
    path = _write(tmp_path / "locomo.json", json.dumps([_locomo_sample(), _locomo_sample("c2")]))
    conversations = load_conversations(path)
    assert [c.thread_id for c in conversations] == [
        "conv-1-s1",
        "conv-1-s2",
        "conv-1-s10",
        "c2-s1",
        "c2-s2",
        "c2-s10",
    ]
    assert {c.user_id for c in conversations[:3]} == {"conv-1"}
    assert {c.agent_id for c in conversations} == {None}
    first = conversations[0]
    assert first.messages == [
        {
            "role": "user",
            "content": "Hi Ben!",
            "metadata": {"dia_id": "D1:1", "$message": {"name": "Ana"}},
            "timestamp": "2023-05-08T13:56:00+00:00",
        },
        {
            "role": "assistant",
            "content": "Look at my garden. [a photo of tomatoes]",
            "metadata": {"dia_id": "D1:2", "$message": {"name": "Ben"}},
            "timestamp": "2023-05-08T13:56:00+00:00",
        },
    ]
    assert conversations[1].messages[0]["timestamp"] == "2023-08-09T10:29:00+00:00"
    assert conversations[1].messages[0]["role"] == "assistant"


def test_locomo_single_sample_and_user_override(tmp_path: Path) -> None:
    sample = _locomo_sample()
    del sample["conversation"]["session_2_date_time"]
    path = _write(tmp_path / "one.json", json.dumps(sample))
    conversations = load_conversations(path, user_id="me", agent_id="bot")
    assert [(c.user_id, c.agent_id) for c in conversations] == [("me", "bot")] * 3
    assert "timestamp" not in conversations[1].messages[0]


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("empty.jsonl", "  \n", "the file is empty"),
        (
            "bad.jsonl",
            '{"role": "user", "content": "a"}\n{"role": "user", "content": \n',
            "line 2: invalid JSON",
        ),
        ("bad.json", '[\n  {"role": "user",\n   "content": "a"\n', "invalid JSON at line"),
        ("scalar.json", "42", "got a JSON number"),
        ("empty.json", "[]", "the JSON list is empty"),
        ("obj.json", '{"hello": 1}', "neither a message"),
        ("noc.jsonl", '{"role": "user"}', "line 1: 'content' is missing"),
        ("norole.json", '[{"content": "x"}]', "[0]: 'role' is missing"),
        (
            "extra.jsonl",
            '{"role": "user", "content": "x", "foo": 1}',
            "line 1: unknown message keys ['foo']",
        ),
        (
            "meta.jsonl",
            '{"role": "user", "content": "x", "metadata": [1]}',
            "line 1: 'metadata' must be an object",
        ),
        (
            "ts.jsonl",
            '{"role": "user", "content": "x", "timestamp": 17}',
            "'timestamp' must be an ISO-8601 string",
        ),
        ("list.json", '[{"role": "user", "content": "x"}, 5]', "[1]: expected a message"),
        ("blank.jsonl", "\n\n[1, 2]\n", "line 3: expected a message object"),
    ],
)
def test_bad_files_raise_ingest_error_naming_file_and_place(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    path = _write(tmp_path / name, text)
    with pytest.raises(IngestError) as info:
        load_conversations(path)
    assert str(info.value).startswith(str(path))
    assert expected in str(info.value)
    assert isinstance(info.value, ValueError)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="no such file"):
        load_conversations(tmp_path / "nope.jsonl")
    with pytest.raises(IngestError, match="is a directory"):
        load_conversations(tmp_path)


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'{"role": "user", "content": "caf\xe9"}')
    with pytest.raises(IngestError, match="not UTF-8"):
        load_conversations(path)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda s: s["conversation"]["session_1"][0].update(speaker="Zed"),
            "sample 'conv-1' session_1[0]: speaker 'Zed' is neither",
        ),
        (lambda s: s["conversation"]["session_2"][0].pop("dia_id"), "session_2[0]: 'dia_id'"),
        (lambda s: s["conversation"]["session_2"][0].update(text=None), "'text' must be a string"),
        (lambda s: s["conversation"].update(session_1_date_time="someday"), "cannot parse date"),
        (lambda s: s["conversation"].update(session_2="x"), "session_2 must be a list"),
        (lambda s: s["conversation"].pop("speaker_b"), "speaker_b must be a non-empty string"),
        (lambda s: s.update(conversation=[]), "'conversation' must be an object"),
        (
            lambda s: s.update(conversation={"speaker_a": "A", "speaker_b": "B"}),
            "no session_<n> lists",
        ),
    ],
)
def test_bad_locomo_samples(tmp_path: Path, mutate: Any, expected: str) -> None:
    sample = _locomo_sample()
    mutate(sample)
    path = _write(tmp_path / "locomo.json", json.dumps([sample]))
    with pytest.raises(IngestError, match="^" + str(path)) as info:
        load_conversations(path)
    assert expected in str(info.value)


def test_a_locomo_turn_without_text_names_sample_session_and_turn(tmp_path: Path) -> None:
    sample = _locomo_sample()
    del sample["conversation"]["session_1"][1]["text"]
    path = _write(tmp_path / "locomo.json", json.dumps([sample]))
    with pytest.raises(IngestError) as info:
        load_conversations(path)
    assert str(info.value) == (
        f"{path}: sample 'conv-1' session_1[1] (turn D1:2): the turn has no 'text' "
        "(its keys: blip_caption, dia_id, img_url, speaker)"
    )


def test_a_repeated_sample_id_is_refused_before_anything_is_loaded(tmp_path: Path) -> None:
    samples = [_locomo_sample("conv-1"), _locomo_sample("conv-2"), _locomo_sample("conv-1")]
    path = _write(tmp_path / "locomo.json", json.dumps(samples))
    with pytest.raises(
        IngestError, match=r"\[2\]: sample_id 'conv-1' is also the id of element \[0\]"
    ):
        load_conversations(path)


def test_locomo_list_with_a_stray_element(tmp_path: Path) -> None:
    path = _write(tmp_path / "l.json", json.dumps([_locomo_sample(), {"role": "user"}]))
    with pytest.raises(IngestError, match=r"\[1\]: expected a LoCoMo sample"):
        load_conversations(path)


def test_demo_conversation_is_packaged_and_valid() -> None:
    packaged = REPO / "oam_core/demo/demo_conversation.jsonl"
    example = REPO / "examples/data/demo_conversation.jsonl"
    [conversation] = load_conversations(packaged, user_id="demo-user")
    assert len(conversation.messages) >= 250
    roles = [m["role"] for m in conversation.messages]
    assert roles[::2] == ["user"] * len(roles[::2])
    assert roles[1::2] == ["assistant"] * len(roles[1::2])
    timestamps = [m["timestamp"] for m in conversation.messages]
    assert timestamps == sorted(timestamps)
    assert example.read_bytes() == packaged.read_bytes()


@pytest.mark.skipif(not (LOCOMO_DIR / "locomo_dev.json").exists(), reason="LoCoMo data absent")
def test_real_locomo_dev_file() -> None:
    conversations = load_conversations(LOCOMO_DIR / "locomo_dev.json")
    samples = {c.user_id for c in conversations}
    assert samples == {"conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44", "conv-47"}
    assert len(conversations) == 19 + 19 + 32 + 29 + 29 + 28 + 31
    assert sum(len(c.messages) for c in conversations) == 4124
    first = conversations[0]
    assert first.thread_id == "conv-26-s1"
    assert first.messages[0]["timestamp"] == "2023-05-08T13:56:00+00:00"
    assert first.messages[0]["metadata"] == {"dia_id": "D1:1", "$message": {"name": "Caroline"}}
    assert first.messages[0]["role"] == "user"
    assert first.messages[1]["role"] == "assistant"
    dia_ids = [m["metadata"]["dia_id"] for c in conversations for m in c.messages]
    assert len(dia_ids) == 4124
    captioned = [m for c in conversations for m in c.messages if m["content"].endswith("]")]
    assert len(captioned) >= 800


def test_messages_the_store_would_refuse_are_rejected_with_their_line(tmp_path: Path) -> None:
    good = '{"role": "user", "content": "ok"}\n'
    nan = _write(
        tmp_path / "nan.jsonl", good + '{"role":"user","content":"x","metadata":{"v":NaN}}\n'
    )
    with pytest.raises(IngestError, match=r"nan\.jsonl: line 2: bad 'metadata'.*nan"):
        load_conversations(nan)
    surrogate = tmp_path / "surrogate.jsonl"
    surrogate.write_text(good + '{"role": "user", "content": "a\\ud800b"}\n', encoding="utf-8")
    with pytest.raises(IngestError, match=r"surrogate\.jsonl: line 2: 'content' is not valid"):
        load_conversations(surrogate)
    nul = tmp_path / "nul.jsonl"
    nul.write_text(good + '{"role": "user", "content": "a\\u0000b"}\n', encoding="utf-8")
    says = r"nul\.jsonl: line 2: 'content' contains a NUL character \(U\+0000\) at index 1"
    with pytest.raises(IngestError, match=says):
        load_conversations(nul)
    listed = _write(
        tmp_path / "list.json", '[{"role": "user", "content": "x", "metadata": {"v": Infinity}}]'
    )
    with pytest.raises(IngestError, match=r"list\.json: \[0\]: bad 'metadata'"):
        load_conversations(listed)


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    lines = [
        json.dumps({"role": "user", "content": f"m{i}", "id": f"id-{i}"}) for i in range(1, 80)
    ]
    lines[70] = json.dumps({"role": "user", "content": "again", "id": "id-3"})
    path = _write(tmp_path / "dup.jsonl", "\n".join(lines) + "\n")
    with pytest.raises(IngestError) as info:
        load_conversations(path)
    assert str(info.value) == f"{path}: line 71: duplicate message id 'id-3' (first used at line 3)"


def test_locations_follow_the_messages(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "chat.jsonl",
        '{"role": "user", "content": "a"}\n\n{"role": "user", "content": "b"}\n',
    )
    [conversation] = load_conversations(path)
    assert conversation.locations == [f"{path}: line 1", f"{path}: line 3"]


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    for name in ("bom.jsonl", "bom.json"):
        path = tmp_path / name
        path.write_bytes(
            b"\xef\xbb\xbf" + b'[{"role": "user", "content": "caf\xc3\xa9"}]'
            if name.endswith(".json")
            else b"\xef\xbb\xbf" + b'{"role": "user", "content": "caf\xc3\xa9"}\n'
        )
        [conversation] = load_conversations(path)
        assert conversation.messages == [{"role": "user", "content": "café"}]


def test_deeply_nested_json_is_an_ingest_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "deep.json", "[" * 200000 + "]" * 200000)
    with pytest.raises(IngestError, match=r"deep\.json: the JSON is nested too deeply"):
        load_conversations(path)
    lines = _write(
        tmp_path / "deep.jsonl", '{"role": "user", "content": "x"}\n' + "[" * 200000 + "\n"
    )
    with pytest.raises(IngestError, match=r"deep\.jsonl: line 2: "):
        load_conversations(lines)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            '{"role": " ", "content": "x"}',
            "line 1: 'role' must be one of user, assistant, system, tool",
        ),
        ('{"role": null, "content": "x"}', "'role' must be one of user, "),
        ('{"role": "bot", "content": "x"}', "line 1: 'role' must be one of user, assistant"),
        (
            '{"role": "user", "content": null}',
            "line 1: 'content' must be a string, got a JSON null",
        ),
        ('{"role": "user"}', "line 1: 'content' is missing"),
        (
            '{"role": "user", "content": "x", "timestamp": "yesterday"}',
            "line 1: 'timestamp' is not an ISO-8601 date or date-time (e.g. 2026-03-01T09:30:00Z): "
            "'yesterday'",
        ),
        ('{"role": "user", "content": "x", "name": ""}', "line 1: 'name' must be a non-empty"),
    ],
)
def test_fields_are_checked_with_their_line(tmp_path: Path, line: str, expected: str) -> None:
    """Issue 15 item 6: roles, timestamps and missing fields are checked at the edge."""
    path = _write(tmp_path / "c.jsonl", '{"role": "user", "content": "ok"}\n' + line + "\n")
    with pytest.raises(IngestError) as caught:
        load_conversations(path)
    assert expected.replace("line 1", "line 2") in str(caught.value)


def test_timestamps_are_normalized_and_names_kept(tmp_path: Path) -> None:
    lines = [
        {
            "role": "user",
            "name": "Caroline",
            "content": "hi",
            "timestamp": "2026-03-01T11:30+02:00",
        },
        {"role": "user", "name": "Mel", "content": "yo", "metadata": {"$message": {"x": 1}}},
    ]
    path = _write(tmp_path / "group.jsonl", "\n".join(json.dumps(m) for m in lines))
    [conversation] = load_conversations(path)
    assert conversation.messages == [
        {
            "role": "user",
            "content": "hi",
            "timestamp": "2026-03-01T09:30:00+00:00",
            "metadata": {"$message": {"name": "Caroline"}},
        },
        {"role": "user", "content": "yo", "metadata": {"$message": {"x": 1, "name": "Mel"}}},
    ]


def test_samples_pick_locomo_conversations(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "lm.json", json.dumps([_locomo_sample("conv-1"), _locomo_sample("conv-2")])
    )
    picked = load_conversations(path, samples=["conv-2"])
    assert {c.sample_id for c in picked} == {"conv-2"}
    assert [c.thread_id for c in picked] == ["conv-2-s1", "conv-2-s2", "conv-2-s10"]
    with pytest.raises(IngestError, match="no sample 'conv-9'; the file holds conv-1, conv-2"):
        load_conversations(path, samples=["conv-9"])
    chat = _write(tmp_path / "c.jsonl", json.dumps(MESSAGES[0]))
    with pytest.raises(IngestError, match="applies to LoCoMo files"):
        load_conversations(chat, samples=["conv-1"])
