"""Smoke test of ``bench/retrieval_suite.py`` on the tiny hand-written fixtures of
``bench/fixtures`` (two LoCoMo-shaped conversations, three PrefEval-shaped topics),
with the hashing embedder: no ``../shared/data`` needed."""

from __future__ import annotations

import importlib.util
import inspect
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH_DIR = Path(__file__).parents[2] / "bench"
FIXTURES = BENCH_DIR / "fixtures"
DEV_SAMPLES = ["conv-47", "conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44"]


@pytest.fixture(scope="module")
def suite() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "retrieval_suite", BENCH_DIR / "retrieval_suite.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["retrieval_suite"] = module
    spec.loader.exec_module(module)
    return module


def _fixture_args() -> list[str]:
    return [
        "--embedder",
        "hashing",
        "--locomo-data",
        str(FIXTURES / "suite_locomo.json"),
        "--locomo-qrels",
        str(FIXTURES / "suite_qrels.jsonl"),
        "--locomo-memories",
        str(FIXTURES / "suite_memories.jsonl"),
        "--prefeval-data",
        str(FIXTURES / "suite_prefeval"),
        "--filler-file",
        str(FIXTURES / "suite_locomo.json"),
    ]


@pytest.fixture(scope="module")
def outputs(suite: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str]:
    out = tmp_path_factory.mktemp("suite")
    argv = [*_fixture_args(), "--out-json", str(out / "s.json"), "--out-md", str(out / "s.md")]
    assert suite.main(argv) == 0
    report = json.loads((out / "s.json").read_text(encoding="utf-8"))
    return report, (out / "s.md").read_text(encoding="utf-8")


def test_halves_reproduce_the_dev_split(suite: ModuleType) -> None:
    assert suite.halves(DEV_SAMPLES) == {
        "a": ["conv-26", "conv-41", "conv-43", "conv-47"],
        "b": ["conv-30", "conv-42", "conv-44"],
    }
    assert suite.halves(["y", "x", "x"]) == {"a": ["x"], "b": ["y"]}


def _ran_tasks(suite: ModuleType) -> list[str]:
    both = "on" in inspect.signature(suite.locomo_recall.run).parameters
    return [t for t in suite.TASKS if t != "locomo-both" or both]


def test_every_task_and_strategy_with_metrics_in_range(
    suite: ModuleType, outputs: tuple[Any, str]
) -> None:
    report, _ = outputs
    assert list(report["tasks"]) == _ran_tasks(suite)
    for task, block in report["tasks"].items():
        assert list(block["strategies"]) == ["vector", "keyword", "hybrid"], task
        for strategy, result in block["strategies"].items():
            values = [*result["metrics"].values()]
            for half in ("a", "b"):
                values += [v for k, v in result["halves"][half].items() if k != "n"]
            assert values and all(0.0 <= v <= 1.0 for v in values), (task, strategy)
            for kind in ("incl_embedding", "excl_embedding"):
                p = result["latency_ms"][kind]
                assert 0.0 <= p["p50"] <= p["p95"], (task, strategy, kind)
            # The halves partition the questions.
            assert result["halves"]["a"]["n"] + result["halves"]["b"]["n"] == result["n"]
        assert set(block["hybrid_check"]) == {"overall", "a", "b"}


def test_known_values_of_the_tiny_fixture(suite: ModuleType, outputs: tuple[Any, str]) -> None:
    report, _ = outputs
    turns = report["tasks"]["locomo-turns"]["strategies"]["keyword"]
    # Five questions of categories 1-4 (the adversarial one is left out). Each single-hop
    # question's words are only in its evidence turn: rank 1. The multi-hop question has
    # two evidence turns: at k = 1 one of them (any, not all).
    assert turns["n"] == 5
    assert turns["metrics"]["recall_all@1"] == 0.8
    assert turns["metrics"]["recall_any@1"] == 1.0
    assert turns["metrics"]["mrr@10"] == 1.0
    assert turns["half_members"] == {"a": ["s-1"], "b": ["s-2"]}
    assert turns["halves"]["a"]["recall_all@1"] == 0.5
    assert turns["halves"]["b"]["recall_all@1"] == 1.0
    # The violin question of s-2 has no memory: 4 of 5 at best, whatever the strategy.
    for result in report["tasks"]["locomo-memories"]["strategies"].values():
        assert result["metrics"]["recall_all@10"] == 0.8
        assert result["halves"]["a"]["recall_all@10"] == 1.0
        assert result["halves"]["b"]["recall_all@10"] == pytest.approx(2 / 3)
    # Every PrefEval question shares a rare word with its own preference only.
    for task in ("prefeval-memories", "prefeval-conversation"):
        pref = report["tasks"][task]["strategies"]["keyword"]
        assert pref["metrics"]["recall@1"] == 1.0
        assert pref["half_members"] == {"a": ["food", "wellness"], "b": ["travel"]}
        assert (pref["halves"]["a"]["n"], pref["halves"]["b"]["n"]) == (3, 2)


