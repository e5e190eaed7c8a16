"""Smoke test of ``bench/locomo_recall.py`` on a tiny synthetic LoCoMo-shaped file."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.pgload import pg_module

BENCH = Path(__file__).parents[2] / "bench" / "locomo_recall.py"
MEMORIES = Path(__file__).parents[2] / "bench" / "fixtures" / "memories_tiny.jsonl"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("locomo_recall", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["locomo_recall"] = module
    spec.loader.exec_module(module)
    return module


def _turn(speaker: str, dia_id: str, text: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    sample = {
        "sample_id": "s-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("Ana", "D1:1", "I adopted a golden retriever puppy named Sunny."),
                _turn("Ben", "D1:2", "That's wonderful! How is it going so far?"),
                _turn("Ana", "D1:3", "We started obedience classes at the community center."),
            ],
            "session_2_date_time": "10:29 am on 9 August, 2023",
            "session_2": [
                _turn("Ben", "D2:1", "I finally visited Kyoto and saw the temples."),
                _turn("Ana", "D2:2", "Sounds amazing, what was the food like?"),
                _turn("Ben", "D2:3", "The matcha ice cream at the station was the best."),
            ],
        },
        "qa": [],
    }
    rows: list[dict[str, Any]] = [
        {
            "qa_index": 0,
            "category": 4,
            "question": "What is the puppy named?",
            "evidence": ["D1:1"],
        },
        {
            "qa_index": 1,
            "category": 1,
            "question": "Kyoto temples and matcha ice cream?",
            "evidence": ["D2:1", "D2:3"],
        },
        {
            "qa_index": 2,
            "category": 5,
            "question": "Where are the obedience classes?",
            "evidence": ["D1:3"],
        },
        {"qa_index": 3, "category": 4, "question": "Unanswerable?", "evidence": []},
    ]
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([sample]), encoding="utf-8")
    qrels = tmp_path / "qrels.jsonl"
    lines = [{"sample_id": "s-1", "answer": "x", **row} for row in rows]
    lines.append(
        {
            "sample_id": "other",
            "qa_index": 0,
            "category": 4,
            "question": "q",
            "answer": "a",
            "evidence": ["D1:1"],
        }
    )
    qrels.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return data, qrels


def _run(bench: ModuleType, capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert bench.main([*argv, "--json", "--embedder", "hashing"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    report = json.loads(out)
    assert isinstance(report, dict)
    return report


def test_keyword_recall_at_1_is_exact(
    bench: ModuleType, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data, qrels = files
    report = _run(
        bench,
        capsys,
        "--data",
        str(data),
        "--qrels",
        str(qrels),
        "--strategy",
        "keyword",
        "--k",
        "1",
    )
    # Single-hop question: found. Multi-hop (two evidence turns) at k=1: any but not all.
    # Both questions have an evidence turn at rank 1 (MRR 1) and, within the top 5,
    # a turn of an evidence session.
    assert report["overall"] == {
        "recall_all@1": 0.5,
        "recall_any@1": 1.0,
        "session_hit@5": 1.0,
        "mrr@1": 1.0,
        "n": 2,
    }
    categories = report["per_category"]
    assert categories["single-hop"] == {
        "category": 4,
        "recall_all@1": 1.0,
        "recall_any@1": 1.0,
        "session_hit@5": 1.0,
        "mrr@1": 1.0,
        "n": 1,
    }
    assert categories["multi-hop"]["n"] == 1
    assert categories["multi-hop"]["recall_all@1"] == 0.0
    assert categories["adversarial"] == {
        "category": 5,
        "recall_all@1": 1.0,
        "recall_any@1": 1.0,
        "session_hit@5": 1.0,
        "mrr@1": 1.0,
        "n": 1,
    }
    assert categories["temporal"]["n"] == 0
    timing = report["timing"]
    assert timing["queries"] == 3
    assert timing["query_embed_ms"]["p95"] == 0.0
    assert set(timing["search_ms_incl_embed"]) == {"p50", "p95", "mean"}
    assert report["config"]["records"] == 6
    assert report["config"]["threads"] == 2
    assert report["config"]["questions_without_evidence"] == 1


@pytest.mark.parametrize("strategy", ["vector", "hybrid"])
def test_vector_and_hybrid_find_everything_with_a_large_k(
    bench: ModuleType,
    files: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    strategy: str,
) -> None:
    data, qrels = files
    report = _run(
        bench,
        capsys,
        "--data",
        str(data),
        "--qrels",
        str(qrels),
        "--strategy",
        strategy,
        "--k",
        "10",
    )
    assert report["overall"] == {
        "recall_all@10": 1.0,
        "recall_any@10": 1.0,
        "session_hit@5": 1.0,
        "mrr@10": report["overall"]["mrr@10"],
        "n": 2,
    }
    assert 0.5 <= report["overall"]["mrr@10"] <= 1.0
    timing = report["timing"]
    assert timing["ingest_records_per_s"] > 0
    assert timing["query_embed_ms"]["p50"] > 0
    assert timing["search_ms_incl_embed"]["p50"] >= timing["search_ms_excl_embed"]["p50"]


def test_human_table_and_errors(
    bench: ModuleType, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data, qrels = files
    args = ["--data", str(data), "--qrels", str(qrels), "--embedder", "hashing"]
    assert bench.main([*args, "--strategy", "keyword"]) == 0
    out = capsys.readouterr().out
    assert "overall (1-4)" in out and "recall_all@10" in out
    assert bench.main([*args, "--samples", "nope"]) == 2
    assert "unknown sample ids" in capsys.readouterr().err
    assert bench.main(["--data", str(data.with_name("missing.json")), "--qrels", str(qrels)]) == 2
    assert "no such file" in capsys.readouterr().err


def test_turns_are_found_by_their_speaker_name(
    bench: ModuleType, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data, qrels = files
    # "Ben" occurs in no turn's text; his name as speaker makes his three turns findable.
    row = {
        "sample_id": "s-1",
        "qa_index": 0,
        "category": 4,
        "question": "What did Ben say?",
        "answer": "x",
        "evidence": ["D1:2", "D2:1", "D2:3"],
    }
    qrels.write_text(json.dumps(row) + "\n", encoding="utf-8")
    base = ["--data", str(data), "--qrels", str(qrels), "--strategy", "keyword", "--k", "3"]
    named = _run(bench, capsys, *base)
    assert named["overall"]["recall_all@3"] == 1.0


@pytest.mark.parametrize("strategy", ["keyword", "vector"])
def test_postgres_back_end_gives_the_same_recall(
    bench: ModuleType,
    files: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    strategy: str,
) -> None:
    """``--db postgresql://...`` runs the same benchmark on PostgreSQL, same recall.
    (Not HYBRID: at k=1 its RRF ties are broken by the random message ids.)"""
    pg = pg_module()
    try:
        url = pg.conninfo_for(pg.new_schema())
    except pg.ServerUnavailable as exc:
        pytest.skip(str(exc))
    data, qrels = files
    args = ["--data", str(data), "--qrels", str(qrels), "--strategy", strategy, "--k", "1"]
    sqlite = _run(bench, capsys, *args)
    postgres = _run(bench, capsys, *args, "--db", url)
    assert postgres["config"]["backend"] == "postgres"
    assert sqlite["config"]["backend"] == "sqlite"
    assert postgres["overall"] == sqlite["overall"]
    assert postgres["per_category"] == sqlite["per_category"]


def test_memory_level_recall_on_the_hand_made_fixture(
    bench: ModuleType, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--on memories``: a memory is a hit for the turns in its provenance."""
    data, qrels = files
    args = ["--data", str(data), "--qrels", str(qrels), "--strategy", "keyword", "--k", "1"]
    report = _run(bench, capsys, *args, "--on", "memories", "--memories", str(MEMORIES))
    assert report["config"]["on"] == "memories"
    assert report["config"]["records"] == 5
    # "What is the puppy named?" -> the fact from D1:1; "Kyoto temples and matcha ice
    # cream?" -> the one memory extracted from both D2:1 and D2:3 (recall_all at k=1).
    assert report["overall"] == {
        "recall_all@1": 1.0,
        "recall_any@1": 1.0,
        "session_hit@5": 1.0,
        "mrr@1": 1.0,
        "n": 2,
    }
    out = capsys.readouterr().out
    assert bench.main([*args, "--on", "memories", "--memories", str(MEMORIES)]) == 0
    assert "memory-level recall" in capsys.readouterr().out and out == ""


