"""Every retrieval task with every search strategy in one run, as JSON and Markdown.

Tasks (each run through the functions of ``locomo_recall.py`` and
``prefeval_recall.py``, the public ``oam`` store API underneath):

``locomo-turns``
    LoCoMo questions against the conversation turns (``locomo_recall.run``).
``locomo-memories``
    The same questions against a recorded extraction (``--locomo-memories FILE``,
    the ``--memories`` format of ``locomo_recall.py``); a memory counts for its
    source turns. Skipped without the file.
``locomo-both``
    Turns and memories together (``locomo_recall.py --on both``); needs the file
    (skipped with a message without it).
``prefeval-memories`` / ``prefeval-conversation``
    PrefEval preferences as ``preference`` records, or stated inside conversations
    (``prefeval_recall.run``).

Per task and strategy (``vector``, ``keyword``, ``hybrid``): recall at 1, 5 and 10
(LoCoMo: ``recall_all`` and ``recall_any``), MRR@10, search latency p50/p95 with and
without the query embedding, and the task's main metric (LoCoMo ``recall_all@10``,
PrefEval ``recall@5``) on each half of the data. Halves, for any data set: the
groups (LoCoMo sample ids, PrefEval topics) sorted by id, half ``a`` the even
positions, ``b`` the odd ones; on the LoCoMo dev set that is a = conv-26/41/43/47,
b = conv-30/42/44. Each task ends with the check "HYBRID >= max(VECTOR, KEYWORD)" on
the main metric, overall and per half. A half without questions (one sample or one
topic run) has no figure and no check: null in the JSON, "n/a" in the Markdown.

Usage (from the repository root)::

    python bench/retrieval_suite.py --embed-cache /tmp/embcache.sqlite \\
        --out-json /tmp/suite.json --out-md /tmp/suite.md
    python bench/retrieval_suite.py --embedder hashing --tasks locomo-turns \\
        --samples conv-26 --strategies keyword,hybrid

LoCoMo and PrefEval are CC BY-NC 4.0: read them from ``../shared/data``, never copy
them into this repository.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The task scripts import each other by module name; appended, so nothing is shadowed.
sys.path.append(str(Path(__file__).resolve().parent))
try:
    import oam_core  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import locomo_recall
import prefeval_recall

from oam_core import SearchStrategy
from oam_core.errors import InvalidArgumentError
from oam_core.ingest import IngestError

TASKS = (
    "locomo-turns",
    "locomo-memories",
    "locomo-both",
    "prefeval-memories",
    "prefeval-conversation",
)
STRATEGIES = ("vector", "keyword", "hybrid")
KS = (1, 5, 10)
LOCOMO_METRICS = (
    *(f"recall_all@{k}" for k in KS),
    *(f"recall_any@{k}" for k in KS),
    "mrr@10",
)
PREFEVAL_METRICS = (*(f"recall@{k}" for k in KS), "mrr@10")
MAIN_METRIC = {"locomo": "recall_all@10", "prefeval": "recall@5"}


class TaskSkipped(Exception):
    """A task that cannot run with the given options or code (the message says why)."""


@dataclass(frozen=True)
class Options:
    """What every task run needs: data paths, embedder and size limits.

    Attributes:
        embedder: An embedder spec for ``resolve_embedder`` (``local``, ``hashing``...).
        embed_cache: SQLite file caching vectors per (embedder, text), or None.
        live_queries: With ``embed_cache``, embed the questions with the model at
            search time (only stored texts come from the cache).
        locomo_data / locomo_qrels: The LoCoMo conversations and qrels files.
        locomo_memories: A recorded extraction (JSONL) for the memories/both tasks.
        samples: LoCoMo sample ids to keep (None: all).
        prefeval_data: The PrefEval ``explicit_preference`` directory.
        filler_file: The LoCoMo file whose turns fill PrefEval's conversations.
        topics: PrefEval topics to keep (None: all).
        limit: PrefEval: only the first ``limit`` preferences (None: all).
    """

    embedder: str = "local"
    embed_cache: Path | None = None
    live_queries: bool = False
    locomo_data: Path = locomo_recall.DATA_DIR / "locomo_dev.json"
    locomo_qrels: Path = locomo_recall.DATA_DIR / "locomo_dev_qrels.jsonl"
    locomo_memories: Path | None = None
    samples: Sequence[str] | None = None
    prefeval_data: Path = prefeval_recall.PREFEVAL_DIR
    filler_file: Path = prefeval_recall.LOCOMO_FILE
    topics: Sequence[str] | None = None
    limit: int | None = None


def halves(ids: Iterable[str]) -> dict[str, list[str]]:
    """Split group ids in two: sorted, half ``a`` the even positions, ``b`` the odd.

    Args:
        ids: Group ids (LoCoMo sample ids, PrefEval topic names); repeats count once.

    Returns:
        ``{"a": [...], "b": [...]}``, each sorted.
    """
    ordered = sorted(set(ids))
    return {"a": ordered[0::2], "b": ordered[1::2]}


def _latency(incl: dict[str, float], excl: dict[str, float]) -> dict[str, dict[str, float]]:
    pick = ("p50", "p95")
    return {
        "incl_embedding": {p: incl[p] for p in pick},
        "excl_embedding": {p: excl[p] for p in pick},
    }


def locomo_kwargs(on: str, memories: Path | None) -> dict[str, Any]:
    """The extra arguments of ``locomo_recall.run`` for what the task searches.

    Args:
        on: ``"turns"``, ``"memories"`` or ``"both"``.
        memories: The recorded extraction file (required unless ``on`` is turns).

    Raises:
        TaskSkipped: without the file, or ``on="both"`` while ``locomo_recall.run``
            takes no ``on`` argument.
    """
    if on == "turns":
        return {}
    if memories is None:
        raise TaskSkipped("needs --locomo-memories FILE")
    kwargs: dict[str, Any] = {"memories": memories}
    if on == "both":
        kwargs["on"] = "both"
    return kwargs


def score_locomo_rows(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """LoCoMo metrics of ``--per-question`` rows (categories outside the overall left out).

    Args:
        rows: ``locomo_recall`` per-question rows (``category``, ``evidence``,
            ``ranked``: per result the dialog ids it stands for, best first, >= 10).

    Returns:
        ``recall_all@k`` and ``recall_any@k`` for k in 1, 5, 10, ``mrr@10`` and ``n``.
    """
    tallies = {k: locomo_recall._Tally() for k in KS}
    for row in rows:
        if row["category"] in locomo_recall.EXCLUDED_FROM_OVERALL:
            continue
        ranked = [frozenset(ids) for ids in row["ranked"]]
        for k, tally in tallies.items():
            tally.add(frozenset(row["evidence"]), ranked, k)
    out: dict[str, Any] = {}
    for k, tally in tallies.items():
        scored = tally.as_dict(k)
        out[f"recall_all@{k}"] = scored[f"recall_all@{k}"]
        out[f"recall_any@{k}"] = scored[f"recall_any@{k}"]
    out["mrr@10"] = tallies[10].as_dict(10)["mrr@10"]
    out["n"] = tallies[10].n
    return out


def figures(block: dict[str, Any], n: int) -> dict[str, Any]:
    """``block`` (metrics, and maybe ``n``) of ``n`` questions, with every metric None
    when ``n`` is 0: a half without questions has no recall (not 0.0), and no check
    holds on it (``hybrid_check``)."""
    return block if n else {key: (value if key == "n" else None) for key, value in block.items()}


def run_locomo(on: str, strategy: str, opts: Options) -> dict[str, Any]:
    """One LoCoMo task with one strategy through ``locomo_recall.run`` (k = 10).

    Overall metrics come from its report (``overall`` and ``overall_at``), the halves
    from its per-question rows scored by ``score_locomo_rows``.

    Raises:
        TaskSkipped: see ``locomo_kwargs``.
        ValueError: for unreadable data (from ``locomo_recall``).
    """
    kwargs = locomo_kwargs(on, opts.locomo_memories)
    with tempfile.TemporaryDirectory(prefix="oam-suite-") as tmp:
        dump = Path(tmp) / "per_question.jsonl"
        report = locomo_recall.run(
            opts.locomo_data,
            opts.locomo_qrels,
            strategy=SearchStrategy.parse(strategy),
            k=max(KS),
            embedder=opts.embedder,
            samples=opts.samples,
            embed_cache=opts.embed_cache,
            per_question=dump,
            **kwargs,
        )
        rows = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    split = halves(report["config"]["samples"])
    overall = {**report["overall"]}
    for block in report["overall_at"].values():
        overall.update(block)
    timing = report["timing"]
    scored = {
        h: score_locomo_rows(r for r in rows if r["sample_id"] in members)
        for h, members in split.items()
    }
    return {
        "metrics": figures({m: overall[m] for m in LOCOMO_METRICS}, overall["n"]),
        "n": report["overall"]["n"],
        "halves": {h: figures(block, block["n"]) for h, block in scored.items()},
        "half_members": split,
        "latency_ms": _latency(timing["search_ms_incl_embed"], timing["search_ms_excl_embed"]),
        "groups": {
            name: {"recall_all@10": block["recall_all@10"], "n": block["n"]}
            for name, block in report["per_category"].items()
        },
    }


def run_prefeval(task: str, strategy: str, opts: Options) -> dict[str, Any]:
    """One PrefEval task with one strategy through ``prefeval_recall.run``.

    Its halves are the topic halves of ``halves`` (the same rule as
    ``Preference.half``).

    Raises:
        ValueError: for unreadable data (from ``prefeval_recall``).
    """
    report = prefeval_recall.run(
        task=task,
        strategy=SearchStrategy.parse(strategy),
        embedder=opts.embedder,
        embed_cache=opts.embed_cache,
        data=opts.prefeval_data,
        filler_file=opts.filler_file,
        topics=opts.topics,
        limit=opts.limit,
    )
    lat = report["latency_ms"]
    overall = report["overall"]
    return {
        "metrics": figures({m: overall[m] for m in PREFEVAL_METRICS}, overall["n"]),
        "n": overall["n"],
        "halves": {
            h: figures({m: block[m] for m in (*PREFEVAL_METRICS, "n")}, block["n"])
            for h, block in report["halves"].items()
        },
        "half_members": halves(report["config"]["topics"]),
        "latency_ms": _latency(lat["incl_embedding"], lat["excl_embedding"]),
        "groups": {
            name: {"recall@5": block["recall@5"], "n": block["n"]}
            for name, block in report["topics"].items()
        },
    }


def run_one(task: str, strategy: str, opts: Options) -> dict[str, Any]:
    """One task with one strategy: the ``tasks.<task>.strategies.<strategy>`` block.

    Raises:
        TaskSkipped: when the task cannot run (see ``locomo_kwargs``).
        InvalidArgumentError: for an unknown task.
    """
    family, _, what = task.partition("-")
    if family == "locomo" and what in ("turns", "memories", "both"):
        return run_locomo(what, strategy, opts)
    if family == "prefeval" and what in ("memories", "conversation"):
        return run_prefeval(what, strategy, opts)
    raise InvalidArgumentError(f"unknown task {task!r}; tasks: {', '.join(TASKS)}")


def hybrid_check(strategies: dict[str, Any], metric: str) -> dict[str, bool | None] | None:
    """Whether HYBRID's ``metric`` is at least max(VECTOR, KEYWORD), overall and per half.

    Returns:
        ``{"overall": ..., "a": ..., "b": ...}``, each True, False, or None where a
        strategy has no figure (a half without questions, ``figures``); or None
        unless all three strategies ran.
    """
    if not set(STRATEGIES) <= set(strategies):
        return None
    out: dict[str, bool | None] = {}
    for scope in ("overall", "a", "b"):
        values = [
            (block["metrics"] if scope == "overall" else block["halves"][scope])[metric]
            for block in (strategies[name] for name in ("hybrid", "vector", "keyword"))
        ]
        if None in values:
            out[scope] = None
        else:
            out[scope] = float(values[0]) >= max(float(values[1]), float(values[2]))
    return out


def run_suite(
    tasks: Sequence[str],
    strategies: Sequence[str],
    opts: Options,
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Run every task with every strategy; return the suite report (the JSON file).

    Args:
        tasks: Names from ``TASKS``.
        strategies: Names from ``STRATEGIES``.
        opts: Data paths, embedder, limits.
        progress: Called with one line per finished (or skipped) run.

    Raises:
        ValueError: for unreadable data (from the task scripts).
        InvalidArgumentError: for an unknown task.
    """
    report: dict[str, Any] = {"config": _config(tasks, strategies, opts), "tasks": {}}
    cached = locomo_recall.CachedEmbedder
    cache_queries, cached.cache_queries = cached.cache_queries, not opts.live_queries
    try:
        report["skipped"] = _run_tasks(report["tasks"], tasks, strategies, opts, progress)
    finally:
        cached.cache_queries = cache_queries
    return report


