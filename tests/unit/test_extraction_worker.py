"""The background extraction worker (memory/worker.py, docs/memory-pipeline.md#modes):
a job failure is a warning, and a ``close`` whose time ran out drops the jobs not
started and does not report the one left running (the caller was warned already)."""

from __future__ import annotations

import threading
import warnings

from oam_core.memory.diagnostics import MemoryPipelineWarning
from oam_core.memory.worker import ExtractionWorker


def _failing_after(gate: threading.Event, started: threading.Event) -> None:
    started.set()
    gate.wait(30)
    raise RuntimeError("Cannot operate on a closed database.")


def test_a_failing_job_is_a_warning_and_the_worker_goes_on() -> None:
    worker = ExtractionWorker()
    ran: list[str] = []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        worker.submit("t1", lambda: 1 / 0)
        worker.submit("t2", lambda: ran.append("t2"))
        assert worker.wait(30)
    assert ran == ["t2"]
    assert [w.category for w in seen] == [MemoryPipelineWarning]
    assert "thread 't1' failed: ZeroDivisionError" in str(seen[0].message)
    assert worker.close(1)


def test_a_close_that_times_out_drops_queued_jobs_and_reports_nothing_more() -> None:
    worker = ExtractionWorker()
    gate, started = threading.Event(), threading.Event()
    ran: list[str] = []
    worker.submit("t1", lambda: _failing_after(gate, started))
    worker.submit("t2", lambda: ran.append("t2"))
    assert started.wait(30)
    assert worker.close(0.05) is False
    thread = worker._thread
    assert thread is not None
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        gate.set()  # the abandoned job now fails, as on a store its owner closed
        thread.join(30)
    assert not thread.is_alive()
    assert seen == [] and ran == []
