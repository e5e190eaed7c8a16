"""Tool calls and tool results in a thread's messages, as the context card and the
summaries show them (docs/context-card.md#tool-calls).

A chat framework stores an assistant's tool calls under ``metadata["$message"]
["tool_calls"]`` (LangChain's ``{"name", "args", "id"}`` dicts, or OpenAI's
``{"id", "function": {"name", "arguments"}}``); the message's own content is often
empty. A tool result is a message with role ``tool`` (or the older ``function``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from oam_core.apis.thread import MESSAGE_KEY

__all__ = ["TOOL_RESULT_ROLES", "drop_orphan_results", "shown_content", "tool_call_lines"]

TOOL_RESULT_ROLES = frozenset({"tool", "function"})
"""Roles of messages that answer an earlier assistant tool call."""

T = TypeVar("T")


def _call_line(call: object) -> str | None:
    """``tool call: name(arguments as JSON)`` for one stored call, None if unreadable."""
    if not isinstance(call, Mapping):
        return None
    function = call.get("function")
    if isinstance(function, Mapping):  # OpenAI's shape: arguments are a JSON string
        name, args = function.get("name"), function.get("arguments")
    else:
        name, args = call.get("name"), call.get("args", call.get("arguments"))
    if not isinstance(name, str) or not name:
        return None
    if args is None:
        shown = ""
    elif isinstance(args, str):
        shown = args
    else:
        shown = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    return f"tool call: {name}({shown})"


def tool_call_lines(metadata: Mapping[str, Any] | None) -> list[str]:
    """One ``tool call: name(arguments)`` line per tool call a message's metadata
    carries (``metadata["$message"]["tool_calls"]``, or the older single
    ``function_call`` ``{"name", "arguments"}``), in order; ``[]`` for none.

    Args:
        metadata: A message's metadata, or None.
    """
    fields = (metadata or {}).get(MESSAGE_KEY)
    if not isinstance(fields, Mapping):
        return []
    calls = fields.get("tool_calls")
    if not isinstance(calls, list):
        calls = [fields["function_call"]] if "function_call" in fields else []
    return [line for line in map(_call_line, calls) if line is not None]


def shown_content(content: str | None, metadata: Mapping[str, Any] | None, sep: str = "\n") -> str:
    """A message's text as the card and the fallback summary show it: its content,
    then each tool call (so a call with empty content is not lost).

    Args:
        content: The stored content (None reads as ``""``).
        metadata: The message's metadata, or None.
        sep: What goes between the content and each call (a transcript line uses
            ``" "`` to stay one line).
    """
    parts = [content] if content else []
    return sep.join([*parts, *tool_call_lines(metadata)])


def drop_orphan_results(messages: Sequence[T], role_of: Callable[[T], str | None]) -> list[T]:
    """``messages`` (oldest first) without the tool results at their start: a window
    cut after a tool call never begins with the answer to a call it does not hold.

    Args:
        messages: A window of messages, oldest first.
        role_of: The role of one message.
    """
    start = 0
    while start < len(messages) and role_of(messages[start]) in TOOL_RESULT_ROLES:
        start += 1
    return list(messages[start:])
