"""Preference retrieval on PrefEval through the public ``oam`` store API.

PrefEval (explicit preferences): a user states a preference ("I prefer not to watch
movies longer than two hours"); much later they ask for advice the preference should
shape ("What highly-rated movies can I watch this weekend?"). Retrieval succeeds when
the preference is among the top k results of the question.

Two tasks, each one store holding every preference of one user:

``memories``
    Each preference is a ``preference`` record of the user (the shape the extraction
    pass writes). Questions search ``record_types={"preference"}``.
``conversation``
    Each preference is one user turn inside a thread of other turns (LoCoMo dialogue
    turns as filler, ``--filler`` of them per thread, the preference at a position that
    varies with its index, an assistant acknowledgement after it). Questions search
    the user's messages: the harder, raw-history form.

Per task, recall@1/5/10 and MRR@10 over all questions and over each half of the
topics (topic files sorted by name; half ``a`` the even positions, ``b`` the odd), and
per-query latency percentiles with and without the query embedding.

Usage (from the repository root)::

    python bench/prefeval_recall.py --task memories --strategy hybrid
    python bench/prefeval_recall.py --task conversation --strategy vector --json

PrefEval and LoCoMo are CC BY-NC 4.0: read them from ``../shared/data``, never copy
them into this repository.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import oam_core  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from locomo_recall import CachedEmbedder, TimedEmbedder, _percentiles

from oam_core import OracleMemoryStore, SearchStrategy, SQLiteMemoryStore
from oam_core.embedders import resolve_embedder

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
PREFEVAL_DIR = SHARED / "prefeval" / "explicit_preference"
LOCOMO_FILE = SHARED / "locomo" / "locomo_dev.json"
USER = "prefeval-user"
KS = (1, 5, 10)
ACK = "Thanks for telling me, I'll keep that in mind."


@dataclass(frozen=True)
class Preference:
    """One PrefEval item: the stated preference and the later question."""

    topic: str
    index: int
    preference: str
    question: str

    @property
    def record_id(self) -> str:
        return f"{self.topic}:{self.index}"

    def half(self, topics: Sequence[str]) -> str:
        """``"a"`` for topics at even positions of the sorted topic list, else ``"b"``."""
        return "ab"[topics.index(self.topic) % 2]


def load_preferences(directory: Path, topics: Sequence[str] | None = None) -> list[Preference]:
    """Every preference of the topic files in ``directory`` (sorted by topic name).

    Raises:
        ValueError: if the directory has no topic file, a requested topic is missing,
            or an item lacks ``preference``/``question`` strings.
    """
    files = sorted(directory.glob("*.json"))
    if topics:
        wanted = set(topics)
        missing = wanted - {f.stem for f in files}
        if missing:
            raise ValueError(f"--topics: no such topic {sorted(missing)} in {directory}")
        files = [f for f in files if f.stem in wanted]
    if not files:
        raise ValueError(f"{directory}: no PrefEval topic files (*.json)")
    out: list[Preference] = []
    for path in files:
        for index, item in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            pref, question = item.get("preference"), item.get("question")
            if not isinstance(pref, str) or not isinstance(question, str):
                raise ValueError(f"{path}: item {index} lacks preference/question strings")
            out.append(Preference(path.stem, index, pref, question))
    return out


def load_filler(path: Path) -> list[str]:
    """LoCoMo dialogue turns in conversation order, as filler text.

    Raises:
        ValueError: if the file cannot be read as LoCoMo.
    """
    try:
        samples = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read LoCoMo filler ({exc})") from exc
    turns: list[str] = []
    for sample in samples:
        conv = sample["conversation"]
        n = 1
        while f"session_{n}" in conv:
            turns.extend(str(t["text"]) for t in conv[f"session_{n}"] if t.get("text"))
            n += 1
    return turns


def open_store(model: TimedEmbedder, strategy: SearchStrategy) -> OracleMemoryStore:
    """An in-memory SQLite store searching with ``strategy``."""
    return SQLiteMemoryStore(
        ":memory:",
        embedder=model,
        vector_dim=model.embedding_dimension,
        search_strategy=strategy,
    )


def fill_memories(store: OracleMemoryStore, prefs: Sequence[Preference]) -> None:
    """Store each preference as a ``preference`` record of ``USER``."""
    store.add(
        [p.preference for p in prefs],
        "preference",
        record_ids=[p.record_id for p in prefs],
        user_ids=USER,
    )


def fill_conversation(
    store: OracleMemoryStore, prefs: Sequence[Preference], filler: Sequence[str], per_thread: int
) -> None:
    """One thread per preference: ``per_thread`` filler turns with the preference and
    an acknowledgement inserted at a position that varies with the preference's index."""
    cursor = 0
    for n, pref in enumerate(prefs):
        texts = [filler[(cursor + i) % len(filler)] for i in range(per_thread)]
        cursor += per_thread
        at = (n * 7) % (per_thread + 1)
        # Keep user/assistant alternation: the preference lands on a user turn.
        at -= at % 2
        ids = [f"{pref.record_id}:f{i}" for i in range(per_thread)]
        texts[at:at] = [pref.preference, ACK]
        ids[at:at] = [pref.record_id, f"{pref.record_id}:ack"]
        thread_id = f"t:{pref.record_id}"
        store.add(
            texts,
            "message",
            record_ids=ids,
            thread_ids=thread_id,
            user_ids=USER,
            roles=["user" if i % 2 == 0 else "assistant" for i in range(len(texts))],
        )