def test_halves_add_up_to_the_overall_figures(suite: ModuleType, outputs: tuple[Any, str]) -> None:
    """The overall LoCoMo figures (``locomo_recall``'s report, ``overall_at`` for k 1
    and 5) and the halves (its per-question rows, rescored) agree."""
    report, _ = outputs
    for task in ("locomo-turns", "locomo-memories"):
        for result in report["tasks"][task]["strategies"].values():
            a, b = result["halves"]["a"], result["halves"]["b"]
            for metric, value in result["metrics"].items():
                mean = (a[metric] * a["n"] + b[metric] * b["n"]) / result["n"]
                assert mean == pytest.approx(value), (task, metric)


def test_markdown_has_a_table_and_a_check_line_per_task(
    suite: ModuleType, outputs: tuple[Any, str]
) -> None:
    report, markdown = outputs
    for task in report["tasks"]:
        assert f"### {task}\n" in markdown
    locomo = [task for task in report["tasks"] if task.startswith("locomo-")]
    assert markdown.count("| strategy | r_all@1 | r_all@5 | r_all@10 | r_any@1 |") == len(locomo)
    assert markdown.count("| strategy | recall@1 | recall@5 | recall@10 | MRR@10 |") == 2
    assert markdown.count("| HYBRID |") == len(report["tasks"])
    lines = markdown.splitlines()
    checks = [line for line in lines if line.startswith("HYBRID >= max(VECTOR, KEYWORD)")]
    assert len(checks) == len(report["tasks"])
    # Every strategy finds every LoCoMo turn of the tiny fixture within 10.
    assert (
        "HYBRID >= max(VECTOR, KEYWORD) on main metric (recall_all@10): "
        "overall yes, half a yes, half b yes"
    ) in lines
    keyword_row = next(line for line in lines if line.startswith("| KEYWORD | 0.800 | 1.000"))
    assert "| 1.000 | 1.000 | 1.000 | 1.000 |" in keyword_row
    if "locomo-both" not in report["tasks"]:
        assert "- locomo-both: skipped (" in markdown


def test_check_line_says_no_and_na(suite: ModuleType) -> None:
    def block(overall: float, a: float, b: float) -> dict[str, Any]:
        return {"metrics": {"m": overall}, "halves": {"a": {"m": a}, "b": {"m": b}}}

    strategies = {
        "vector": block(0.5, 0.6, 0.4),
        "keyword": block(0.3, 0.2, 0.45),
        "hybrid": block(0.5, 0.7, 0.44),
    }
    check = suite.hybrid_check(strategies, "m")
    assert check == {"overall": True, "a": True, "b": False}
    line = suite.check_line({"main_metric": "m", "hybrid_check": check})
    assert line.endswith("on main metric (m): overall yes, half a yes, half b no")
    assert suite.hybrid_check({"hybrid": strategies["hybrid"]}, "m") is None
    assert suite.check_line({"main_metric": "m", "hybrid_check": None}).endswith(
        "n/a (needs all three strategies)"
    )


def test_a_half_without_questions_has_no_figure_and_no_check(
    suite: ModuleType, tmp_path: Path
) -> None:
    """One LoCoMo sample, one PrefEval topic: half b is empty. Its figures are null
    (not 0.0), its check is null, and the Markdown says n/a for both (it read
    "half b yes" on 0.000 >= 0.000)."""
    out_json, out_md = tmp_path / "s.json", tmp_path / "s.md"
    argv = [*_fixture_args(), "--tasks", "locomo-turns,prefeval-memories"]
    argv += ["--samples", "s-1", "--topics", "food", "--out-json", str(out_json)]
    assert suite.main([*argv, "--out-md", str(out_md)]) == 0
    report = json.loads(out_json.read_text(encoding="utf-8"))
    for task, metric in (("locomo-turns", "recall_all@10"), ("prefeval-memories", "recall@5")):
        block = report["tasks"][task]
        for result in block["strategies"].values():
            assert result["half_members"]["b"] == []
            assert result["halves"]["b"][metric] is None and result["halves"]["b"]["n"] == 0
            assert result["halves"]["a"]["n"] == result["n"] > 0
            assert result["halves"]["a"][metric] == result["metrics"][metric]
        assert block["hybrid_check"]["b"] is None
        assert block["hybrid_check"]["a"] is block["hybrid_check"]["overall"] is True
    lines = out_md.read_text(encoding="utf-8").splitlines()
    checks = [line for line in lines if line.startswith("HYBRID >= max(VECTOR, KEYWORD)")]
    assert len(checks) == 2 and all(line.endswith(", half b n/a") for line in checks)
    rows = [line for line in lines if line.startswith("| HYBRID |")]
    assert len(rows) == 2 and all(" | n/a | " in row for row in rows)


