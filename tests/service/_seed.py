"""A seeded store for the service tests: two users, threads with messages, memories
extracted by the real pipeline (a scripted LLM stands in for the model), one of them
superseded by a newer one, and stored text that tries to run as HTML."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from oam_core import OracleAgentMemory
from oam_core.apis.llm import ILlm

EMBEDDER = "hashing/64"
"""The embedder id every service test opens its stores with (fast, offline)."""
SCRIPT = "<script>alert('oam')</script>"
"""Stored in message, memory and metadata text: must never reach a page as markup."""
ATTRIBUTE_ATTACK = '"><img src=x onerror=alert(1)>'
"""A user id that would break out of an HTML attribute if not escaped."""


class ScriptedExtraction(ILlm):
    """Answers extraction prompts with the given memories, in order (the last
    repeats), and summary prompts with a fixed summary."""

    def __init__(self, *replies: list[dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        if response_json_schema and "summary" in response_json_schema.get("properties", {}):
            return json.dumps({"summary": "Trip planning.", "topics": ["travel"]})
        self.prompts.append(prompt)
        items = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        shown = _shown_ids(response_json_schema or {})
        full = [
            {
                "reason": "scripted",
                "decision": "ADD",
                "target_id": None,
                "record_type": "fact",
                "timestamp": None,
                "valid_from": None,
                **i,
            }
            for i in items
        ]
        for item in full:
            if item["target_id"] == FIRST_SHOWN:
                item["target_id"] = shown[0]
        return json.dumps({"memories": full})


FIRST_SHOWN = "<first memory shown>"
"""A scripted ``target_id``: the id of the first related memory the prompt shows."""


def _shown_ids(schema: dict[str, Any]) -> list[str]:
    """The ids the extraction prompt showed, from its reply schema's ``target_id`` enum."""
    items = schema.get("properties", {}).get("memories", {}).get("items", {})
    shape = (items.get("anyOf") or [items])[0]  # every item shape has the same target_id
    enum = shape.get("properties", {}).get("target_id", {}).get("enum", [])
    return [i for i in enum if isinstance(i, str)]


@dataclass
class Seeded:
    """Ids of what ``seed_store`` wrote."""

    url: str
    trip_messages: list[str] = field(default_factory=list)
    lisbon: str = ""
    porto: str = ""
    window_seat: str = ""
    bob_memory: str = ""


def seed_store(url: str) -> Seeded:
    """Write the seeded data into the store at ``url`` and return its ids."""
    llm = ScriptedExtraction(
        [{"text": "Alice is flying to Lisbon in March"}],
        [
            {
                "text": f"Alice is going to Porto in March, not Lisbon {SCRIPT}",
                "decision": "UPDATE",
                "target_id": FIRST_SHOWN,
                "reason": "the trip moved to Porto",
            }
        ],
    )
    seeded = Seeded(url)
    with OracleAgentMemory.open(
        url, embedder=EMBEDDER, llm=llm, schema_policy="CREATE_IF_NECESSARY"
    ) as memory:
        memory.add_user("alice", "Frequent traveller; likes trains.")
        trip = memory.create_thread(thread_id="trip", user_id="alice", agent_id="helper")
        seeded.trip_messages += trip.add_messages(
            [
                {
                    "role": "user",
                    "content": "I'm flying to Lisbon in March.",
                    "timestamp": "2026-03-01T10:00:00Z",
                },
                {
                    "role": "assistant",
                    "content": "Noted: Lisbon in March.",
                    "timestamp": "2026-03-01T10:00:05Z",
                },
            ]
        )
        seeded.trip_messages += trip.add_messages(
            [
                {
                    "role": "user",
                    "content": f"Change of plan: Porto instead. {SCRIPT}",
                    "timestamp": "2026-03-02T09:00:00Z",
                }
            ]
        )
        facts = {r.content: r.id for r in memory.store.list("fact", thread_id="trip")}
        seeded.lisbon = facts["Alice is flying to Lisbon in March"]
        seeded.porto = facts[f"Alice is going to Porto in March, not Lisbon {SCRIPT}"]
        seeded.window_seat = memory.add_memory(
            "Alice prefers window seats",
            user_id="alice",
            agent_id="helper",
            thread_id="trip",
            metadata={"note": SCRIPT},
        )
        other = memory.create_thread(
            thread_id="bob-chat",
            user_id=ATTRIBUTE_ATTACK,
            agent_id="helper",
            extract_memories=False,
        )
        other.add_messages([{"role": "user", "content": "Bob's dog is called Rex."}])
        seeded.bob_memory = memory.add_memory(
            "Bob's dog is called Rex",
            user_id=ATTRIBUTE_ATTACK,
            agent_id="helper",
            thread_id="bob-chat",
        )
    return seeded
