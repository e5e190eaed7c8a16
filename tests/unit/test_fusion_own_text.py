"""The own-words list of HYBRID search (oam_core/store/fusion.py, its word stems in
store/text.py, docs/retrieval.md):
which candidates' own content holds the query's terms, counted by ``str.find`` for
plain words and by a regular expression otherwise; both must count alike."""

from __future__ import annotations

from collections.abc import Hashable

from hypothesis import given
from hypothesis import strategies as st

from oam_core.apis.records import Record
from oam_core.store.fusion import own_text_list
from oam_core.store.text import (
    _holds_word,
    stem_counter,
    stem_counts_each,
    stem_pattern_counter,
)

_ALPHABET = "abcdeéz09_ -.,'\u0307\u0130\u00b2\u2167\u0663\u3042"
"""Letters, digits, the underscore, separators, a combining mark, dotted capital I,
a superscript two, a Roman numeral, an Arabic-Indic digit, a hiragana letter."""


@given(st.text(alphabet=_ALPHABET, max_size=30), st.data())
def test_find_counts_as_the_pattern_does(text: str, data: st.DataObject) -> None:
    text = text.lower()
    # stems cut from the text itself (so most are found somewhere) and a few others
    cuts = st.tuples(st.integers(0, len(text)), st.integers(1, 6))
    stems = {text[i : i + n] for i, n in data.draw(st.lists(cuts, min_size=1, max_size=4))}
    stems |= set(data.draw(st.lists(st.text(alphabet=_ALPHABET, min_size=1, max_size=5))))
    ordered = sorted(s[:5] for s in stems if s)
    if ordered:
        assert stem_counter(ordered)(text) == stem_pattern_counter(ordered)(text)


@given(st.lists(st.sampled_from(["paint", "paints", "pa", "art", "arts", "a", "x_"]), max_size=8))
def test_find_counts_stems_taken_from_the_text(parts: list[str]) -> None:
    for sep in (" ", "", "_", "-"):
        text = sep.join(parts)
        stems = sorted({p[:5] for p in parts} | {"paint", "art", "pa"})
        assert stem_counter(stems)(text) == stem_pattern_counter(stems)(text)


@given(
    st.lists(st.text(alphabet=_ALPHABET, max_size=20).map(str.lower), max_size=8),
    st.lists(st.sampled_from(["ab", "abcde", "a", "e0", "z", "9_", "é", "\u3042a"]), min_size=1),
)
def test_counts_over_the_joined_texts_are_each_texts_own(
    texts: list[str], stems: list[str]
) -> None:
    """One search of the NUL-joined texts counts, text by text, what the counter of
    one text counts: no hit spans two texts, none is credited to the wrong one."""
    ordered = sorted(set(stems))
    assert stem_counts_each(ordered, texts) == [stem_counter(ordered)(t) for t in texts]


def test_counts_over_the_joined_texts() -> None:
    texts = ["art art", "", "smart", "paint\u3042", "x art"]
    assert stem_counts_each(["art", "paint"], texts) == [1, 0, 0, 1, 1]
    assert stem_counts_each(["art", "\u0130"], texts) == [1, 0, 0, 0, 1]  # the regex path
    assert stem_counts_each(["art"], []) == []


def test_holds_word() -> None:
    assert _holds_word("i love painting", "paint")  # a 5-letter stem starts a word
    assert not _holds_word("repainting", "paint")  # not at a word start
    assert _holds_word("art, and more", "art")  # a short stem is the whole word
    assert not _holds_word("arts and more", "art")
    assert not _holds_word("smart", "art")
    assert _holds_word("smart art_deco", "art")  # "_" is not alphanumeric: it ends a word
    assert _holds_word("x_art", "art")  # ... and starts one
    assert _holds_word("art", "art") and not _holds_word("", "art")


def _record(content: str | None) -> Record:
    return Record(id="x", record_type="memory", content=content)


def test_own_text_list_ranks_by_distinct_terms_then_pool_order() -> None:
    contents = {
        "a": "We painted the fence.",  # "paint" ("painted" starts with it)
        "b": "Caroline paints landscapes in oil",  # carol, paint, lands, oil
        "c": "Oil on canvas",  # oil (a short stem: the whole word)
        "d": "Nothing here, toil",  # "toil" does not start with "oil"
        "e": None,
        "f": "LANDSCAPE painting, oil",  # lowered: lands, paint, oil
    }
    records: dict[Hashable, Record] = {k: _record(v) for k, v in contents.items()}
    pool = list(contents)
    got = own_text_list("What does Caroline paint? landscapes in oil", pool, records)
    assert got == ["b", "f", "a", "c"]
