"""Odd input on every back end (C25, C26 in docs/failure-modes.md; issue 14 items 5-7).

C25: NUL (U+0000) and lone surrogates (U+D800..U+DFFF) in text, ids, roles,
timestamps and metadata keys or values are the same ValueError naming the argument on
every back end, raised before anything is written; a read, delete or scope filter
with such an id finds nothing; a metadata filter holding one is a ValueError (SQLite's
JSON functions would stop at the NUL and match ``"a"`` against ``"a\\x00b"``).

C26: counts and positions of 2**63 and more (``k``, ``limit``, ``start``/``end``,
``last_n``) are clamped: never ``OverflowError`` or a driver error.
"""

from __future__ import annotations

from typing import Any

import pytest

from oam_core.memory.client import OracleAgentMemory
from oam_core.store.threads import thread_store

BAD = {"nul": "a\x00b", "surrogate": "a\ud800b"}
HUGE = [2**63, 2**64 + 7, 10**30]


def _seed(store: Any) -> None:
    store.add(
        ["a", "b", "c"], "message", record_ids=["m1", "m2", "m3"], thread_ids="t", roles="user"
    )
    store.add(["pizza a", "pizza b"], "memory", record_ids=["p1", "p2"], metadata={"k": "a"})


WRITES = {
    "content": (lambda s, v: s.add([v], "memory"), r"contents\[0\]"),
    "message content": (
        lambda s, v: s.add([v], "message", thread_ids="t", roles="user"),
        r"contents\[0\]",
    ),
    "record id": (lambda s, v: s.add(["x"], "memory", record_ids=v), "record_ids"),
    "thread id": (lambda s, v: s.add(["x"], "memory", thread_ids=v), r"thread_ids\[0\]"),
    "user id": (lambda s, v: s.add(["x"], "memory", user_ids=[v]), r"user_ids\[0\]"),
    "agent id": (lambda s, v: s.add(["x"], "memory", agent_ids=v), r"agent_ids\[0\]"),
    "role": (lambda s, v: s.add(["x"], "message", thread_ids="t", roles=v), r"roles\[0\]"),
    "timestamp": (lambda s, v: s.add(["x"], "memory", timestamps=v), r"\btimestamps\b"),
    "index text": (lambda s, v: s.add(["x"], "memory", index_texts=[v]), r"index_texts\[0\]"),
    "chunk": (
        lambda s, v: s.add(["x"], "memory", index_texts=[["ok", v]]),
        r"index_texts\[0\]\[1\]",
    ),
    "metadata value": (lambda s, v: s.add(["x"], "memory", metadata={"k": v}), r"metadata\[0\]"),
    "metadata key": (lambda s, v: s.add(["x"], "memory", metadata={v: 1}), r"metadata\[0\]"),
    "nested metadata": (
        lambda s, v: s.add(["x"], "memory", metadata={"k": [{"n": v}]}),
        r"metadata\[0\]",
    ),
    "profile": (lambda s, v: s.add_user("u9", v), r"contents\[0\]"),
    "update text": (lambda s, v: s.update("memory", "p1", text=v), "text"),
    "update index text": (lambda s, v: s.update("memory", "p1", index_text=v), "index_text"),
    "update metadata": (lambda s, v: s.update("memory", "p1", metadata={"k": v}), "metadata"),
    "update timestamp": (lambda s, v: s.update("memory", "p1", timestamp=v), "timestamp"),
    "thread row": (lambda s, v: thread_store(s).create_thread_row(v), "thread_id"),
    "thread row user": (lambda s, v: thread_store(s).create_thread_row("t9", user_id=v), "user_id"),
    "thread metadata": (
        lambda s, v: thread_store(s).create_thread_row("t9", metadata={"k": v}),
        "metadata",
    ),
}


@pytest.mark.parametrize("kind", sorted(BAD))
@pytest.mark.parametrize("case", sorted(WRITES))
def test_c25_unstorable_text_is_a_value_error_naming_the_argument(store, rejected, kind, case):
    _seed(store)
    write, name = WRITES[case]
    with rejected(store, match=name):
        write(store, BAD[kind])


@pytest.mark.parametrize("kind", sorted(BAD))
def test_c25_the_error_says_what_is_wrong(store, kind):
    what = "NUL character" if kind == "nul" else "lone surrogate"
    with pytest.raises(ValueError, match=what):
        store.add([BAD[kind]], "memory")


@pytest.mark.parametrize("kind", sorted(BAD))
def test_c25_lookups_by_such_an_id_find_nothing(store, kind):
    _seed(store)
    bad = BAD[kind]
    assert store.get("memory", bad) is None
    assert store.get("message", "m1" + bad) is None
    assert store.list("message", thread_id=bad) == []
    assert store.list("memory", user_id=bad) == []
    assert store.list_thread_messages(bad) == []
    assert store.count_thread_messages(bad) == 0
    assert thread_store(store).get_thread_row(bad) is None
    assert thread_store(store).list_thread_rows(user_id=bad) == []
    assert store.search("pizza", 5, user_id=bad, exact_user_match=True) == []
    assert store.search("pizza", 5, thread_id=bad, exact_thread_match=True) == []
    assert store.delete("memory", bad) == 0
    assert store.delete_thread(bad) == 0
    assert store.delete_records("memory", [bad, "p1"]) == 1
    assert store.update("memory", bad, text="x") == 0
    assert [r.id for r in store.list("memory")] == ["p2"]
    assert len(store.list_thread_messages("t")) == 3


