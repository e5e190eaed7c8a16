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
    assert report["config"]["memories"] is None  # turns only
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
    assert report["config"]["records"] == report["config"]["memories"] == 5
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


@pytest.mark.parametrize("on", ["memories", "both"])
def test_memories_of_a_sample_not_in_the_data_are_refused(
    bench: ModuleType,
    files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    on: str,
) -> None:
    """A memory naming a sample the data lacks (``s1`` for ``s-1``) is an error, not
    dropped; one of a sample left out by ``--samples`` is passed over; ``config``
    counts the memories written."""
    data, qrels = files
    two = json.loads(data.read_text(encoding="utf-8"))
    two.append({**two[0], "sample_id": "s-2"})
    data.write_text(json.dumps(two), encoding="utf-8")
    memories = tmp_path / "memories.jsonl"
    other = {"sample_id": "s-2", "content": "Ana has a puppy.", "source_message_ids": ["D1:1"]}
    memories.write_text(MEMORIES.read_text() + json.dumps(other) + "\n", encoding="utf-8")
    args = ["--data", str(data), "--qrels", str(qrels), "--strategy", "keyword"]
    args += ["--on", on, "--memories", str(memories)]
    assert _run(bench, capsys, *args)["config"]["memories"] == 6
    only = _run(bench, capsys, *args, "--samples", "s-1")
    assert only["config"]["memories"] == 5 and only["config"]["samples"] == ["s-1"]
    typo = tmp_path / "typo.jsonl"
    typo.write_text(json.dumps({**other, "sample_id": "s1"}) + "\n", encoding="utf-8")
    args[-1] = str(typo)
    for samples in ([], ["--samples", "s-1"]):
        assert bench.main([*args, *samples, "--json", "--embedder", "hashing"]) == 2
        out, err = capsys.readouterr()
        assert out == "" and "1 memories name sample ids not in the data: ['s1']" in err


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


def test_turns_and_memories_together_through_the_client_search(
    bench: ModuleType, files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--on both``: the turns and the fixture's memories in one store, searched by
    ``OracleAgentMemory.search`` (a memory counts for its source turns; one drawn
    from a single turn is shown in its place); a result stands for its turn or its
    sources."""
    data, qrels = files
    dump = tmp_path / "ranked.jsonl"
    args = ["--data", str(data), "--qrels", str(qrels), "--strategy", "keyword", "--k", "2"]
    report = _run(
        bench,
        capsys,
        *args,
        *("--on", "both", "--memories", str(MEMORIES), "--per-question", str(dump)),
    )
    assert report["config"]["on"] == "both"
    assert report["config"]["records"] == 11  # 6 turns and 5 memories
    assert report["config"]["memories"] == 5
    # The puppy question's turn first; the Kyoto question's two turns at ranks 2-3
    # only: first comes D2:2, shown as the memory extracted from it alone ("Ana asked
    # Ben what the food in Kyoto was like", matching "Kyoto" in both lists).
    assert report["overall"] == {
        "recall_all@2": 0.5,
        "recall_any@2": 1.0,
        "session_hit@5": 1.0,
        "mrr@2": 0.75,
        "n": 2,
    }
    ranked = {
        row["qa_index"]: row["ranked"] for row in map(json.loads, dump.read_text().splitlines())
    }
    # The memory drawn from D2:1 and D2:3 divides its credit between them and keeps
    # its own entry, standing for both turns.
    assert ranked[1] == [["D2:2"], ["D2:3"], ["D2:1"], ["D2:1", "D2:3"]]
    # The obedience-class memory (from D1:1 and D1:3) keeps its entry too.
    assert ranked[2] == [["D1:3"], ["D1:1", "D1:3"]]
    assert (
        bench.main([*args, "--embedder", "hashing", "--on", "both", "--memories", str(MEMORIES)])
        == 0
    )
    assert "turn+memory-level recall" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bench.main([*args, "--on", "both"])
    with pytest.raises(ValueError, match="memories"):
        bench.run(
            data, qrels, strategy=bench.SearchStrategy.KEYWORD, k=1, embedder="hashing", on="both"
        )


def test_locomo_observations_become_the_memories_jsonl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bench/locomo_observations.py``: one memory per observation, its dialog ids as
    source message ids (one id, a list, or a string naming several), its session's
    date as timestamp."""
    spec = importlib.util.spec_from_file_location(
        "locomo_observations", BENCH.with_name("locomo_observations.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sample = {
        "sample_id": "s-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [_turn("Ana", "D1:1", "Hi."), _turn("Ben", "D1:2", "Hello.")],
            "session_2_date_time": "10:29 am on 9 August, 2023",
            "session_2": [_turn("Ben", "D2:1", "Kyoto!")],
        },
        "observation": {
            "session_2_observation": {"Ben": [["Ben went to Kyoto.", ["D2:1"]]]},
            "session_1_observation": {
                "Ana": [["Ana said hi.", "D1:1"], ["  ", "D1:1"]],
                "Ben": [["Ben greeted Ana.", "D1:2, D1:1; D1:2"], ["No source.", ""]],
            },
        },
        "qa": [],
    }
    data, out = tmp_path / "locomo.json", tmp_path / "memories.jsonl"
    data.write_text(json.dumps([sample]), encoding="utf-8")
    assert module.main(["--data", str(data), "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"wrote 4 memories to {out}\n"
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    may, august = "2023-05-08T13:56:00+00:00", "2023-08-09T10:29:00+00:00"
    assert rows == [
        {
            "sample_id": "s-1",
            "content": "Ana said hi.",
            "record_type": "memory",
            "source_message_ids": ["s-1:D1:1"],
            "timestamp": may,
        },
        {
            "sample_id": "s-1",
            "content": "Ben greeted Ana.",
            "record_type": "memory",
            "source_message_ids": ["s-1:D1:2", "s-1:D1:1"],
            "timestamp": may,
        },
        {
            "sample_id": "s-1",
            "content": "No source.",
            "record_type": "memory",
            "source_message_ids": [],
            "timestamp": may,
        },
        {
            "sample_id": "s-1",
            "content": "Ben went to Kyoto.",
            "record_type": "memory",
            "source_message_ids": ["s-1:D2:1"],
            "timestamp": august,
        },
    ]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{**sample, "observation": None}]), encoding="utf-8")
    assert module.main(["--data", str(bad), "--out", str(out)]) == 2
    assert "no observation object" in capsys.readouterr().err


