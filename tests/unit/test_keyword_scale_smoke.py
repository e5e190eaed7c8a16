"""Smoke test of ``bench/keyword_scale.py`` on a few hundred records."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).parents[2] / "bench" / "keyword_scale.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("keyword_scale", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_json_report_and_a_reused_file(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "ks.db"
    args = ["--records", "300", "--queries", "4", "--repeat", "2", "--db", str(db), "--json"]
    assert bench.main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["config"]["records"] == 300 and first["config"]["build_s"] > 0
    assert len(first["runs"]) == 2
    modes = ("bare", "bare_bm25", "keyword", "hybrid", "vector")
    for mode in (*modes, "bare_user", "keyword_user", "hybrid_user"):
        assert first["median"][f"{mode}_p50_ms"] > 0
    for mode in ("keyword", "hybrid", "bare_bm25", "keyword_user", "hybrid_user"):
        assert first["median"][f"{mode}_ratio_p50"] > 0
    for mode in ("keyword", "hybrid"):
        assert first["median"][f"{mode}_bm25_ratio_p50"] > 0
    assert bench.main(args) == 0  # reuses the file: nothing built
    assert json.loads(capsys.readouterr().out)["config"]["build_s"] is None


def test_the_same_seed_gives_the_same_queries(bench: ModuleType) -> None:
    a, b = bench.Corpus(3), bench.Corpus(3)
    assert [a.query() for _ in range(5)] == [b.query() for _ in range(5)]
    words = bench.Corpus(3).draw(2000, skip=bench.QUERY_SKIP)
    common = set(bench.Corpus(3).words[: bench.QUERY_SKIP])
    assert not common & set(words)