def _run_tasks(
    out: dict[str, Any],
    tasks: Sequence[str],
    strategies: Sequence[str],
    opts: Options,
    progress: Callable[[str], None],
) -> dict[str, str]:
    """Fill ``out`` with one block per task that ran; return the skipped tasks' reasons."""
    skipped: dict[str, str] = {}
    for task in tasks:
        metric = MAIN_METRIC[task.split("-", 1)[0]]
        done: dict[str, Any] = {}
        try:
            for strategy in strategies:
                started = time.perf_counter()
                done[strategy] = run_one(task, strategy, opts)
                done[strategy]["wall_s"] = round(time.perf_counter() - started, 1)
                progress(
                    f"{task} {strategy}: {metric} {_cell(done[strategy]['metrics'][metric])} "
                    f"({done[strategy]['wall_s']} s)"
                )
        except TaskSkipped as exc:
            skipped[task] = str(exc)
            progress(f"{task}: skipped ({exc})")
            continue
        out[task] = {
            "main_metric": metric,
            "strategies": done,
            "hybrid_check": hybrid_check(done, metric),
        }
    return skipped


def _config(tasks: Sequence[str], strategies: Sequence[str], opts: Options) -> dict[str, Any]:
    return {
        "tasks": list(tasks),
        "strategies": list(strategies),
        "embedder": opts.embedder,
        "embed_cache": opts.embed_cache is not None,
        "live_query_embedding": opts.live_queries or opts.embed_cache is None,
        "locomo_data": str(opts.locomo_data),
        "locomo_qrels": str(opts.locomo_qrels),
        "locomo_memories": str(opts.locomo_memories) if opts.locomo_memories else None,
        "samples": list(opts.samples) if opts.samples else None,
        "prefeval_data": str(opts.prefeval_data),
        "filler_file": str(opts.filler_file),
        "topics": list(opts.topics) if opts.topics else None,
        "limit": opts.limit,
        "halves": "groups (LoCoMo samples, PrefEval topics) sorted by id; a = even "
        "positions, b = odd",
    }


