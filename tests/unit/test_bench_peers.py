"""Smoke test of ``bench/peers.py``: numpy and oam on a few hundred records, each in
its own subprocess, through ``main``; the oam figures must be real (exact recall on
a store that small)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "bench" / "peers.py"


def test_peers_table_and_json(tmp_path: Path) -> None:
    out = tmp_path / "peers.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--n",
            "400",
            "--peers",
            "numpy,oam",
            "--batch",
            "100",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    assert "| 400 | oam |" in proc.stdout and "| 400 | numpy |" in proc.stdout
    runs = json.loads(out.read_text())["runs"]
    oam = runs["oam@400"][0]
    assert oam["search"]["recall"] == 1.0 and oam["user"]["recall"] == 1.0
    assert oam["add_per_s"] > 0 and oam["reopen_first_search_s"] > 0
    assert oam["index_ready_s"] > 0
    assert runs["numpy@400"][0]["search"]["recall"] == 1.0
