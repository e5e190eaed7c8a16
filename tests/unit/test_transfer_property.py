"""Property: after ``copy_store`` (and after an export and import) between two real
SQLite files, every read answers the same, for random stores of every kind of row
(docs/transfer.md). The generator and the reads are those of
tests/conformance/test_transfer.py, which runs the same on PostgreSQL."""

from __future__ import annotations

import importlib.util
import io
import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oam_core import SQLiteMemoryStore, copy_store, export_store, import_store
from oam_core.embedders.hashing import HashingEmbedder

HERE = Path(__file__).resolve().parents[1] / "conformance" / "test_transfer.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_transfer", HERE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["conformance_transfer"] = module
    spec.loader.exec_module(module)
    return module


CASES = _module()
SIZED = "OAM_TRANSFER_TEST_RECORDS" in os.environ
"""A longer run: every example of ``OAM_TRANSFER_TEST_RECORDS`` records, and
``OAM_TRANSFER_TEST_EXAMPLES`` examples (default 1); CI draws 6 of 20 to 200."""
SIZES = st.just(CASES.RECORDS) if SIZED else st.integers(20, 200)
EXAMPLES = int(os.environ.get("OAM_TRANSFER_TEST_EXAMPLES", "1" if SIZED else "6"))


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        from datetime import timedelta

        self.now += timedelta(**delta)
        return self.now


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=SIZES)
def test_copy_and_round_trip_keep_everything(seed: int, n: int) -> None:
    clock = Clock()
    with tempfile.TemporaryDirectory() as tmp:
        stores = [
            SQLiteMemoryStore(f"{tmp}/{name}.db", embedder=HashingEmbedder(64), clock=clock)
            for name in ("a", "b", "c")
        ]
        a, b, c = stores
        try:
            CASES.populate(a, clock, n, seed)
            copy_store(a, b)
            buffer = io.BytesIO()
            export_store(a, buffer)
            buffer.seek(0)
            import_store(c, buffer)
            a.purge_expired()
            expected = CASES.state(a)
            assert CASES.state(b) == expected
            assert CASES.state(c) == expected
            assert CASES.dump_lines(b) == CASES.dump_lines(a) == CASES.dump_lines(c)
        finally:
            for store in stores:
                store.close()
