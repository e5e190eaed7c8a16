"""The text rules of the store: query terms for keyword search (docs/store.md#keyword-search: BM25 over the query's terms) and the chunks of retrieval text.

A query is cut into lower-cased words (``words``: Unicode letters and digits, with the
combining marks folding drops) and English function words are dropped, so "When did
Caroline paint a sunrise?" matches on ``caroline``, ``paint`` and ``sunrise`` rather
than on every row holding "a" or "did". If nothing but function words remain, all
tokens are kept. Every back end gets the same terms and ORs them in its own
full-text dialect.

Chinese, Japanese and Korean text is written without spaces between words, so a
word tokenizer sees a whole sentence as one token. The SQLite and PostgreSQL back
ends therefore index every run of CJK characters as its single characters and its
overlapping character pairs (``index_text``: 饼干很好 -> 饼 饼干 干 干很 很 很好 好),
split where the script changes (Han, hiragana, katakana, hangul), and search a CJK
term by its pairs, or by its one character (``keyword_terms``). A word of any length
inside a sentence is then found, and BM25 ranks rows holding more of the query's
pairs first. See ``docs/store.md`` ("Keyword search").

Outside CJK runs both back ends index, and search, the folded form of the text
(``fold``): Unicode case folding (``str.casefold``: ß -> ss, final ς -> σ) and accent
removal (NFKD, combining marks dropped: İ -> i, é -> e, ή -> η), so "STRASSE" finds
"Straße" and "αθηνα" finds "Αθήνα". The stored text stays as it was written; only the
index form folds.

The index form also holds only the words the query is cut into: every character
other than a letter or digit becomes a space (``index_text``). The query is folded
and cut in the same order (``keyword_terms`` of ``query_terms``): a mark folding
drops (Arabic harakat, Hebrew niqqud, a virama) stays inside its word on both sides,
a mark folding keeps (an Indic vowel sign of combining class 0) separates words on
both sides, so every index token is found by its own spelling. SQLite's FTS5
tokenizer classifies characters by Unicode 6.1, so it would count the characters
assigned later (most emoji, punctuation, marks and format characters of later
versions) and private-use characters as word characters: "Bob🙂" would be one token
that a search for "Bob" does not find.

Retrieval text is also cut here into the chunks a search row holds (``chunk_text``):
at most ``size`` characters, never inside a grapheme cluster (an emoji ZWJ sequence
or a letter with combining marks stays whole), preferring the last whitespace in the
second half of the window so words stay whole too
(docs/store.md#what-is-stored-and-what-is-searched).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache, wraps
from typing import TypeVar

import regex

WORD = regex.compile(r"[\p{L}\p{N}]+")
"""A token of the keyword index: a run of letters and digits of the folded text
(``index_text``). A word as written (a query's, a name's) is cut by ``words``, which
keeps the marks the folding drops inside it."""

WRITTEN_WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")
"""The characters a word of ``words`` (a query term) is made of: letters, digits and
combining marks."""

_MARK = regex.compile(r"\p{M}")

# A character outside ASCII that is neither a letter nor a digit: emoji and other
# symbols, punctuation, marks left after folding, format characters (ASCII ones
# separate words in every tokenizer already).
_NON_WORD = regex.compile(r"[^\p{L}\p{N}\x00-\x7F]")

# A symbol outside ASCII. Spaced out before folding: compatibility symbols decompose
# into letters (™ -> TM, ℃ -> °C, ㎏ -> kg), which would join the word beside them.
_SYMBOL = regex.compile(r"[^\P{S}\x00-\x7F]")

# Scripts written without spaces between words: Han (with 々 〆 〇), hiragana,
# katakana (with ー and the half-width forms) and hangul. A run starts with one of
# their letters and goes on over their letters and combining marks (か + U+3099).
_CJK_SCRIPTS = r"[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}]"
_CJK_LETTER_CLASS = rf"[{_CJK_SCRIPTS}&&[\p{{L}}\p{{N}}]]"
_CJK_RUN = regex.compile(rf"(?V1){_CJK_LETTER_CLASS}[{_CJK_SCRIPTS}&&[\p{{L}}\p{{N}}\p{{M}}]]*")
_CJK_LETTER = regex.compile(rf"(?V1){_CJK_LETTER_CLASS}")
CJK_BLOCKS = (
    (0x1100, 0x11FF),
    (0x2E80, 0x9FFF),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7FF),
    (0xF900, 0xFAFF),
    (0xFF00, 0xFFEF),
    (0x16FE0, 0x16FFF),
    (0x1AFF0, 0x1B2FF),
    (0x1D360, 0x1D37F),
    (0x20000, 0x3FFFF),
)
"""Code-point ranges holding every CJK letter (and other characters): a cheap test
an SQL engine can run before calling ``index_text``, which decides."""


def cjk_block_class() -> str:
    """``CJK_BLOCKS`` as a bracket expression (``[...]``) for GLOB and regular
    expressions."""
    return "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in CJK_BLOCKS) + "]"


_SCRIPTS = (
    ("han", regex.compile(r"\p{sc=Han}")),
    ("hiragana", regex.compile(r"\p{sc=Hiragana}")),
    ("katakana", regex.compile(r"\p{sc=Katakana}")),
    ("hangul", regex.compile(r"\p{sc=Hangul}")),
)

# Articles, auxiliaries, pronouns, prepositions, conjunctions and question words.
FUNCTION_WORDS = frozenset(
    [
        "a",
        "about",
        "after",
        "all",
        "also",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "before",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "during",
        "each",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "here",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "just",
        "may",
        "me",
        "might",
        "more",
        "most",
        "much",
        "my",
        "no",
        "not",
        "of",
        "off",
        "on",
        "or",
        "our",
        "out",
        "over",
        "s",
        "shall",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


T = TypeVar("T")


def query_terms(query: str) -> list[str]:
    """Return the distinct search terms of ``query``, in order of first appearance.

    Args:
        query: Any text; CJK runs are NFKC-normalised first, as in ``index_text``.

    Returns:
        Lower-cased words (``words`` of the NFC-normalised query: letters and digits
        with the marks folding drops, so ``keyword_terms`` of them are the tokens
        ``index_text`` makes of the query; ``İ`` lower-cases to ``i``, so "İstanbul"
        stays one word), words folding to an English function word dropped unless
        nothing else is left; an empty list for a query without letters or digits
        (punctuation, emoji). Never raises. The words keep their accents:
        ``keyword_terms`` folds them for the SQLite and PostgreSQL indexes, Oracle
        Text searches them as they are.
    """
    if len(query) <= TERMS_MEMO_CHARS:
        return list(_kept_query_terms(query))
    return _query_terms(query)


TERMS_MEMO_SIZE = 8192
"""How many texts' terms ``query_terms`` keeps (a pure function of the text: a
store's queries and candidates recur from one search to the next)."""

