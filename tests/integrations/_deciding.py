"""A hand-written ``ILlm`` whose extraction reply is one ``UPDATE`` or ``DELETE`` on a
given record (asserting the prompt offered it as a target), for the tests of records
managed by their writer (docs/memory-pipeline.md#records-managed-by-their-writer):
what they test is the decision rule applied to such a reply, not a model's choice of
decision, so no cassette is recorded for them."""

from __future__ import annotations

import json
from typing import Any

from oam_core import OracleAgentMemory
from oam_core.apis.llm import ILlm


class DecidingLlm(ILlm):
    """Answers the extraction prompt with ``decision`` on ``target_id`` (``UPDATE``
    stores ``new_text``) and any other prompt with a one-line summary."""

    def __init__(self, decision: str, target_id: str, new_text: str) -> None:
        self.decision = decision
        self.target_id = target_id
        self.new_text = new_text
        self.prompts: list[str] = []

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        self.prompts.append(prompt)
        properties = (response_json_schema or {}).get("properties", {})
        if "memories" not in properties:
            return json.dumps({"summary": "The user talked.", "topics": ["chat"]})
        shapes = properties["memories"]["items"]["anyOf"]
        assert self.target_id in shapes[0]["properties"]["target_id"]["enum"]
        item = {
            "reason": "the fact changed",
            "decision": self.decision,
            "target_id": self.target_id,
            "text": self.new_text if self.decision == "UPDATE" else "",
            "record_type": "memory",
            "timestamp": None,
            "valid_from": None,
        }
        return json.dumps({"memories": [item]})

    def client(self, url: str) -> OracleAgentMemory:
        """A client on ``url`` (hashing embedder) extracting with this LLM."""
        return OracleAgentMemory.open(url, embedder="hashing/64", llm=self, extract_memories=True)

    @property
    def outcome(self) -> str:
        """The end of the warning the pass gives for the refused decision."""
        label = repr(self.new_text) if self.decision == "UPDATE" else "without text"
        done = "stored as a new memory (ADD)" if self.decision == "UPDATE" else "ignored"
        return (
            f"extraction reply item {label}: {self.decision} names target_id "
            f"{self.target_id!r}, which is managed by the application that wrote it; {done}"
        )
