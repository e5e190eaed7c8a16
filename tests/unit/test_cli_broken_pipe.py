"""``oam export - | head``: when the reader of stdout leaves, the command stops
quietly with exit code 141 (128 + SIGPIPE, as a shell shows for a Unix tool a pipe's
reader left), no ``Error: [Errno 32] Broken pipe`` line (docs/cli.md#commands)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from oam_core import SQLiteMemoryStore


def _store_bigger_than_a_pipe(path: Path) -> None:
    """A store whose dump is far more than a pipe buffer (64 KiB on Linux)."""
    store = SQLiteMemoryStore(str(path))
    try:
        texts = [f"memory {i}: the user flies to Lisbon in March " * 4 for i in range(2000)]
        store.add(texts, "memory")
    finally:
        store.close()


def test_export_to_a_pipe_whose_reader_left_stops_quietly(tmp_path: Path) -> None:
    db = tmp_path / "big.db"
    _store_bigger_than_a_pipe(db)
    process = subprocess.Popen(
        [sys.executable, "-m", "oam_core.cli", "export", "-", "--db", str(db)],
        cwd=tmp_path,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    head = process.stdout.read(150)  # `head -c 150`, then the reader leaves
    process.stdout.close()
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=120) == 141
    assert head.startswith(b'{"format":"oam-dump","version":1,')
    assert stderr == ""
    assert db.exists()  # the store is untouched by the interrupted export


def test_export_to_a_reader_that_reads_everything_still_succeeds(tmp_path: Path) -> None:
    db = tmp_path / "big.db"
    _store_bigger_than_a_pipe(db)
    done = subprocess.run(
        [sys.executable, "-m", "oam_core.cli", "export", "-", "--db", str(db)],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2002  # the header, one line per memory, the end line
    assert lines[-1] == b'{"kind":"end","record_counts":{"memory":2000},"search_rows":2000}'