@pytest.mark.parametrize("kind", sorted(BAD))
@pytest.mark.parametrize(
    "flt",
    [
        lambda v: {"k": v},
        lambda v: {v: "a"},
        lambda v: {"k": {"$not": v}},
        lambda v: {"k": {"$array_contains": v}},
        lambda v: {"k": {"$array_contains_any": ["a", v]}},
        lambda v: {"n": {"deep": v}},
    ],
    ids=["value", "key", "not", "contains", "contains-any", "nested"],
)
def test_c25_filters_never_match_across_a_nul(store, kind, flt):
    _seed(store)
    with pytest.raises(ValueError, match="metadata_filter"):
        store.list("memory", metadata_filter=flt(BAD[kind]))
    with pytest.raises(ValueError, match="metadata_filter"):
        store.search("pizza", 5, metadata_filter=flt(BAD[kind]))


def test_c25_a_prefix_before_the_nul_is_not_a_match(store):
    """The SQLite bug this guards against: a stored ``"a\\x00b"`` matched ``{"k": "a"}``.
    Such a value can no longer be stored; ``"a"`` matches only ``"a"``."""
    _seed(store)
    with pytest.raises(ValueError):
        store.add(["q"], "memory", record_ids="nul", metadata={"k": "a\x00b"})
    assert [r.id for r in store.list("memory", metadata_filter={"k": "a"})] == ["p1", "p2"]


@pytest.mark.parametrize("kind", sorted(BAD))
def test_c25_query_text_is_checked(store, kind):
    _seed(store)
    with pytest.raises(ValueError, match="query"):
        store.search(BAD[kind], 5)


@pytest.mark.parametrize("kind", sorted(BAD))
def test_c25_thread_messages_name_the_message(store, kind):
    client = OracleAgentMemory(store=store, extract_memories=False)
    thread = client.create_thread(thread_id="t", user_id="u", agent_id="a")
    for field, message in (
        ("content", {"role": "user", "content": BAD[kind]}),
        ("role", {"role": BAD[kind], "content": "x"}),
        ("id", {"role": "user", "content": "x", "id": BAD[kind]}),
        ("metadata", {"role": "user", "content": "x", "metadata": {"k": BAD[kind]}}),
    ):
        with pytest.raises(ValueError, match=rf"messages\[1\]\.{field}"):
            thread.add_messages([{"role": "user", "content": "fine"}, message])
    assert thread.get_messages() == []
    assert thread.delete_message(BAD[kind]) == 0
    with pytest.raises(KeyError):
        client.get_thread(BAD[kind])
    with pytest.raises(ValueError, match="thread_id"):
        client.create_thread(thread_id=BAD[kind])


# -- C26 -------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["VECTOR", "KEYWORD", "HYBRID"])
@pytest.mark.parametrize("k", HUGE)
def test_c26_huge_k_is_clamped(make_store, strategy, k):
    store = make_store(search_strategy=strategy)
    _seed(store)
    found = store.search("pizza", k)
    assert {r.id for r, _ in found} >= {"p1", "p2"}
    assert [r.id for r, _ in found] == [r.id for r, _ in store.search("pizza", 100)]


@pytest.mark.parametrize("n", HUGE)
def test_c26_huge_limit_and_positions_are_clamped(store, n):
    _seed(store)
    assert [r.id for r in store.list("memory", limit=n)] == ["p1", "p2"]
    ids = ["m1", "m2", "m3"]
    assert [r.id for r in store.list_thread_messages("t", last_n=n)] == ids
    assert store.list_thread_messages("t", start=n) == []
    assert [r.id for r in store.list_thread_messages("t", start=-n)] == ids
    assert [r.id for r in store.list_thread_messages("t", start=1, end=n)] == ids[1:]
    assert [r.id for r in store.list_thread_messages("t", start=-n, end=-1)] == ids[:2]
    assert store.list_thread_messages("t", start=0, end=-n) == []


@pytest.mark.parametrize("n", HUGE)
def test_c26_thread_windows_and_cards_clamp_too(store, n):
    client = OracleAgentMemory(store=store, extract_memories=False)
    thread = client.create_thread(thread_id="t", user_id="u", agent_id="a")
    thread.add_messages([{"role": "user", "content": f"pizza {i}"} for i in range(3)])
    assert thread.get_messages(start=n) == []
    assert thread.get_messages(start=-n) == []  # [start:start+100], as a Python slice
    assert [m.content for m in thread.get_messages(start=-n, end=None)] == [
        "pizza 0",
        "pizza 1",
        "pizza 2",
    ]
    assert [m.content for m in thread.get_messages(start=1, end=n)] == ["pizza 1", "pizza 2"]
    card = thread.get_context_card(
        fallback_message_count=n, max_relevant_results=n, max_recent_messages=n
    )
    assert card.content.count("<message>") == 3
    assert thread.get_summary(except_last=n, token_budget=n).content == ""
