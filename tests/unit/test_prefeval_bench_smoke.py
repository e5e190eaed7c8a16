"""Smoke test of ``bench/prefeval_recall.py`` on tiny synthetic PrefEval-shaped files."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH_DIR = Path(__file__).parents[2] / "bench"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(BENCH_DIR))
    try:
        spec = importlib.util.spec_from_file_location(
            "prefeval_recall", BENCH_DIR / "prefeval_recall.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["prefeval_recall"] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH_DIR))


PREFS = {
    "food": [
        ("I am strictly vegetarian and never eat meat.", "Which restaurant should I book?"),
        ("I hate spicy food, chili gives me trouble.", "Can you suggest a curry recipe?"),
    ],
    "travel": [
        ("I avoid flying, I take trains whenever I can.", "How should I get to Vienna?"),
        ("I prefer quiet beaches over crowded resorts.", "Where should I go for summer?"),
        ("I only stay in hotels with a gym.", "Which hotel in Rome do you recommend?"),
    ],
}


@pytest.fixture
def data(tmp_path: Path) -> tuple[Path, Path]:
    prefs = tmp_path / "explicit_preference"
    prefs.mkdir()
    for topic, items in PREFS.items():
        rows = [{"preference": p, "question": q, "explanation": "."} for p, q in items]
        (prefs / f"{topic}.json").write_text(json.dumps(rows), encoding="utf-8")
    turns = [
        {"speaker": "A", "dia_id": f"D1:{i}", "text": f"Filler turn number {i} about gardening."}
        for i in range(1, 13)
    ]
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps([{"conversation": {"session_1": turns}}]), encoding="utf-8")
    return prefs, locomo


@pytest.mark.parametrize("task", ["memories", "conversation"])
@pytest.mark.parametrize("strategy", ["VECTOR", "KEYWORD", "HYBRID"])
def test_report_counts_every_question_once(
    bench: ModuleType, data: tuple[Path, Path], task: str, strategy: str
) -> None:
    from oam_core import SearchStrategy

    prefs, locomo = data
    report = bench.run(
        task=task,
        strategy=SearchStrategy[strategy],
        embedder="hashing",
        data=prefs,
        filler_file=locomo,
        filler_per_thread=5,
    )
    assert report["overall"]["n"] == 5
    # Topics sorted: food (half a, 2 questions), travel (half b, 3 questions).
    assert report["halves"]["a"]["n"] == 2
    assert report["halves"]["b"]["n"] == 3
    assert report["topics"]["travel"]["n"] == 3
    overall = report["overall"]
    assert 0.0 <= overall["recall@1"] <= overall["recall@5"] <= overall["recall@10"] <= 1.0
    # Five preferences in the store: a vector ranking always holds the target in its
    # top 10 (a keyword ranking only holds records sharing a term with the question).
    if task == "memories" and strategy != "KEYWORD":
        assert overall["recall@10"] == 1.0
    assert report["latency_ms"]["excl_embedding"]["p50"] >= 0.0
    table = bench.format_table(report)
    assert "| half a |" in table and "| half b |" in table


def test_conversation_places_the_preference_among_filler(
    bench: ModuleType, data: tuple[Path, Path]
) -> None:
    from oam_core import SQLiteMemoryStore
    from oam_core.embedders.hashing import HashingEmbedder

    prefs_dir, locomo = data
    prefs = bench.load_preferences(prefs_dir)
    store = SQLiteMemoryStore(":memory:", embedder=HashingEmbedder(32), vector_dim=32)
    bench.fill_conversation(store, prefs, bench.load_filler(locomo), 5)
    for pref in prefs:
        messages = store.list_thread_messages(f"t:{pref.record_id}")
        texts = [m.content for m in messages]
        assert len(texts) == 7
        at = texts.index(pref.preference)
        assert messages[at].role == "user"
        assert texts[at + 1] == bench.ACK
        assert sum(t.startswith("Filler turn") for t in texts) == 5
    store.close()


def test_unknown_topic_is_refused(bench: ModuleType, data: tuple[Path, Path]) -> None:
    with pytest.raises(ValueError, match="no such topic"):
        bench.load_preferences(data[0], ["cooking"])


@pytest.mark.parametrize("limit", [0, -5])
def test_a_limit_below_one_is_refused(
    bench: ModuleType,
    data: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    limit: int,
) -> None:
    """``--limit 0`` is no run (it was reported as recall 0.0) and ``--limit -5`` is
    not "all but the last 5"; ``--limit 1`` runs one question."""
    from oam_core import SearchStrategy

    prefs, locomo = data
    args = ["--embedder", "hashing", "--data", str(prefs), "--filler-file", str(locomo)]
    with pytest.raises(SystemExit) as exit_:
        bench.main([*args, "--json", "--limit", str(limit)])
    assert exit_.value.code == 2 and "--limit must be >= 1" in capsys.readouterr().err
    with pytest.raises(ValueError, match=f"limit must be >= 1, got {limit}"):
        bench.run(
            task="memories",
            strategy=SearchStrategy.KEYWORD,
            embedder="hashing",
            data=prefs,
            limit=limit,
        )
    assert bench.main([*args, "--json", "--limit", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["n"] == 1