TERMS_MEMO_CHARS = 2048
"""Texts longer than this are cut into terms each time (not kept)."""


@lru_cache(maxsize=TERMS_MEMO_SIZE)
def _kept_query_terms(query: str) -> tuple[str, ...]:
    return tuple(_query_terms(query))


def kept_per_text(fn: Callable[[str], T]) -> Callable[[str], T]:
    """``fn``, a pure function of one text, its results kept as ``query_terms``
    keeps terms (``TERMS_MEMO_SIZE`` texts of at most ``TERMS_MEMO_CHARS``
    characters; a longer text is computed each time).

    Args:
        fn: A function of a ``str`` whose result depends on nothing else and is
            not changed by its callers.
    """
    kept = lru_cache(maxsize=TERMS_MEMO_SIZE)(fn)

    @wraps(fn)
    def memo(text: str) -> T:
        return kept(text) if len(text) <= TERMS_MEMO_CHARS else fn(text)

    return memo


def term_set(text: str) -> frozenset[str]:
    """``query_terms(text)`` as a set, kept as ``query_terms`` keeps them (a record's
    content: a store's candidates recur from one search to the next).

    Args:
        text: Any text.
    """
    if len(text) <= TERMS_MEMO_CHARS:
        return _kept_term_set(text)
    return frozenset(_query_terms(text))


@lru_cache(maxsize=TERMS_MEMO_SIZE)
def _kept_term_set(text: str) -> frozenset[str]:
    return frozenset(_kept_query_terms(text))


def _query_terms(query: str) -> list[str]:
    """``query_terms`` computed (not kept)."""
    nfc = unicodedata.normalize("NFC", query)
    text = _CJK_RUN.sub(lambda m: unicodedata.normalize("NFKC", m.group()), nfc)
    tokens = list(dict.fromkeys(_lower(t) for t in words(text)))
    content = [t for t in tokens if fold(t) not in FUNCTION_WORDS]
    return content or tokens


def _lower(word: str) -> str:
    """``word`` lower-cased, a capital dotted I as ``i``: ``"İ".lower()`` is ``i``
    followed by a combining dot above (U+0307), a mark the word as written in lower
    case does not hold ("istanbul")."""
    return word.replace("\u0130", "i").lower()


