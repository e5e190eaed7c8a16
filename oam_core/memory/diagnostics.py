"""Warnings of the LLM pipeline (docs/memory-pipeline.md#failures-never-lose-messages).

A pass that cannot complete (LLM error, unusable reply, oversized input) never fails
``add_messages``: the messages are already stored. It warns with
``MemoryPipelineWarning`` (filterable with the ``warnings`` module) and logs the same
text on the ``"oam"`` logger.
"""

from __future__ import annotations

import logging
import warnings

__all__ = ["MemoryPipelineWarning", "pipeline_warning"]

logger = logging.getLogger("oam")


class MemoryPipelineWarning(UserWarning):
    """An extraction, summary or shortening step was skipped or degraded."""


def pipeline_warning(message: str, *, stacklevel: int = 3) -> None:
    """Warn with ``MemoryPipelineWarning`` and log ``message`` at WARNING level."""
    logger.warning(message)
    warnings.warn(message, MemoryPipelineWarning, stacklevel=stacklevel)