def _yes(flag: bool | None) -> str:
    return "n/a" if flag is None else "yes" if flag else "no"


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def check_line(task_report: dict[str, Any]) -> str:
    """The task's final line: HYBRID against the better of its two inputs."""
    metric, check = task_report["main_metric"], task_report["hybrid_check"]
    head = f"HYBRID >= max(VECTOR, KEYWORD) on main metric ({metric}):"
    if check is None:
        return f"{head} n/a (needs all three strategies)"
    return (
        f"{head} overall {_yes(check['overall'])}, half a {_yes(check['a'])}, "
        f"half b {_yes(check['b'])}"
    )


def _short(metric: str) -> str:
    return (
        metric.replace("recall_all", "r_all").replace("recall_any", "r_any").replace("mrr", "MRR")
    )


def task_table(task: str, task_report: dict[str, Any]) -> list[str]:
    """The Markdown lines of one task: a heading, a table, and the check line."""
    metric = task_report["main_metric"]
    blocks = task_report["strategies"]
    first = next(iter(blocks.values()))
    members = first["half_members"]
    names = list(first["metrics"])
    cols = [*map(_short, names), f"{_short(metric)} half a", "half b"]
    cols += ["p50 / p95 ms incl. query embedding", "p50 / p95 ms excl."]
    lines = [
        f"### {task}",
        "",
        f"{first['n']} questions; main metric {metric}; half a = "
        f"{', '.join(members['a']) or 'none'} (n {first['halves']['a']['n']}), half b = "
        f"{', '.join(members['b']) or 'none'} (n {first['halves']['b']['n']})",
        "",
        "| strategy | " + " | ".join(cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for strategy, block in blocks.items():
        lat = block["latency_ms"]
        cells = [_cell(block["metrics"][m]) for m in names]
        cells += [_cell(block["halves"][h][metric]) for h in ("a", "b")]
        cells += [
            f"{lat[key]['p50']:.2f} / {lat[key]['p95']:.2f}"
            for key in ("incl_embedding", "excl_embedding")
        ]
        lines.append(f"| {strategy.upper()} | " + " | ".join(cells) + " |")
    lines += ["", check_line(task_report), ""]
    return lines


def to_markdown(report: dict[str, Any]) -> str:
    """The suite report as Markdown: one table and check line per task, skips listed."""
    cfg = report["config"]
    note = ""
    if cfg["embed_cache"]:
        note = (
            " (stored texts from --embed-cache, questions embedded by the model)"
            if cfg["live_query_embedding"]
            else " (vectors from --embed-cache: latencies incl. the query embedding measure "
            "the cache)"
        )
    lines = [f"## Retrieval suite: embedder `{cfg['embedder']}`{note}", ""]
    for task, task_report in report["tasks"].items():
        lines += task_table(task, task_report)
    for task, why in report["skipped"].items():
        lines.append(f"- {task}: skipped ({why})")
    return "\n".join(lines).rstrip() + "\n"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma list (default: all)")
    parser.add_argument("--strategies", default=",".join(STRATEGIES), help="comma list")
    parser.add_argument("--embedder", default="local", help="local, hashing, hashing/<dim>")
    parser.add_argument("--embed-cache", type=Path, help="SQLite file caching vectors")
    parser.add_argument(
        "--live-query-embedding",
        action="store_true",
        help="with --embed-cache, embed the questions with the model (stored texts "
        "from the cache), so latencies incl. the query embedding measure the model",
    )
    parser.add_argument("--locomo-data", type=Path, default=Options.locomo_data)
    parser.add_argument("--locomo-qrels", type=Path, default=Options.locomo_qrels)
    parser.add_argument(
        "--locomo-memories", type=Path, help="recorded extraction (JSONL) for locomo-memories/both"
    )
    parser.add_argument("--samples", help="LoCoMo sample ids, comma list (default: all)")
    parser.add_argument("--prefeval-data", type=Path, default=Options.prefeval_data)
    parser.add_argument("--filler-file", type=Path, default=Options.filler_file)
    parser.add_argument("--topics", help="PrefEval topics, comma list (default: all)")
    parser.add_argument("--limit", type=int, help="PrefEval: first N preferences only")
    parser.add_argument("--out-json", type=Path, help="write the report here (JSON)")
    parser.add_argument("--out-md", type=Path, help="write the tables here (default: stdout)")
    return parser


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run the suite, write JSON and Markdown; return an exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    tasks, strategies = _split(args.tasks) or [], _split(args.strategies) or []
    for name, given, known in (("task", tasks, TASKS), ("strategy", strategies, STRATEGIES)):
        unknown = [g for g in given if g not in known]
        if unknown or not given:
            parser.error(f"unknown or no {name} {unknown}; choose from {', '.join(known)}")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be >= 1")
    opts = Options(
        embedder=args.embedder,
        embed_cache=args.embed_cache,
        live_queries=args.live_query_embedding,
        locomo_data=args.locomo_data,
        locomo_qrels=args.locomo_qrels,
        locomo_memories=args.locomo_memories,
        samples=_split(args.samples),
        prefeval_data=args.prefeval_data,
        filler_file=args.filler_file,
        topics=_split(args.topics),
        limit=args.limit,
    )
    try:
        report = run_suite(tasks, strategies, opts, lambda line: print(line, file=sys.stderr))
    except (IngestError, ValueError, ImportError, RuntimeError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    markdown = to_markdown(report)
    if args.out_json is not None:
        args.out_json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.out_md is not None:
        args.out_md.write_text(markdown, encoding="utf-8")
    else:
        print(markdown, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
