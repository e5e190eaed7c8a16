"""Warnings of the LLM pipeline (docs/memory-pipeline.md#failures-never-lose-messages).

A pass that cannot complete (LLM error, unusable reply, oversized input) never fails
``add_messages``: the messages are already stored. It warns with
``MemoryPipelineWarning`` (filterable with the ``warnings`` module) and logs the same
text on the ``"oam"`` logger.
"""

from __future__ import annotations

import logging
import os
import sys
import sysconfig
import warnings

__all__ = ["MemoryPipelineWarning", "pipeline_warning"]

logger = logging.getLogger("oam")


class MemoryPipelineWarning(UserWarning):
    """An extraction, summary or shortening step was skipped or degraded."""


def pipeline_warning(message: str) -> None:
    """Warn with ``MemoryPipelineWarning`` and log ``message`` at WARNING level.

    The warning points at the caller's code (the first frame outside ``oam`` and the
    standard library), so Python's display shows the caller's line, never a line of
    ``oam``; from the background worker, which has no caller, it names no source
    line at all (``oam-extraction:0``).
    """
    logger.warning(message)
    level = _caller_stacklevel()
    if level is None:
        warnings.warn_explicit(message, MemoryPipelineWarning, "oam-extraction", 0, module="oam")
    else:
        warnings.warn(message, MemoryPipelineWarning, stacklevel=level)


def _library_dirs() -> tuple[str, ...]:
    """Directories whose frames are not the caller's: ``oam``'s packages (with the
    framework adapters when loaded) and the standard library."""
    dirs = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    for name in ("langchain_oam", "llama_index_oam"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            dirs.append(os.path.dirname(os.path.abspath(module.__file__ or "")))
    dirs.append(sysconfig.get_paths()["stdlib"])
    return tuple(d.rstrip(os.sep) + os.sep for d in dirs)


def _caller_stacklevel() -> int | None:
    """``warnings.warn``'s ``stacklevel`` of the first frame outside ``_library_dirs``,
    counted from ``pipeline_warning``; None when the stack holds none."""
    library = _library_dirs()
    frame = sys._getframe(2)  # pipeline_warning's caller
    level = 2
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith("<frozen ") and not os.path.abspath(filename).startswith(
            library
        ):
            return level
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return None
