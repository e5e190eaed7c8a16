"""Token estimates and text-bounding helpers (docs/store.md#defaults).

Everything here is pure string arithmetic: no tokenizer, no I/O. One token is taken
to be ``3.5`` characters (``CHARS_PER_TOKEN``), and a *budget* or *limit* of ``0`` or
less always means "no bound" (docs/memory-pipeline.md#extraction-cadence). Cuts never split a user-perceived character
(grapheme cluster), so emoji ZWJ sequences and combining marks survive intact.
"""

from __future__ import annotations

from collections.abc import Callable

import regex

from oam_core.apis.embedder import CHARS_PER_TOKEN
from oam_core.checks import check_int
from oam_core.errors import InvalidArgumentError

__all__ = [
    "CHARS_PER_TOKEN",
    "ELISION_MARKER",
    "TRUNCATION_MARKER",
    "budget_chars",
    "cut_head_to_fit",
    "cut_tail_to_fit",
    "estimate_tokens",
    "head_tail_excerpt",
    "tokens_for_chars",
    "truncate_head",
    "truncate_tail",
]

TRUNCATION_MARKER = "(truncated)\n"
"""Leading marker of a text whose beginning was cut away (``get_summary``: docs/context-card.md#summaries)."""

ELISION_MARKER = "\n…(truncated)…\n"
"""Marker put where a head-and-tail excerpt dropped the middle of a text."""

_GRAPHEME = regex.compile(r"\X")
_SNAP_WINDOW = 64
"""How far (in code points) before a cut the grapheme scan starts to resynchronise."""


def tokens_for_chars(length: int) -> int:
    """Estimated tokens of a text of ``length`` characters: ``max(1, round(length / 3.5))``."""
    return max(1, round(length / CHARS_PER_TOKEN))


