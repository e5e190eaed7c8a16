"""Smoke test of ``bench/pg_scale.py`` (the store against bare pgvector SQL) at a tiny
size on the tests' PostgreSQL server (``tests/conformance/_pg.py``): the report has
every shape and variant, recalls are fractions, and below the store's exact threshold
the store's answers are the exact ones, so its top 1 is the bare exact statement's."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.pgload import pg_module

BENCH = Path(__file__).parents[2] / "bench" / "pg_scale.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pg_scale", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["pg_scale"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def url() -> str:
    pg = pg_module()
    try:
        return str(pg.conninfo_for(pg.new_schema()))
    except pg.ServerUnavailable as exc:
        pytest.skip(str(exc))


def test_the_report_holds_every_shape_and_exact_answers_below_the_threshold(
    bench: ModuleType, url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "truth.json"
    argv = ["--n", "400", "--queries", "12", "--warmup", "2", "--batch", "150"]
    argv += ["--partial-users", "2", "--db", url, "--truth-cache", str(cache), "--json"]
    assert bench.main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == 400 and report["queries"] == 12 and report["k"] == 10
    assert report["pgvector"] and report["iterative_scan"]
    assert report["load"]["load_rec_per_s"] > 0 and report["load"]["index_build_s"] > 0
    names = [name for name, _, _ in bench.variants(report["pgvector"])]
    assert set(report["results"]) == {"all", "user", "cat"}
    for shape, rows in report["results"].items():
        assert set(rows) == set(names) | ({"partial"} if shape == "user" else set())
        for name, row in rows.items():
            for side in ("store", "bare"):
                assert 0.0 <= row[side]["recall"] <= 1.0
                assert 0 < row[side]["p50_ms"] <= row[side]["p95_ms"]
            # 400 rows: the store ranks exactly (PgBackend.exact_below).
            assert row["store"]["recall"] == 1.0 and row["store"]["short"] == 0
            assert row["queries"] == (12 if name != "partial" else row["queries"])
    assert 0 < report["results"]["user"]["partial"]["queries"] <= 12
    assert report["partial_users"] == 2

    # The exact answers were kept: a second run reads them and ranks the same.
    truth = json.loads(cache.read_text())["truth"]
    work = bench.Workload(400, 12)
    runner = bench.Runner(url, "pgs400", work, truth, 0)
    try:
        for shape in ("all", "user", "cat"):
            for i in range(12):
                store = runner.store_search(shape, i)
                assert store[0] == truth[shape][i][0]
                # 400 records of 50 users: 8 per user.
                assert len(store) == len(truth[shape][i]) == (8 if shape == "user" else 10)
    finally:
        runner.close()
    argv[argv.index("--partial-users") + 1] = "0"
    assert bench.main([*argv, "--reuse"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["load"] == "reused" and again["exact_s"] == "cached"
    assert "partial" not in again["results"]["user"]
