"""Conformance: one rule for message ids and one for roles on every back end (a
fresh-user review found them differing between the library, ``oam ingest`` and
``oam mcp``; docs/concepts.md#records).

* Each message's id is optional on its own: in one call the given ids are kept and
  the missing ones generated; an id given twice is a
  ValueError naming it, and nothing is written.
* A role is any non-blank string: ``user``, ``assistant``, ``system``, ``tool`` and
  framework roles such as ``developer`` are stored as given; a blank role is a
  ValueError before anything is written.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from oam_core import OracleAgentMemory


@pytest.fixture
def mem(store: Any) -> OracleAgentMemory:
    return OracleAgentMemory(store=store, extract_memories=False)


MIXED = [
    {"role": "user", "content": "one", "id": "m1"},
    {"role": "assistant", "content": "two", "id": "m2"},
    {"role": "user", "content": "three"},
]


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_mixed_ids_keep_the_given_ones_and_generate_the_rest(
    mem: OracleAgentMemory, store: Any, use_async: bool
) -> None:
    thread = mem.create_thread(thread_id="T", user_id="u", agent_id="a")
    add = thread.add_messages_async if use_async else thread.add_messages
    ids = asyncio.run(add(MIXED)) if use_async else add(MIXED)
    assert ids[:2] == ["m1", "m2"]
    assert ids[2] not in ("m1", "m2") and len(ids[2]) == 36  # a uuid4
    reverse = thread.add_messages(
        [{"role": "user", "content": "x"}, {"role": "user", "content": "y", "id": "y"}]
    )
    assert reverse[1] == "y" and len(reverse[0]) == 36
    stored = store.list_thread_messages("T")
    assert [(m.id, m.content) for m in stored] == [
        ("m1", "one"),
        ("m2", "two"),
        (ids[2], "three"),
        (reverse[0], "x"),
        ("y", "y"),
    ]
    other = [{**m, "id": "w" + m["id"][1:]} if "id" in m else m for m in MIXED]
    written = mem.write_thread("W", other, user_id="u")
    assert written[:2] == ["w1", "w2"] and len(written[2]) == 36
    assert [m.id for m in store.list_thread_messages("W")] == written


def test_an_id_given_twice_in_one_call_is_rejected_naming_it(
    mem: OracleAgentMemory, store: Any, rejected: Any
) -> None:
    thread = mem.create_thread(thread_id="T", user_id="u", agent_id="a")
    twice = [*MIXED, {"role": "user", "content": "again", "id": "m2"}]
    with rejected(store, match=r"duplicate record ids in one call: \['m2'\]"):
        thread.add_messages(twice)
    thread.add_messages(MIXED[:1])
    with rejected(store, match=r"record ids already exist: \['m1'\]"):
        thread.add_messages(MIXED)


def test_any_non_blank_role_is_stored_and_a_blank_one_is_rejected(
    mem: OracleAgentMemory, store: Any, rejected: Any
) -> None:
    thread = mem.create_thread(thread_id="T", user_id="u", agent_id="a")
    roles = ["user", "assistant", "system", "tool", "developer", "bot"]
    thread.add_messages([{"role": r, "content": f"said by {r}"} for r in roles])
    assert [m.role for m in store.list_thread_messages("T")] == roles
    for blank in ("", "   "):
        with rejected(store, match="role must be a non-empty string"):
            thread.add_messages(
                [{"role": "user", "content": "ok"}, {"role": blank, "content": "x"}]
            )


@pytest.mark.parametrize("blank", ["", "   ", 3])
def test_store_add_refuses_a_blank_role_as_the_thread_does(
    store: Any, rejected: Any, blank: object
) -> None:
    with rejected(store, match=r"roles\[1\] must be a non-empty string"):
        store.add(["ok", "x"], "message", thread_ids="T", roles=["user", blank])
    assert store.add(["ok"], "message", thread_ids="T", roles=["developer"])