def estimate_tokens(text: str) -> int:
    """Estimate the token count of ``text`` (docs/store.md#defaults).

    Args:
        text: Any string; ``""`` counts as one token.

    Returns:
        ``max(1, round(len(text) / 3.5))`` (Python's round-half-to-even).

    Raises:
        ValueError: if ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(f"text must be a str, got {type(text).__name__}")
    return tokens_for_chars(len(text))


def budget_chars(token_budget: int) -> int:
    """Characters allowed by a token budget: ``int(token_budget * 3.5)`` (docs/store.md#defaults).

    Args:
        token_budget: Budget in tokens; ``<= 0`` means unbounded.

    Returns:
        The character limit, or ``-1`` when the budget is unbounded.

    Raises:
        ValueError: if ``token_budget`` is not an int.
    """
    token_budget = check_int(token_budget, "token_budget")
    if token_budget <= 0:
        return -1
    return int(token_budget * CHARS_PER_TOKEN)


def _boundary_at_or_after(text: str, pos: int) -> int:
    """Smallest grapheme boundary ``>= pos`` (``len(text)`` at the latest)."""
    if pos <= 0:
        return 0
    if pos >= len(text):
        return len(text)
    for match in _GRAPHEME.finditer(text, pos=max(0, pos - _SNAP_WINDOW)):
        if match.start() >= pos:
            return match.start()
    return len(text)


def _boundary_at_or_before(text: str, pos: int) -> int:
    """Largest grapheme boundary ``<= pos`` (``0`` at the earliest)."""
    if pos <= 0:
        return 0
    if pos >= len(text):
        return len(text)
    best = 0
    for match in _GRAPHEME.finditer(text, pos=max(0, pos - _SNAP_WINDOW)):
        if match.end() > pos:
            break
        best = match.end()
    return best


def truncate_tail(text: str, token_budget: int, *, marker: str = TRUNCATION_MARKER) -> str:
    """Keep the end of ``text`` within a token budget, marking the cut (docs/context-card.md#summaries).

    The text is returned unchanged when ``token_budget <= 0`` or when
    ``estimate_tokens(text) <= token_budget``. Otherwise the result is ``marker``
    followed by the longest tail of ``text`` that keeps the whole result within
    ``int(token_budget * 3.5)`` characters, cut on a grapheme boundary. When not even
    one character fits after the marker, the result is ``""``.

    Args:
        text: The text to bound.
        token_budget: Budget in tokens; ``<= 0`` disables the bound.
        marker: Prefix that signals the cut; default ``"(truncated)\\n"``.

    Returns:
        A string of at most ``int(token_budget * 3.5)`` characters when bounded.

    Raises:
        ValueError: if ``text`` is not a str or ``token_budget`` is not an int.
    """
    limit = budget_chars(token_budget)
    if limit < 0 or estimate_tokens(text) <= token_budget:
        return text
    room = limit - len(marker)
    if room <= 0:
        return ""
    start = _boundary_at_or_after(text, len(text) - room)
    if start >= len(text):
        return ""
    return marker + text[start:]


def truncate_head(text: str, token_budget: int, *, marker: str = "\n(truncated)") -> str:
    """Keep the beginning of ``text`` within a token budget, marking the cut.

    Mirror image of ``truncate_tail``: the result is the longest head of ``text``
    (cut on a grapheme boundary) followed by ``marker``, at most
    ``int(token_budget * 3.5)`` characters in all; ``""`` when nothing fits.

    Args:
        text: The text to bound.
        token_budget: Budget in tokens; ``<= 0`` disables the bound.
        marker: Suffix that signals the cut; default ``"\\n(truncated)"``.

    Returns:
        The bounded text.

    Raises:
        ValueError: if ``text`` is not a str or ``token_budget`` is not an int.
    """
    limit = budget_chars(token_budget)
    if limit < 0 or estimate_tokens(text) <= token_budget:
        return text
    room = limit - len(marker)
    if room <= 0:
        return ""
    end = _boundary_at_or_before(text, room)
    if end <= 0:
        return ""
    return text[:end] + marker


def head_tail_excerpt(text: str, token_limit: int, *, marker: str = ELISION_MARKER) -> str:
    """Keep the head and the tail of ``text``, dropping the middle (docs/memory-pipeline.md#what-a-pass-does).

    Used to bound the excerpt of an oversized message that is sent to the LLM for
    shortening (``message_shortening_input_token_limit``), or shown when no LLM is
    available. The head and tail each get half of the room left after ``marker``.

    Args:
        text: The text to bound.
        token_limit: Limit in tokens; ``<= 0`` disables the bound.
        marker: Text put where the middle was removed.

    Returns:
        ``text`` unchanged when within the limit, else ``head + marker + tail`` of at
        most ``int(token_limit * 3.5)`` characters; ``""`` when nothing fits.

    Raises:
        ValueError: if ``text`` is not a str or ``token_limit`` is not an int.
    """
    limit = budget_chars(token_limit)
    if limit < 0 or estimate_tokens(text) <= token_limit:
        return text
    room = limit - len(marker)
    if room < 2:
        return ""
    head_end = _boundary_at_or_before(text, room // 2)
    tail_start = _boundary_at_or_after(text, len(text) - (room - head_end))
    tail_start = max(tail_start, head_end)
    return text[:head_end] + marker + text[tail_start:]


def _longest_fitting(length: int, fits: Callable[[int], bool]) -> int:
    """Largest ``n`` in ``[0, length]`` with ``fits(n)``, for a monotone ``fits``."""
    lo, hi = 0, length
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def cut_head_to_fit(text: str, max_chars: int, fits: Callable[[str], bool], *, marker: str) -> str:
    """The longest head of ``text`` that, followed by ``marker``, passes ``fits``.

    ``fits`` must be monotone (a longer candidate never fits when a shorter one does
    not) and reject candidates longer than ``max_chars`` (only heads of at most
    ``max_chars`` characters are tried). The cut is on a grapheme boundary.

    Returns:
        ``head + marker``, or ``""`` when not even one character fits.
    """
    n = _longest_fitting(min(len(text), max(0, max_chars)), lambda k: fits(text[:k] + marker))
    end = _boundary_at_or_before(text, n)
    return text[:end] + marker if end > 0 else ""


def cut_tail_to_fit(text: str, max_chars: int, fits: Callable[[str], bool], *, marker: str) -> str:
    """Mirror of ``cut_head_to_fit``: ``marker`` plus the longest fitting tail, or ``""``."""
    size = len(text)
    n = _longest_fitting(min(size, max(0, max_chars)), lambda k: fits(marker + text[size - k :]))
    start = _boundary_at_or_after(text, size - n)
    return marker + text[start:] if start < size else ""
