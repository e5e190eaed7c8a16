"""Conformance: one rule for message ids and one for roles on every back end (a
fresh-user review found them differing between the library, ``oam ingest`` and
``oam mcp``; docs/concepts.md#records).

* The messages of one call carry ids all or none: a mix is a ValueError naming the
  argument and the first offending index, and nothing is written.
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
def test_mixed_ids_are_rejected_naming_the_first_offending_index(
    mem: OracleAgentMemory, store: Any, rejected: Any, use_async: bool
) -> None:
    thread = mem.create_thread(thread_id="T", user_id="u", agent_id="a")
    with rejected(store, match=r"messages\[0\] has an id but messages\[2\] has none"):
        if use_async:
            asyncio.run(thread.add_messages_async(MIXED))
        else:
            thread.add_messages(MIXED)
    reverse = [{"role": "user", "content": "x"}, {"role": "user", "content": "y", "id": "y"}]
    with rejected(store, match=r"messages\[0\] has no id but messages\[1\] has one"):
        thread.add_messages(reverse)
    with rejected(store, match=r"messages\[2\] has none"):
        mem.write_thread("W", MIXED, user_id="u")
    assert thread.add_messages(MIXED[:2]) == ["m1", "m2"]
    assert len(thread.add_messages([{"role": "user", "content": "gen"}] * 2)) == 2


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
