"""The store knows its embedder (docs/failure-modes.md#c32; docs/store.md#embedder-identity).

The identity (id, dimension, fingerprint) is recorded with the first vector the
store's embedder writes; another embedder is refused at open (id, dimension) or at
its first embedding (fingerprint), unless ``allow_embedder_change=True``. Records
stored without vectors are embedded by ``reindex``; until then vector searches warn
once.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from oam_core import copy_store, export_store, import_store
from oam_core.apis.embedder import IEmbedder
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import ConfigurationError, SchemaError
from oam_core.store.identity import FINGERPRINT_LENGTH


class ShuffledEmbedder(IEmbedder):
    """A user embedder without its own ``embedder_id``: the hashing vectors, with the
    components permuted by ``seed`` (another "model" of the same class and dimension)."""

    def __init__(self, dim: int = 64, seed: int = 0) -> None:
        self._inner = HashingEmbedder(dim)
        self._order = np.random.default_rng(seed).permutation(dim)

    @property
    def embedding_dimension(self) -> int:
        return self._inner.embedding_dimension

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        return self._inner.embed(texts)[:, self._order]


@pytest.fixture
def reopenable(backend: Any) -> None:
    if not backend.shared_storage:
        pytest.skip(f"{backend.id}: storage does not outlive the store object")


def test_the_first_vector_records_the_embedder(make_store: Any) -> None:
    store = make_store(name="id.db")
    assert store.embedder_identity is None
    store.add(["the first memory"], "memory")
    identity = store.embedder_identity
    assert identity is not None
    assert (identity.embedder_id, identity.dimension) == ("hashing/64", 64)
    assert identity.fingerprint is not None and len(identity.fingerprint) == FINGERPRINT_LENGTH


def test_explicit_vectors_record_no_embedder(make_store: Any) -> None:
    store = make_store(embedder=None, vector_dim=4, search_strategy="VECTOR")
    store.add(["given"], "memory", embeddings=[[1.0, 0.0, 0.0, 0.0]])
    assert store.embedder_identity is None


def test_reopening_with_the_same_embedder_reads_the_identity(
    make_store: Any, reopenable: None
) -> None:
    make_store(name="id.db").add(["pizza night"], "memory", record_ids="m1")
    again = make_store(name="id.db")
    assert again.embedder_identity is not None
    assert again.embedder_identity.embedder_id == "hashing/64"
    assert again.search("pizza", 1)[0][0].id == "m1"


def test_c32_another_embedder_of_the_same_dimension_is_refused(
    make_store: Any, reopenable: None
) -> None:
    make_store(name="id.db").add(["pizza night"], "memory")
    with pytest.raises(ValueError) as caught:
        make_store(name="id.db", embedder=ShuffledEmbedder(64))
    message = str(caught.value)
    assert "'hashing/64' (64 dimensions)" in message
    assert "'ShuffledEmbedder' (64 dimensions)" in message
    assert "--embedder hashing/64" in message and "allow_embedder_change=True" in message


def test_an_embedder_of_your_own_is_not_offered_as_a_cli_flag(
    make_store: Any, reopenable: None
) -> None:
    """Trial 48, f04: only an id the CLI loads gets ``(CLI: --embedder ...)``."""
    make_store(name="id.db", embedder=ShuffledEmbedder(64)).add(["pizza night"], "memory")
    with pytest.raises(ValueError) as caught:
        make_store(name="id.db")
    message = str(caught.value)
    assert "'ShuffledEmbedder' (64 dimensions)" in message
    assert "open it with the same embedder (from Python only: the CLI cannot load it)" in (message)
    assert "--embedder" not in message


def test_another_dimension_names_both_embedders(make_store: Any, reopenable: None) -> None:
    make_store(name="id.db").add(["pizza night"], "memory")
    with pytest.raises(ValueError, match=r"'hashing/64' \(64 dimensions\).*'hashing/32'"):
        make_store(name="id.db", embedder=HashingEmbedder(32))


def test_another_dimension_without_an_embedder_names_what_was_given(
    make_store: Any, reopenable: None
) -> None:
    """Trial 37 (N4): the message says the store holds 64-dim vectors and
    ``vector_dim=3`` was given, and names no argument the caller did not pass."""
    make_store(name="id.db").add(["pizza night"], "memory")
    with pytest.raises(SchemaError) as caught:
        make_store(name="id.db", embedder=None, vector_dim=3)
    message = str(caught.value)
    assert "stores vectors of dimension 64 written by embedder 'hashing/64'" in message
    assert "opened with vector_dim=3:" in message
    assert "--embedder hashing/64) or vector_dim=64" in message
    assert "allow_embedder_change" not in message
    with pytest.raises(SchemaError) as caught:  # here the caller did pass it
        make_store(name="id.db", embedder=HashingEmbedder(3), allow_embedder_change=True)
    message = str(caught.value)
    assert "opened with embedder 'hashing/3' of dimension 3" in message
    assert "allow_embedder_change=True does not cover another dimension" in message


def test_same_id_other_vectors_is_refused_at_first_use(
    make_store: Any, reopenable: None, rejected: Any
) -> None:
    make_store(name="id.db", embedder=ShuffledEmbedder(64, seed=1)).add(["pizza"], "memory")
    other = make_store(name="id.db", embedder=ShuffledEmbedder(64, seed=2))  # same id
    with rejected(other, match="fingerprint"):
        other.add(["more pizza"], "memory")
    with pytest.raises(ValueError, match="fingerprint"):
        other.search("pizza", 1)


def test_a_reembedding_import_or_copy_checks_the_fingerprint_first(
    make_store: Any, reopenable: None, rejected: Any, tmp_path: Path
) -> None:
    source = make_store(name="src.db", embedder=HashingEmbedder(32))
    source.add(["Ana's dog is Moose", "Ana flies to Lisbon"], "fact", user_ids="ana")
    export_store(source, tmp_path / "d.jsonl")
    make_store(name="id.db", embedder=ShuffledEmbedder(64, seed=1)).add(["pizza"], "memory")
    other = make_store(name="id.db", embedder=ShuffledEmbedder(64, seed=2))  # same id
    with rejected(other, match="whose vectors differ \\(fingerprint\\)"):
        import_store(other, tmp_path / "d.jsonl", reembed=True)
    with rejected(other, match="whose vectors differ \\(fingerprint\\)"):
        copy_store(source, other, reembed=True)
    same = make_store(name="id.db", embedder=ShuffledEmbedder(64, seed=1))
    assert import_store(same, tmp_path / "d.jsonl", reembed=True).records == {"fact": 2}
    same = make_store(name="id.db", embedder=ShuffledEmbedder(64, seed=1))
    same.add(["more pizza"], "memory")  # the recorded model is accepted
    assert len(same.list("memory")) == 2


def test_allow_embedder_change_opens_and_records_the_new_one(
    make_store: Any, reopenable: None
) -> None:
    make_store(name="id.db").add(["pizza night"], "memory")
    changed = make_store(name="id.db", embedder=ShuffledEmbedder(64), allow_embedder_change=True)
    changed.add(["pasta night"], "memory")
    assert changed.embedder_identity is not None
    assert changed.embedder_identity.embedder_id == "ShuffledEmbedder"
    make_store(name="id.db", embedder=ShuffledEmbedder(64))  # now the recorded one
    with pytest.raises(ValueError, match="'ShuffledEmbedder'"):
        make_store(name="id.db")


def test_records_without_vectors_warn_once_until_reindexed(
    make_store: Any, reopenable: None
) -> None:
    plain = make_store(name="id.db", embedder=None, search_strategy="VECTOR")
    plain.add(["my dog is called biscuit", "lisbon in march"], "memory", record_ids=["d", "l"])
    store = make_store(name="id.db", search_strategy="VECTOR")
    with pytest.warns(UserWarning, match=r"2 record\(s\) .* without a vector.*reindex"):
        assert store.search("biscuit dog", 2) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store.search("biscuit dog", 2)  # once per store object
    assert store.reindex() == 2
    assert store.reindex() == 0
    assert store.search("biscuit dog", 1)[0][0].id == "d"
    assert store.embedder_identity is not None
    fresh = make_store(name="id.db", search_strategy="VECTOR")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fresh.search("lisbon march", 1)[0][0].id == "l"


def test_reindex_needs_an_embedder(make_store: Any) -> None:
    store = make_store(embedder=None, search_strategy="KEYWORD")
    with pytest.raises(ValueError, match="reindex needs an embedder"):
        store.reindex()
    with pytest.raises(ValueError, match="batch_size"):
        make_store().reindex(batch_size=0)


def test_reindex_runs_in_batches(make_store: Any, reopenable: None) -> None:
    plain = make_store(name="id.db", embedder=None, search_strategy="KEYWORD")
    plain.add([f"note number {i}" for i in range(7)], "memory")
    store = make_store(name="id.db")
    assert store.reindex(batch_size=3) == 7
    assert store.reindex() == 0


def test_hybrid_without_an_embedder_refuses_a_text_query(make_store: Any) -> None:
    # It ranked by keywords alone, silently, before (test_store_no_embedder.py).
    store = make_store(embedder=None, search_strategy="HYBRID")
    store.add(["my dog is called biscuit", "lisbon in march"], "memory", record_ids=["d", "l"])
    with pytest.raises(ConfigurationError, match="embedder"):
        store.search("biscuit", 5)
