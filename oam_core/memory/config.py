"""Memory-extraction settings accepted by the client and threads (SPEC §1, §6).

The extraction pipeline that honours them is built on top of these types; today a
thread persists them with its runtime configuration.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class MemoryExtractionMode(str, enum.Enum):
    """When extraction runs: ``INLINE`` before ``add_messages`` returns, or
    ``BACKGROUND`` on a worker (``wait_for_memory_extraction`` waits for it)."""

    INLINE = "INLINE"
    BACKGROUND = "BACKGROUND"


@dataclass(frozen=True)
class MemoryExtractionConfig:
    """Whether and how memories are extracted from thread messages.

    Args:
        extract_memories: Run automatic extraction (then an LLM is required).
        extraction_mode: ``MemoryExtractionMode`` (default ``INLINE``).
    """

    extract_memories: bool = True
    extraction_mode: MemoryExtractionMode = MemoryExtractionMode.INLINE


def check_extraction_mode(value: object) -> MemoryExtractionMode:
    """``value`` as a ``MemoryExtractionMode`` (a member or its name, any case).

    Raises:
        ValueError: naming the value, for anything else.
    """
    try:
        return MemoryExtractionMode(value.upper() if isinstance(value, str) else value)
    except ValueError:
        raise ValueError(
            f"extraction_mode must be a MemoryExtractionMode (INLINE or BACKGROUND), got {value!r}"
        ) from None
