"""Token estimate and truncation helpers (docs/store.md#defaults, docs/context-card.md#summaries)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oam_core.memory.tokens import (
    ELISION_MARKER,
    TRUNCATION_MARKER,
    budget_chars,
    estimate_tokens,
    head_tail_excerpt,
    tokens_for_chars,
    truncate_head,
    truncate_tail,
)


@pytest.mark.parametrize(
    ("length", "tokens"),
    [(0, 1), (1, 1), (2, 1), (5, 1), (6, 2), (7, 2), (35, 10), (3500, 1000), (3502, 1001)],
)
def test_estimate_tokens(length: int, tokens: int) -> None:
    assert estimate_tokens("x" * length) == tokens
    assert tokens_for_chars(length) == tokens


def test_estimate_tokens_rejects_non_str() -> None:
    with pytest.raises(ValueError, match="text"):
        estimate_tokens(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("budget", "chars"), [(1000, 3500), (1, 3), (3, 10), (0, -1), (-5, -1)])
def test_budget_chars(budget: int, chars: int) -> None:
    assert budget_chars(budget) == chars


@pytest.mark.parametrize("bad", [1.5, "10", None, True])
def test_budget_must_be_int(bad: object) -> None:
    with pytest.raises(ValueError, match="token_budget"):
        truncate_tail("x", bad)  # type: ignore[arg-type]


def test_truncate_tail_rules() -> None:
    assert truncate_tail("short", 10) == "short"
    assert truncate_tail("x" * 10_000, 0) == "x" * 10_000
    assert truncate_tail("x" * 10_000, -1) == "x" * 10_000
    text = "".join(str(i % 10) for i in range(10_000))
    cut = truncate_tail(text, 1000)
    assert len(cut) == 3500
    assert cut == TRUNCATION_MARKER + text[-(3500 - len(TRUNCATION_MARKER)) :]
    # within the estimate (round(3501 / 3.5) == 1000): returned whole, one char over
    assert truncate_tail("y" * 3501, 1000) == "y" * 3501


@pytest.mark.parametrize(
    ("budget", "expected"), [(1, ""), (3, ""), (4, "(truncated)\nxx"), (5, "(truncated)\nxxxxx")]
)
def test_truncate_tail_tiny_budgets(budget: int, expected: str) -> None:
    assert truncate_tail("x" * 100, budget) == expected


def test_truncate_tail_keeps_grapheme_clusters() -> None:
    family = "👨‍👩‍👧‍👦"  # 7 code points, one grapheme
    text = "a" * 100 + family * 30
    cut = truncate_tail(text, 10)  # 35 chars, 23 after the marker
    body = cut.removeprefix(TRUNCATION_MARKER)
    assert body and len(cut) <= 35
    assert body == family * (len(body) // len(family))


def test_truncate_head() -> None:
    assert truncate_head("short", 10) == "short"
    text = "abcdefghij" * 100
    cut = truncate_head(text, 10)
    assert cut == text[:23] + "\n(truncated)"
    assert truncate_head(text, 2) == ""


def test_head_tail_excerpt() -> None:
    assert head_tail_excerpt("short", 10) == "short"
    text = "H" * 500 + "M" * 1000 + "T" * 500
    cut = head_tail_excerpt(text, 100)
    assert len(cut) <= 350
    head, tail = cut.split(ELISION_MARKER)
    assert set(head) == {"H"} and set(tail) == {"T"}
    assert abs(len(head) - len(tail)) <= 1
    assert head_tail_excerpt(text, 0) == text
    assert head_tail_excerpt(text, 4) == ""


@given(text=st.text(), budget=st.integers(min_value=-3, max_value=300))
def test_truncate_tail_properties(text: str, budget: int) -> None:
    cut = truncate_tail(text, budget)
    if budget <= 0 or estimate_tokens(text) <= budget:
        assert cut == text
        return
    assert len(cut) <= int(budget * 3.5)
    if cut:
        assert cut.startswith(TRUNCATION_MARKER)
        assert text.endswith(cut[len(TRUNCATION_MARKER) :])


@given(text=st.text(), budget=st.integers(min_value=1, max_value=300))
def test_truncate_head_and_excerpt_bounds(text: str, budget: int) -> None:
    for fn in (truncate_head, head_tail_excerpt):
        cut = fn(text, budget)
        if estimate_tokens(text) > budget:
            assert len(cut) <= int(budget * 3.5)
        else:
            assert cut == text
