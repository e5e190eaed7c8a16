"""Conformance: the store's embedder sees only what the caller wrote or searched
(docs/store.md#embedder-identity).

The store used to send a sentence of its own ("The quick brown fox jumps.") with its
first write, to fingerprint the embedder: an embedding function that looks texts up
(a cache, a precomputed table, a LangGraph ``index`` function) raised ``KeyError``,
and a paid API was called for a text nobody wrote. The fingerprint now comes from a
text of the first write, and later store objects check it by embedding that text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from oam_core.apis.embedder import IEmbedder
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.identity import EmbedderIdentity

WRITTEN = ["my dog is called Biscuit", "I fly to Lisbon in March", "pizza on fridays"]
SEARCHED = ["dog name", "travel plans"]


class TableEmbedder(IEmbedder):
    """Vectors looked up in a precomputed table of the caller's texts: any other text
    is a ``KeyError``. Records every text it is asked for."""

    def __init__(self, texts: Sequence[str], seed: int = 0) -> None:
        inner = HashingEmbedder(16)
        order = np.random.default_rng(seed).permutation(16)
        self.table = {t: inner.embed([t])[0][order] for t in texts}
        self.seen: list[str] = []

    @property
    def embedder_id(self) -> str:
        return "table"

    @property
    def embedding_dimension(self) -> int:
        return 16

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        self.seen.extend(texts)
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


@pytest.fixture
def reopenable(backend: Any) -> None:
    if not backend.shared_storage:
        pytest.skip(f"{backend.id}: storage does not outlive the store object")


def test_a_lookup_embedder_sees_only_the_callers_texts(make_store: Any, reopenable: None) -> None:
    first_embedder = TableEmbedder(WRITTEN + SEARCHED)
    first = make_store(name="t.db", embedder=first_embedder)
    first.add(WRITTEN[:2], "memory", record_ids=["d", "l"])
    assert first.search("dog name", 1)[0][0].id == "d"
    assert set(first_embedder.seen) <= set(WRITTEN + SEARCHED)
    assert len(first_embedder.seen) == 3  # two written, one searched: nothing else
    identity = first.embedder_identity
    assert identity is not None and identity.probe == WRITTEN[0]  # the shortest
    assert identity.fingerprint is not None
    # not under "fingerprint": an earlier release checks that one against its sentence
    assert set(json.loads(identity.to_json())) == {"id", "dimension", "probe", "probe_fingerprint"}

    again_embedder = TableEmbedder(WRITTEN + SEARCHED)
    again = make_store(name="t.db", embedder=again_embedder)
    again.add([WRITTEN[2]], "memory", record_ids="p")
    assert again.search("travel plans", 1)[0][0].id == "l"
    # the check embeds the recorded probe, a text the caller wrote, once
    assert again_embedder.seen == [WRITTEN[2], WRITTEN[0], "travel plans"]


def test_a_write_holding_the_probe_checks_it_without_another_text(
    make_store: Any, reopenable: None
) -> None:
    make_store(name="t.db", embedder=TableEmbedder(WRITTEN)).add(WRITTEN[:1], "memory")
    embedder = TableEmbedder(WRITTEN)
    make_store(name="t.db", embedder=embedder).add(WRITTEN[:2], "memory")
    assert embedder.seen == WRITTEN[:2]


def test_another_table_of_the_same_id_is_still_refused(
    make_store: Any, reopenable: None, rejected: Any
) -> None:
    make_store(name="t.db", embedder=TableEmbedder(WRITTEN, seed=1)).add(WRITTEN[:2], "memory")
    other = make_store(name="t.db", embedder=TableEmbedder(WRITTEN + SEARCHED, seed=2))
    with rejected(other, match="fingerprint"):
        other.add([WRITTEN[2]], "memory")
    with pytest.raises(ValueError, match="fingerprint"):
        other.search("dog name", 1)


def test_a_fingerprint_of_an_earlier_release_is_replaced_by_one_of_the_callers_texts(
    make_store: Any, reopenable: None
) -> None:
    first = make_store(name="t.db", embedder=TableEmbedder(WRITTEN))
    first.add(WRITTEN[:1], "memory")
    legacy = EmbedderIdentity("table", 16, tuple([0.25] * 16))  # no probe text
    with first.runtime.backend.transaction() as tx:
        tx.write_meta({"embedder": legacy.to_json()})
    embedder = TableEmbedder(WRITTEN + SEARCHED)
    later = make_store(name="t.db", embedder=embedder)
    assert later.search("dog name", 1)[0][0].content == WRITTEN[0]
    later.add(WRITTEN[1:], "memory")
    assert embedder.seen == ["dog name", *WRITTEN[1:]]
    recorded = make_store(name="t.db", embedder=TableEmbedder(WRITTEN)).embedder_identity
    assert recorded is not None and recorded.probe == WRITTEN[2]
