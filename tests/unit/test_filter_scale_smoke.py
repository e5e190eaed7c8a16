"""Smoke test of ``bench/filter_scale.py`` on a few hundred records: every filter and
mode is timed, and oam's results equal the exact baseline's (a small store ranks
exactly)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).parents[2] / "bench" / "filter_scale.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("filter_scale", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["filter_scale"] = module  # its dataclass looks the module up
    spec.loader.exec_module(module)
    return module


def test_json_report_and_a_reused_file(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "fs.db"
    args = ["--records", "400", "--queries", "4", "--repeat", "2", "--db", str(db), "--json"]
    assert bench.main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["config"]["build_s"] > 0 and len(first["runs"]) == 2
    assert first["modes"] == ["numpy", "oam_cold", "oam_warm"]
    med = first["median"]
    for name in first["filters"]:
        for mode in first["modes"]:
            assert med[f"{name}/{mode}/p50_ms"] > 0
        for mode in ("oam_cold", "oam_warm"):
            assert med[f"{name}/{mode}/recall"] == 1.0, (name, mode)
    assert bench.main([*args, "--exact"]) == 0  # reuses the file: nothing built
    again = json.loads(capsys.readouterr().out)
    assert again["config"]["build_s"] is None and again["config"]["exact"] is True
    assert all(again["median"][f"{name}/oam_warm/recall"] == 1.0 for name in again["filters"])


def test_baseline_predicates_agree_with_the_filters(bench: ModuleType) -> None:
    from oam_core.filters import matches, parse_filter

    ds = bench.dataset(300, 3, seed=1)
    for cases in ds["cases"]:
        for case in cases:
            tree = parse_filter(case.flt)
            for meta in ds["metas"]:
                want = matches(meta, tree) and (case.user is None or meta["user"] == case.user)
                assert case.pred(meta) == want, case.name
