"""Chat history writes that failed inside a LangChain listener, kept until the history's
next use reports them (docs/langchain.md#chat-history).

``RunnableWithMessageHistory`` stores a turn from a listener that runs after the chain
has produced its reply (``RootListenersTracer``); LangChain logs an error raised there
and returns the reply anyway (the tracer has no ``raise_error``, and nothing lets a
caller set it). A turn whose write was refused (a NUL or a lone surrogate in the
model's reply, say) would so be lost without a trace. This module remembers such a
failure per database and thread, and the next use of a history of that thread
(making one, reading ``messages``, writing, clearing) raises
``DroppedHistoryWriteError`` once, so the next turn of the chain fails loudly instead
of going on with a hole in the conversation.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Hashable
from types import FrameType

from oam_core import OracleAgentMemory
from oam_core.errors import OAMError

__all__ = ["DroppedHistoryWriteError", "in_langchain_listener", "remember", "take"]

_LISTENER_MODULE = "langchain_core.tracers.root_listeners"
_LOCK = threading.Lock()
_BY_CLIENT: weakref.WeakKeyDictionary[OracleAgentMemory, dict[str, DroppedHistoryWriteError]] = (
    weakref.WeakKeyDictionary()
)
_BY_CONNECTION: dict[Hashable, dict[str, DroppedHistoryWriteError]] = {}


class DroppedHistoryWriteError(OAMError, RuntimeError):
    """An earlier write of a chat history failed inside a LangChain listener, which
    LangChain only logs: that turn was answered but not stored. Raised once, by the
    next use of a history of the same thread; ``__cause__`` is the original error
    (docs/langchain.md#chat-history)."""


def in_langchain_listener() -> bool:
    """Whether the caller runs inside LangChain's root listener (the callback through
    which ``RunnableWithMessageHistory`` and ``with_listeners`` call a history),
    whose errors LangChain logs and drops."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == _LISTENER_MODULE:
            return True
        frame = frame.f_back
    return False


def _pending(owner: OracleAgentMemory | Hashable) -> dict[str, DroppedHistoryWriteError]:
    if isinstance(owner, OracleAgentMemory):
        return _BY_CLIENT.setdefault(owner, {})
    return _BY_CONNECTION.setdefault(owner, {})


def remember(
    owner: OracleAgentMemory | Hashable, thread_id: str, count: int, error: BaseException
) -> None:
    """Keep ``error`` (the failure of a write of ``count`` messages to ``thread_id``)
    for the next use of a history of that thread; ``owner`` is the client the
    histories share, or the ``connection`` of histories that open their own."""
    dropped = DroppedHistoryWriteError(
        f"the last write to chat history {thread_id!r} ({count} messages) failed inside a "
        "LangChain listener (RunnableWithMessageHistory stores a turn after the chain has "
        "answered, and LangChain only logs a listener's error), so that turn was answered "
        f"but not stored: {type(error).__name__}: {error}. This call fails so that the "
        "conversation does not go on without it; the next call works again"
    )
    dropped.__cause__ = error
    with _LOCK:
        _pending(owner)[thread_id] = dropped


def take(owner: OracleAgentMemory | Hashable, thread_id: str) -> None:
    """Raise (and forget) the failure ``remember`` kept for ``thread_id``, if any.

    Raises:
        DroppedHistoryWriteError: naming the thread and the original error.
    """
    with _LOCK:
        if isinstance(owner, OracleAgentMemory):
            pending = _BY_CLIENT.get(owner)
        else:
            pending = _BY_CONNECTION.get(owner)
        dropped = pending.pop(thread_id, None) if pending else None
    if dropped is not None:
        raise dropped