def words(text: str) -> list[str]:
    """The words of ``text`` as written, cut where the keyword index cuts the folded
    text (docs/store.md#keyword-search).

    A word is a run of letters, digits and the combining marks ``fold`` drops (Arabic
    harakat, Hebrew niqqud, the Devanagari virama, a diaeresis that has no
    precomposed letter): the index folds before it cuts, so these marks join the
    letters around them there. ``fold`` of each word, cut into ``WORD`` runs, gives
    the tokens of ``index_text(text)`` outside CJK runs, in order:
    ``words("ذَهَبَ الوَلَدُ")`` is ``["ذَهَبَ", "الوَلَدُ"]``, indexed ``ذهب الولد``. A mark
    the fold keeps (the spacing and other class-0 vowel signs of Indic scripts, a
    variation selector, the keycap mark U+20E3) separates words, as it does in the
    index: ``words("नमस्ते")`` is ``["नमस्त"]``. A mark the fold removes starts no word.

    Args:
        text: Any text.

    Returns:
        The words in text order, repeats kept; never raises.
    """
    if text.isascii() or _MARK.search(text) is None:
        return WORD.findall(text)
    out: list[str] = []
    for run in WRITTEN_WORD.findall(_MARK.sub(_joining_or_space, text)):
        start = 0
        while start < len(run) and _folds_away(run[start]):
            start += 1
        if start < len(run):
            out.append(run[start:])
    return out


def _joining_or_space(mark: regex.Match[str]) -> str:
    """The matched mark when it joins the letters around it (``_joins``), else a
    space."""
    return mark.group() if _joins(mark.group()) else " "


@lru_cache(maxsize=TERMS_MEMO_SIZE)
def _joins(mark: str) -> bool:
    """Whether ``fold`` leaves no character of ``mark`` other than letters and digits
    (nothing, for a mark of non-zero combining class; ``ι`` for U+0345)."""
    folded = fold(mark)
    return not folded or WORD.fullmatch(folded) is not None


@lru_cache(maxsize=TERMS_MEMO_SIZE)
def _folds_away(ch: str) -> bool:
    """Whether ``fold`` removes ``ch`` entirely (a combining mark, a half-width voicing
    mark)."""
    return not fold(ch)


def fold(text: str) -> str:
    """The keyword-index form of ``text`` outside CJK runs (docs/store.md#keyword-search).

    Unicode case folding and accent removal: NFKD, ``str.casefold``, NFKD again (a
    folded character may decompose further), then every character with a nonzero
    canonical combining class dropped. ``fold("İstanbul")``, ``fold("ISTANBUL")``
    and ``fold("istanbul")`` are ``"istanbul"``; ``fold("Straße")`` is
    ``"strasse"``; ``fold("Αθήνα")`` is ``"αθηνα"``; full-width and compatibility
    forms become their plain letters (``"ＡＢ"`` -> ``"ab"``). ASCII text is only
    lower-cased. ``fold(fold(t)) == fold(t)`` for every text.

    ``index_text`` and ``keyword_terms`` apply it to the text outside CJK runs (NFKD
    would split hangul syllables into jamo and strip the voicing marks of kana), so
    both back ends index and search the same folded words.

    Args:
        text: Any text.

    Returns:
        The folded text; never raises.
    """
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _same(text: str) -> str:
    return text


def _cjk_letters(run: str) -> str:
    """A CJK run in NFKC form without combining marks (half-width katakana become
    full-width, か followed by U+3099 becomes が)."""
    return "".join(_CJK_LETTER.findall(unicodedata.normalize("NFKC", run)))


def _script(ch: str) -> str:
    for name, pattern in _SCRIPTS:
        if pattern.match(ch):
            return name
    return ""  # ー and other shared marks: joins the script before it


