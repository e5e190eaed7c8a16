"""Smoke test of ``bench/fusion_lab.py``: on tiny PrefEval-shaped files (those of
``test_prefeval_bench_smoke.py``) its replay of the store's fusion gives the store's
own ranking, and ``base`` replays the store without the topic vector."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.unit.test_prefeval_bench_smoke import BENCH_DIR, data  # noqa: F401


@pytest.fixture(scope="module")
def lab() -> ModuleType:
    sys.path.insert(0, str(BENCH_DIR))
    try:
        spec = importlib.util.spec_from_file_location("fusion_lab", BENCH_DIR / "fusion_lab.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["fusion_lab"] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH_DIR))


@pytest.mark.parametrize("task", ["memories", "conversation"])
def test_the_replay_is_the_store_s_ranking(
    lab: ModuleType,
    data: tuple[Path, Path],  # noqa: F811
    task: str,
) -> None:
    prefs, locomo = data
    cases = lab.capture(task, [0.5, 1.0], None, prefs, locomo, lab.DEPTH, "hashing")
    assert len(cases) == 5
    # Topics sorted: food (half a, 2 questions), travel (half b, 3 questions).
    assert [c.half for c in cases] == ["a", "a", "b", "b", "b"]
    # Every question asks for advice ("Which restaurant should I book?", ...).
    assert all(c.advice for c in cases)
    assert lab.mismatches(cases) == 0
    for case in cases:
        assert set(case.vector) == {"base", "minus@0.5", "minus@1.0"}
        assert len(case.store) <= 10 and case.target in case.ids.values()
    scores = lab.score(cases, "both@1.0")
    assert set(scores) == {f"r@{k} {g}" for k in (5, 10) for g in ("all", "a", "b")}
    assert all(0.0 <= v <= 1.0 for v in scores.values())
