"""Update decisions of the extraction pass on every back end, driven by a scripted LLM
(docs/memory-pipeline.md#update-decisions): a move, a job change, a
preference reversed, a fact repeated; atomicity with the watermark under crashes and
LLM failures; two threads of one user superseding the same memory at once.

The scripted replies name their targets by the ids the prompt shows, so these tests
pin the mechanism: what is stored, which windows end, what the card, search and
history show before and after.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import pytest
from _fixtures import ScriptedLlm

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.memory.client import OracleAgentMemory
from oam_core.memory.diagnostics import MemoryPipelineWarning
from oam_core.memory.extraction import EXTRACTION_PROMPT, normalize_timestamp
from oam_core.memory.pipeline import EXTRACTION_STATE_KEY
from oam_core.memory.thread import OracleThread
from oam_core.store.threads import thread_store
from oam_core.store.versions import memory_versions

MEMORY_TYPES = ("fact", "guideline", "memory", "preference")
_SHOWN = re.compile(r'<memory id="([^"]+)" type="(\w+)"[^>]*>([^<]*)</memory>')


@pytest.fixture
def searchable(make_store: Callable[..., Any]) -> Any:
    return make_store(embedder=HashingEmbedder(64))


def shown(prompt: str) -> dict[str, str]:
    """The related memories an extraction prompt shows: ``{text: id}``."""
    return {text: memory_id for memory_id, _, text in _SHOWN.findall(prompt)}


def item(text: str | None, decision: str = "ADD", target: str | None = None, **fields: Any) -> Any:
    """A reply item with a decision; ``target`` is the text of a shown memory,
    turned into its id when the reply is given (None: no target); ``text`` None
    leaves the key out."""
    return {"text": text, "decision": decision, "target": target, **fields}


def reply(*items: Any) -> Callable[[str, Any], str]:
    """A scripted extraction reply whose targets are looked up in the prompt."""

    def answer(prompt: str, schema: Any) -> str:
        ids = shown(prompt)
        full = []
        for spec in items:
            spec = dict(spec)
            target = spec.pop("target")
            if spec["text"] is None:
                del spec["text"]
            full.append(
                {
                    "reason": spec.pop("reason", "scripted"),
                    "decision": spec.pop("decision"),
                    "target_id": ids.get(target, f"not shown: {target}") if target else None,
                    "record_type": spec.pop("record_type", "fact"),
                    "timestamp": None,
                    "valid_from": None,
                    **spec,
                }
            )
        return json.dumps({"memories": full})

    return answer


def _thread(store: Any, llm: ScriptedLlm, thread_id: str = "t1") -> OracleThread:
    client = OracleAgentMemory(store=store, llm=llm)
    return client.create_thread(thread_id=thread_id, user_id="ana", agent_id="helper")


def _say(thread: OracleThread, content: str, when: str) -> list[str]:
    return thread.add_messages([{"role": "user", "content": content, "timestamp": when}])


def _memories(store: Any) -> dict[str, Any]:
    """Every stored memory version by content (each content is stored once here)."""
    found = [r for kind in MEMORY_TYPES for r in store.list(kind)]
    by_text = {r.content: r for r in found}
    assert len(by_text) == len(found), "a memory was stored twice"
    return by_text


def _current(store: Any, query: str) -> list[str]:
    return [
        r.content
        for r, _ in store.search(
            query, k=10, user_id="ana", agent_id="helper", record_types=set(MEMORY_TYPES)
        )
    ]


def _at(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text).astimezone(timezone.utc)


def _utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)


def _card(thread: OracleThread) -> str:
    return thread.get_context_card(max_relevant_results=10).content


def _history(store: Any, memory_id: str) -> list[str]:
    return [r.content for r in memory_versions(store).get_memory_history(memory_id)]


@contextmanager
def _no_warnings() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", MemoryPipelineWarning)
        yield


def _reserved(record: Any) -> dict[str, Any]:
    return dict(record.metadata["$agent_memory"])


# -- scenarios -----------------------------------------------------------------------------


def test_a_move_supersedes_the_old_home_at_the_new_valid_from(searchable: Any) -> None:
    llm = ScriptedLlm(
        extraction=[
            reply(item("Ana lives in Lisbon")),
            reply(
                item(
                    "Ana lives in Berlin",
                    "UPDATE",
                    "Ana lives in Lisbon",
                    reason="Ana moved to Berlin",
                    valid_from="2024-05-15",
                )
            ),
        ]
    )
    thread = _thread(searchable, llm)
    with _no_warnings():
        _say(thread, "I live in Lisbon", "2024-03-01T09:00:00Z")
    lisbon = _memories(searchable)["Ana lives in Lisbon"]
    assert _at(lisbon.valid_from) == _utc(2024, 3, 1, 9) and lisbon.valid_until is None
    assert "Ana lives in Lisbon" in _card(thread)
    assert _current(searchable, "where does Ana live") == ["Ana lives in Lisbon"]

    with _no_warnings():
        ids = _say(thread, "I moved to Berlin in mid May", "2024-06-01T09:00:00Z")
    prompt, schema = llm.calls[-1][1:]
    assert f'<memory id="{lisbon.id}" type="fact"' in prompt
    for shape in schema["properties"]["memories"]["items"]["anyOf"]:
        assert shape["properties"]["target_id"]["enum"] == [lisbon.id, None]

    stored = _memories(searchable)
    assert set(stored) == {"Ana lives in Lisbon", "Ana lives in Berlin"}
    lisbon, berlin = stored["Ana lives in Lisbon"], stored["Ana lives in Berlin"]
    assert _at(berlin.valid_from) == _utc(2024, 5, 15) and berlin.valid_until is None
    assert _at(lisbon.valid_from) == _utc(2024, 3, 1, 9)
    assert _at(lisbon.valid_until) == _utc(2024, 5, 15)
    assert _reserved(lisbon) | {"source_message_ids": None} == {
        "source_message_ids": None,
        "extraction_prompt": EXTRACTION_PROMPT,
        "status": "invalid",
        "superseded_by": berlin.id,
        "reason": "Ana moved to Berlin",
    }
    assert _reserved(berlin) == {
        "source_message_ids": ids,
        "extraction_prompt": EXTRACTION_PROMPT,
        "supersedes": [lisbon.id],
    }
    card = _card(thread)
    assert "Ana lives in Berlin" in card and "Ana lives in Lisbon" not in card
    assert _current(searchable, "where does Ana live") == ["Ana lives in Berlin"]
    then = searchable.search(
        "where does Ana live", k=10, record_types={"fact"}, as_of="2024-04-01T00:00:00Z"
    )
    assert [r.content for r, _ in then] == ["Ana lives in Lisbon"]
    assert _history(searchable, lisbon.id) == ["Ana lives in Lisbon", "Ana lives in Berlin"]
    assert _history(searchable, berlin.id) == ["Ana lives in Lisbon", "Ana lives in Berlin"]
    # the superseded memory is not shown to the next pass; the current one is
    _say(thread, "Berlin is great", "2024-06-02T09:00:00Z")
    assert shown(llm.prompts("extraction")[-1]) == {"Ana lives in Berlin": berlin.id}


@pytest.mark.parametrize(
    ("timestamp", "valid_from", "starts"),
    [
        ("2020-06-01T10:00:00+02:00", None, _utc(2020, 6, 1, 8)),
        ("2024-03-01T09:00:00Z", None, _utc(2024, 3, 1, 9)),
        ("2024-05-01", None, _utc(2024, 3, 1, 9)),
        ("2020-06-01", "2021-01-01", _utc(2021, 1, 1)),
        (None, None, _utc(2024, 3, 1, 9)),
    ],
    ids=["past-event", "event-when-said", "future-event", "valid-from-wins", "no-dates"],
)
def test_a_new_memory_holds_from_its_past_event_time_else_from_when_it_was_said(
    searchable: Any, timestamp: str | None, valid_from: str | None, starts: datetime
) -> None:
    """``valid_from`` defaults to the item's event ``timestamp`` when that is not later
    than when the message was said ("Ana moved to Lisbon in 2020" holds from 2020);
    a future event ("Ana flies to Lisbon in May") holds from when it was said."""
    llm = ScriptedLlm(
        extraction=[reply(item("Ana and Lisbon", timestamp=timestamp, valid_from=valid_from))]
    )
    with _no_warnings():
        _say(_thread(searchable, llm), "About Lisbon", "2024-03-01T09:00:00Z")
    memory = _memories(searchable)["Ana and Lisbon"]
    assert _at(memory.valid_from) == starts and memory.valid_until is None
    assert _at(memory.timestamp) == _at(normalize_timestamp(timestamp) or "2024-03-01T09:00:00Z")


def test_a_past_event_time_dates_the_memory_and_its_later_update(searchable: Any) -> None:
    """The memory of a move dated in the past holds from that date, so a later move's
    ``valid_from`` (after it) is kept and the first home is found ``as_of`` a time
    between the two; an ``UPDATE`` with only a past event time starts then, unless that
    is not later than the start of the memory it replaces."""
    llm = ScriptedLlm(
        extraction=[
            reply(item("Ana lives in Lisbon", timestamp="2024-03-01T10:00:00+01:00")),
            reply(
                item(
                    "Ana lives in Berlin", "UPDATE", "Ana lives in Lisbon", valid_from="2025-12-01"
                )
            ),
            reply(
                item("Ana lives in Porto", "UPDATE", "Ana lives in Berlin", timestamp="2026-01-15")
            ),
            reply(
                item("Ana lives in Rome", "UPDATE", "Ana lives in Porto", timestamp="2025-01-01")
            ),
        ]
    )
    thread = _thread(searchable, llm)
    with _no_warnings():
        _say(thread, "I have lived in Lisbon since March 2024", "2026-01-01T00:00:00Z")
        _say(thread, "Correction: I moved to Berlin on 1 December", "2026-01-02T00:00:00Z")
        _say(thread, "And on 15 January to Porto", "2026-02-01T00:00:00Z")
        _say(thread, "Now I live in Rome", "2026-03-01T00:00:00Z")
    stored = _memories(searchable)
    windows = {text: (_at(r.valid_from), _at(r.valid_until)) for text, r in stored.items()}
    assert windows == {
        "Ana lives in Lisbon": (_utc(2024, 3, 1, 9), _utc(2025, 12, 1)),
        "Ana lives in Berlin": (_utc(2025, 12, 1), _utc(2026, 1, 15)),
        "Ana lives in Porto": (_utc(2026, 1, 15), _utc(2026, 3, 1)),
        "Ana lives in Rome": (_utc(2026, 3, 1), None),
    }
    then = searchable.search(
        "where does Ana live", k=10, record_types={"fact"}, as_of="2025-06-01T00:00:00Z"
    )
    assert [r.content for r, _ in then] == ["Ana lives in Lisbon"]


def test_a_job_change_without_valid_from_ends_at_the_message_time(searchable: Any) -> None:
    llm = ScriptedLlm(
        extraction=[
            reply(item("Ana works at Acme as an engineer")),
            reply(
                item(
                    "Ana works at Globex as a manager", "UPDATE", "Ana works at Acme as an engineer"
                )
            ),
        ]
    )
    thread = _thread(searchable, llm)
    _say(thread, "I'm an engineer at Acme", "2024-01-10T08:00:00Z")
    assert _current(searchable, "Ana works at") == ["Ana works at Acme as an engineer"]
    _say(thread, "I just started as a manager at Globex", "2024-09-02T08:00:00Z")
    stored = _memories(searchable)
    acme = stored["Ana works at Acme as an engineer"]
    globex = stored["Ana works at Globex as a manager"]
    assert _at(globex.valid_from) == _utc(2024, 9, 2, 8)
    assert _at(acme.valid_until) == _utc(2024, 9, 2, 8)
    assert _reserved(acme)["superseded_by"] == globex.id
    assert _reserved(acme)["reason"] == "scripted"
    assert _current(searchable, "Ana works at") == ["Ana works at Globex as a manager"]
    assert _history(searchable, globex.id) == [acme.content, globex.content]
    assert (
        thread_store(searchable).get_thread_row("t1").state[EXTRACTION_STATE_KEY]["memories"] == 2
    )


def test_an_update_dated_before_the_memory_it_replaces_starts_at_the_message_time(
    searchable: Any,
) -> None:
    """A model's too early ``valid_from`` (before the replaced memory began) falls
    back to when the message was said, not to the wall clock."""
    llm = ScriptedLlm(
        extraction=[
            reply(item("Ana lives in Lisbon")),
            reply(
                item(
                    "Ana lives in Berlin", "UPDATE", "Ana lives in Lisbon", valid_from="2023-01-01"
                )
            ),
        ]
    )
    thread = _thread(searchable, llm)
    _say(thread, "I live in Lisbon", "2024-03-01T09:00:00Z")
    _say(thread, "I moved to Berlin", "2024-06-01T09:00:00Z")
    stored = _memories(searchable)
    lisbon, berlin = stored["Ana lives in Lisbon"], stored["Ana lives in Berlin"]
    assert _at(berlin.valid_from) == _utc(2024, 6, 1, 9) and berlin.valid_until is None
    assert _at(lisbon.valid_until) == _utc(2024, 6, 1, 9)
    # the stored form of every timestamp: seconds, no zero microseconds
    assert (berlin.timestamp, berlin.valid_from) == ("2024-06-01T09:00:00+00:00",) * 2
    then = searchable.search(
        "where does Ana live", k=10, record_types={"fact"}, as_of="2025-01-01T00:00:00Z"
    )
    assert [r.content for r, _ in then] == ["Ana lives in Berlin"]


@pytest.mark.parametrize("given", ["1990-01-01", "2024-03-01T09:00:00Z"], ids=["before", "same"])
def test_a_delete_dated_no_later_than_its_target_ends_it_at_the_message_time(
    searchable: Any, given: str
) -> None:
    """A ``DELETE`` whose ``valid_from`` is not later than its target's start would
    leave a zero-length window (the memory never held, gone from ``as_of`` searches):
    like an ``UPDATE``, it ends the target when the message was said."""
    llm = ScriptedLlm(
        extraction=[
            reply(item("Ana lives in Lisbon")),
            reply(item(None, "DELETE", "Ana lives in Lisbon", valid_from=given)),
        ]
    )
    thread = _thread(searchable, llm)
    _say(thread, "I live in Lisbon", "2024-03-01T09:00:00Z")
    _say(thread, "I no longer live in Lisbon", "2024-06-01T09:00:00Z")
    lisbon = _memories(searchable)["Ana lives in Lisbon"]
    assert _at(lisbon.valid_from) == _utc(2024, 3, 1, 9)
    assert _at(lisbon.valid_until) == _utc(2024, 6, 1, 9)
    then = searchable.search(
        "where does Ana live", k=10, record_types={"fact"}, as_of="2024-04-01T00:00:00Z"
    )
    assert [r.content for r, _ in then] == ["Ana lives in Lisbon"]
    assert _current(searchable, "where does Ana live") == []


def test_a_reversed_preference_and_a_dropped_fact(searchable: Any) -> None:
    llm = ScriptedLlm(
        extraction=[
            reply(
                item("Ana likes coffee", record_type="preference"),
                item("Ana has a car"),
            ),
            reply(
                item(
                    "Ana dislikes coffee and drinks tea",
                    "UPDATE",
                    "Ana likes coffee",
                    record_type="preference",
                ),
                item("Ana sold her car", "DELETE", "Ana has a car", reason="sold it"),
            ),
        ]
    )
    thread = _thread(searchable, llm)
    _say(thread, "I love coffee. I drive to work.", "2024-02-01T08:00:00Z")
    _say(thread, "I quit coffee, tea only now. And I sold my car.", "2024-04-01T08:00:00Z")
    stored = _memories(searchable)
    assert set(stored) == {
        "Ana likes coffee",
        "Ana has a car",
        "Ana dislikes coffee and drinks tea",
    }
    coffee, car = stored["Ana likes coffee"], stored["Ana has a car"]
    tea = stored["Ana dislikes coffee and drinks tea"]
    assert tea.record_type == "preference" and _reserved(tea)["supersedes"] == [coffee.id]
    assert _at(coffee.valid_until) == _utc(2024, 4, 1, 8)
    assert _at(car.valid_until) == _utc(2024, 4, 1, 8)
    assert _reserved(car)["status"] == "invalid" and _reserved(car)["superseded_by"] is None
    assert _reserved(car)["reason"] == "sold it"
    assert _current(searchable, "Ana coffee car tea") == ["Ana dislikes coffee and drinks tea"]
    card = _card(thread)
    assert "Ana dislikes coffee" in card and "Ana likes coffee" not in card
    assert "Ana has a car" not in card
    assert _history(searchable, car.id) == ["Ana has a car"]
    assert _history(searchable, coffee.id) == [coffee.content, tea.content]


@pytest.mark.parametrize("text", ["", "  ", None], ids=["empty", "blank", "missing"])
def test_a_delete_without_text_invalidates_its_target(searchable: Any, text: str | None) -> None:
    """The prompt asks text only of ADD and UPDATE: a DELETE without it still ends its
    target, alone in its reply or beside an ADD, and the pass is done."""
    llm = ScriptedLlm(
        extraction=[
            reply(item("Ana has a red car"), item("Ana lives in Lisbon")),
            reply(item(text, "DELETE", "Ana has a red car", reason="sold it")),
            reply(
                item("Ana cycles to work"),
                item(text, "DELETE", "Ana lives in Lisbon", reason="moved away"),
            ),
        ]
    )
    thread = _thread(searchable, llm)
    with _no_warnings():
        _say(thread, "I drive my red car around Lisbon.", "2024-02-01T08:00:00Z")
        _say(thread, "I sold my car.", "2024-04-01T08:00:00Z")
        _say(thread, "I cycle to work now, and I left Lisbon.", "2024-05-01T08:00:00Z")
    stored = _memories(searchable)
    assert set(stored) == {"Ana has a red car", "Ana lives in Lisbon", "Ana cycles to work"}
    car, lisbon = stored["Ana has a red car"], stored["Ana lives in Lisbon"]
    assert _at(car.valid_until) == _utc(2024, 4, 1, 8)
    assert _reserved(car)["status"] == "invalid" and _reserved(car)["reason"] == "sold it"
    assert _at(lisbon.valid_until) == _utc(2024, 5, 1, 8)
    assert _reserved(lisbon)["reason"] == "moved away"
    assert _current(searchable, "Ana car Lisbon cycles") == ["Ana cycles to work"]
    assert "Ana has a red car" not in _card(thread)
    state = thread_store(searchable).get_thread_row("t1").state[EXTRACTION_STATE_KEY]
    assert (state["passes"], state["memories"], state["failed_passes"]) == (3, 3, 0)
    assert state["skipped_messages"] == 0


def test_a_noop_without_text_alone_completes_the_pass(searchable: Any) -> None:
    llm = ScriptedLlm(
        extraction=[
            reply(item("Ana lives in Lisbon")),
            reply(item(None, "NOOP", "Ana lives in Lisbon")),
            reply(item("", "NOOP", None)),
        ]
    )
    thread = _thread(searchable, llm)
    with _no_warnings():
        _say(thread, "I live in Lisbon.", "2024-02-01T08:00:00Z")
        _say(thread, "Still in Lisbon.", "2024-03-01T08:00:00Z")
        _say(thread, "Yes, Lisbon.", "2024-04-01T08:00:00Z")
    assert set(_memories(searchable)) == {"Ana lives in Lisbon"}
    assert _memories(searchable)["Ana lives in Lisbon"].valid_until is None
    state = thread_store(searchable).get_thread_row("t1").state[EXTRACTION_STATE_KEY]
    assert (state["passes"], state["memories"], state["failed_passes"]) == (3, 1, 0)


def test_a_repeated_fact_is_a_noop_whatever_the_model_said(searchable: Any) -> None:
    llm = ScriptedLlm(
        extraction=[
            reply(item("Ana lives in Lisbon")),
            reply(
                item("ana lives in  Lisbon."),  # an ADD of a repeat
                item("Ana lives in Lisbon!", "UPDATE", "Ana lives in Lisbon"),  # a no-op UPDATE
                item("Ana lives in Lisbon", "NOOP", "Ana lives in Lisbon"),
            ),
        ]
    )
    thread = _thread(searchable, llm)
    _say(thread, "I live in Lisbon", "2024-03-01T09:00:00Z")
    (before,) = _memories(searchable).values()
    with _no_warnings():
        _say(thread, "As I said, I live in Lisbon", "2024-03-02T09:00:00Z")
    (after,) = _memories(searchable).values()
    assert after == before and after.valid_until is None
    assert "status" not in _reserved(after)
    assert _history(searchable, after.id) == ["Ana lives in Lisbon"]
    state = thread_store(searchable).get_thread_row("t1").state[EXTRACTION_STATE_KEY]
    assert (state["passes"], state["memories"]) == (2, 1)


def test_a_repeat_of_a_current_memory_too_far_down_to_be_shown_is_a_noop(searchable: Any) -> None:
    """The repeat rule compares with the store, not only with the memories the prompt
    showed: a current memory of the same user, agent and type (any thread) with the
    same normalized text makes an ``ADD`` or ``UPDATE`` a ``NOOP``. The same text of
    another user, of another type, or no longer current does not."""
    store = searchable
    scope = {"user_ids": "ana", "agent_ids": "helper"}
    store.add(["Ana owns a red bicycle"], "fact", thread_ids="older", **scope)
    store.add([f"hello there general kenobi {i}" for i in range(10)], "fact", **scope)
    store.add(["Ana owns a blue car"], "fact", user_ids="bob", agent_ids="helper")
    store.add(["Ana owns a blue car"], "preference", **scope)
    store.add(["Ana has a green car"], "fact", valid_until="2020-01-01", **scope)
    llm = ScriptedLlm(
        extraction=[
            reply(
                item("ana owns a RED  bicycle."),
                item("Ana owns a red bicycle!", "UPDATE", "a memory never shown"),
                item("Ana owns a blue car"),
                item("ana owns a blue car", record_type="preference"),
                item("Ana has a green car"),
                item("Ana owns a red bicycle and a car"),
            )
        ]
    )
    with _no_warnings():
        _thread(store, llm).add_messages(
            [{"role": "user", "content": "hello there general kenobi"}] * 2  # 6 items allowed
        )
    assert "bicycle" not in " ".join(shown(llm.prompts("extraction")[0]))
    facts = sorted(
        r.content for r in store.list("fact", user_id="ana") if "kenobi" not in r.content
    )
    assert facts == [
        "Ana has a green car",
        "Ana has a green car",
        "Ana owns a blue car",
        "Ana owns a red bicycle",
        "Ana owns a red bicycle and a car",
    ]
    assert [r.content for r in store.list("preference")] == ["Ana owns a blue car"]
    state = thread_store(store).get_thread_row("t1").state[EXTRACTION_STATE_KEY]
    assert (state["passes"], state["memories"]) == (1, 3)


def test_targets_not_shown_add_or_do_nothing_with_one_warning_each(searchable: Any) -> None:
    llm = ScriptedLlm(
        extraction=[
            reply(item("Ana lives in Lisbon")),
            reply(
                item("Ana lives in Berlin", "UPDATE", "a memory never shown"),
                item("gone", "DELETE", "a memory never shown"),
                item("Ana has a dog", "UPDATE"),
            ),
        ]
    )
    thread = _thread(searchable, llm)
    _say(thread, "I live in Lisbon", "2024-03-01T09:00:00Z")
    with pytest.warns(MemoryPipelineWarning) as caught:
        _say(thread, "Berlin now, and a dog", "2024-03-02T09:00:00Z")
    assert len(caught) == 3
    assert sum("stored as a new memory (ADD)" in str(w.message) for w in caught) == 2
    stored = _memories(searchable)
    assert set(stored) == {"Ana lives in Lisbon", "Ana lives in Berlin", "Ana has a dog"}
    assert all(r.valid_until is None and "status" not in _reserved(r) for r in stored.values())


# -- atomicity -----------------------------------------------------------------------------


MOVE = [
    reply(item("Ana lives in Lisbon")),
    reply(
        item("Ana lives in Berlin", "UPDATE", "Ana lives in Lisbon"),
        item("Ana has a dog"),
    ),
]


def _after_move(store: Any, thread: OracleThread) -> None:
    stored = _memories(store)
    assert set(stored) == {"Ana lives in Lisbon", "Ana lives in Berlin", "Ana has a dog"}
    lisbon, berlin = stored["Ana lives in Lisbon"], stored["Ana lives in Berlin"]
    assert _reserved(lisbon)["superseded_by"] == berlin.id
    assert _reserved(berlin)["supersedes"] == [lisbon.id]
    assert _history(store, lisbon.id) == ["Ana lives in Lisbon", "Ana lives in Berlin"]
    assert set(_current(store, "Ana lives dog")) == {"Ana lives in Berlin", "Ana has a dog"}


def _before_move(store: Any) -> None:
    (lisbon,) = _memories(store).values()
    assert lisbon.content == "Ana lives in Lisbon" and lisbon.valid_until is None
    assert "status" not in _reserved(lisbon)
    assert _history(store, lisbon.id) == ["Ana lives in Lisbon"]


def test_a_crash_inside_the_commit_applies_nothing_and_the_retry_applies_each_once(
    searchable: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oam_core.store import threads

    llm = ScriptedLlm(extraction=list(MOVE))
    thread = _thread(searchable, llm)
    _say(thread, "I live in Lisbon", "2024-03-01T09:00:00Z")
    state = thread_store(searchable).get_thread_row("t1").state

    real = threads.apply_changes
    applied: list[Any] = []

    def crash_after_applying(*args: Any, **kwargs: Any) -> Any:
        applied.append(real(*args, **kwargs))  # the changes are written in the tx...
        raise RuntimeError("power cut")  # ...and the transaction never commits

    monkeypatch.setattr(threads, "apply_changes", crash_after_applying)
    with pytest.warns(MemoryPipelineWarning, match="power cut"):
        _say(thread, "I moved to Berlin and got a dog", "2024-06-01T09:00:00Z")
    assert len(applied) == 1 and len(applied[0]) == 1  # the supersede ran, then rolled back
    _before_move(searchable)
    assert thread_store(searchable).get_thread_row("t1").state == state

    monkeypatch.setattr(threads, "apply_changes", real)
    _say(thread, "ok", "2024-06-01T09:01:00Z")
    _after_move(searchable, thread)
    retried = llm.prompts("extraction")[-1]
    assert "I moved to Berlin" in retried and "<content>ok</content>" in retried


def test_an_llm_failure_applies_nothing_and_the_retry_applies_each_once(searchable: Any) -> None:
    llm = ScriptedLlm(
        extraction=[MOVE[0], ConnectionError("model server down"), "not json at all", MOVE[1]]
    )
    thread = _thread(searchable, llm)
    _say(thread, "I live in Lisbon", "2024-03-01T09:00:00Z")
    with pytest.warns(MemoryPipelineWarning, match="model server down"):
        _say(thread, "I moved to Berlin and got a dog", "2024-06-01T09:00:00Z")
    _before_move(searchable)
    with pytest.warns(MemoryPipelineWarning, match="unusable reply"):
        _say(thread, "hello?", "2024-06-01T09:01:00Z")
    _before_move(searchable)
    _say(thread, "ok", "2024-06-01T09:02:00Z")
    _after_move(searchable, thread)
    _say(thread, "still there", "2024-06-01T09:03:00Z")  # MOVE[1] again: all repeats now
    _after_move(searchable, thread)


# -- two threads of one user at once ---------------------------------------------------------


def test_two_threads_superseding_one_memory_at_once_leave_one_current_version(
    searchable: Any,
) -> None:
    """Thread t1's pass reads the related memories (Lisbon), and while its LLM call
    runs, thread t2's whole pass supersedes Lisbon with Paris. t1 then commits its
    UPDATE of Lisbon: the store finds Lisbon no longer current and supersedes its
    current head (Paris) instead, so exactly one version stays current."""
    first = reply(item("Ana lives in Lisbon"))
    paris = reply(item("Ana lives in Paris", "UPDATE", "Ana lives in Lisbon"))
    berlin = reply(item("Ana lives in Berlin", "UPDATE", "Ana lives in Lisbon"))
    t2_llm = ScriptedLlm(extraction=[paris])
    t2 = _thread(searchable, t2_llm, thread_id="t2")

    def berlin_after_t2_commits(prompt: str, schema: Any) -> str:
        answer = berlin(prompt, schema)  # decided on the prompt t1 saw: Lisbon current
        _say(t2, "I moved to Paris", "2024-05-01T09:00:00Z")  # t2 commits meanwhile
        return answer

    t1_llm = ScriptedLlm(extraction=[first, berlin_after_t2_commits])
    t1 = _thread(searchable, t1_llm, thread_id="t1")
    _say(t1, "I live in Lisbon", "2024-03-01T09:00:00Z")
    lisbon_id = _memories(searchable)["Ana lives in Lisbon"].id
    _say(t1, "I moved to Berlin", "2024-06-01T09:00:00Z")

    assert shown(t1_llm.prompts("extraction")[-1]) == {"Ana lives in Lisbon": lisbon_id}
    assert shown(t2_llm.prompts("extraction")[-1]) == {"Ana lives in Lisbon": lisbon_id}
    stored = _memories(searchable)
    assert set(stored) == {"Ana lives in Lisbon", "Ana lives in Paris", "Ana lives in Berlin"}
    lisbon, paris_r, berlin_r = (stored[f"Ana lives in {c}"] for c in ("Lisbon", "Paris", "Berlin"))
    assert _reserved(lisbon)["superseded_by"] == paris_r.id
    assert _reserved(paris_r)["superseded_by"] == berlin_r.id
    assert _current(searchable, "where does Ana live") == ["Ana lives in Berlin"]
    assert _history(searchable, lisbon.id) == [
        "Ana lives in Lisbon",
        "Ana lives in Paris",
        "Ana lives in Berlin",
    ]
    assert _at(lisbon.valid_until) == _utc(2024, 5, 1, 9)
    assert _at(paris_r.valid_until) == _utc(2024, 6, 1, 9)


def test_a_delete_of_a_memory_replaced_meanwhile_ends_the_version_that_holds(
    searchable: Any,
) -> None:
    """t1's prompt shows "red car"; while its LLM call runs, t2's pass replaces it
    with "blue car". t1's DELETE ("I sold my car") then ends the blue car, as an
    UPDATE would supersede it: no car stays current, and no warning."""
    first = reply(item("Ana has a red car"))
    blue = reply(item("Ana has a blue car", "UPDATE", "Ana has a red car"))
    sold = reply(item(None, "DELETE", "Ana has a red car", reason="sold it"))
    t2 = _thread(searchable, ScriptedLlm(extraction=[blue]), thread_id="t2")

    def sold_after_t2_commits(prompt: str, schema: Any) -> str:
        answer = sold(prompt, schema)  # decided on the prompt t1 saw: red car current
        _say(t2, "I repainted my car blue", "2024-05-01T09:00:00Z")
        return answer

    t1 = _thread(searchable, ScriptedLlm(extraction=[first, sold_after_t2_commits]))
    _say(t1, "I have a red car", "2024-03-01T09:00:00Z")
    with _no_warnings():
        _say(t1, "I sold my car", "2024-06-01T09:00:00Z")
    stored = _memories(searchable)
    red, blue_r = stored["Ana has a red car"], stored["Ana has a blue car"]
    assert _reserved(red)["superseded_by"] == blue_r.id
    assert _at(blue_r.valid_until) == _utc(2024, 6, 1, 9)
    assert _reserved(blue_r)["status"] == "invalid" and _reserved(blue_r)["reason"] == "sold it"
    assert _reserved(blue_r)["superseded_by"] is None
    assert _current(searchable, "Ana car") == []


def test_decisions_on_memories_current_until_a_later_end_apply(searchable: Any) -> None:
    """Shown memories that hold now but end later (invalidated for a later time, or
    replaced by a version planned for later) are current: an UPDATE supersedes one
    (no second current memory), a DELETE ends one now (a link to the plan is kept);
    no warning."""
    llm = ScriptedLlm(
        extraction=[
            reply(item("Ana lives in Lisbon"), item("Ana has a car"), item("Ana works at Acme")),
            reply(
                item("Ana lives in Porto", "UPDATE", "Ana lives in Lisbon", reason="moved"),
                item(None, "DELETE", "Ana has a car", reason="sold it"),
                item(None, "DELETE", "Ana works at Acme", reason="quit"),
            ),
        ]
    )
    thread = _thread(searchable, llm)
    _say(thread, "I live in Lisbon, have a car and work at Acme", "2024-03-01T09:00:00Z")
    stored = _memories(searchable)
    later = searchable.clock_now().replace(year=2027)
    versions = memory_versions(searchable)
    for text in ("Ana lives in Lisbon", "Ana has a car"):
        assert versions.invalidate_memory(stored[text].id, valid_until=later) is True
    globex = versions.update_memory(
        stored["Ana works at Acme"].id, "Ana will work at Globex", valid_from=later
    )
    with _no_warnings():
        _say(thread, "I moved to Porto, sold my car and quit", "2024-06-01T09:00:00Z")
    assert set(shown(llm.prompts("extraction")[-1])) == {
        "Ana lives in Lisbon",
        "Ana has a car",
        "Ana works at Acme",
    }
    stored = _memories(searchable)
    lisbon, porto = stored["Ana lives in Lisbon"], stored["Ana lives in Porto"]
    car, acme = stored["Ana has a car"], stored["Ana works at Acme"]
    assert _reserved(lisbon)["superseded_by"] == porto.id
    assert _reserved(porto)["supersedes"] == [lisbon.id]
    assert _at(lisbon.valid_until) == _at(porto.valid_from) == _utc(2024, 6, 1, 9)
    assert _at(car.valid_until) == _at(acme.valid_until) == _utc(2024, 6, 1, 9)
    assert (_reserved(car)["reason"], _reserved(car)["superseded_by"]) == ("sold it", None)
    assert (_reserved(acme)["reason"], _reserved(acme)["superseded_by"]) == ("quit", globex)
    assert _current(searchable, "Ana lives car works") == ["Ana lives in Porto"]
    assert _history(searchable, globex) == ["Ana works at Acme", "Ana will work at Globex"]


def test_decisions_apply_the_same_from_add_messages_async(searchable: Any) -> None:
    import anyio

    llm = ScriptedLlm(extraction=list(MOVE))
    thread = _thread(searchable, llm)

    async def talk() -> None:
        await thread.add_messages_async(
            [{"role": "user", "content": "I live in Lisbon", "timestamp": "2024-03-01T09:00:00Z"}]
        )
        await thread.add_messages_async(
            [{"role": "user", "content": "Berlin now", "timestamp": "2024-06-01T09:00:00Z"}]
        )

    anyio.run(talk)
    _after_move(searchable, thread)
    berlin = _memories(searchable)["Ana lives in Berlin"]
    assert _at(_memories(searchable)["Ana lives in Lisbon"].valid_until) == _at(berlin.valid_from)
    assert _at(berlin.valid_from) == _utc(2024, 6, 1, 9)
