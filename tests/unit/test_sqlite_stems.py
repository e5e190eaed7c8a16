"""The tokens SQLite's keyword index holds for query words (``store/sqlite/stems.py``;
docs/store.md#keyword-search): FTS5's own, so a query names each stem once, and a
ranking of words sharing a stem equals FTS5's ranking of the first of them, on the
FTS5 path and on the held numpy path (``sqlite/heldstate.py``) alike."""

from __future__ import annotations

import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
import regex

from oam_core import SQLiteMemoryStore
from oam_core.apis._sentinel import NOT_SET
from oam_core.checks import types_arg
from oam_core.store.backend import Predicate
from oam_core.store.sqlite import keyword, stems
from oam_core.store.sqlite.schema import SCHEMA_VERSION
from oam_core.store.sqlite.stems import distinct_stems, index_tokens
from oam_core.store.text import index_text, keyword_terms, query_terms


def test_words_of_one_stem_give_one_token() -> None:
    assert index_tokens(["cooks", "cook", "cooked", "cooking"]) == [("cook",)] * 4
    assert index_tokens(["running", "runs", "ran"]) == [("run",), ("run",), ("ran",)]
    assert distinct_stems(["cooks", "cook", "oslo", "cooked"]) == ["cooks", "oslo"]
    # FTS5 removes the accent before the stemmer sees the word.
    assert index_tokens(["général", "generously"]) == [("gener",), ("gener",)]


def test_strasse_folded_and_not() -> None:
    # The query words of a folded index (schema 6 on) are folded: one token.
    assert keyword_terms(query_terms("Straße STRASSE strassen")) == ["strasse", "strassen"]
    assert index_tokens(["strasse", "strassen"]) == [("strass",), ("strassen",)]
    # An unfolded index (versions 2 to 5, read-only) holds ß as it is: two stems.
    assert index_tokens(["straße"]) == [("straß",)]
    assert distinct_stems(["straße", "strasse"]) == ["straße", "strasse"]


def test_cjk_tokens_pass_through_as_they_are() -> None:
    words = keyword_terms(query_terms("猫の名前は？饼干 고양이 ミケ"))
    assert words == ["猫", "名前", "饼干", "고양", "양이", "ミケ"]  # hangul: its pairs
    assert index_tokens(words) == [(w,) for w in words]
    assert distinct_stems(["饼干", "饼", "干", "饼干"]) == ["饼干", "饼", "干"]


def test_a_word_fts5_cuts_in_two_is_compared_by_both_tokens() -> None:
    # U+19B0/U+19B1 were spacing marks in Unicode 6.1 (FTS5 cuts words there),
    # letters since: one query word, the two-token phrase "ᦀ ᦁ" in FTS5.
    a, b = "\u1980\u19b0\u1981", "\u1980\u19b1\u1981"
    pair = ("\u1980", "\u1981")
    assert index_tokens([a, b, "\u1980"]) == [pair, pair, ("\u1980",)]
    assert distinct_stems([a, b, "\u1980"]) == [a, "\u1980"]
    assert index_tokens(["", "x\x00y"]) == [(), ("x", "y")]  # no token; NUL separates


def test_tokens_equal_what_the_store_indexes(tmp_path: Path) -> None:
    texts = [
        "Caroline cooked dumplings; Melanie's cooks were running late at the café.",
        "Die Straße war nass, die Straßen auch. Général generously agreed.",
        "我的狗叫饼干，うちの猫はミケ，우리 고양이가 생선을 좋아해요.",
        "Zoë and ZOË and zoe wrote 42 reports in 2024 (x² ≠ x2).",
    ]
    store = SQLiteMemoryStore(tmp_path / "s.db", search_strategy="KEYWORD", embedder=None)
    store.add(texts, "memory")
    store.close()
    conn = sqlite3.connect(tmp_path / "s.db")
    conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, chunks_fts, 'row')")
    held = {t for (t,) in conn.execute("SELECT term FROM temp.v")}
    conn.close()
    words = regex.findall(r"[\p{L}\p{N}]+", " ".join(index_text(t) for t in texts))
    assert {t for tokens in index_tokens(words) for t in tokens} == held
    assert {"cook", "run", "strass", "gener", "zoe", "饼干", "고양"} <= held


def test_threads_get_the_same_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stems, "_TOKENS", stems._Tokens())
    words = [f"cook{suffix}{i}" for i in range(200) for suffix in ("", "ing", "s")]
    want = stems._tokenize(stems._tokenizer_connection(), words)
    got: list[list[tuple[str, ...]]] = []

    def work() -> None:
        got.append(index_tokens(words))

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [want] * 6


def test_the_memo_stays_within_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stems, "_TOKENS", stems._Tokens())
    monkeypatch.setattr(stems, "STEMS_MEMO_SIZE", 50)
    for start in range(0, 400, 30):
        words = [f"baked{i}" for i in range(start, start + 30)]
        assert index_tokens(words) == [(w,) for w in words]  # porter keeps a digit end
        assert len(stems._TOKENS.memo) <= 50
    assert index_tokens(["baked", "bakes"]) == [("bake",), ("bake",)]


def _pred() -> Predicate:
    return Predicate(record_types=types_arg(None), now=datetime.now(timezone.utc), user_id=NOT_SET)


def test_rankings_of_one_stem_equal_fts5_of_the_first_word(tmp_path: Path) -> None:
    """Cold (FTS5), warm (held term scores, numpy) and row-checked rankings of a query
    naming a stem three times all equal FTS5's ranking of the query naming it once."""
    texts = [f"I cooked {f} soup" for f in ("lentil", "tomato", "pea")]
    texts += ["a cook in Oslo", "Oslo in spring", "cooking cooks cook", "we went hiking"]
    texts += [f"filler row {i}" for i in range(12)]
    store = SQLiteMemoryStore(tmp_path / "r.db", search_strategy="KEYWORD", embedder=None)
    store.add(texts, "memory", record_ids=[f"r{i:02d}" for i in range(len(texts))])
    backend = store.runtime.backend  # type: ignore[attr-defined]
    ranker = backend.keywords
    asked = ["cooks", "cook", "oslo", "cooked"]
    assert keyword._index_terms(asked, SCHEMA_VERSION) == ["cooks", "oslo"]
    conn = sqlite3.connect(tmp_path / "r.db")
    bm25 = conn.execute(
        "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? "
        "ORDER BY bm25(chunks_fts), rowid",
        ('"cooks" OR "oslo"',),
    ).fetchall()
    conn.close()
    want = [(pk, -score) for pk, score in bm25]  # one chunk per record: pk = rowid
    for k in (1, 3, 10):
        ranker.hold_terms = False
        cold = backend.rank_keyword(asked, k, _pred())
        ranker.hold_terms = True
        once = backend.rank_keyword(["cooks", "oslo"], k, _pred())
        backend.rank_keyword(asked, k, _pred())
        warm = backend.rank_keyword(["cook", "cooks", "oslo", "cooking"], k, _pred())
        ranker.hold_arrays = False
        rows = backend.rank_keyword(["cooked", "oslo", "cooks"], k, _pred())
        ranker.hold_arrays = True
        assert repr(cold) == repr(once) == repr(warm) == repr(rows) == repr(want[:k])
        scores = np.array([s for _, s in warm], np.float64)
        assert scores.tobytes() == np.array([s for _, s in want[:k]]).tobytes()
    assert ranker.term_scores.terms  # the warm searches summed held term scores
    store.close()
