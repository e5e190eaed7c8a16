"""Query terms and the CJK index text (``oam_core/store/text.py``; docs/failure-modes.md#c31)."""

from __future__ import annotations

import sqlite3

import pytest
import regex

from oam_core.store.postgres import fulltext
from oam_core.store.sqlite import schema as sqlite_schema
from oam_core.store.text import (
    CJK_BLOCKS,
    cjk_grams,
    fold,
    has_cjk,
    index_text,
    keyword_terms,
    query_terms,
    split_cjk,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("饼干很好", " 饼 饼干 干 干很 很 很好 好 "),
        ("狗叫Cookie!", " 狗 狗叫 叫 cookie!"),  # other text folded (store/text.fold)
        ("猫はミケ", " 猫 は ミ ミケ ケ "),  # cut where the script changes
        ("すごーい", " す すご ご ごー ー ーい い "),  # ー joins the script before it
        ("ｶﾞﾑ", " ガ ガム ム "),  # half-width katakana, voicing mark composed
        ("고양이", " 고 고양 양 양이 이 "),
        ("plain English, lower-cased.", "plain english, lower-cased."),
        ("", ""),
    ],
)
def test_index_text(text: str, expected: str) -> None:
    assert index_text(text) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("我的狗叫什么名字？", ["我的", "的狗", "狗叫", "叫什", "什么", "么名", "名字"]),
        ("猫の名前は？", ["猫", "名前"]),  # one-character particles dropped
        ("の", ["の"]),  # ... unless nothing else is left
        ("我在Google工作", ["我在", "google", "工作"]),
        ("When did Caroline paint?", ["caroline", "paint"]),
        ("what is the", ["what", "is", "the"]),  # only function words: all kept
        ("?!… 。、！ 😀", []),
        ("ｺｰﾋｰ", ["コー", "ーヒ", "ヒー"]),
    ],
)
def test_keyword_terms_of_a_query(query: str, expected: list[str]) -> None:
    assert keyword_terms(query_terms(query)) == expected


def test_split_cjk_keeps_other_text_as_it_is() -> None:
    assert split_cjk("a猫はb") == [("a", ["猫", "は"]), ("b", [])]
    assert cjk_grams(["猫", "ミケ"]) == ["猫", "ミ", "ミケ", "ケ"]


def test_combining_marks_outside_cjk_runs_are_not_cjk() -> None:
    decomposed = "Vie\u0323t"  # a dot below, whose scripts include kana
    assert not has_cjk(decomposed)
    assert index_text(decomposed) == "viet"  # not cut as CJK; the accent folds away


def test_every_cjk_character_is_inside_the_blocks_sql_prefilters_on() -> None:
    run = regex.compile(
        r"(?V1)[[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}]&&\p{L}]"
    )
    outside = [
        hex(cp)
        for cp in range(0x110000)
        if run.match(chr(cp)) and not any(lo <= cp <= hi for lo, hi in CJK_BLOCKS)
    ]
    assert outside == []


def test_the_sqlite_glob_prefilter_matches_every_cjk_text() -> None:
    conn = sqlite3.connect(":memory:")
    samples = ["饼干", "ミケ", "ｶ", "고양이", "𠀋", "x々y", "a\U0002a6d6"]
    for s in samples:
        assert has_cjk(s)
        assert conn.execute("SELECT ? GLOB ?", (s, sqlite_schema.CJK_GLOB)).fetchone() == (1,)
    assert conn.execute("SELECT 'plain' GLOB ?", (sqlite_schema.CJK_GLOB,)).fetchone() == (0,)


def test_sqlite_and_postgres_cut_index_text_into_the_same_tokens() -> None:
    """What FTS5's unicode61 makes of ``index_text`` equals ``fulltext.tokens`` (before
    stemming, which both back ends apply to Latin words only)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    text = "私の猫はミケ。我在Google工作，ｶﾞﾑ和고양이가 café"
    conn.execute("INSERT INTO t (x) VALUES (?)", (index_text(text),))
    sqlite_tokens = [r[0] for r in conn.execute("SELECT term FROM v ORDER BY offset")]
    assert sqlite_tokens == fulltext.tokens(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("İstanbul", "istanbul"),
        ("ISTANBUL", "istanbul"),
        ("Straße", "strasse"),
        ("STRASSE", "strasse"),
        ("ẞ", "ss"),  # capital sharp s
        ("Αθήνα", "αθηνα"),
        ("ΑΘΗΝΑ", "αθηνα"),
        ("Οδυσσέας", "οδυσσεασ"),  # final sigma folds to σ
        ("Crème brûlée", "creme brulee"),
        ("Año NIÑO", "ano nino"),
        ("Cafe\u0301", "cafe"),  # decomposed accent
        ("ＧＯＯＧＬＥ ﬁne ㎒", "google fine mhz"),  # compatibility forms
        ("Plain ASCII", "plain ascii"),
    ],
)
def test_fold_is_unicode_case_folding_without_accents(text: str, expected: str) -> None:
    assert fold(text) == expected


def test_fold_is_idempotent_for_every_character() -> None:
    changed = [
        hex(cp)
        for cp in range(0x110000)
        if not 0xD800 <= cp <= 0xDFFF and fold(fold(chr(cp))) != fold(chr(cp))
    ]
    assert changed == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("İstanbul", ["istanbul"]),
        ("STRASSE Straße", ["strasse"]),
        ("Αθήνα ΑΘΗΝΑ", ["αθηνα"]),
        ("狗叫Straße", ["狗叫", "strasse"]),
        ("ガム", ["ガム"]),  # CJK unchanged: the voicing mark stays
        ("고양이", ["고양", "양이"]),  # hangul syllables are not split into jamo
    ],
)
def test_keyword_terms_are_folded(query: str, expected: list[str]) -> None:
    assert keyword_terms(query_terms(query)) == expected


def test_query_terms_keep_words_whole_and_unfolded() -> None:
    # "İ".lower() is i + U+0307: the word stays one token of letters only.
    assert query_terms("İstanbul'da İZMİR") == ["istanbul", "da", "izmir"]
    assert query_terms("Cafe\u0301 Straße") == ["café", "straße"]
    assert keyword_terms(["straße"], folded=False) == ["straße"]


def test_index_text_folds_outside_cjk_runs_only() -> None:
    assert index_text("Straße狗叫ガム") == "strasse 狗 狗叫 叫 ガ ガム ム "
    assert index_text("Straße狗叫", folded=False) == "Straße 狗 狗叫 叫 "
