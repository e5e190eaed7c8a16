"""Who a query names among a conversation's participants (docs/retrieval.md#second-stage-vector-lists):
the rule of the speaker list (store/fusion.py) and of the speaker's vector list
(store/vectorlists.py)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

import regex

from oam_core.store.text import FUNCTION_WORDS, fold, has_cjk, words

__all__ = ["named_speaker"]


def named_speaker(query: str, names: Iterable[str | None]) -> frozenset[str]:
    """The spellings, among ``names`` (the candidates' speakers), of the one
    participant whom ``query`` names by every word of the name, or an empty set when
    it names none or several.

    Spellings that fold alike (case, accents, Unicode forms: ``text.fold``) are one
    participant; the query and the names are cut into words as keyword search cuts
    them (``text.words``), so a mark inside a name ("Ọlọ́run") does not split it. A name word written in a script without spaces between words
    (Chinese, Japanese, Korean) is named anywhere inside the query ("王伟觉得" names
    王伟), as keyword search finds such words. A name word that is also a function
    word ("Will", "May", "Can") names its speaker only when the query writes it as a
    name (``_written_as_names``): "What did Will say?", not "Will it rain?". When
    one named participant's words are all words of another's ("Ana" and "Ana
    Lopez"), the longer name is the one named.
    """
    said = {fold(w) for w in words(query)}
    spaced = unicodedata.normalize("NFKC", query).casefold()
    spellings: dict[tuple[str, ...], set[str]] = {}
    for name in set(names):
        if name:
            spellings.setdefault(_name_parts(name), set()).add(name)
    proper = _written_as_names(query, [part for parts in spellings for part in parts])
    named = [
        parts
        for parts in spellings
        if parts and all(_names_word(p, said, spaced, proper) for p in parts)
    ]
    # The most complete naming wins: "Ana Lopez" over "Ana" when both are named.
    named = [p for p in named if not any(set(p) < set(other) for other in named)]
    return frozenset(spellings[named[0]]) if len(named) == 1 else frozenset()


def _name_parts(name: str) -> tuple[str, ...]:
    """A name's words as compared with a query's: folded, or for a word in a script
    without spaces (CJK) its NFKC case-folded form, compared inside the query."""
    return tuple(
        unicodedata.normalize("NFKC", w).casefold() if has_cjk(w) else fold(w) for w in words(name)
    )


def _names_word(part: str, said: set[str], spaced: str, proper: frozenset[str]) -> bool:
    """Whether the query names the name word ``part`` (see ``named_speaker``)."""
    if has_cjk(part):
        # One CJK character is too often part of another word to name anyone alone.
        return part in said or (len(part) > 1 and part in spaced)
    return part in said and (part not in FUNCTION_WORDS or part in proper)


_SENTENCE_END = regex.compile(r"[.!?;:\n]+")


def _written_as_names(query: str, name_words: Iterable[str]) -> frozenset[str]:
    """The folded words ``query`` writes as names: capitalised, not all capitals, and
    not first in a sentence; none when the query is title-cased (every one of at
    least two of its other words is capitalised: its capitals say nothing).

    The other words that decide whether a query is title-cased are those of two or
    more letters that are not first in a sentence, not all capitals (an acronym or
    a shouted word), not function words (title case and plain text alike leave
    "of" or "to" lower-case), and not a word of a participant's name (``name_words``,
    folded: "Smith" in "What did Will Smith say?" is capitalised as a name is).
    "Did Will like Rome?" is not title-cased ("like"), nor is "Has May been to
    Rome?" (one such word); "What Did Will Say About Rome?" is.
    """
    known = set(name_words)
    sentences = [words(part) for part in _SENTENCE_END.split(query)]
    inner = [w for cut in sentences for w in cut[1:] if len(w) > 1 and not w.isupper()]
    others = [w for w in inner if fold(w) not in FUNCTION_WORDS and fold(w) not in known]
    if len(others) >= 2 and all(w[:1].isupper() for w in others):
        return frozenset()
    return frozenset(fold(w) for w in inner if w[:1].isupper())
