"""Conformance: a store without an embedder does not rank a text query by keywords
behind the caller's back (docs/store.md#searching).

Under VECTOR or HYBRID a text search is a ``ConfigurationError`` naming ``embedder``,
raised before the store is read (such callers pass vectors); a KEYWORD store
searches text without one. The client's search, a search scoped to a thread and the
context card go the same way (docs/context-card.md#without-an-embedder).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from oam_core import OracleAgentMemory
from oam_core.errors import ConfigurationError


def _vec(*xs: float) -> list[float]:
    return [*xs, *([0.0] * (4 - len(xs)))]


def _fail(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the store was read before the text query was refused")


@pytest.mark.parametrize("strategy", ["HYBRID", "VECTOR"])
def test_a_text_query_without_an_embedder_is_refused_naming_embedder(
    make_store: Any, monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    store = make_store(embedder=None, vector_dim=4, search_strategy=strategy)
    store.add(["my dog is called Biscuit"], "memory", record_ids="d", embeddings=[_vec(1)])
    backend = store.runtime.backend
    for name in ("rank_hybrid", "rank_keyword", "rank_vector", "load"):
        monkeypatch.setattr(backend, name, _fail)
    with pytest.raises(ConfigurationError, match=rf"{strategy} search .* needs an embedder"):
        store.search("Biscuit", 3)
    monkeypatch.undo()
    [(record, distance)] = store.search(query_vector=_vec(1), k=3)
    assert (record.id, distance) == ("d", pytest.approx(0.0, abs=1e-6))


def test_a_keyword_store_searches_text_without_an_embedder(make_store: Any) -> None:
    store = make_store(embedder=None, search_strategy="KEYWORD")
    store.add(["my dog is called Biscuit", "Lisbon in March"], "memory", record_ids=["d", "l"])
    assert [(r.id, d) for r, d in store.search("Biscuit", 5)] == [("d", 0.0)]


def test_client_and_thread_scoped_search_refuse_and_the_card_leaves_results_out(
    make_store: Any,
) -> None:
    store = make_store(embedder=None, vector_dim=4)
    memory = OracleAgentMemory(store=store, extract_memories=False)
    thread = memory.create_thread(thread_id="t", user_id="u", agent_id="a")
    thread.add_memory("User likes pizza", memory_id="m")
    thread.add_messages([{"role": "user", "content": "Tell me about pizza"}])
    with pytest.raises(ConfigurationError, match="embedder"):
        memory.search("pizza")
    with pytest.raises(ConfigurationError, match="embedder"):
        memory.search("pizza", thread_id="t", user_id="u", agent_id="a")
    card = thread.get_context_card()
    assert card.relevant_results == []
    assert "User likes pizza" not in card.content
    assert "Tell me about pizza" in card.content


def test_a_keyword_store_card_still_finds_relevant_memories(make_store: Any) -> None:
    store = make_store(embedder=None, search_strategy="KEYWORD")
    memory = OracleAgentMemory(store=store, extract_memories=False)
    thread = memory.create_thread(thread_id="t", user_id="u", agent_id="a")
    thread.add_memory("User likes pizza", memory_id="m")
    thread.add_messages([{"role": "user", "content": "Tell me about pizza"}])
    assert "User likes pizza" in thread.get_context_card().content
    assert np.isfinite([d for _, d in memory.search("pizza")]).all()
