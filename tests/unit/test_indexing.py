"""What a message is indexed by (oam_core/memory/indexing.py; docs/retrieval.md)."""

from __future__ import annotations

from oam_core.apis.thread import Message
from oam_core.memory.indexing import message_index_texts


def msg(content: str, name: str | None = None, timestamp: str | None = None) -> Message:
    metadata = {"$message": {"name": name}} if name else None
    return Message(role="user", content=content, timestamp=timestamp, metadata=metadata)


def test_own_row_carries_day_and_speaker_context_row_does_not_repeat_the_day() -> None:
    rows = message_index_texts(
        [
            msg("I went to a support group.", "Caroline", "2023-05-08T13:56:00"),
            msg("That's great!", "Melanie", "2023-05-08T13:57:00+02:00"),
        ],
        None,
        896,
    )
    assert rows == [
        ["[8 May 2023] Caroline: I went to a support group."],
        [
            "[8 May 2023] Melanie: That's great!",
            "Caroline: I went to a support group.\nMelanie: That's great!",
        ],
    ]


def test_without_timestamp_or_name_the_text_is_plain() -> None:
    previous = msg("hello")
    rows = message_index_texts([msg("hi"), msg("  "), msg("x")], previous, 896)
    # A blank message has no rows and adds nothing to the next one's context.
    assert rows == [["hi", "hello\nhi"], [], ["x", "hi\nx"]]


def test_the_context_row_holds_the_previous_exchange() -> None:
    turns = [msg(f"turn {i}", "Ana" if i % 2 else "Ben") for i in range(5)]
    rows = message_index_texts(turns, None, 896)
    assert [r[1:] for r in rows] == [
        [],
        ["Ben: turn 0\nAna: turn 1"],
        ["Ben: turn 0\nAna: turn 1\nBen: turn 2"],
        ["Ana: turn 1\nBen: turn 2\nAna: turn 3"],
        ["Ben: turn 2\nAna: turn 3\nBen: turn 4"],
    ]
    # Streamed one by one with the thread's last messages: the same rows.
    for i in range(len(turns)):
        assert message_index_texts([turns[i]], turns[:i], 896) == [rows[i]]
    assert message_index_texts([turns[2]], turns[1], 896) == [
        ["Ben: turn 2", "Ana: turn 1\nBen: turn 2"]
    ]


def test_earlier_messages_that_do_not_fit_are_left_out_oldest_first() -> None:
    old, near, own = msg("a" * 30), msg("b" * 10), msg("c" * 10)
    # 10 + 1 + 10 fits in 25; the older one (31 more) does not.
    assert message_index_texts([own], [old, near], 25) == [["c" * 10, "b" * 10 + "\n" + "c" * 10]]
    # Not even the nearest fits: its last characters are kept.
    rows = message_index_texts([own], [old, msg("b" * 40)], 25)
    assert rows[0][1].endswith("\n" + "c" * 10) and len(rows[0][1]) <= 25
    assert rows[0][1].startswith("b")


def test_the_prefixed_own_row_is_chunked_to_the_store_size() -> None:
    rows = message_index_texts([msg("word " * 30, "Ana", "2024-01-02")], None, 40)
    assert rows[0][0].startswith("[2 January 2024] Ana: ")
    assert all(len(row) <= 40 for row in rows[0])
