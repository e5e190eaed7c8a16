"""Update decisions of an extraction reply, checked against what the prompt showed
(docs/memory-pipeline.md#update-decisions).

Pure functions, no I/O. The model answers each item with ``ADD``, ``UPDATE``,
``DELETE`` or ``NOOP`` (``memory/extraction.py`` parses it); ``resolve_decisions``
decides what is really done, so that a small or confused model cannot touch a memory
it was not shown nor store a memory twice:

* ``UPDATE`` or ``DELETE`` of a ``target_id`` that the prompt did not show (or
  none): ``UPDATE`` becomes ``ADD``, ``DELETE`` does nothing; one warning each. The
  same for a target that an earlier item of the reply already changed, and for a
  shown record that the application that wrote it manages (its reserved
  ``managed`` mark, ``provenance.is_managed``: a LangGraph item of ``OAMStore``):
  the prompt shows it so the model knows the fact, but the pass never changes it.
* A candidate (``ADD`` or ``UPDATE``) whose normalized text (``normalized_text``)
  equals that of a shown memory of the same type, of a stored current memory of the
  same type that repeats it (``memory/repeats.py`` looks them up), or of an earlier
  candidate of the same reply of the same type, is ``NOOP`` whatever the model said
  (checked first: its target is then left alone, without a warning). The shown and
  stored memories are those of the thread's user and agent, so this compares within
  one scope. A managed record counts for repeats like any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from oam_core.apis.records import Record
from oam_core.memory.diagnostics import pipeline_warning
from oam_core.memory.extraction import ADD, DELETE, NOOP, UPDATE, ExtractedMemory
from oam_core.memory.provenance import is_managed

__all__ = ["Decision", "normalized_text", "resolve_decisions"]

_FINAL_PUNCTUATION = ".!?;:,\u2026"


@dataclass(frozen=True)
class Decision:
    """What the pass does with one reply item.

    Attributes:
        action: ``ADD`` (store ``memory.text``), ``UPDATE`` (store it and supersede
            ``target``), ``DELETE`` (invalidate ``target``) or ``NOOP``.
        memory: The item as parsed.
        target: The shown memory an ``UPDATE`` or ``DELETE`` changes; None otherwise.
    """

    action: str
    memory: ExtractedMemory
    target: Record | None = None

    @property
    def stores(self) -> bool:
        """Whether the decision writes a new memory (``ADD`` or ``UPDATE``)."""
        return self.action in (ADD, UPDATE)


def normalized_text(text: str) -> str:
    """``text`` compared for repeats: case folded, runs of whitespace made one space,
    final punctuation (``. ! ? ; : , …``) and outer spaces removed.

    >>> normalized_text("  Ana  lives in BERLIN. ")
    'ana lives in berlin'
    """
    return " ".join(text.casefold().split()).rstrip(_FINAL_PUNCTUATION + " ")


def resolve_decisions(
    memories: Sequence[ExtractedMemory],
    shown: Sequence[Record],
    stored: Sequence[Record] = (),
) -> list[Decision]:
    """The decisions to apply for ``memories``, in order (one per item).

    Args:
        memories: The parsed reply items, in reply order.
        shown: The related memories the prompt showed (current memories of the
            thread's user and agent); targets are looked up among them by id.
        stored: Other current memories of the same user and agent that repeat a
            candidate (``memory/repeats.py`` finds them in the store): compared for
            repeats like ``shown``, never targets.

    Returns:
        One ``Decision`` per item. Emits one ``MemoryPipelineWarning`` per
        ``UPDATE``/``DELETE`` (that is not a repeat) whose target was not shown,
        missing, already changed by an earlier item, or managed by the application
        that wrote it (``provenance.is_managed``).
    """
    by_id = {record.id: record for record in shown}
    known = {(r.record_type, normalized_text(r.content or "")) for r in (*shown, *stored)}
    changed: set[str] = set()
    decisions = []
    for memory in memories:
        action, target = memory.decision, None
        key = (memory.record_type, normalized_text(memory.text))
        if action in (ADD, UPDATE) and key in known:
            action = NOOP  # a repeat, whatever the model said (and whatever its target)
        elif action in (UPDATE, DELETE):
            action, target = _checked_target(memory, by_id, changed)
        if action in (ADD, UPDATE):
            known.add(key)
        if target is not None:
            changed.add(target.id)
        decisions.append(Decision(action, memory, target))
    return decisions


def _checked_target(
    memory: ExtractedMemory, by_id: dict[str, Record], changed: set[str]
) -> tuple[str, Record | None]:
    """``(action, target)`` for an ``UPDATE``/``DELETE`` item: as asked when its target
    was shown, not changed yet and not managed by its writer; else ``ADD``/``NOOP``
    with a warning."""
    target = by_id.get(memory.target_id or "")
    if target is not None and target.id not in changed and not is_managed(target):
        return memory.decision, target
    if memory.target_id is None:
        problem = "names no target_id"
    elif target is None:
        problem = f"names target_id {memory.target_id!r}, which the prompt did not show"
    elif target.id in changed:
        problem = f"names target_id {memory.target_id!r}, which an earlier item already changed"
    else:
        problem = (
            f"names target_id {memory.target_id!r}, which is managed by the application "
            "that wrote it"
        )
    fallback = ADD if memory.decision == UPDATE else NOOP
    outcome = "stored as a new memory (ADD)" if fallback == ADD else "ignored"
    label = repr(memory.text[:60]) if memory.text else "without text"
    pipeline_warning(f"extraction reply item {label}: {memory.decision} {problem}; {outcome}")
    return fallback, None