def _segments(run: str) -> list[str]:
    """A CJK run cut where the script changes (猫はミケ -> 猫 | は | ミケ)."""
    out: list[str] = []
    current = ""
    for ch in _cjk_letters(run):
        script = _script(ch)
        if out and script in ("", current):
            out[-1] += ch
        else:
            out.append(ch)
            current = script or "katakana"
    return out


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a CJK character (see the module docstring)."""
    return _CJK_RUN.search(text) is not None


def split_cjk(text: str) -> list[tuple[str, list[str]]]:
    """``text`` as ``(other text, CJK segments after it)`` pairs, in order.

    The other text is returned as it is; each CJK run is normalised and cut where
    the script changes. ``split_cjk("a猫はb")`` is ``[("a", ["猫", "は"]), ("b", [])]``.
    """
    out: list[tuple[str, list[str]]] = []
    last = 0
    for m in _CJK_RUN.finditer(text):
        out.append((text[last : m.start()], _segments(m.group())))
        last = m.end()
    out.append((text[last:], []))
    return out


def cjk_grams(segments: Iterable[str]) -> list[str]:
    """The index tokens of CJK ``segments``: each character and each overlapping
    pair, in text order (饼干很 -> 饼 饼干 干 干很 很)."""
    out: list[str] = []
    for seg in segments:
        out.append(seg[0])
        for i in range(1, len(seg)):
            out += [seg[i - 1 : i + 1], seg[i]]
    return out


def index_text(text: str, *, folded: bool = True, separated: bool = True) -> str:
    """The text a keyword index holds for a search row of ``text``.

    Each CJK run becomes its ``cjk_grams``, separated by spaces, the other text is
    folded (``fold``), and every character that is neither a letter nor a digit
    becomes a space (a symbol before folding, so that "Acme™" is not ``acmetm``),
    so the index holds the ``[\\p{L}\\p{N}]+`` runs that ``query_terms`` cuts query
    words from, whatever Unicode version the tokenizer knows:
    ``index_text("狗叫Straße")`` is ``" 狗 狗叫 叫 strasse"``, ``index_text("Bob🙂
    x²")`` is ``"bob  x2"`` and ``index_text("Acme™")`` is ``"acme "``
    (docs/store.md#keyword-search). Both
    SQL back ends index this text, so they hold the same tokens; changing what it
    returns changes the index format (a new schema version whose upgrade rebuilds
    the index).

    Args:
        text: A search row's text.
        folded: False keeps the other text as it is (what SQLite schema versions 2
            to 5 indexed).
        separated: False keeps the characters that are neither letters nor digits
            (what SQLite schema versions 2 to 7 and PostgreSQL versions 1 to 5
            indexed); the ``[\\p{L}\\p{N}]+`` runs of the result differ only
            where a symbol decomposes into letters (™, ℃, ㎏).

    Returns:
        The text to cut with the back end's word tokenizer.
    """
    keep = fold if folded else _same
    if separated and not text.isascii():
        text = _SYMBOL.sub(" ", text)
    if not _CJK_RUN.search(text):
        out = keep(text)
    else:
        out = "".join(
            keep(other) + (" " + " ".join(cjk_grams(segs)) + " " if segs else "")
            for other, segs in split_cjk(text)
        )
    if not separated or out.isascii():
        return out
    return _NON_WORD.sub(" ", out)


def keyword_terms(terms: Iterable[str], *, folded: bool = True) -> list[str]:
    """The index tokens to search for ``query_terms`` output (see ``index_text``).

    The text of a term outside CJK runs is folded (``fold``) and cut into words
    (``"Straße"`` -> ``strasse``). The CJK parts of a term are cut
    where the script changes; a part of two or more characters is searched by its
    character pairs, a part of one character by that character. One-character
    hiragana parts (particles such as は, の, を) are dropped unless nothing else is
    left.

    Args:
        terms: Search terms, as ``query_terms`` returns them.
        folded: False searches an index cut from ``index_text(text, folded=False)``
            (the text outside CJK runs is not folded).

    Returns:
        Distinct tokens in order of first appearance; empty only when ``terms`` is
        (or holds no letter or digit).
    """
    keep = fold if folded else _same
    tokens: list[str] = []
    particles: list[str] = []
    for term in terms:
        for other, segments in split_cjk(term):
            tokens += WORD.findall(keep(other))
            for seg in segments:
                if len(seg) > 1:
                    tokens += [seg[i : i + 2] for i in range(len(seg) - 1)]
                elif _script(seg) == "hiragana":
                    particles.append(seg)
                else:
                    tokens.append(seg)
    return list(dict.fromkeys(tokens or particles))


_GRAPHEME = regex.compile(r"\X")


def chunk_text(text: str, size: int) -> list[str]:
    """Split ``text`` into chunks of at most ``size`` characters.

    Args:
        text: The retrieval text.
        size: Maximum chunk length in characters (>= 1). A single grapheme longer
            than ``size`` becomes its own chunk.

    Returns:
        The chunks in order; ``[]`` when ``text`` is empty or only whitespace.
        Joining the chunks gives back ``text`` minus whitespace at the cuts.
    """
    if not text.strip():
        return []
    if len(text) <= size:
        return [text]
    graphemes = _GRAPHEME.findall(text)
    chunks: list[str] = []
    start = 0
    while start < len(graphemes):
        length = 0
        end = start
        last_space = -1
        while end < len(graphemes) and (length + len(graphemes[end]) <= size or end == start):
            if graphemes[end].isspace():
                last_space = end
            length += len(graphemes[end])
            end += 1
        if end < len(graphemes) and last_space > start + (end - start) // 2:
            end = last_space + 1
        piece = "".join(graphemes[start:end]).strip()
        if piece:
            chunks.append(piece)
        start = end
    return chunks


# -- word stems in texts (the own-text signal list, store/fusion.py) ----------


def nul_joined(texts: Sequence[str]) -> tuple[str, list[int]]:
    """``texts`` joined by NUL characters, and the offset where each text starts in
    the join, plus one past the last (``len(join) + 1``): the text holding the join's
    position ``p`` is ``bisect_right(starts, p) - 1``.

    Args:
        texts: Texts without NUL (stored text never holds one).

    Returns:
        ``(joined, starts)``, ``starts`` of length ``len(texts) + 1``.
    """
    starts = []
    at = 0
    for text in texts:
        starts.append(at)
        at += len(text) + 1
    starts.append(at)  # the end, as the start of a text past the last
    return "\0".join(texts), starts


STEM = 5
"""Words are compared by their first ``STEM`` letters ("painting" and "paints" as
"paint"), a crude stand-in for the keyword index's stemmer."""
_WORD_START = r"(?<![^\W_])"
_WORD_END = r"(?![^\W_])"


def stem_counts_each(stems: Sequence[str], texts: Sequence[str]) -> list[int]:
    """``stem_counter(stems)`` of each of ``texts`` (lower-cased, without NUL). For
    alphanumeric stems each stem is looked for once in the NUL-joined texts: a NUL
    is not alphanumeric, so it bounds a word as a text's start or end does, and no
    hit spans two texts."""
    if not all(s.isalnum() for s in stems):
        count = stem_pattern_counter(stems)
        return [count(text) for text in texts]
    joined, starts = nul_joined(texts)
    counts = [0] * len(texts)
    for stem in stems:
        at = joined.find(stem)
        while at >= 0:
            if _starts_word(joined, stem, at):
                i = bisect_right(starts, at) - 1
                counts[i] += 1
                at = joined.find(stem, starts[i + 1])  # a stem counts once a text
            else:
                at = joined.find(stem, at + 1)
    return counts


def stem_counter(stems: Sequence[str]) -> Callable[[str], int]:
    """A function counting how many of ``stems`` a lower-cased text holds: a word holds
    a stem when its first ``STEM`` letters are the stem (a shorter stem: the whole
    word), a word being a run of alphanumeric characters (``str.isalnum``, which is
    what ``[^\\W_]`` means to ``re``).

    Stems of alphanumeric characters only (every plain word) are found with
    ``str.find`` and a look at the characters around each hit; others (a lower-cased
    "İ" brings a combining mark) by one regular expression, which gives the same
    counts for the former (tests/unit/test_signals_own_text.py)."""
    if all(s.isalnum() for s in stems):
        return lambda text: sum(1 for s in stems if _holds_word(text, s))
    return stem_pattern_counter(stems)


def _holds_word(text: str, stem: str) -> bool:
    """Whether ``stem`` (alphanumeric) starts a word of ``text``, and ends it if it is
    shorter than ``STEM``."""
    at = text.find(stem)
    while at >= 0:
        if _starts_word(text, stem, at):
            return True
        at = text.find(stem, at + 1)
    return False


def _starts_word(text: str, stem: str, at: int) -> bool:
    """Whether the ``stem`` found at ``text[at:]`` starts a word, and ends it if it is
    shorter than ``STEM``."""
    end = at + len(stem)
    return (at == 0 or not text[at - 1].isalnum()) and (
        len(stem) >= STEM or end == len(text) or not text[end].isalnum()
    )


def stem_pattern_counter(stems: Sequence[str]) -> Callable[[str], int]:
    """``stem_counter`` by one alternation of the stems (each one a group)."""
    alternatives = [f"({re.escape(s)})" + ("" if len(s) == STEM else _WORD_END) for s in stems]
    holds = re.compile(_WORD_START + "(?:" + "|".join(alternatives) + ")")
    return lambda text: len({m.lastindex for m in holds.finditer(text)})