def test_memories_file_errors(
    bench: ModuleType, files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, qrels = files
    args = ["--data", str(data), "--qrels", str(qrels), "--embedder", "hashing"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample_id": "s-1", "content": "x", "source_message_ids": "D1:1"}\n')
    assert bench.main([*args, "--on", "memories", "--memories", str(bad)]) == 2
    assert "line 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main([*args, "--on", "memories"])
    with pytest.raises(SystemExit):
        bench.main([*args, "--record-memories", str(tmp_path / "out.jsonl")])


def test_reranked_pass_reports_its_own_metrics_and_latency(
    bench: ModuleType, files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--reranker-model``: every question is searched without and with the reranker."""
    pytest.importorskip("onnx")
    from tests.tiny_cross_encoder import TOKENIZER, build_model

    model = tmp_path / "model.onnx"
    sha = build_model(model, ["sunny"])
    data, qrels = files
    report = _run(
        bench,
        capsys,
        *("--data", str(data), "--qrels", str(qrels), "--strategy", "hybrid", "--k", "1"),
        *("--reranker-model", str(model), "--reranker-tokenizer", str(TOKENIZER)),
        *("--reranker-sha256", sha, "--reranker-candidates", "6"),
    )
    # The toy cross-encoder scores only the turn naming Sunny (D1:1) above zero, so it
    # is every question's reranked top 1: right for the puppy question, wrong for the
    # others, while the first stage is unchanged.
    reranked = report["reranked"]["per_category"]
    assert reranked["single-hop"]["recall_all@1"] == 1.0
    assert reranked["multi-hop"]["recall_any@1"] == 0.0
    assert reranked["adversarial"]["recall_any@1"] == 0.0
    assert report["per_category"]["multi-hop"]["recall_any@1"] == 1.0
    timing = report["timing"]
    assert timing["reranked_search_ms_excl_embed"]["p50"] > 0
    assert "CrossEncoderReranker" in report["config"]["reranker"]
    # A model file that is not the pinned one is refused, with one clear error.
    args = ["--data", str(data), "--qrels", str(qrels), "--embedder", "hashing"]
    pinned = ["--reranker-tokenizer", str(TOKENIZER), "--reranker-sha256", "0" * 64]
    assert bench.main([*args, "--reranker-model", str(model), *pinned]) == 2
    assert "expected 0000" in capsys.readouterr().err
