"""Memory-extraction settings accepted by the client and threads (docs/memory-pipeline.md#extraction-cadence).

The extraction pipeline that honours them is built on top of these types; today a
thread persists them with its runtime configuration.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from oam_core.errors import InvalidArgumentError
from oam_core.llms.bounded import DEFAULT_LLM_CALL_TIMEOUT, check_call_timeout


class MemoryExtractionMode(str, enum.Enum):
    """When extraction runs: ``INLINE`` before ``add_messages`` returns, or
    ``BACKGROUND`` on a worker (``wait_for_memory_extraction`` waits for it)."""

    INLINE = "INLINE"
    BACKGROUND = "BACKGROUND"


@dataclass(frozen=True)
class MemoryExtractionConfig:
    """Whether and how memories are extracted from thread messages.

    Args:
        extract_memories: Run automatic extraction (then an LLM is required). None
            (the default): not chosen here, so a config that only sets the mode or
            ``llm_call_timeout`` (which also bounds query rewriting) combines with
            ``extract_memories=False``; with nothing else given, extraction runs
            (a client) or follows the client (a thread).
        extraction_mode: ``MemoryExtractionMode`` (default ``INLINE``).
        llm_call_timeout: Seconds one LLM call of the pipeline (extraction, summary,
            shortening) may take; a call that overruns fails its pass like any LLM
            error (the messages stay pending). None: no bound. Checked when the
            config is used.

    Raises:
        ValueError: for a ``llm_call_timeout`` that is not None or a number > 0.
    """

    extract_memories: bool | None = None
    extraction_mode: MemoryExtractionMode = MemoryExtractionMode.INLINE
    llm_call_timeout: float | None = DEFAULT_LLM_CALL_TIMEOUT

    def __post_init__(self) -> None:
        check_call_timeout(self.llm_call_timeout)


def check_extraction_mode(value: object) -> MemoryExtractionMode:
    """``value`` as a ``MemoryExtractionMode`` (a member or its name, any case).

    Raises:
        ValueError: naming the value, for anything else.
    """
    try:
        return MemoryExtractionMode(value.upper() if isinstance(value, str) else value)
    except ValueError:
        raise InvalidArgumentError(
            f"extraction_mode must be a MemoryExtractionMode (INLINE or BACKGROUND), got {value!r}"
        ) from None
