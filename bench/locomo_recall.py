"""Turn-level retrieval recall on LoCoMo through the public ``oam`` API.

For each LoCoMo conversation (sample) a fresh in-memory ``SQLiteMemoryStore`` is
filled through ``OracleAgentMemory`` (``extract_memories=False``), one thread per
session, each message carrying its ``dia_id`` in metadata. Every question of that
sample is then searched with ``store.search(question, k, user_id=sample_id,
exact_user_match=True, record_types={"message"})`` and the returned messages are
mapped back to dialog ids. A question counts for ``recall_all@k`` when all of its
evidence ids are in the top k, for ``recall_any@k`` when at least one is. Category 5
(adversarial) is reported but left out of the overall numbers; questions without
evidence ids are skipped.

Timings: ingest throughput (messages/s, embedding included), and per query the search
latency with and without the query embedding. VECTOR embeds each query first and
searches with ``query_vector``; HYBRID embeds inside ``search``, and a timing wrapper
around the embedder separates that time; KEYWORD does no query embedding.

Usage (from the repository root)::

    python bench/locomo_recall.py --strategy hybrid --k 10
    python bench/locomo_recall.py --strategy vector --k 10 --json

The LoCoMo files are CC BY-NC 4.0: read them from ``../shared/data``, never copy
them into this repository.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

try:
    import oam_core  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oam_core import (
    IEmbedder,
    ILlm,
    OracleAgentMemory,
    OracleMemoryStore,
    SearchStrategy,
    SQLiteMemoryStore,
)
from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.records import MEMORY_TYPES, Record
from oam_core.embedders import resolve_embedder
from oam_core.errors import InvalidArgumentError
from oam_core.ingest import Conversation, IngestError, load_conversations
from oam_core.llms import resolve_llm
from oam_core.memory.provenancefusion import source_message_ids
from oam_core.store.threads import thread_store

if TYPE_CHECKING:
    from oam_core.rerankers import IReranker

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo"
ON_CHOICES = ("turns", "memories", "both")
"""What ``--on`` searches: the turns, a recorded extraction's memories, or both."""
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
EXCLUDED_FROM_OVERALL = frozenset({5})


@dataclass(frozen=True)
class Question:
    """One line of the qrels file."""

    sample_id: str
    qa_index: int
    category: int
    question: str
    evidence: frozenset[str]


SESSION_K = 5
"""Depth of the evidence-session hit rate (published session-level figures use 5)."""
SHALLOWER_KS = (1, 5)
"""Cut-offs below ``k`` also reported overall (``"overall_at"``: recall@1 and @5)."""


def session_of(dia_id: str) -> str:
    """The session of a LoCoMo dialog id: ``"D3:12"`` -> ``"D3"``."""
    return dia_id.split(":", 1)[0]


@dataclass
class _Tally:
    """Running sums of one group of questions (a category, or overall)."""

    n: int = 0
    all_hits: int = 0
    any_hits: int = 0
    session_hits: int = 0
    reciprocal_ranks: float = 0.0

    def add(self, evidence: frozenset[str], ranked: Sequence[frozenset[str]], k: int) -> None:
        """Score one question.

        Args:
            evidence: The question's gold dialog ids.
            ranked: Per result, best first, the dialog ids it stands for (a message:
                its own id; a memory: the turns it was extracted from).
            k: The cut-off of recall and MRR.
        """
        self.n += 1
        top = ranked[:k]
        covered = frozenset().union(*top)
        self.all_hits += evidence <= covered
        self.any_hits += bool(evidence & covered)
        sessions = {session_of(e) for e in evidence}
        self.session_hits += any(
            session_of(d) in sessions for ids in ranked[:SESSION_K] for d in ids
        )
        first = next((rank for rank, ids in enumerate(top, 1) if ids & evidence), None)
        self.reciprocal_ranks += 1.0 / first if first else 0.0

    def as_dict(self, k: int) -> dict[str, Any]:
        """The group's metrics (0.0 for an empty group)."""
        n = self.n or 1
        return {
            f"recall_all@{k}": self.all_hits / n,
            f"recall_any@{k}": self.any_hits / n,
            f"session_hit@{SESSION_K}": self.session_hits / n,
            f"mrr@{k}": self.reciprocal_ranks / n,
            "n": self.n,
        }


@dataclass
class Timings:
    """What a run spent loading the model and ingesting (seconds), and what it wrote."""

    model_load_s: float = 0.0
    ingest_s: float = 0.0
    ingest_embed_s: float = 0.0
    records: int = 0
    threads: int = 0


RUN_METHODS = ("count_tokens", "embed_runs")
"""What an embedder offers the pooled message-row path (``memory.latechunk``)."""


