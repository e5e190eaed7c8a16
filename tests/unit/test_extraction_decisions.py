"""Update decisions checked against the memories the prompt showed
(docs/memory-pipeline.md#update-decisions): pure functions, no store, no LLM."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from oam_core.apis.records import Record
from oam_core.memory.decisions import Decision, normalized_text, resolve_decisions
from oam_core.memory.diagnostics import MemoryPipelineWarning
from oam_core.memory.extraction import ExtractedMemory

LISBON = Record(id="m-lisbon", record_type="fact", content="Ana lives in Lisbon.")
TEA = Record(id="m-tea", record_type="preference", content="Ana likes tea")
SHOWN = [LISBON, TEA]


def _item(
    text: str, decision: str = "ADD", target_id: str | None = None, **kw: str
) -> ExtractedMemory:
    return ExtractedMemory(text, kw.pop("record_type", "fact"), None, decision, target_id, **kw)


@contextmanager
def _warnings() -> Iterator[list[str]]:
    messages: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield messages
    assert all(w.category is MemoryPipelineWarning for w in caught)
    messages.extend(str(w.message) for w in caught)


def _actions(decisions: list[Decision]) -> list[tuple[str, str | None]]:
    return [(d.action, d.target.id if d.target else None) for d in decisions]


def test_shown_targets_are_updated_and_deleted_as_asked() -> None:
    items = [
        _item("Ana lives in Berlin", "UPDATE", "m-lisbon", reason="moved"),
        _item("x", "DELETE", "m-tea", record_type="preference"),
        _item("Ana has a dog"),
        _item("Ana has a cat", "NOOP"),
    ]
    with _warnings() as seen:
        decisions = resolve_decisions(items, SHOWN)
    assert seen == []
    assert _actions(decisions) == [
        ("UPDATE", "m-lisbon"),
        ("DELETE", "m-tea"),
        ("ADD", None),
        ("NOOP", None),
    ]
    assert [d.memory for d in decisions] == items
    assert [d.stores for d in decisions] == [True, False, True, False]


@pytest.mark.parametrize(
    ("item", "expected", "says"),
    [
        (_item("Ana lives in Berlin", "UPDATE", "m-unknown"), "ADD", "did not show"),
        (_item("Ana lives in Berlin", "UPDATE", None), "ADD", "names no target_id"),
        (_item("Ana lives in Berlin", "DELETE", "m-unknown"), "NOOP", "did not show"),
        (_item("Ana lives in Berlin", "DELETE"), "NOOP", "names no target_id"),
        # an id the store holds but the prompt did not show is not a target either
        (_item("Ana lives in Berlin", "UPDATE", "m-other-user"), "ADD", "'m-other-user'"),
    ],
    ids=["update-unknown", "update-missing", "delete-unknown", "delete-missing", "not-shown"],
)
def test_a_target_not_shown_turns_update_into_add_and_delete_into_nothing(
    item: ExtractedMemory, expected: str, says: str
) -> None:
    with _warnings() as seen:
        (decision,) = resolve_decisions([item], SHOWN)
    assert (decision.action, decision.target) == (expected, None)
    (warning,) = seen
    assert says in warning and item.decision in warning and "'Ana lives in Berlin'" in warning


def test_a_target_is_changed_once_per_reply() -> None:
    items = [
        _item("Ana lives in Berlin", "UPDATE", "m-lisbon"),
        _item("Ana lives in Paris", "UPDATE", "m-lisbon"),
        _item("gone", "DELETE", "m-lisbon"),
    ]
    with _warnings() as seen:
        decisions = resolve_decisions(items, SHOWN)
    assert _actions(decisions) == [("UPDATE", "m-lisbon"), ("ADD", None), ("NOOP", None)]
    assert len(seen) == 2 and all("an earlier item already changed" in w for w in seen)


@pytest.mark.parametrize(
    "text",
    [
        "Ana lives in Lisbon",
        "  ana LIVES in   lisbon!",
        "Ana lives in Lisbon...",
        "ANA LIVES IN LISBON.",
    ],
)
@pytest.mark.parametrize("asked", ["ADD", "UPDATE"])
def test_a_repeat_of_a_shown_memory_is_a_noop_whatever_the_model_said(
    text: str, asked: str
) -> None:
    target = "m-lisbon" if asked == "UPDATE" else None
    with _warnings() as seen:
        (decision,) = resolve_decisions([_item(text, asked, target)], SHOWN)
    assert (decision.action, decision.target) == ("NOOP", None) and seen == []


def test_repeats_compare_within_one_type_and_within_the_reply() -> None:
    items = [
        _item("Ana likes tea"),  # a fact: the shown "Ana likes tea" is a preference
        _item("ana likes tea."),  # repeats the item before
        _item("Ana likes tea", record_type="preference"),  # repeats the shown memory
        _item("Ana lives in Lisbon, Portugal"),  # more than the shown text: not a repeat
    ]
    decisions = resolve_decisions(items, SHOWN)
    assert [d.action for d in decisions] == ["ADD", "NOOP", "NOOP", "ADD"]


def test_an_update_that_repeats_its_target_leaves_the_target_free() -> None:
    items = [
        _item("Ana lives in Lisbon", "UPDATE", "m-lisbon"),
        _item("no longer true", "DELETE", "m-lisbon"),
    ]
    with _warnings() as seen:
        decisions = resolve_decisions(items, SHOWN)
    assert _actions(decisions) == [("NOOP", None), ("DELETE", "m-lisbon")] and seen == []


def test_normalized_text() -> None:
    assert normalized_text("  Ana  lives\tin BERLIN. ") == "ana lives in berlin"
    assert normalized_text("Really?!") == "really"
    assert normalized_text("Wait\u2026 ") == "wait"
    assert normalized_text("a.b") == "a.b"
    assert normalized_text("") == ""


def test_a_repeat_with_a_target_not_shown_is_a_noop_without_a_warning() -> None:
    with _warnings() as seen:
        (decision,) = resolve_decisions([_item("Ana lives in Lisbon", "UPDATE", "gone")], SHOWN)
    assert (decision.action, decision.target, seen) == ("NOOP", None, [])


# A record its writer manages (a LangGraph item of OAMStore): shown, never a target.
COLOUR = Record(
    id="m-colour",
    record_type="memory",
    content="Alice's favourite colour is green",
    metadata={"$agent_memory": {"managed": True}, "value": {"text": "green"}},
)
PROVENANCE_ONLY = Record(
    id="m-dog",
    record_type="memory",
    content="Alice has a dog",
    metadata={"$agent_memory": {"source_message_ids": ["m1"], "managed": False}},
)
MIXED = [COLOUR, PROVENANCE_ONLY, LISBON]


def test_a_managed_record_is_no_target_an_unmarked_one_is() -> None:
    items = [
        _item("Alice's favourite colour is blue", "UPDATE", "m-colour", record_type="memory"),
        _item("", "DELETE", "m-colour", record_type="memory"),
        _item("Alice has a cat", "UPDATE", "m-dog", record_type="memory"),
        _item("", "DELETE", "m-lisbon"),
    ]
    with _warnings() as seen:
        decisions = resolve_decisions(items, MIXED)
    assert _actions(decisions) == [
        ("ADD", None),  # the new text is stored beside the managed record
        ("NOOP", None),
        ("UPDATE", "m-dog"),  # "managed": False is no mark
        ("DELETE", "m-lisbon"),
    ]
    assert [d.stores for d in decisions] == [True, False, True, False]
    assert seen == [
        'extraction reply item "Alice\'s favourite colour is blue": UPDATE names '
        "target_id 'm-colour', which is managed by the application that wrote it; "
        "stored as a new memory (ADD)",
        "extraction reply item without text: DELETE names target_id 'm-colour', which "
        "is managed by the application that wrote it; ignored",
    ]


def test_a_managed_record_still_counts_for_repeats() -> None:
    items = [
        _item("alice's favourite colour is GREEN.", "UPDATE", "m-colour", record_type="memory"),
        _item("Alice's favourite colour is green", record_type="memory"),
    ]
    with _warnings() as seen:
        decisions = resolve_decisions(items, MIXED)
    assert _actions(decisions) == [("NOOP", None), ("NOOP", None)] and seen == []
