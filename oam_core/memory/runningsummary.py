"""The running-summary prompt and its reply (SPEC §7; seed 000 ``enable_context_summary``).

Pure functions: ``render_summary_prompt`` builds the incremental prompt (previous
summary and topics plus the messages since) within a token budget;
``parse_summary_reply`` validates ``{"summary", "topics"}`` and normalizes the topics.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import escape

from oam_core.memory.extraction import PromptMessage, render_messages
from oam_core.memory.jsonrepair import UnusableReplyError, parse_json_reply
from oam_core.memory.summary import RunningSummary
from oam_core.memory.templates import load_prompt
from oam_core.memory.tokens import tokens_for_chars

__all__ = [
    "MAX_TOPICS",
    "SUMMARY_PROMPT",
    "normalize_topics",
    "parse_summary_reply",
    "render_summary_prompt",
    "summary_schema",
]

SUMMARY_PROMPT = "summary_v1"
"""Template of the running-summary prompt (``prompts/summary_v1.txt``)."""
MAX_TOPICS = 8
"""Most topics kept (SPEC §7)."""
MAX_SUMMARY_CHARS = 8000
"""Longest summary text kept (characters)."""

_SURROGATES = re.compile(r"[\ud800-\udfff\x00]")
_SPACES = re.compile(r"\s+")


def summary_schema() -> dict[str, Any]:
    """JSON schema of the summary reply, bounded for small local models."""
    return {
        "type": "object",
        "properties": {
            "summary": {"type": "string", "minLength": 1, "maxLength": 1500},
            "topics": {
                "type": "array",
                "maxItems": MAX_TOPICS,
                "items": {"type": "string", "minLength": 1, "maxLength": 40},
            },
        },
        "required": ["summary", "topics"],
        "additionalProperties": False,
    }


def normalize_topics(values: object) -> tuple[str, ...]:
    """Trim, collapse spaces, lower-case and de-duplicate topics, keeping their order;
    at most ``MAX_TOPICS`` (SPEC §7). Non-strings and blanks are dropped."""
    raw = [values] if isinstance(values, str) else values if isinstance(values, list) else []
    topics: list[str] = []
    for value in raw:
        if not isinstance(value, str):
            continue
        topic = _SPACES.sub(" ", _SURROGATES.sub("", value)).strip().lower()
        if topic and topic not in topics:
            topics.append(topic)
        if len(topics) == MAX_TOPICS:
            break
    return tuple(topics)


def render_summary_prompt(
    new: Sequence[PromptMessage],
    previous: RunningSummary | None,
    token_limit: int = 0,
) -> str | None:
    """The incremental summary prompt, or None when it exceeds ``token_limit``
    estimated tokens (``<= 0``: no limit)."""
    previous_text = ""
    if previous is not None:
        topics = ", ".join(previous.topics)
        previous_text = (
            "<previous_summary>\n"
            + escape(_SURROGATES.sub("", previous.summary))
            + "\n"
            + (f"Topics: {escape(topics)}\n" if topics else "")
            + "</previous_summary>\n"
        )
    prompt = load_prompt(SUMMARY_PROMPT).render(
        previous_summary=previous_text, new_messages="".join(render_messages(new, "    "))
    )
    if token_limit > 0 and tokens_for_chars(len(prompt)) > token_limit:
        return None
    return prompt


def parse_summary_reply(text: str) -> RunningSummary:
    """Validate the model's ``{"summary", "topics"}`` reply (repairing what
    ``parse_json_reply`` can; a bare string is taken as the summary).

    Raises:
        UnusableReplyError: when no non-blank summary can be recovered.
    """
    data = parse_json_reply(text)
    if isinstance(data, str):
        data = {"summary": data, "topics": []}
    if not isinstance(data, dict):
        raise UnusableReplyError(f"expected a summary object, got {type(data).__name__}", text)
    summary = data.get("summary")
    if not isinstance(summary, str) or not _SURROGATES.sub("", summary).strip():
        raise UnusableReplyError("the reply has no summary text", text)
    body = _SURROGATES.sub("", summary).strip()[:MAX_SUMMARY_CHARS]
    return RunningSummary(body, normalize_topics(data.get("topics")))
