"""The pipeline's progress on a thread, as kept in the thread row's ``state``
(docs/memory-pipeline.md#what-a-pass-does).

The state is a JSON object with one entry per kind of pass: ``"memory_extraction"``
and ``"context_summary"`` (which also holds the running summary). ``PassProgress``
reads one entry into typed fields and writes it back; keys it does not know are
kept as they are, so a state written by another version survives a pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["PassProgress"]

_INTS = ("passes", "memories", "attempts", "failed_passes", "skipped_messages")
_KNOWN = frozenset({*_INTS, "watermark", "attempts_upto", "summary", "topics"})


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


@dataclass(frozen=True)
class PassProgress:
    """One kind of pass's entry in a thread row's ``state``.

    Attributes:
        watermark: ``seq_no`` of the last message a pass covered; -1 before the first.
        passes: Passes committed.
        memories: Memories written (extraction).
        attempts: Consecutive passes whose reply was unusable.
        attempts_upto: The smallest last ``seq_no`` among those passes, or None.
        failed_passes: Passes that failed (LLM error or unusable reply).
        skipped_messages: Messages given up on after ``MAX_ATTEMPTS`` unusable replies.
        summary: The running summary text (summary passes), or None.
        topics: The running summary's topics, or None.
        others: Keys of the entry this version does not know, kept unchanged.
    """

    watermark: int = -1
    passes: int = 0
    memories: int = 0
    attempts: int = 0
    attempts_upto: int | None = None
    failed_passes: int = 0
    skipped_messages: int = 0
    summary: str | None = None
    topics: tuple[str, ...] | None = None
    others: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, state: Mapping[str, Any], key: str) -> PassProgress:
        """The entry ``key`` of ``state`` (defaults for a missing or malformed one)."""
        entry = state.get(key)
        if not isinstance(entry, Mapping):
            return cls()
        upto = entry.get("attempts_upto")
        summary = entry.get("summary")
        topics = entry.get("topics")
        return cls(
            watermark=_int(entry.get("watermark"), -1),
            attempts_upto=_int(upto, 0) if isinstance(upto, int) else None,
            summary=summary if isinstance(summary, str) else None,
            topics=tuple(topics) if isinstance(topics, list) else None,
            others={k: v for k, v in entry.items() if k not in _KNOWN},
            **{name: _int(entry.get(name), 0) for name in _INTS},
        )

    def entry(self) -> dict[str, Any]:
        """The JSON object stored under the pass's key (unset fields left out)."""
        out: dict[str, Any] = dict(self.others)
        if self.watermark >= 0:
            out["watermark"] = self.watermark
        for name in _INTS:
            out[name] = getattr(self, name)
        if self.attempts_upto is not None:
            out["attempts_upto"] = self.attempts_upto
        if self.summary is not None:
            out["summary"] = self.summary
        if self.topics is not None:
            out["topics"] = list(self.topics)
        return out

    def advanced(self, watermark: int, **changes: Any) -> PassProgress:
        """This progress with the watermark moved to ``watermark`` and the unusable
        reply count reset (a pass got past its messages), plus ``changes``."""
        return replace(self, watermark=watermark, attempts=0, attempts_upto=None, **changes)

    def into(self, state: Mapping[str, Any], key: str) -> dict[str, Any]:
        """A copy of ``state`` with this progress under ``key``."""
        new = dict(state)
        new[key] = self.entry()
        return new
