"""Background worker for ``MemoryExtractionMode.BACKGROUND`` (docs/memory-pipeline.md#modes).

One daemon thread runs queued pipeline runs in order. Runs are keyed by thread id: a
run queued for a thread that already has one waiting is merged into it (the waiting
run will see every message anyway, because passes read the persisted watermark).
Nothing is lost if the process exits with work queued: the messages are stored and
the watermark is behind, so the next pass on that thread picks them up.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from oam_core.checks import check_optional_seconds
from oam_core.errors import ConfigurationError
from oam_core.memory.diagnostics import logger, pipeline_warning

__all__ = ["ExtractionWorker"]

_MAX_WAIT = 3600.0
"""Longest single condition wait (seconds); longer timeouts wait in several steps."""


class ExtractionWorker:
    """A single background thread that runs pipeline jobs, one at a time.

    Jobs never raise out of the worker: an exception becomes a
    ``MemoryPipelineWarning`` and the worker goes on. A ``ConfigurationError`` (no
    API key, for example) is reported once per worker and message, then only
    logged at DEBUG: every later job would repeat it until the setup is fixed.
    """

    def __init__(self, name: str = "oam-extraction") -> None:
        self._name = name
        self._cond = threading.Condition()
        self._queue: OrderedDict[str, Callable[[], object]] = OrderedDict()
        self._running: str | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._abandoned = False  # close timed out: what is left is not reported
        self._reported: set[str] = set()  # ConfigurationError messages already warned

    def submit(self, key: str, job: Callable[[], object]) -> None:
        """Queue ``job`` for ``key`` (a thread id); merged with a waiting job of the
        same key.

        Raises:
            RuntimeError: after ``close``.
        """
        with self._cond:
            if self._closed:
                raise RuntimeError("the extraction worker is closed")
            self._queue[key] = job
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def _busy(self, key: str | None) -> bool:
        if key is None:
            return bool(self._queue) or self._running is not None
        return key in self._queue or self._running == key

    def wait(self, timeout: float | None = None, key: str | None = None) -> bool:
        """Block until the queued work (of ``key``, or all) has finished.

        Args:
            timeout: Seconds to wait at most; None waits as long as it takes.
            key: Only wait for this thread id's work.

        Returns:
            True when the work finished, False when ``timeout`` expired first.

        Raises:
            ValueError: for a negative ``timeout``.
        """
        timeout = check_optional_seconds(timeout, "timeout", zero=True)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._busy(key):
                if threading.current_thread() is self._thread:
                    return False  # called from a job: waiting on itself would deadlock
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(None if remaining is None else min(remaining, _MAX_WAIT))
            return True

    def close(self, timeout: float | None = None) -> bool:
        """Finish the queued work, then stop accepting jobs. Returns ``wait``'s result.

        When ``timeout`` expires first, the jobs not started are dropped (their
        messages stay pending for the next pass) and the running one is left to end
        on its own; its failure, likely once the owner closed the store, is logged
        at DEBUG only: the caller was already warned that the work was abandoned.
        """
        drained = self.wait(timeout)
        with self._cond:
            self._closed = True
            if not drained:
                self._abandoned = True
                self._queue.clear()
            self._cond.notify_all()
        return drained

    def _report_once(self, exc: ConfigurationError) -> None:
        message = str(exc)
        if message in self._reported:
            logger.debug("background memory extraction still cannot run: %s", message)
            return
        self._reported.add(message)
        pipeline_warning(
            f"background memory extraction cannot run: {message} (messages are stored "
            "and extracted by the first pass after this is fixed)"
        )

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    if self._closed:
                        return
                    self._cond.wait(1.0)
                    if not self._queue and not self._closed:
                        # Idle: let the thread end; submit starts a new one.
                        self._thread = None
                        return
                key, job = self._queue.popitem(last=False)
                self._running = key
            try:
                job()
            except ConfigurationError as exc:
                self._report_once(exc)
            except Exception as exc:
                if self._abandoned:
                    logger.debug("abandoned background extraction for %r ended: %r", key, exc)
                else:
                    pipeline_warning(
                        f"background memory extraction for thread {key!r} failed: {exc!r}"
                    )
            finally:
                with self._cond:
                    self._running = None
                    self._cond.notify_all()
