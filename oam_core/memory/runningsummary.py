"""The running-summary prompt and its reply (docs/memory-pipeline.md#running-summary; ``enable_context_summary``).

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
from oam_core.memory.placeholders import is_placeholder, placeholder_pattern, placeholders_of
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
"""Most topics kept (docs/memory-pipeline.md#running-summary)."""
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
    at most ``MAX_TOPICS`` (docs/memory-pipeline.md#running-summary). Non-strings and blanks are dropped."""
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


def _placeholders() -> frozenset[str]:
    """The placeholders of the summary prompt's answer form (``"..."``)."""
    return placeholders_of(SUMMARY_PROMPT, ("summary", "topics"))


def reply_schema() -> dict[str, Any]:
    """The schema a summary reply must fit (``jsonschema``): ``summary_schema``
    without its length and count bounds (texts are cut to ``MAX_SUMMARY_CHARS``,
    topics to ``MAX_TOPICS``); ``topics`` may be omitted (the previous topics are
    kept, ``parse_summary_reply``); extra keys are ignored. A ``summary`` that is
    only a placeholder (``"..."``, as in the prompt's answer form;
    ``memory/placeholders.py``) does not fit."""
    return {
        "type": "object",
        "properties": {
            "summary": {
                "type": "string",
                "pattern": r"\S",
                "not": {"pattern": placeholder_pattern(_placeholders())},
            },
            "topics": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["summary"],
    }


def parse_summary_reply(text: str, previous: RunningSummary | None = None) -> RunningSummary:
    """Validate the model's ``{"summary", "topics"}`` reply against ``reply_schema``
    (repairing what ``parse_json_reply`` can; of several JSON values, the last that
    fits and holds items is used, never one equal to the prompt's answer form).

    The update is incremental: a reply without ``topics`` keeps the topics of
    ``previous`` (none without one); ``"topics": []`` clears them. Topics that are
    only placeholders (``"..."``) are dropped, and a ``topics`` list of nothing but
    placeholders counts as left out (the previous topics are kept).

    Args:
        text: The model's reply.
        previous: The thread's summary before this pass, or None.

    Raises:
        UnusableReplyError: when no value of the reply fits, or the summary is
            blank once lone surrogates and NUL are removed.
    """
    form = load_prompt(SUMMARY_PROMPT).answer_form
    data = parse_json_reply(text, schema=reply_schema(), forms=() if form is None else (form,))
    body = _SURROGATES.sub("", data["summary"]).strip()[:MAX_SUMMARY_CHARS]
    if is_placeholder(body, _placeholders()):
        raise UnusableReplyError("the reply has no summary text", text)
    raw = data.get("topics")
    topics = [t for t in raw or () if not is_placeholder(_SURROGATES.sub("", t), _placeholders())]
    if raw is None or (raw and not topics):
        return RunningSummary(body, previous.topics if previous is not None else ())
    return RunningSummary(body, normalize_topics(topics))