@dataclass
class Tally:
    """Hits at each k and reciprocal ranks of one group of questions."""

    n: int = 0
    hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(KS, 0))
    rr: float = 0.0

    def add(self, rank: int | None) -> None:
        """Score one question whose target ranked ``rank`` (1-based; None: not found)."""
        self.n += 1
        for k in KS:
            self.hits[k] += rank is not None and rank <= k
        self.rr += 1.0 / rank if rank is not None and rank <= max(KS) else 0.0

    def as_dict(self) -> dict[str, Any]:
        n = self.n or 1
        out: dict[str, Any] = {f"recall@{k}": self.hits[k] / n for k in KS}
        out[f"mrr@{max(KS)}"] = self.rr / n
        out["n"] = self.n
        return out


def run(
    *,
    task: str,
    strategy: SearchStrategy,
    embedder: str = "local",
    embed_cache: Path | None = None,
    data: Path = PREFEVAL_DIR,
    filler_file: Path = LOCOMO_FILE,
    filler_per_thread: int = 9,
    topics: Sequence[str] | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """Run one task with one strategy; return the report (the ``--json`` object).

    Args:
        task: ``"memories"`` or ``"conversation"``.
        strategy: The store's search strategy.
        embedder: An embedder spec for ``resolve_embedder`` (``local``, ``hashing``...).
        embed_cache: SQLite file caching embeddings across runs (timings then measure
            the cache).
        data: The PrefEval ``explicit_preference`` directory.
        filler_file: The LoCoMo file whose turns fill the conversation task.
        filler_per_thread: Filler turns per preference thread (conversation task).
        topics: Topic names to keep (default all).
        limit: Keep only the first ``limit`` preferences (smoke runs; >= 1).

    Raises:
        ValueError: for an unknown task, a ``limit`` below 1 or unreadable data.
    """
    if task not in ("memories", "conversation"):
        raise ValueError(f"task must be 'memories' or 'conversation', got {task!r}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    prefs = load_preferences(data, topics)
    if limit is not None:
        prefs = prefs[:limit]
    topic_names = sorted({p.topic for p in prefs})
    started = time.perf_counter()
    inner = resolve_embedder(embedder)
    if embed_cache is not None:
        inner = CachedEmbedder(inner, embedder, embed_cache)
    model = TimedEmbedder(inner)
    load_s = time.perf_counter() - started
    store = open_store(model, strategy)
    started = time.perf_counter()
    if task == "memories":
        fill_memories(store, prefs)
        record_types = {"preference"}
    else:
        fill_conversation(store, prefs, load_filler(filler_file), filler_per_thread)
        record_types = {"message"}
    ingest_s = time.perf_counter() - started

    overall, halves = Tally(), {"a": Tally(), "b": Tally()}
    per_topic: dict[str, Tally] = {t: Tally() for t in topic_names}
    embed_ms: list[float] = []
    incl_ms: list[float] = []
    excl_ms: list[float] = []
    scope: dict[str, Any] = {"user_id": USER, "exact_user_match": True}
    for pref in prefs:
        if strategy is SearchStrategy.VECTOR:
            t0 = time.perf_counter()
            vector = model.inner.embed([pref.question], is_query=True)[0]
            t1 = time.perf_counter()
            results = store.search(
                k=max(KS), query_vector=vector, record_types=record_types, **scope
            )
            t2 = time.perf_counter()
            embed_s, total_s = t1 - t0, t2 - t0
        else:
            before, t0 = model.seconds, time.perf_counter()
            results = store.search(pref.question, max(KS), record_types=record_types, **scope)
            total_s = time.perf_counter() - t0
            embed_s = model.seconds - before
        embed_ms.append(embed_s * 1000)
        incl_ms.append(total_s * 1000)
        excl_ms.append((total_s - embed_s) * 1000)
        ids = [record.id for record, _ in results]
        rank = ids.index(pref.record_id) + 1 if pref.record_id in ids else None
        for tally in (overall, halves[pref.half(topic_names)], per_topic[pref.topic]):
            tally.add(rank)
    store.close()
    return {
        "config": {
            "task": task,
            "strategy": strategy.value.lower(),
            "embedder": embedder,
            "embed_cache": embed_cache is not None,
            "preferences": len(prefs),
            "topics": topic_names,
            "filler_per_thread": filler_per_thread if task == "conversation" else 0,
        },
        "overall": overall.as_dict(),
        "halves": {h: t.as_dict() for h, t in halves.items()},
        "topics": {t: tally.as_dict() for t, tally in per_topic.items()},
        "latency_ms": {
            "incl_embedding": _percentiles(incl_ms),
            "excl_embedding": _percentiles(excl_ms),
            "query_embedding": _percentiles(embed_ms),
        },
        "timings_s": {"model_load": load_s, "ingest": ingest_s},
    }


def format_table(report: dict[str, Any]) -> str:
    """The report as a Markdown table (overall and halves) plus a latency line."""
    cfg = report["config"]
    cols = [f"recall@{k}" for k in KS] + [f"mrr@{max(KS)}", "n"]
    lines = [
        f"PrefEval {cfg['task']}, {cfg['strategy']}, {cfg['preferences']} preferences",
        "",
        "| set | " + " | ".join(cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    rows = [("all", report["overall"])] + [
        (f"half {h}", block) for h, block in report["halves"].items()
    ]
    for name, block in rows:
        cells = [f"{block[c]:.3f}" if c != "n" else str(block[c]) for c in cols]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lat = report["latency_ms"]
    lines.append("")
    lines.append(
        "p50/p95 ms incl. query embedding "
        f"{lat['incl_embedding']['p50']:.2f}/{lat['incl_embedding']['p95']:.2f}, "
        f"excl. {lat['excl_embedding']['p50']:.2f}/{lat['excl_embedding']['p95']:.2f}"
    )
    if cfg["embed_cache"]:
        lines.append("(embeddings from --embed-cache: timings measure the cache)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=["memories", "conversation"], default="memories")
    parser.add_argument("--strategy", choices=["vector", "keyword", "hybrid"], default="hybrid")
    parser.add_argument("--embedder", default="local", help="local, hashing, hashing/<dim>")
    parser.add_argument("--embed-cache", type=Path, help="SQLite file caching embeddings")
    parser.add_argument("--data", type=Path, default=PREFEVAL_DIR)
    parser.add_argument("--filler-file", type=Path, default=LOCOMO_FILE)
    parser.add_argument("--filler", type=int, default=9, help="filler turns per thread")
    parser.add_argument("--topics", help="comma-separated topic names (default: all)")
    parser.add_argument("--limit", type=int, help="first N >= 1 preferences only (smoke runs)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.filler < 1:
        parser.error("--filler must be >= 1")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be >= 1")
    try:
        report = run(
            task=args.task,
            strategy=SearchStrategy[args.strategy.upper()],
            embedder=args.embedder,
            embed_cache=args.embed_cache,
            data=args.data,
            filler_file=args.filler_file,
            filler_per_thread=args.filler,
            topics=args.topics.split(",") if args.topics else None,
            limit=args.limit,
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else format_table(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
