"""Placeholders: what a prompt's answer form holds instead of an answer
(docs/memory-pipeline.md#placeholders-and-echoed-forms).

The extraction and summary prompts end with the form of their answer, such as
``{"summary": "...", "topics": ["..."]}``. Small models often echo it after their
answer, or answer with it alone. A text that is only a placeholder (dots, an
ellipsis character, or one of the form's own placeholder strings) is never a memory,
a summary or a topic, and a JSON value equal to the form is never the answer
(``jsonrepair.parse_json_reply(forms=...)``). Pure functions, no I/O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from oam_core.memory.templates import load_prompt

__all__ = ["is_placeholder", "placeholder_pattern", "placeholders_of"]

_FILLER = r"[\s.\u2026\u22ef]*"
"""Whitespace, dots and ellipsis characters (``…`` and ``⋯``), any number."""
_FILLER_ONLY = re.compile(rf"\A{_FILLER}\Z")


@functools.cache
def placeholders_of(template: str, keys: tuple[str, ...]) -> frozenset[str]:
    """The strings the answer form of prompt ``template`` holds under ``keys``
    (anywhere in it, list items included), case-folded and stripped: its
    placeholders, such as ``"..."`` for ``("text", "reason")`` of the extraction
    form. Empty when the template ends with no JSON form.

    Args:
        template: A prompt template name, such as ``"summary_v1"``.
        keys: Member names whose string values are placeholders.
    """
    found: set[str] = set()
    _collect(load_prompt(template).answer_form, frozenset(keys), False, found)
    return frozenset(found)


def _collect(value: Any, keys: frozenset[str], under_key: bool, found: set[str]) -> None:
    if isinstance(value, dict):
        for key, member in value.items():
            _collect(member, keys, key in keys, found)
    elif isinstance(value, list):
        for member in value:
            _collect(member, keys, under_key, found)
    elif isinstance(value, str) and under_key:
        found.add(value.casefold().strip())


def is_placeholder(text: str, placeholders: Iterable[str] = ()) -> bool:
    """True when ``text`` holds nothing but a placeholder: only whitespace, dots and
    ellipsis characters (``"..."``, ``"…"``, ``". . ."``, also ``""``), or, once
    stripped and case-folded, one of ``placeholders`` (``placeholders_of``).

    >>> is_placeholder(" \\u2026 "), is_placeholder("Ana likes tea..."), is_placeholder("TEXT", {"text"})
    (True, False, True)
    """
    return bool(_FILLER_ONLY.match(text)) or text.casefold().strip() in set(placeholders)


def placeholder_pattern(placeholders: Iterable[str] = ()) -> str:
    """A JSON-schema ``pattern`` (as ``jsonschema`` runs it: Python ``re.search``)
    matching the texts ``is_placeholder`` accepts (``placeholders`` ignoring case):
    for ``{"not": {"pattern": ...}}`` in a reply schema, so that a value whose text
    is a placeholder does not fit it."""
    words = "".join(f"|{re.escape(p)}" for p in sorted(placeholders) if p)
    return rf"(?i)^\s*(?:{_FILLER}{words})\s*$"
