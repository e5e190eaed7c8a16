"""Who a query names among a conversation's participants (docs/retrieval.md#second-stage-vector-lists):
the rule of the speaker list (store/fusion.py) and of the speaker's vector list
(store/vectorlists.py)."""

from __future__ import annotations

from collections.abc import Iterable

import regex

from oam_core.store.text import FUNCTION_WORDS, fold

__all__ = ["named_speaker"]

_WORD = regex.compile(r"[\p{L}\p{N}]+")


def named_speaker(query: str, names: Iterable[str | None]) -> frozenset[str]:
    """The spellings, among ``names`` (the candidates' speakers), of the one
    participant whom ``query`` names by every word of the name, or an empty set when
    it names none or several. Spellings that fold alike (case, accents, Unicode
    forms: ``text.fold``) are one participant. A name word that is also a function
    word ("Will", "May", "Can") names its speaker only when the query writes it as a
    name (``_written_as_names``): "What did Will say?", not "Will it rain?".
    """
    words = {fold(w) for w in _WORD.findall(query)}
    proper = _written_as_names(query)
    spellings: dict[tuple[str, ...], set[str]] = {}
    for name in set(names):
        if name:
            spellings.setdefault(tuple(fold(w) for w in _WORD.findall(name)), set()).add(name)
    named = [
        spelled
        for parts, spelled in spellings.items()
        if parts and all(p in words and (p not in FUNCTION_WORDS or p in proper) for p in parts)
    ]
    return frozenset(named[0]) if len(named) == 1 else frozenset()


_SENTENCE_END = regex.compile(r"[.!?;:\n]+")


def _written_as_names(query: str) -> frozenset[str]:
    """The folded words ``query`` writes as names: capitalised, not all capitals, and
    not first in a sentence; none when most of its longer words are capitalised
    (a title-cased or shouted query says nothing by its capitals)."""
    sentences = [_WORD.findall(part) for part in _SENTENCE_END.split(query)]
    longer = [w for words in sentences for w in words if len(w) > 1]
    if sum(w[:1].isupper() for w in longer) * 2 > len(longer):
        return frozenset()
    return frozenset(
        fold(w)
        for words in sentences
        for w in words[1:]
        if len(w) > 1 and w[:1].isupper() and not w.isupper()
    )