class TimedEmbedder(IEmbedder):
    """Delegates to another embedder and adds up the seconds spent in ``embed``."""

    def __init__(self, inner: IEmbedder) -> None:
        self.inner = inner
        self.max_input_tokens = inner.max_input_tokens
        self.seconds = 0.0

    @property
    def embedding_dimension(self) -> int:
        return self.inner.embedding_dimension

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Embed with the wrapped embedder, timing the call."""
        started = time.perf_counter()
        try:
            return self.inner.embed(texts, is_query=is_query)
        finally:
            self.seconds += time.perf_counter() - started

    def __getattr__(self, name: str) -> Any:
        # The pooled path's methods (``memory.latechunk.RunEmbedder``), where the
        # wrapped embedder has them, so the bench measures what the product runs.
        if name not in RUN_METHODS:
            raise AttributeError(name)
        method = getattr(self.inner, name)
        if name != "embed_runs":
            return method

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        return timed


class CachedEmbedder(IEmbedder):
    """Delegates to another embedder through an on-disk cache keyed by (model, text).

    For iterating on ranking without re-embedding LoCoMo: the cache is a SQLite file
    kept outside the repository (``--embed-cache``). Timings of a cached run measure
    the cache, not the model; the report says so (``config.embed_cache``).
    ``cache_queries = False`` (set on the class, as ``retrieval_suite.py
    --live-query-embedding`` does) embeds queries with the model every time, so that
    latencies including the query embedding measure the model.
    """

    cache_queries = True

    def __init__(self, inner: IEmbedder, model: str, path: Path) -> None:
        import sqlite3

        self.inner = inner
        self.model = model
        self.max_input_tokens = inner.max_input_tokens
        self._db = sqlite3.connect(str(path), timeout=300)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vec (model TEXT, query INTEGER, text TEXT, v BLOB, "
            "PRIMARY KEY (model, query, text))"
        )

    @property
    def embedding_dimension(self) -> int:
        return self.inner.embedding_dimension

    def __getattr__(self, name: str) -> Any:
        # The pooled path (``memory.latechunk``) is not cached: its vectors depend
        # on the run a text is read in, not on the text alone.
        if name not in RUN_METHODS:
            raise AttributeError(name)
        return getattr(self.inner, name)

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Cached vectors of ``texts``; misses are embedded in one call and stored."""
        if is_query and not self.cache_queries:
            return self.inner.embed(texts, is_query=True)
        out = np.zeros((len(texts), self.embedding_dimension), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            row = self._db.execute(
                "SELECT v FROM vec WHERE model = ? AND query = ? AND text = ?",
                (self.model, int(is_query), text),
            ).fetchone()
            if row is None:
                missing.setdefault(text, []).append(i)
            else:
                out[i] = np.frombuffer(row[0], dtype=np.float32)
        if missing:
            todo = list(missing)
            vectors = np.asarray(self.inner.embed(todo, is_query=is_query), dtype=np.float32)
            for text, vector in zip(todo, vectors, strict=True):
                out[missing[text]] = vector
                self._db.execute(
                    "INSERT OR REPLACE INTO vec VALUES (?, ?, ?, ?)",
                    (self.model, int(is_query), text, vector.tobytes()),
                )
            self._db.commit()
        return out


def _jsonl(path: Path, what: str) -> list[tuple[int, str]]:
    """The non-blank lines of a JSONL file with their line numbers.

    Raises:
        ValueError: if the file cannot be read.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read {what} ({exc.strerror or exc})") from exc
    return [(lineno, line) for lineno, line in enumerate(lines, start=1) if line.strip()]


def load_qrels(path: Path) -> list[Question]:
    """Read the qrels JSONL file.

    Raises:
        ValueError: if the file is missing or a line lacks the expected fields.
    """
    questions: list[Question] = []
    for lineno, line in _jsonl(path, "qrels"):
        try:
            row = json.loads(line)
            questions.append(
                Question(
                    sample_id=str(row["sample_id"]),
                    qa_index=int(row["qa_index"]),
                    category=int(row["category"]),
                    question=str(row["question"]),
                    evidence=frozenset(str(e) for e in row["evidence"]),
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: line {lineno}: not a qrels row ({exc!r})") from exc
    return questions


@dataclass(frozen=True)
class Memory:
    """One line of a recorded extraction (``--memories``)."""

    sample_id: str
    content: str
    record_type: str
    sources: frozenset[str]
    timestamp: str | None


def message_id(sample_id: str, dia_id: str) -> str:
    """The id the bench gives a LoCoMo turn: ``"<sample_id>:<dia_id>"``; a recorded
    extraction's ``source_message_ids`` name turns by it."""
    return f"{sample_id}:{dia_id}"


def load_memories(path: Path) -> list[Memory]:
    """Read a JSONL of memories: ``{"sample_id", "content", "source_message_ids"
    [, "record_type" (default "memory"), "timestamp"]}`` per line. A source id is a
    message id ``"<sample_id>:<dia_id>"`` (see ``message_id``) or a bare dialog id.

    Raises:
        ValueError: if the file is missing or a line is not such an object.
    """
    memories: list[Memory] = []
    for lineno, line in _jsonl(path, "memories"):
        try:
            row = json.loads(line)
            sample_id, content = str(row["sample_id"]), row["content"]
            record_type = row.get("record_type", "memory")
            sources = row["source_message_ids"]
            timestamp = row.get("timestamp")
            if not isinstance(content, str) or not content.strip():
                raise ValueError("content must be a non-blank string")
            if record_type not in MEMORY_TYPES:
                raise ValueError(f"record_type must be one of {sorted(MEMORY_TYPES)}")
            if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
                raise ValueError("source_message_ids must be a list of strings")
            if timestamp is not None and not isinstance(timestamp, str):
                raise ValueError("timestamp must be a string")
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: line {lineno}: not a memory row ({exc})") from exc
        prefix = f"{sample_id}:"
        dias = frozenset(s.removeprefix(prefix) for s in sources)
        memories.append(Memory(sample_id, content, record_type, dias, timestamp))
    return memories


@dataclass
class _Pass:
    """The tallies and latencies of one way of searching (first stage, or reranked)."""

    tallies: dict[int, _Tally] = field(default_factory=lambda: {c: _Tally() for c in CATEGORIES})
    overall: _Tally = field(default_factory=_Tally)
    excl_ms: list[float] = field(default_factory=list)
    incl_ms: list[float] = field(default_factory=list)
    embed_ms: list[float] = field(default_factory=list)
    shallower: dict[int, _Tally] = field(
        default_factory=lambda: {c: _Tally() for c in SHALLOWER_KS}
    )

    def add(self, question: Question, ranked: Sequence[frozenset[str]], k: int) -> None:
        self.tallies[question.category].add(question.evidence, ranked, k)
        if question.category not in EXCLUDED_FROM_OVERALL:
            self.overall.add(question.evidence, ranked, k)
            for cut, tally in self.shallower.items():
                if cut < k:
                    tally.add(question.evidence, ranked, cut)

    def report(self, k: int) -> dict[str, Any]:
        return {
            "overall": self.overall.as_dict(k),
            "overall_at": {
                str(cut): tally.as_dict(cut) for cut, tally in self.shallower.items() if cut < k
            },
            "per_category": {
                name: {"category": number, **self.tallies[number].as_dict(k)}
                for number, name in CATEGORIES.items()
            },
        }


def load_samples(data: Path, samples: Sequence[str] | None) -> dict[str, list[Conversation]]:
    """The LoCoMo conversations by sample id (only ``samples`` when given).

    Raises:
        ValueError: for unreadable data or an unknown sample id.
    """
    return select_samples(_all_samples(data), samples)


def _all_samples(data: Path) -> dict[str, list[Conversation]]:
    """Every LoCoMo conversation of ``data`` by sample id."""
    by_sample: dict[str, list[Conversation]] = {}
    for conversation in load_conversations(data):
        by_sample.setdefault(conversation.user_id or "", []).append(conversation)
    return by_sample


def select_samples(
    by_sample: dict[str, list[Conversation]], samples: Sequence[str] | None
) -> dict[str, list[Conversation]]:
    """``by_sample`` cut to ``samples`` (all when None or empty).

    Raises:
        ValueError: for a sample id not in ``by_sample``.
    """
    if not samples:
        return by_sample
    unknown = sorted(set(samples) - set(by_sample))
    if unknown:
        raise ValueError(f"unknown sample ids {unknown}; the data has {sorted(by_sample)}")
    return {s: by_sample[s] for s in samples}


def memories_by_sample(
    path: Path, known: Sequence[str], run: Sequence[str]
) -> dict[str, list[Memory]]:
    """The memories of ``path`` (``load_memories``) of the samples ``run``, by sample.

    A memory of a sample left out of the run (``--samples``) is passed over; one
    naming a sample the data does not have is an error, not a memory silently
    dropped (a converter's ``conv26`` for ``conv-26`` would leave the run measuring
    the turns alone).

    Args:
        path: The memories JSONL.
        known: Every sample id of the data.
        run: The sample ids run.

    Raises:
        ValueError: for an unreadable or malformed file, or memories naming sample
            ids not in the data.
    """
    memories = load_memories(path)
    unknown = sorted({m.sample_id for m in memories} - set(known))
    if unknown:
        lines = sum(m.sample_id in unknown for m in memories)
        raise ValueError(
            f"{path}: {lines} memories name sample ids not in the data: {unknown[:10]}; "
            f"the data has {sorted(known)}"
        )
    by_sample: dict[str, list[Memory]] = {}
    for memory in memories:
        if memory.sample_id in run:
            by_sample.setdefault(memory.sample_id, []).append(memory)
    return by_sample


def run(
    data: Path,
    qrels: Path,
    *,
    strategy: SearchStrategy,
    k: int,
    embedder: str,
    samples: Sequence[str] | None = None,
    db: str | None = None,
    embed_cache: Path | None = None,
    per_question: Path | None = None,
    memories: Path | None = None,
    reranker: IReranker | None = None,
    on: str | None = None,
) -> dict[str, Any]:
    """Run the benchmark and return the report (the ``--json`` object).

    ``db``: None = a fresh in-memory SQLite store per sample; a ``postgresql://`` URL
    (or ``pgserver``: a temporary local server) = one PostgreSQL store per sample,
    ``memory_store_id`` derived from the sample id, recreated on every run.

    Turns (default): each turn carries its speaker as the message's participant name
    and its session's date as timestamp, so the thread indexes it by
    ``"[<day>] <speaker>: <text>"`` while the stored content stays the text.
    ``memories``: a recorded extraction (``load_memories``) is searched instead of the
    turns; a memory stands for the turns it was extracted from.
    ``on``: ``"turns"``, ``"memories"`` or ``"both"`` (default: ``"memories"`` when
    ``memories`` is given, else ``"turns"``). ``"both"`` ingests the turns and the
    memories of ``memories`` into the same store and scope, each memory with its
    source turns as provenance (written as the extraction pipeline writes it, into
    its session's thread), and searches through the product path,
    ``OracleAgentMemory.search`` with messages and memory types, which fuses the two
    kinds with a memory counting for its source turns
    (``oam_core.memory.provenancefusion``); a result stands for its own turn (a
    message) or its source turns (a memory).
    ``reranker``: every question is searched twice, without and with it; the report
    gains ``"reranked"`` (the same metrics) and the reranked latencies.

    ``config["memories"]``: how many memories of the file were written (those of
    the samples run), None without ``memories``.

    Raises:
        ValueError: for unreadable or malformed data, qrels or memories files, a
            memory naming a sample not in the data (``memories_by_sample``), or
            ``on`` ``"memories"``/``"both"`` without ``memories``.
    """
    on = on or ("turns" if memories is None else "memories")
    if on not in ON_CHOICES or (on == "turns") != (memories is None):
        raise ValueError(f"on={on!r} with memories={memories!r}: memories go with on memories/both")
    known = _all_samples(data)
    by_sample = select_samples(known, samples)
    questions, skipped = questions_by_sample(qrels, by_sample)
    sample_memories: dict[str, list[Memory]] = {}
    if memories is not None:
        sample_memories = memories_by_sample(memories, list(known), list(by_sample))
    timings = Timings()
    model = loaded_model(embedder, embed_cache, reranker, timings)
    passes = {"first_stage": _Pass()}
    if reranker is not None:
        passes["reranked"] = _Pass()
    dump = per_question.open("w", encoding="utf-8") if per_question is not None else None
    record_types = {
        "turns": {"message"},
        "memories": set(MEMORY_TYPES),
        "both": {"message", *MEMORY_TYPES},
    }[on]

    try:
        for sample_id, sample_conversations in by_sample.items():
            store = open_store(db, sample_id, model, strategy)
            try:
                client = ingest_sample(
                    on, store, model, sample_conversations, sample_memories, timings
                )
                for question in questions.get(sample_id, []):
                    ranked_by: dict[str, list[list[str]]] = {}
                    for name, tally in passes.items():
                        store.reranker = reranker if name == "reranked" else None
                        ranked = _search(
                            store,
                            model,
                            question,
                            strategy,
                            max(k, SESSION_K),
                            tally,
                            record_types,
                            text_query=name == "reranked",
                            client=client if on == "both" else None,
                        )
                        tally.add(question, ranked, k)
                        ranked_by[name] = [sorted(ids) for ids in ranked]
                    if dump is not None:
                        dump.write(json.dumps(_dump_row(question, ranked_by)) + "\n")
            finally:
                store.close()
    finally:
        if dump is not None:
            dump.close()

    report = _report(passes, timings, k)
    report["config"] = {
        "on": on,
        "strategy": strategy.value.lower(),
        "k": k,
        "embedder": embedder,
        "vector_dim": model.embedding_dimension,
        "reranker": repr(reranker) if reranker is not None else None,
        "samples": list(by_sample),
        "backend": "sqlite" if db is None else "postgres",
        "embed_cache": embed_cache is not None,
        "threads": timings.threads,
        "records": timings.records,
        "memories": sum(map(len, sample_memories.values())) if memories is not None else None,
        "questions_without_evidence": skipped,
        "excluded_from_overall": sorted(CATEGORIES[c] for c in EXCLUDED_FROM_OVERALL),
    }
    return report


def questions_by_sample(
    qrels: Path, by_sample: dict[str, list[Conversation]]
) -> tuple[dict[str, list[Question]], int]:
    """The qrels questions of the samples run, by sample, and how many were skipped
    for having no evidence ids (also used by ``hybrid_latency.py``).

    Raises:
        ValueError: for an unreadable or malformed qrels file.
    """
    questions: dict[str, list[Question]] = {}
    skipped = 0
    for question in load_qrels(qrels):
        if question.sample_id not in by_sample:
            continue
        if not question.evidence:
            skipped += 1
            continue
        questions.setdefault(question.sample_id, []).append(question)
    return questions, skipped


def bench_embedder(embedder: str) -> IEmbedder:
    """The embedder ``--embedder`` names (``resolve_embedder``), which the bench
    needs: it embeds every turn, whatever ``--strategy`` ranks with.

    Raises:
        InvalidArgumentError: (a ValueError) for ``none``, naming the option; the
            resolver's own errors for an unknown name.
    """
    model = resolve_embedder(embedder)
    if model is None:
        raise InvalidArgumentError(
            f"--embedder {embedder!r}: the bench embeds every turn and needs an embedder "
            "(local, hashing, hashing/<dim>, a LiteLLM model id); --strategy keyword "
            "ranks by keywords with any of them"
        )
    return model


def loaded_model(
    embedder: str, embed_cache: Path | None, reranker: IReranker | None, timings: Timings
) -> TimedEmbedder:
    """The timed (and, with ``embed_cache``, cached) embedder, loaded, and the
    reranker loaded, outside the ingest and search timings (``model_load_s``; also
    used by ``hybrid_latency.py``).

    Raises:
        InvalidArgumentError: for ``--embedder none`` (``bench_embedder``).
    """
    inner = bench_embedder(embedder)
    if embed_cache is not None:
        inner = CachedEmbedder(inner, embedder, embed_cache)
    model = TimedEmbedder(inner)
    started = time.perf_counter()
    model.embed(["warm up"])  # loads a lazy model once, outside the ingest timing
    load = getattr(reranker, "load", None)
    if callable(load):
        load()  # likewise for the reranker, outside the search timings
    timings.model_load_s = time.perf_counter() - started
    return model


def _dump_row(question: Question, ranked_by: dict[str, list[list[str]]]) -> dict[str, Any]:
    """One ``--per-question`` line: the question and each pass's ranked dialog ids."""
    row = {
        "sample_id": question.sample_id,
        "qa_index": question.qa_index,
        "category": question.category,
        "evidence": sorted(question.evidence),
        "ranked": ranked_by["first_stage"],
    }
    if "reranked" in ranked_by:
        row["reranked"] = ranked_by["reranked"]
    return row


def ingest_sample(
    on: str,
    store: OracleMemoryStore,
    model: TimedEmbedder,
    conversations: Sequence[Conversation],
    memories: dict[str, list[Memory]],
    timings: Timings,
) -> OracleAgentMemory:
    """Write one sample's turns and/or memories (``on``, see ``run``), timed; return
    the client over ``store`` (also used by ``hybrid_latency.py``)."""
    sample_id = conversations[0].user_id or ""
    embed_before, started = model.seconds, time.perf_counter()
    client = OracleAgentMemory(store=store, extract_memories=False)
    if on != "memories":
        _ingest_turns(store, sample_id, conversations, timings, client)
    if on == "memories":
        _ingest_memories(store, sample_id, memories.get(sample_id, []), timings)
    elif on == "both":
        _ingest_provenance(store, sample_id, memories.get(sample_id, []), timings)
    timings.ingest_s += time.perf_counter() - started
    timings.ingest_embed_s += model.seconds - embed_before
    return client


def _report(passes: dict[str, _Pass], timings: Timings, k: int) -> dict[str, Any]:
    """The metrics and timings of a run (``run`` adds its ``config``)."""
    first = passes["first_stage"]
    report: dict[str, Any] = first.report(k)
    report["timing"] = {
        "model_load_s": round(timings.model_load_s, 3),
        "ingest_s": round(timings.ingest_s, 3),
        "ingest_embed_s": round(timings.ingest_embed_s, 3),
        "ingest_records_per_s": round(timings.records / timings.ingest_s, 1)
        if timings.ingest_s
        else 0.0,
        "queries": len(first.incl_ms),
        "search_ms_incl_embed": _percentiles(first.incl_ms),
        "search_ms_excl_embed": _percentiles(first.excl_ms),
        "query_embed_ms": _percentiles(first.embed_ms),
    }
    if "reranked" in passes:
        reranked = passes["reranked"]
        report["reranked"] = reranked.report(k)
        report["timing"]["reranked_search_ms_excl_embed"] = _percentiles(reranked.excl_ms)
        report["timing"]["reranked_search_ms_incl_embed"] = _percentiles(reranked.incl_ms)
    return report


def _ingest_turns(
    store: OracleMemoryStore,
    sample_id: str,
    conversations: Sequence[Conversation],
    timings: Timings,
    memory: OracleAgentMemory | None = None,
) -> None:
    """One thread per session; every turn gets the id ``message_id(sample, dia_id)``."""
    client = memory or OracleAgentMemory(store=store, extract_memories=False)
    for conversation in conversations:
        thread = client.create_thread(thread_id=conversation.thread_id, user_id=sample_id)
        messages = [
            {**m, "id": message_id(sample_id, str(m["metadata"]["dia_id"]))}
            for m in conversation.messages
        ]
        thread.add_messages(messages)
        timings.records += len(messages)
        timings.threads += 1


def _memory_ids(sample_id: str, memories: Sequence[Memory]) -> dict[int, str]:
    """The id of each of the sample's memories (keyed by ``id()``):
    ``"<sample_id>:mem<line within the sample>"``. Fixed ids keep records at equal
    distances (ordered by type, then id) in the same order on every run."""
    return {id(m): f"{sample_id}:mem{n}" for n, m in enumerate(memories)}


def _ingest_memories(
    store: OracleMemoryStore,
    sample_id: str,
    memories: Sequence[Memory],
    timings: Timings,
    record_id: dict[int, str] | None = None,
) -> None:
    """The sample's memories, user-scoped, each with its source dialog ids in metadata
    and its id from ``record_id`` (default ``_memory_ids`` of ``memories``)."""
    record_id = record_id or _memory_ids(sample_id, memories)
    by_type: dict[str, list[Memory]] = {}
    for memory in memories:
        by_type.setdefault(memory.record_type, []).append(memory)
    for record_type, group in by_type.items():
        store.add(
            [m.content for m in group],
            record_type,
            record_ids=[record_id[id(m)] for m in group],
            user_ids=sample_id,
            timestamps=[m.timestamp for m in group],
            metadata=[{"source_dia_ids": sorted(m.sources)} for m in group],
        )
        timings.records += len(group)


def _ingest_provenance(
    store: OracleMemoryStore, sample_id: str, memories: Sequence[Memory], timings: Timings
) -> None:
    """The sample's memories as the extraction pipeline writes them: user-scoped, in
    the thread of their first source turn's session, with the source turns' message
    ids as provenance (``metadata["$agent_memory"]["source_message_ids"]``, which
    only the library writes: through the thread store's pipeline commit), each with
    its ``_memory_ids`` id. A memory without sources is written with ``store.add``,
    user-scoped, without provenance."""
    threads = thread_store(store)
    record_id = _memory_ids(sample_id, memories)
    by_thread: dict[str, list[Memory]] = {}
    loose: list[Memory] = []
    for memory in memories:
        if memory.sources:
            session = session_of(min(memory.sources, key=_dia_order)).removeprefix("D")
            by_thread.setdefault(f"{sample_id}-s{session}", []).append(memory)
        else:
            loose.append(memory)
    for thread_id, group in by_thread.items():
        row = threads.get_thread_row(thread_id)
        if row is None:
            raise ValueError(f"{sample_id}: a memory names turns of {thread_id}, not in the data")
        batches = [
            PendingRecordBatch(
                texts=[m.content],
                record_type=m.record_type,
                record_ids=[record_id[id(m)]],
                thread_ids=thread_id,
                user_ids=sample_id,
                timestamps=[m.timestamp],
                metadata=[
                    {
                        "$agent_memory": {
                            "source_message_ids": [
                                message_id(sample_id, d) for d in sorted(m.sources, key=_dia_order)
                            ]
                        }
                    }
                ],
            )
            for m in group
        ]
        state = dict(row.state or {})
        threads.commit_thread_pass(thread_id, expected_state=state, state=state, batches=batches)
        timings.records += len(group)
    _ingest_memories(store, sample_id, loose, timings, record_id)


def _dia_order(dia_id: str) -> tuple[int, int, str]:
    """Sort key of a LoCoMo dialog id: ``"D3:12"`` -> ``(3, 12, "")``."""
    found = re.fullmatch(r"D(\d+):(\d+)", dia_id)
    return (int(found[1]), int(found[2]), "") if found else (1 << 30, 0, dia_id)


def record_memories(
    data: Path,
    out: Path,
    *,
    llm: ILlm | str,
    embedder: str,
    samples: Sequence[str] | None = None,
) -> int:
    """Extract memories from the LoCoMo turns with a real LLM and write them as the
    JSONL ``--memories`` reads (the full memory-level run; not run in CI).

    Each sample is ingested like the turn benchmark (message ids from
    ``message_id``) through ``OracleAgentMemory(llm=..., extract_memories=True)``;
    every extracted memory is written with the ``source_message_ids`` its provenance
    holds (``metadata["$agent_memory"]``).

    Returns:
        The number of memories written.

    Raises:
        ValueError: for unreadable data or an unknown sample id.
    """
    by_sample = load_samples(data, samples)
    model = bench_embedder(embedder)
    written = 0
    with out.open("w", encoding="utf-8") as fh:
        for sample_id, sample_conversations in by_sample.items():
            store = open_store(None, sample_id, model, SearchStrategy.HYBRID)
            try:
                client = OracleAgentMemory(store=store, llm=resolve_llm(llm), extract_memories=True)
                _ingest_turns(store, sample_id, sample_conversations, Timings(), client)
                client.wait_for_memory_extraction()
                for record_type in sorted(MEMORY_TYPES):
                    for record in store.list(record_type, user_id=sample_id):
                        provenance = (record.metadata or {}).get("$agent_memory") or {}
                        row = {
                            "sample_id": sample_id,
                            "content": record.content,
                            "record_type": record_type,
                            "source_message_ids": list(provenance.get("source_message_ids", [])),
                            "timestamp": record.timestamp,
                        }
                        fh.write(json.dumps(row) + "\n")
                        written += 1
                client.close()
            finally:
                store.close()
    return written


def open_store(
    db: str | None, sample_id: str, model: IEmbedder, strategy: SearchStrategy
) -> OracleMemoryStore:
    """The store of one sample: in-memory SQLite, or a recreated PostgreSQL store."""
    if db is None:
        return SQLiteMemoryStore(
            ":memory:",
            embedder=model,
            vector_dim=model.embedding_dimension,
            search_strategy=strategy,
        )
    from oam_core.store.postgres import PostgresMemoryStore

    store_id = "lm_" + re.sub(r"[^A-Za-z0-9]", "_", sample_id)[:13]
    return PostgresMemoryStore(
        pg_url(db),
        embedder=model,
        vector_dim=model.embedding_dimension,
        search_strategy=strategy,
        memory_store_id=store_id,
        schema_policy="RECREATE",
    )


def pg_url(db: str) -> str:
    """``db`` as a PostgreSQL URL; ``pgserver`` starts a temporary local server once."""
    if db != "pgserver":
        return db
    if "pgserver" not in _PG:
        import tempfile
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver

            server = pgserver.get_server(
                tempfile.mkdtemp(prefix="oam-bench-pg-"), cleanup_mode="delete"
            )
        _PG["pgserver"] = server.get_uri()
        _PG["server"] = server
    return str(_PG["pgserver"])


_PG: dict[str, Any] = {}


def _search(
    store: OracleMemoryStore,
    model: TimedEmbedder,
    question: Question,
    strategy: SearchStrategy,
    k: int,
    tally: _Pass,
    record_types: set[str],
    *,
    text_query: bool = False,
    client: OracleAgentMemory | None = None,
) -> list[frozenset[str]]:
    """Search one question; per result, the dialog ids it stands for. With
    ``client``, through ``client.search`` (the product's fused search of messages
    and memories, ``--on both``)."""
    if client is not None:
        embed_before, started = model.seconds, time.perf_counter()
        results = client.search(
            question.question, k=k, user_id=question.sample_id, record_types=record_types
        )
        total_s = time.perf_counter() - started
        embed_s = model.seconds - embed_before
        _timed(tally, embed_s, total_s)
        return [_dia_ids(record, question.sample_id) for record, _ in results]
    scope: dict[str, Any] = {
        "user_id": question.sample_id,
        "exact_user_match": True,
        "record_types": record_types,
    }
    if strategy is SearchStrategy.VECTOR and not text_query:
        started = time.perf_counter()
        vector = model.inner.embed([question.question], is_query=True)[0]
        embed_s = time.perf_counter() - started
        started = time.perf_counter()
        results = store.search(k=k, query_vector=vector, **scope)
        search_s = time.perf_counter() - started
        total_s = embed_s + search_s
    else:
        embed_before, started = model.seconds, time.perf_counter()
        results = store.search(question.question, k, **scope)
        total_s = time.perf_counter() - started
        embed_s = model.seconds - embed_before
    _timed(tally, embed_s, total_s)
    ranked: list[frozenset[str]] = []
    for record, _ in results:
        meta = record.metadata or {}
        if "dia_id" in meta:
            ranked.append(frozenset({str(meta["dia_id"])}))
        elif "source_dia_ids" in meta:
            ranked.append(frozenset(str(d) for d in meta["source_dia_ids"]))
    return ranked


def _timed(tally: _Pass, embed_s: float, total_s: float) -> None:
    """Record one search's latencies (ms) with and without its query embedding."""
    tally.embed_ms.append(embed_s * 1000)
    tally.incl_ms.append(total_s * 1000)
    tally.excl_ms.append((total_s - embed_s) * 1000)


def _dia_ids(record: Record, sample_id: str) -> frozenset[str]:
    """The dialog ids a result stands for: a turn its own, a memory its source turns
    (its provenance, ``$agent_memory.source_message_ids``; a memory without one,
    none)."""
    meta = record.metadata or {}
    if "dia_id" in meta:
        return frozenset({str(meta["dia_id"])})
    prefix = f"{sample_id}:"
    return frozenset(s.removeprefix(prefix) for s in source_message_ids(record))


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "mean": 0.0}
    p50, p95 = np.percentile(np.asarray(values, dtype=np.float64), [50, 95])
    return {
        "p50": round(float(p50), 3),
        "p95": round(float(p95), 3),
        "mean": round(statistics.fmean(values), 3),
    }


