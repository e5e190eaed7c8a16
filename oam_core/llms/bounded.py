"""A time bound on every call to a caller's LLM (docs/memory-pipeline.md, "Time bounds").

The memory pipeline calls whatever ``ILlm`` the caller gave it. One that never
returns would block ``add_messages`` (INLINE) or the background worker, and with it
``close()``, forever. ``BoundedLlm`` wraps the model so each call either returns
within ``timeout`` seconds or raises ``TimeoutError``; the pipeline then counts the
pass as failed and keeps its messages for the next pass, as for any LLM error.

A Python thread cannot be stopped from outside, so a sync call that overruns is left
to finish on its own daemon thread (its result is dropped) and never keeps the
interpreter from exiting. An async call is cancelled; when the model only has the
default ``generate_async`` (its ``generate`` in a worker thread), that thread is
abandoned the same way.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import anyio
import anyio.to_thread

from oam_core.apis.llm import ILlm
from oam_core.checks import check_optional_seconds, check_seconds
from oam_core.errors import InvalidArgumentError

__all__ = ["DEFAULT_LLM_CALL_TIMEOUT", "BoundedLlm", "check_call_timeout"]

DEFAULT_LLM_CALL_TIMEOUT = 600.0
"""Seconds one pipeline LLM call may take by default (longer than ``LiteLLMLlm``'s
own timeout and retries, so those act first)."""


def check_call_timeout(value: object, name: str = "llm_call_timeout") -> float | None:
    """A per-call time bound: None (no bound) or a finite number of seconds > 0.

    Raises:
        InvalidArgumentError: naming ``name`` and the value, for anything else.
    """
    return check_optional_seconds(value, name)


class BoundedLlm(ILlm):
    """``inner`` with each ``generate``/``generate_async`` call bounded to ``timeout``.

    Args:
        inner: The model to call.
        timeout: Seconds per call (> 0).

    Raises:
        InvalidArgumentError: for a bad ``timeout`` or an ``inner`` that is not an
            ``ILlm``.
    """

    def __init__(self, inner: ILlm, timeout: float) -> None:
        if not isinstance(inner, ILlm):
            raise InvalidArgumentError(f"inner must be an ILlm, got {type(inner).__name__}")
        self.inner = inner
        self.timeout = check_seconds(timeout, "timeout")

    def __repr__(self) -> str:
        return f"BoundedLlm({self.inner!r}, timeout={self.timeout})"

    def _overrun(self) -> TimeoutError:
        # Only the fact: what follows is the caller's to say (a pipeline pass is
        # retried later; a context card's query rewrite is not).
        return TimeoutError(
            f"{type(self.inner).__name__} did not answer within {self.timeout:g} s "
            "(llm_call_timeout)"
        )

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        """``inner.generate`` on a daemon thread, waited for at most ``timeout``.

        Raises:
            TimeoutError: when the call did not return in time.
            Exception: whatever ``inner.generate`` raised.
        """
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                outcome["reply"] = self.inner.generate(
                    prompt, response_json_schema=response_json_schema
                )
            except BaseException as exc:  # handed to the caller's thread
                outcome["error"] = exc
            finally:
                done.set()

        threading.Thread(target=run, name="oam-llm-call", daemon=True).start()
        if not done.wait(self.timeout):
            raise self._overrun()
        if "error" in outcome:
            raise outcome["error"]
        reply: str = outcome["reply"]
        return reply

    async def generate_async(
        self, prompt: str, *, response_json_schema: dict[str, Any] | None = None
    ) -> str:
        """``inner.generate_async``, cancelled after ``timeout``.

        Raises:
            TimeoutError: when the call did not return in time.
            Exception: whatever ``inner.generate_async`` raised.
        """
        with anyio.move_on_after(self.timeout):
            if type(self.inner).generate_async is ILlm.generate_async:
                call = functools.partial(
                    self.inner.generate, prompt, response_json_schema=response_json_schema
                )
                return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
            return await self.inner.generate_async(
                prompt, response_json_schema=response_json_schema
            )
        raise self._overrun()