def test_check_of_a_half_without_figures_is_none(suite: ModuleType) -> None:
    def block(overall: float, b: float | None) -> dict[str, Any]:
        return {"metrics": {"m": overall}, "halves": {"a": {"m": overall}, "b": {"m": b}}}

    empty = {name: block(0.5, None) for name in ("vector", "keyword", "hybrid")}
    assert suite.hybrid_check(empty, "m") == {"overall": True, "a": True, "b": None}
    assert suite.figures({"m": 0.0, "n": 0}, 0) == {"m": None, "n": 0}
    assert suite.figures({"m": 0.25}, 4) == {"m": 0.25}


def test_tasks_needing_a_file_are_skipped(
    suite: ModuleType,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = _fixture_args()
    at = args.index("--locomo-memories")
    del args[at : at + 2]
    argv = [*args, "--tasks", "locomo-memories,locomo-turns", "--strategies", "keyword"]
    assert suite.main([*argv, "--out-json", str(tmp_path / "s.json")]) == 0
    report = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert list(report["tasks"]) == ["locomo-turns"]
    assert report["skipped"] == {"locomo-memories": "needs --locomo-memories FILE"}
    assert report["tasks"]["locomo-turns"]["hybrid_check"] is None
    out = capsys.readouterr().out
    assert "- locomo-memories: skipped (needs --locomo-memories FILE)" in out
    assert "n/a (needs all three strategies)" in out

    memories = FIXTURES / "suite_memories.jsonl"
    assert suite.locomo_kwargs("turns", None) == {}
    assert suite.locomo_kwargs("memories", memories) == {"memories": memories}
    assert suite.locomo_kwargs("both", memories) == {"memories": memories, "on": "both"}
    with pytest.raises(suite.TaskSkipped, match="needs --locomo-memories"):
        suite.locomo_kwargs("both", None)


def test_bad_arguments_exit_2(suite: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--tasks", "nope"], ["--strategies", ""], ["--limit", "0"]):
        with pytest.raises(SystemExit) as exit_info:
            suite.main(argv)
        assert exit_info.value.code == 2
    assert suite.main([*_fixture_args(), "--tasks", "prefeval-memories", "--topics", "nope"]) == 2
    assert "no such topic" in capsys.readouterr().err


def test_live_query_embedding_keeps_questions_out_of_the_cache(
    suite: ModuleType, tmp_path: Path
) -> None:
    import sqlite3

    def cached_rows(cache: Path) -> dict[int, int]:
        with sqlite3.connect(cache) as db:
            rows = db.execute("SELECT query, count(*) FROM vec GROUP BY query").fetchall()
        return {int(query): int(n) for query, n in rows}

    base = [*_fixture_args(), "--tasks", "prefeval-memories", "--strategies", "vector"]
    live, cached = tmp_path / "live.sqlite", tmp_path / "cached.sqlite"
    argv = [*base, "--embed-cache", str(live), "--live-query-embedding"]
    assert suite.main([*argv, "--out-json", str(tmp_path / "live.json")]) == 0
    assert suite.locomo_recall.CachedEmbedder.cache_queries is True  # restored
    assert (
        suite.main([*base, "--embed-cache", str(cached), "--out-md", str(tmp_path / "c.md")]) == 0
    )
    # Five preferences stored; five questions embedded (and cached only without the flag).
    assert cached_rows(live) == {0: 5}
    assert cached_rows(cached) == {0: 5, 1: 5}
    config = json.loads((tmp_path / "live.json").read_text(encoding="utf-8"))["config"]
    assert config["embed_cache"] is True and config["live_query_embedding"] is True
    assert "latencies incl. the query embedding measure the cache" in (tmp_path / "c.md").read_text(
        encoding="utf-8"
    )