def _metric_rows(block: dict[str, Any], config: dict[str, Any]) -> list[str]:
    keys = [key for key in block["overall"] if key != "n"]
    lines = [f"{'category':<22}{'n':>6}" + "".join(f"{key:>15}" for key in keys)]
    rows = [
        (
            f"{name} ({row['category']})"
            + (" *" if name in config["excluded_from_overall"] else ""),
            row,
        )
        for name, row in block["per_category"].items()
    ]
    rows.append(("overall (1-4)", block["overall"]))
    for label, row in rows:
        lines.append(f"{label:<22}{row['n']:>6}" + "".join(f"{row[key]:>15.3f}" for key in keys))
    return lines


def format_table(report: dict[str, Any]) -> str:
    """Render a report as a plain-text table."""
    config, timing = report["config"], report["timing"]
    unit = {"turns": "messages", "memories": "memories"}.get(config["on"], "records")
    level = {"turns": "turn", "memories": "memory"}.get(config["on"], "turn+memory")
    lines = [
        f"LoCoMo {level}-level recall: "
        f"strategy={config['strategy']} k={config['k']} "
        f"embedder={config['embedder']} ({config['vector_dim']}d), "
        f"{len(config['samples'])} conversations, {config['records']} {unit}",
        "",
        *_metric_rows(report, config),
    ]
    if "reranked" in report:
        lines += [
            "",
            f"with reranker {config['reranker']}:",
            *_metric_rows(report["reranked"], config),
        ]
    lines += [
        "  * not in overall",
        "",
        f"model load {timing['model_load_s']:.2f} s; ingest {timing['ingest_s']:.1f} s "
        f"({timing['ingest_records_per_s']:.0f} {unit}/s, embedding "
        f"{timing['ingest_embed_s']:.1f} s)",
        f"{timing['queries']} queries, ms        p50       p95      mean",
    ]
    for key, label in (
        ("search_ms_incl_embed", "search incl. embed"),
        ("search_ms_excl_embed", "search excl. embed"),
        ("query_embed_ms", "query embedding"),
        ("reranked_search_ms_incl_embed", "reranked incl. embed"),
        ("reranked_search_ms_excl_embed", "reranked excl. embed"),
    ):
        if key in timing:
            t = timing[key]
            lines.append(f"  {label:<20}{t['p50']:>9.2f}{t['p95']:>10.2f}{t['mean']:>10.2f}")
    if config["embed_cache"]:
        lines.append("(embeddings from --embed-cache: timings measure the cache)")
    if config["questions_without_evidence"]:
        lines.append(f"({config['questions_without_evidence']} questions without evidence skipped)")
    return "\n".join(lines)


