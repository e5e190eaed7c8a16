"""The store runtime (oam_core/store/runtime.py): the modules of ``store/`` take it as
a typed argument instead of reaching into a store's private state, and a search runs
only the code it needs (no telemetry while tracing is off, no clock, identity or
embedder-class helpers)."""

from __future__ import annotations

import ast
import os
import sys
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import pytest

import oam_core
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import InvalidArgumentError
from oam_core.store.options import SearchStrategy
from oam_core.store.runtime import StoreRuntime
from oam_core.store.sqlite import SQLiteMemoryStore

ROOT = Path(oam_core.__file__).parent

STORE_STATE = {
    "_backend",
    "_impl",
    "_writing",
    "_embedder_check",
    "_now",
    "_ctx",
    "_clock",
    "_native_search",
    "_serves_strategy",
    "_remember_vector_dim",
    "_check_recorded_dim",
    "_adopt_embedder_identity",
    "_embed_plans",
    "_unembedded_checked",
    "_adopted_dim",
}
"""What the split-out store modules used to read off a store object."""


def _reach_ins(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [
        f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in STORE_STATE
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ]


def test_no_module_reaches_into_a_stores_private_state() -> None:
    found = [hit for path in sorted(ROOT.rglob("*.py")) for hit in _reach_ins(path)]
    assert found == []


def _files_run_by(call: Any) -> set[str]:
    seen: set[str] = set()
    here = str(ROOT)

    def profile(frame: FrameType, event: str, arg: object) -> None:
        name = frame.f_code.co_filename
        if name.startswith(here):
            seen.add(os.path.relpath(name, here))

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


@pytest.fixture
def hybrid_store() -> SQLiteMemoryStore:
    store = SQLiteMemoryStore(
        ":memory:", embedder=HashingEmbedder(64), search_strategy=SearchStrategy.HYBRID
    )
    words = [
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliet",
        "kilo",
        "lima",
    ]
    store.add(
        [" ".join(words[i % 12 : i % 12 + 4]) + f" n{i}" for i in range(60)],
        "memory",
        user_ids="u1",
    )
    store.search("bravo charlie", k=5, user_id="u1", exact_user_match=True)
    return store


def test_an_untraced_hybrid_search_runs_no_telemetry_clock_or_identity_code(
    hybrid_store: SQLiteMemoryStore,
) -> None:
    files = _files_run_by(  # a query not embedded before (the runtime's QueryMemo keeps those)
        lambda: hybrid_store.search("bravo delta", k=5, user_id="u1", exact_user_match=True)
    )
    unneeded = {
        "telemetry.py",
        "store/ttl.py",
        "store/identity.py",
        "store/embedding.py",
        "apis/embedder.py",
        "store/sqlite/store.py",
    }
    assert files & unneeded == set()
    assert {"store/search.py", "embedders/hashing.py"} <= files


def test_the_store_attributes_are_the_runtimes(hybrid_store: SQLiteMemoryStore) -> None:
    runtime = hybrid_store.runtime
    assert isinstance(runtime, StoreRuntime)
    assert runtime.backend is hybrid_store._impl
    assert hybrid_store.vector_dim == runtime.vector_dim == 64
    assert hybrid_store.chunk_chars == runtime.chunk_chars == HashingEmbedder(64).chunk_chars
    assert hybrid_store.embedder_identity is runtime.identity.stored
    assert hybrid_store.embedder_identity is not None
    hybrid_store.embedder = None
    assert runtime.embedder is None and hybrid_store.chunk_chars == 4000


def test_a_write_that_fails_in_its_transaction_keeps_no_identity_and_no_dimension() -> None:
    store = SQLiteMemoryStore(":memory:", embedder=None)
    runtime = store.runtime
    with pytest.raises(RuntimeError, match="disk full"), runtime.writing() as tx:
        runtime.storing_rows(tx, (), 8)
        assert store.vector_dim == 8
        raise RuntimeError("disk full")
    assert store.vector_dim is None
    assert store.embedder_identity is None
    store.add(["b"], "memory", embeddings=np.ones((1, 4), np.float32), record_ids=["b"])
    assert store.vector_dim == 4


def test_a_clock_returning_a_naive_time_is_refused_by_name() -> None:
    store = SQLiteMemoryStore(":memory:", clock=lambda: datetime(2024, 1, 1))
    with pytest.raises(InvalidArgumentError, match="clock must return an aware datetime"):
        store.clock_now()