@pytest.fixture
def latency(bench: ModuleType) -> ModuleType:
    """``bench/hybrid_latency.py``, importing the ``locomo_recall`` module loaded above."""
    spec = importlib.util.spec_from_file_location(
        "hybrid_latency", BENCH.with_name("hybrid_latency.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.lr is bench
    return module


def _latency_run(
    latency: ModuleType, capsys: pytest.CaptureFixture[str], *argv: str
) -> dict[str, Any]:
    assert latency.main([*argv, "--embedder", "hashing"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    report = json.loads(out)
    assert isinstance(report, dict)
    return report


@pytest.mark.parametrize("strategy", ["hybrid", "vector", "keyword"])
def test_hybrid_latency_reports_one_line_per_run(
    bench: ModuleType,
    latency: ModuleType,
    files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    strategy: str,
) -> None:
    """``bench/hybrid_latency.py`` on the synthetic file with the hashing embedder: the
    report's keys, the dump of the last pass, the kept stores of ``--db-dir``, and no
    embedding cache unless ``--embed-cache`` is given."""
    data, qrels = files
    db_dir, dump = tmp_path / "db", tmp_path / "dump.jsonl"

    def no_cache(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an embedding cache without --embed-cache")

    monkeypatch.setattr(bench, "CachedEmbedder", no_cache)
    args = ["--data", str(data), "--qrels", str(qrels), "--strategy", strategy]
    report = _latency_run(
        latency, capsys, *args, "--passes", "2", "--db-dir", str(db_dir), "--dump", str(dump)
    )
    assert list(report) == [
        "strategy",
        "mode",
        "questions",
        "cpu_p50_ms",
        "wall_p50_ms",
        "wall_p95_ms",
    ]
    # The three questions of s-1 with evidence (the adversarial one too); "other" is not
    # in the data, the question without evidence is skipped.
    assert (report["strategy"], report["mode"], report["questions"]) == (strategy, "2 passes", 3)
    assert report["cpu_p50_ms"] >= 0 and 0 < report["wall_p50_ms"] <= report["wall_p95_ms"]
    rows = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    assert [row[:2] for row in rows] == [["s-1", 0], ["s-1", 1], ["s-1", 2]]
    ids, distances = rows[0][2], rows[0][3]
    assert len(ids) == len(distances)
    if strategy == "keyword":  # turns sharing a term; "puppy" is only in D1:1
        assert ids[0] == "s-1:D1:1" and distances[0] == "0.0"
    else:
        assert len(ids) == 6  # every turn of s-1 (k = 10)
    assert [p.name for p in db_dir.iterdir()] == ["s-1.hashing.sqlite"]
    first = _latency_run(latency, capsys, *args, "--first-ask", "--db-dir", str(db_dir))
    assert (first["mode"], first["questions"]) == ("first-ask", 3)
    monkeypatch.undo()
    cache = tmp_path / "cache.sqlite"
    _latency_run(latency, capsys, *args, "--embed-cache", str(cache))
    assert cache.exists()


def test_hybrid_latency_defaults_and_errors(
    latency: ModuleType,
    files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its defaults are ``locomo_recall.py``'s (``../shared/data/locomo`` beside the
    checkout, the ``local`` embedder, no cache); the stores go to a temporary directory
    removed after the run; bad input exits 2."""
    parsed = latency._parser().parse_args([])
    assert parsed.data == latency.lr.DATA_DIR / "locomo_dev.json"
    assert parsed.qrels == latency.lr.DATA_DIR / "locomo_dev_qrels.jsonl"
    assert BENCH.resolve().parents[2] / "shared" / "data" / "locomo" == latency.lr.DATA_DIR
    assert (parsed.embedder, parsed.embed_cache, parsed.db_dir) == ("local", None, None)
    data, qrels = files
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(latency.tempfile, "tempdir", str(temp))
    _latency_run(latency, capsys, "--data", str(data), "--qrels", str(qrels))
    assert list(temp.iterdir()) == []  # the run's stores are gone
    args = ["--data", str(data), "--embedder", "hashing"]
    assert latency.main([*args, "--qrels", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read qrels" in capsys.readouterr().err
    other = tmp_path / "other.jsonl"
    other.write_text(qrels.read_text().splitlines()[-1] + "\n", encoding="utf-8")
    assert latency.main([*args, "--qrels", str(other)]) == 2
    assert "no question with evidence" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        latency.main([*args, "--qrels", str(qrels), "--passes", "0"])


def test_embedder_none_and_a_db_dir_that_is_a_file_are_one_error_line(
    bench: ModuleType,
    latency: ModuleType,
    files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Trial 50 f05: ``--embedder none`` (which the resolver's message offers) ended in
    an AssertionError, ``--db-dir`` naming a file in a FileExistsError traceback; each
    is now one ``error:`` line, exit 2, before any store is written."""
    data, qrels = files
    args = ["--data", str(data), "--qrels", str(qrels), "--strategy", "keyword"]
    for main in (bench.main, latency.main):
        assert main([*args, "--embedder", "none"]) == 2
        assert capsys.readouterr().err == (
            "error: --embedder 'none': the bench embeds every turn and needs an "
            "embedder (local, hashing, hashing/<dim>, a LiteLLM model id); "
            "--strategy keyword ranks by keywords with any of them\n"
        )
    plain = tmp_path / "plain.txt"
    plain.write_text("x", encoding="utf-8")
    for kept in (plain, plain / "sub"):
        assert latency.main([*args, "--embedder", "hashing", "--db-dir", str(kept)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: --db-dir {kept}: ") and err.count("\n") == 1
    assert plain.read_text(encoding="utf-8") == "x"


@pytest.mark.parametrize("on", ["memories", "both"])
def test_memories_get_the_same_ids_on_every_run(
    bench: ModuleType, files: tuple[Path, Path], on: str
) -> None:
    """Records at equal distances come out by type, then id: a memory's id must not
    change between runs, or ``--on both`` ranks ties differently each time."""
    data, _ = files
    conversations = bench.load_samples(data, None)["s-1"]
    memories = bench.load_memories(MEMORIES)
    by_sample = {"s-1": [m for m in memories if m.sample_id == "s-1"]}
    model = bench.loaded_model("hashing", None, None, bench.Timings())
    store = bench.open_store(None, "s-1", model, bench.SearchStrategy.KEYWORD)
    try:
        bench.ingest_sample(on, store, model, conversations, by_sample, bench.Timings())
        ids = sorted(
            r.id
            for record_type in ("memory", "fact", "preference", "guideline")
            for r in store.list(record_type, user_id="s-1")
        )
    finally:
        store.close()
    assert ids == sorted(f"s-1:mem{n}" for n in range(len(by_sample["s-1"])))
