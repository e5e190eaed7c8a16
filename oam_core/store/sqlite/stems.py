"""The tokens SQLite's keyword index holds for query words, as FTS5 itself cuts and
stems them (docs/store.md#keyword-search, docs/sqlite.md).

FTS5 scores ``"t0" OR "t1" ...`` phrase by phrase, so two query words with one stem
("cooks", "cook") would count that stem twice, where the PostgreSQL store, which
ranks the distinct lexemes of the query, counts it once. ``distinct_stems`` drops
such a word before the query is built. The tokens come from FTS5: a private
in-memory connection holds an empty FTS5 table with the store's tokenizer
(``TOKENIZER``) and an ``fts5vocab`` table over it; a batch of words is inserted
in a transaction, their tokens read in order, and the transaction rolled back. No
stemmer is written here, so the tokens are the ones the store's index holds, from
the same SQLite library.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Sequence

TOKENIZER = "porter unicode61 remove_diacritics 2"
"""The FTS5 tokenizer of the store's keyword index (every schema version)."""

STEMS_MEMO_SIZE = 65536
"""How many words' tokens are kept; past that the memo is emptied and refilled."""


class _Tokens:
    """The private tokenizer connection (opened when first needed), its lock and
    the memo of each word's tokens."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.conn: sqlite3.Connection | None = None
        self.memo: dict[str, tuple[str, ...]] = {}

    def of(self, words: Sequence[str]) -> list[tuple[str, ...]]:
        with self.lock:
            memo = self.memo
            missing = list(dict.fromkeys(w for w in words if w not in memo))
            if missing:
                if self.conn is None:
                    self.conn = _tokenizer_connection()
                if len(memo) + len(missing) > STEMS_MEMO_SIZE:
                    memo.clear()
                memo.update(zip(missing, _tokenize(self.conn, missing), strict=True))
            return [memo[w] for w in words]

    def forget_after_fork(self) -> None:
        """In a forked child: a new lock (another thread may have held the
        parent's) and a new connection when next needed (SQLite connections do not
        cross a fork)."""
        self.lock = threading.Lock()
        self.conn = None


_TOKENS = _Tokens()


def index_tokens(words: Sequence[str]) -> list[tuple[str, ...]]:
    """The tokens FTS5 makes of each of ``words`` with ``TOKENIZER``, in text order.

    Args:
        words: Query words (any text; a ``store/text.keyword_terms`` token usually
            gives one token, its stem: ``"cooked"`` -> ``("cook",)``; a CJK
            token passes through as it is; a word holding characters the tokenizer
            separates at gives several tokens; one without a token character none).

    Returns:
        One tuple of tokens per word, in the order of ``words``; each word's tokens
        are kept (``STEMS_MEMO_SIZE`` words). Never raises for a ``str``.
    """
    return _TOKENS.of(words)


def distinct_stems(terms: Sequence[str]) -> list[str]:
    """``terms`` without each term whose tokens (``index_tokens``) are an earlier
    term's: ``["cooks", "cook", "oslo"]`` -> ``["cooks", "oslo"]``. An FTS5 query
    of the result scores each stem once, as the PostgreSQL store does.

    Args:
        terms: Query words, as the keyword index is searched with them.

    Returns:
        The kept terms, in their order.
    """
    seen: set[tuple[str, ...]] = set()
    out: list[str] = []
    for term, tokens in zip(terms, index_tokens(terms), strict=True):
        if tokens not in seen:
            seen.add(tokens)
            out.append(term)
    return out


def _tokenizer_connection() -> sqlite3.Connection:
    """A private in-memory connection holding the empty FTS5 table ``w`` (tokenizer
    ``TOKENIZER``) and its ``fts5vocab`` table ``v`` (one row per token instance)."""
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.execute(f"CREATE VIRTUAL TABLE w USING fts5(x, tokenize='{TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(w, 'instance')")
    return conn


def _tokenize(conn: sqlite3.Connection, words: Sequence[str]) -> list[tuple[str, ...]]:
    """Each word's tokens: inserted as row ``i`` in a transaction, read back from the
    vocabulary table by row and offset, rolled back (the table stays empty)."""
    tokens: list[list[str]] = [[] for _ in words]
    conn.execute("BEGIN")
    try:
        conn.executemany("INSERT INTO w (rowid, x) VALUES (?, ?)", enumerate(words))
        for doc, term in conn.execute('SELECT doc, term FROM v ORDER BY doc, "offset"'):
            tokens[doc].append(term)
    finally:
        conn.execute("ROLLBACK")
    return [tuple(t) for t in tokens]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_TOKENS.forget_after_fork)
