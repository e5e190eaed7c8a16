"""Repeats of stored memories: the candidates of an extraction reply that a current
memory already says (docs/memory-pipeline.md#update-decisions).

The prompt shows at most ``RELATED_MEMORY_COUNT`` memories, so a copy of a candidate
further down the ranking is not among them. Before the pass commits,
``stored_repeats_steps`` looks each remaining ``ADD``/``UPDATE`` candidate up in the
store: a keyword search of its text among the current memories of the thread's user
and agent (any thread) of its type, ``REPEAT_SEARCH_K`` results, whose normalized
texts (``decisions.normalized_text``) are compared with the candidate's. What it
finds counts as known in ``decisions.resolve_decisions``: such a candidate is a
``NOOP``.

Its limit: a copy ranked below ``REPEAT_SEARCH_K`` memories that share the
candidate's words, or a text without a keyword term (only punctuation; on
PostgreSQL only stop words), is not found; nor is a copy another writer stores
between the look-up and the commit. A store that serves only another strategy (an
Oracle Database store opened for vectors) searches its own way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from oam_core.apis.records import Record
from oam_core.checks import strategy_of
from oam_core.errors import ConfigurationError, InvalidArgumentError
from oam_core.memory.decisions import normalized_text
from oam_core.memory.extraction import ADD, UPDATE, ExtractedMemory
from oam_core.steps import Steps, call
from oam_core.store.options import SearchStrategy

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

__all__ = ["REPEAT_SEARCH_K", "stored_repeats_steps"]

REPEAT_SEARCH_K = 10
"""Results of the search that looks one candidate up among the stored memories."""


def stored_repeats_steps(
    store: OracleMemoryStore,
    user_id: str | None,
    agent_id: str | None,
    memories: Sequence[ExtractedMemory],
    shown: Sequence[Record],
) -> Steps[list[Record]]:
    """The current memories of ``user_id`` and ``agent_id`` (exactly; any thread)
    whose type and normalized text equal those of an ``ADD`` or ``UPDATE`` item of
    ``memories`` that no memory of ``shown`` already repeats.

    All lookups run in one step (one call; under async one worker thread), one
    search per distinct candidate (type and normalized text).

    Args:
        store: The thread's store.
        user_id, agent_id: The thread's scope.
        memories: The parsed reply items.
        shown: The memories the prompt showed (compared by ``resolve_decisions``
            already, so not looked up).

    Returns:
        The stored repeats found (each once), possibly none.
    """
    known = {(r.record_type, normalized_text(r.content or "")) for r in shown}
    wanted: dict[tuple[str, str], str] = {}
    for memory in memories:
        key = (memory.record_type, normalized_text(memory.text))
        if memory.decision in (ADD, UPDATE) and key[1] and key not in known:
            wanted.setdefault(key, memory.text)
    if not wanted:
        return []
    found: list[Record] = yield from call(_look_up, store, user_id, agent_id, wanted)
    return found


def _look_up(
    store: OracleMemoryStore,
    user_id: str | None,
    agent_id: str | None,
    wanted: dict[tuple[str, str], str],
) -> list[Record]:
    """Search each wanted text (``{(type, normalized text): text}``) among the current
    memories of the scope and keep the results that repeat it."""
    found: dict[str, Record] = {}
    with contextlib.ExitStack() as block:
        try:
            block.enter_context(store.searching_with(SearchStrategy.KEYWORD))
        except ConfigurationError:  # an Oracle store ranks only as it was opened
            if store.embedder is None and strategy_of(store) is not SearchStrategy.KEYWORD:
                return []  # such a store cannot rank text (store.search would refuse)
        for (record_type, normalized), text in wanted.items():
            try:
                hits = store.search(
                    text,
                    k=REPEAT_SEARCH_K,
                    user_id=user_id,
                    agent_id=agent_id,
                    exact_user_match=True,
                    exact_agent_match=True,
                    record_types={record_type},
                )
            except InvalidArgumentError:  # a text the store cannot search for
                continue
            for record, _ in hits:
                if normalized_text(record.content or "") == normalized:
                    found.setdefault(record.id, record)
    return list(found.values())