def _reranker_from(args: argparse.Namespace) -> IReranker | None:
    if args.reranker_model is None:
        return None
    from oam_core.rerankers import CrossEncoderReranker

    return CrossEncoderReranker(
        args.reranker_model,
        args.reranker_tokenizer or args.reranker_model.with_name("tokenizer.json"),
        sha256=args.reranker_sha256 or "",
        candidates=args.reranker_candidates,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run, print the table (or one JSON object); return an exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DATA_DIR / "locomo_dev.json")
    parser.add_argument("--qrels", type=Path, default=DATA_DIR / "locomo_dev_qrels.jsonl")
    parser.add_argument("--strategy", choices=["vector", "keyword", "hybrid"], default="hybrid")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--embedder", default="local", help="local, hashing, hashing/<dim>")
    parser.add_argument("--samples", help="comma-separated sample ids (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--db",
        help="postgresql:// URL, or 'pgserver' for a temporary local PostgreSQL "
        "(default: in-memory SQLite)",
    )
    parser.add_argument(
        "--on",
        choices=list(ON_CHOICES),
        default="turns",
        help="search the raw turns, the memories of --memories, or both (fused, a "
        "memory counting for its source turns)",
    )
    parser.add_argument(
        "--memories", type=Path, help="JSONL of memories (with --on memories or both)"
    )
    parser.add_argument(
        "--record-memories",
        type=Path,
        metavar="OUT",
        help="extract memories with --llm and write them to OUT (JSONL), then exit",
    )
    parser.add_argument("--llm", help="LiteLLM model id for --record-memories")
    parser.add_argument("--reranker-model", type=Path, help="cross-encoder .onnx file")
    parser.add_argument(
        "--reranker-tokenizer", type=Path, help="its tokenizer.json (default: beside the model)"
    )
    parser.add_argument("--reranker-sha256", help="the model file's sha256 (required)")
    parser.add_argument("--reranker-candidates", type=int, default=30)
    parser.add_argument(
        "--embed-cache",
        type=Path,
        help="SQLite file caching vectors per (embedder, text), kept outside the "
        "repository; timings then measure the cache",
    )
    parser.add_argument(
        "--per-question", type=Path, help="write each question's ranked dialog ids (JSONL)"
    )
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error("--k must be >= 1")
    if (args.on != "turns") != (args.memories is not None):
        parser.error("--on memories/both and --memories go together")
    if args.record_memories is not None and not args.llm:
        parser.error("--record-memories needs --llm")
    samples = args.samples.split(",") if args.samples else None
    try:
        if args.record_memories is not None:
            count = record_memories(
                args.data,
                args.record_memories,
                llm=args.llm,
                embedder=args.embedder,
                samples=samples,
            )
            print(f"wrote {count} memories to {args.record_memories}")
            return 0
        report = run(
            args.data,
            args.qrels,
            strategy=SearchStrategy.parse(args.strategy),
            k=args.k,
            embedder=args.embedder,
            samples=samples,
            db=args.db,
            embed_cache=args.embed_cache,
            per_question=args.per_question,
            memories=args.memories,
            reranker=_reranker_from(args),
            on=args.on,
        )
    except (IngestError, ValueError, ImportError, RuntimeError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report) if args.json else format_table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
