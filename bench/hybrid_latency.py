"""CPU time of one ``store.search`` at LoCoMo scale, without the query embedding.

The in-process harness behind bench/README.md, "HYBRID latency at LoCoMo scale": each
LoCoMo conversation is written once into a SQLite file (``--db-dir``, through
``locomo_recall.py``'s ingest), copied into an in-memory store per run, and every
question of the conversation is searched ``--passes`` times after one unmeasured
pass, with the query vectors computed before (HYBRID: memoised, VECTOR: passed as
``query_vector``). A question's time is the median of its passes of
``time.process_time`` around ``store.search``; the report is the p50 over the
questions, in CPU and wall time. ``--dump`` writes every question's ids and
distances of the last pass (compare two trees byte for byte).

``--first-ask``: what a user asking a new question pays. Each question is searched
once, on a store warmed by one unrelated query (``WARM_QUERY``), so nothing kept for
a question asked before (kept rankings, the per-pool lists) serves it; the report
is the p50 over the questions of that one search (``passes`` is 1).

Defaults as ``locomo_recall.py``'s: the data in ``../shared/data/locomo`` beside the
checkout, the ``local`` embedder, no embedding cache unless ``--embed-cache`` is
given; the ingested files go to a temporary directory removed after the run unless
``--db-dir`` keeps them between runs (one file per sample and embedder, written
again when its page size is not the store's; use a new directory for other data).

Run it on two trees alternately, several rounds, and compare medians::

    PYTHONPATH=$T:$T/integrations python bench/hybrid_latency.py --strategy hybrid \
        --db-dir /tmp/hl --embed-cache /tmp/embcache.sqlite

``tests/unit/test_bench_smoke.py`` runs it on a tiny synthetic LoCoMo file with the
``hashing`` embedder.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo_recall as lr

from oam_core import SQLiteMemoryStore
from oam_core.apis.embedder import IEmbedder
from oam_core.errors import InvalidArgumentError
from oam_core.ingest import Conversation, IngestError

DATA = lr.DATA_DIR
"""``../shared/data/locomo`` beside the checkout (as ``locomo_recall.py``)."""

WARM_QUERY = "warm up the store please"
"""The one unmeasured search of ``--first-ask`` before a store's questions."""


class MemoEmbedder(IEmbedder):
    """Delegates to another embedder and keeps every answer by (texts, is_query)."""

    def __init__(self, inner: IEmbedder) -> None:
        self.inner = inner
        self.max_input_tokens = inner.max_input_tokens
        self.memo: dict[tuple[tuple[str, ...], bool], npt.NDArray[np.float32]] = {}

    @property
    def embedding_dimension(self) -> int:
        return self.inner.embedding_dimension

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """The inner embedder's vectors of ``texts``, computed once."""
        key = (tuple(texts), is_query)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = self.inner.embed(texts, is_query=is_query)
        return found


def _page_size(conn: sqlite3.Connection) -> int:
    """``PRAGMA page_size`` of ``conn``'s main database, in bytes."""
    return int(conn.execute("PRAGMA page_size").fetchone()[0])


def db_file(db_dir: Path, sample_id: str, embedder: str) -> Path:
    """The file of one sample's ingested turns: ``<sample>.sqlite`` for the ``local``
    embedder (the name earlier runs used), ``<sample>.<embedder>.sqlite`` for another
    (``/`` as ``_``), so a store of one embedder is never searched with another's
    vectors."""
    tag = "" if embedder == "local" else "." + embedder.replace("/", "_")
    return db_dir / f"{sample_id}{tag}.sqlite"


def _store(
    db: Path,
    model: lr.TimedEmbedder,
    conversations: Sequence[Conversation],
    memo: MemoEmbedder,
    strategy: str,
) -> SQLiteMemoryStore:
    """An in-memory store holding a copy of the conversation's file (written once, and
    again when its page size is not the store's: SQLite's backup cannot copy pages of
    another size into an in-memory database)."""
    store = SQLiteMemoryStore(
        ":memory:",
        embedder=memo,
        vector_dim=memo.embedding_dimension,
        search_strategy="KEYWORD" if strategy == "keyword" else "HYBRID",
    )
    target: sqlite3.Connection = store.runtime.backend.conn  # type: ignore[attr-defined]
    if db.exists():
        with closing(sqlite3.connect(str(db))) as existing:
            stale = _page_size(existing) != _page_size(target)
        if stale:
            db.unlink()
    if not db.exists():
        db.parent.mkdir(parents=True, exist_ok=True)
        writer = SQLiteMemoryStore(str(db), embedder=model, vector_dim=model.embedding_dimension)
        lr.ingest_sample("turns", writer, model, conversations, {}, lr.Timings())
        writer.close()
    with closing(sqlite3.connect(str(db))) as source:
        source.backup(target)
    return store


def _search(
    store: SQLiteMemoryStore, strategy: str, memo: MemoEmbedder, text: str, scope: dict[str, Any]
) -> list[Any]:
    """One measured ``store.search`` of ``text`` (VECTOR: its memoised vector)."""
    if strategy == "vector":
        vector = memo.embed([text], is_query=True)[0]
        return store.search(k=10, query_vector=vector, **scope)
    return store.search(text, 10, **scope)


