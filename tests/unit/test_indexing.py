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
    # A blank message has no rows and no context for the next one.
    assert rows == [["hi", "hello\nhi"], [], ["x"]]


def test_the_prefixed_own_row_is_chunked_to_the_store_size() -> None:
    rows = message_index_texts([msg("word " * 30, "Ana", "2024-01-02")], None, 40)
    assert rows[0][0].startswith("[2 January 2024] Ana: ")
    assert all(len(row) <= 40 for row in rows[0])