def _measure_sample(
    store: SQLiteMemoryStore,
    sample_id: str,
    asked: Sequence[lr.Question],
    memo: MemoEmbedder,
    args: argparse.Namespace,
    dump: TextIO | None,
) -> list[tuple[float, float]]:
    """Search every question of one sample; per question its median CPU and wall
    seconds over the measured passes."""
    scope: dict[str, Any] = {"user_id": sample_id, "exact_user_match": True}
    scope["record_types"] = {"message"}
    for question in asked:
        memo.embed([question.question], is_query=True)
    times: list[tuple[list[float], list[float]]] = [([], []) for _ in asked]
    passes = 1 if args.first_ask else args.passes
    if args.first_ask:
        _search(store, args.strategy, memo, WARM_QUERY, scope)
    for n in range(1 if args.first_ask else 0, passes + 1):
        for (cpu_s, wall_s), question in zip(times, asked, strict=True):
            cpu0, wall0 = time.process_time(), time.perf_counter()
            results = _search(store, args.strategy, memo, question.question, scope)
            if n:
                cpu_s.append(time.process_time() - cpu0)
                wall_s.append(time.perf_counter() - wall0)
            if n == passes and dump is not None:
                row = [r.id for r, _ in results], [repr(d) for _, d in results]
                dump.write(json.dumps([sample_id, question.qa_index, *row]) + "\n")
    return [(statistics.median(c), statistics.median(w)) for c, w in times]


@contextmanager
def _db_dir(kept: Path | None) -> Iterator[Path]:
    """``kept`` (created when missing), or a temporary directory removed afterwards.

    Raises:
        InvalidArgumentError: (a ValueError) when ``kept`` cannot be a directory (it
            names a file, or a path under one), naming ``--db-dir``.
    """
    if kept is not None:
        try:
            kept.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            reason = "a file, not a directory" if kept.is_file() else exc.strerror
            raise InvalidArgumentError(f"--db-dir {kept}: {reason}") from exc
        yield kept
        return
    with tempfile.TemporaryDirectory(prefix="oam-hybrid-latency-") as tmp:
        yield Path(tmp)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Run the measurement of the parsed ``args``; return the report (one JSON object:
    ``strategy``, ``mode``, ``questions``, ``cpu_p50_ms``, ``wall_p50_ms``,
    ``wall_p95_ms``).

    Raises:
        ValueError: for unreadable data or qrels, or no question with evidence;
            InvalidArgumentError for ``--embedder none`` or a ``--db-dir`` that
            cannot be a directory.
        IngestError: for a malformed LoCoMo file.
    """
    by_sample = lr.load_samples(args.data, None)
    questions, _ = lr.questions_by_sample(args.qrels, by_sample)
    if not any(questions.values()):
        raise ValueError(f"{args.qrels}: no question with evidence names a sample of the data")
    model = lr.loaded_model(args.embedder, args.embed_cache, None, lr.Timings())
    memo = MemoEmbedder(model.inner)
    medians: list[tuple[float, float]] = []
    dump = args.dump.open("w", encoding="utf-8") if args.dump else None
    try:
        with _db_dir(args.db_dir) as db_dir:
            for sample_id, conversations in by_sample.items():
                db = db_file(db_dir, sample_id, args.embedder)
                store = _store(db, model, conversations, memo, args.strategy)
                try:
                    asked = questions.get(sample_id, [])
                    medians += _measure_sample(store, sample_id, asked, memo, args, dump)
                finally:
                    store.close()
    finally:
        if dump is not None:
            dump.close()
    cpu = [c for c, _ in medians]
    wall = [w for _, w in medians]
    return {
        "strategy": args.strategy,
        "mode": "first-ask" if args.first_ask else f"{args.passes} passes",
        "questions": len(cpu),
        "cpu_p50_ms": round(1000 * statistics.median(cpu), 3),
        "wall_p50_ms": round(1000 * statistics.median(wall), 3),
        "wall_p95_ms": round(1000 * float(np.percentile(wall, 95)), 3),
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--strategy", choices=["hybrid", "vector", "keyword"], default="hybrid")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA / "locomo_dev.json")
    parser.add_argument("--qrels", type=Path, default=DATA / "locomo_dev_qrels.jsonl")
    parser.add_argument("--embedder", default="local", help="local, hashing, hashing/<dim>")
    parser.add_argument(
        "--embed-cache",
        type=Path,
        help="SQLite file caching vectors per (embedder, text), kept outside the repository",
    )
    parser.add_argument(
        "--db-dir",
        type=Path,
        help="keep the ingested stores here between runs (default: a temporary "
        "directory, removed after the run)",
    )
    parser.add_argument("--dump", type=Path, help="write each question's results here")
    parser.add_argument(
        "--first-ask",
        action="store_true",
        help="search each question once, on a store warmed by one unrelated query",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print one JSON line (see the module docstring); 2 on bad input."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.passes < 1:
        parser.error("--passes must be >= 1")
    try:
        report = measure(args)
    except (IngestError, ValueError, ImportError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
