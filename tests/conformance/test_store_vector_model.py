"""VECTOR search equals a brute-force model over random writes (every back end).

Random adds, vector updates, deletes, expiries and TTL refreshes; then searches with
random scopes, record types, metadata filters and k. Each result must be the model's
exact top k: same distances (to 1e-5) and every returned record at its model distance.
On SQLite the ANN thresholds are lowered so the index path (IVF candidates, masks,
exact re-rank, exact fallback, the index file read back on reopen) runs even on
these small stores; with so few rows every IVF list is probed, so the index path
must be exact too. Half the examples build the index in a background thread, so
searches land before, during and after its adoption.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DIM = 8
USERS = (None, "u1", "u2")
AGENTS = (None, "a1")
THREADS = (None, "t1")
TYPES = ("memory", "fact")
_names = itertools.count()


@dataclass
class Row:
    record_type: str
    vector: Any
    user: str | None
    agent: str | None
    thread: str | None
    tag: str
    created: datetime
    expires: datetime | None


def force_index_path(store: Any, background: bool = False) -> None:
    """On SQLite, build the ANN index from 8 live rows and use it above 4 candidates;
    with ``background``, build it in a background thread (searches meanwhile rank
    exactly; the result is adopted whenever the thread ends: any interleaving)."""
    index = getattr(getattr(store, "_impl", None), "index", None)
    if index is not None:
        index.ann_min_rows = 8
        index.exact_max = 4
        index.compact_min = 0
        if background:
            index.background_rows = 8


def settle(store: Any) -> None:
    """Wait for a background build of the SQLite index (a no-op elsewhere)."""
    index = getattr(getattr(store, "_impl", None), "index", None)
    if index is not None:
        index.wait_for_build(60)


op = st.one_of(
    st.tuples(
        st.just("add"),
        st.integers(1, 12),
        st.sampled_from(TYPES),
        st.sampled_from(USERS),
        st.sampled_from(AGENTS),
        st.sampled_from(THREADS),
        st.booleans(),
    ),
    st.tuples(st.just("revector"), st.integers(0, 10**6)),
    st.tuples(st.just("delete"), st.integers(0, 10**6)),
    st.tuples(st.just("refresh"), st.integers(0, 10**6), st.booleans()),
    st.tuples(st.just("advance"), st.integers(0, 3)),
    st.tuples(st.just("reopen")),
    st.tuples(st.just("settle")),
)
search = st.tuples(
    st.integers(1, 12),
    st.one_of(st.none(), st.sampled_from((*USERS, "nobody"))),
    st.one_of(st.none(), st.sampled_from(AGENTS)),
    st.one_of(st.none(), st.sampled_from(THREADS)),
    st.sampled_from([None, ("memory",), ("fact",), TYPES]),
    st.sampled_from([None, "x", "y"]),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    ops=st.lists(op, min_size=1, max_size=14),
    searches=st.lists(search, min_size=1, max_size=4),
    background=st.booleans(),
)
def test_vector_search_matches_brute_force(
    backend, make_store, clock, seed, ops, searches, background
):
    rng = np.random.default_rng(seed)
    clock = type(clock)()  # a fresh FakeClock per example (conftest.py)
    name = f"model{next(_names)}.db"
    store = make_store(name=name, embedder=None, vector_dim=DIM, clock=clock)
    force_index_path(store, background)
    model: dict[str, Row] = {}
    serial = itertools.count()

    def pick(i: int) -> str | None:
        return sorted(model)[i % len(model)] if model else None

    for o in ops:
        if o[0] == "add":
            _, n, rtype, user, agent, thread, expiring = o
            ids = [f"r{next(serial)}" for _ in range(n)]
            vecs = rng.standard_normal((n, DIM)).astype(np.float32)
            tags = [str(rng.choice(["x", "y"])) for _ in range(n)]
            store.add(
                [f"text {i}" for i in ids],
                rtype,
                embeddings=list(vecs),
                record_ids=ids,
                user_ids=user,
                agent_ids=agent,
                thread_ids=thread,
                metadata=[{"tag": t} for t in tags],
                ttl_days=1 if expiring else None,
            )
            expires = clock.now + timedelta(days=1) if expiring else None
            for rid, v, t in zip(ids, vecs, tags, strict=True):
                model[rid] = Row(rtype, v, user, agent, thread, t, clock.now, expires)
        elif o[0] == "revector" and (rid := pick(o[1])):
            row = model[rid]
            row.vector = rng.standard_normal(DIM).astype(np.float32)
            assert store.update(row.record_type, rid, text=f"new {rid}", embedding=row.vector) in (
                0,
                1,
            )
        elif o[0] == "delete" and (rid := pick(o[1])):
            store.delete(model[rid].record_type, rid)
            del model[rid]
        elif o[0] == "refresh" and (rid := pick(o[1])):
            row = model[rid]  # TTL counts from the creation time (CREATED_AT anchor)
            store.update(row.record_type, rid, ttl_days=1 if o[2] else None)
            row.expires = row.created + timedelta(days=1) if o[2] else None
        elif o[0] == "advance":
            clock.advance(hours=12 * o[1])
        elif o[0] == "reopen" and backend.shared_storage:
            store.close()
            store = make_store(name=name, embedder=None, vector_dim=DIM, clock=clock)
            force_index_path(store, background)
        elif o[0] == "settle":
            settle(store)

    for k, user, agent, thread, types, tag in searches:
        q = rng.standard_normal(DIM).astype(np.float32)
        kwargs: dict[str, Any] = {}
        if user is not None:
            kwargs.update(user_id=user, exact_user_match=True)
        if agent is not None:
            kwargs.update(agent_id=agent, exact_agent_match=True)
        if thread is not None:
            kwargs.update(thread_id=thread, exact_thread_match=True)
        if types is not None:
            kwargs["record_types"] = set(types)
        if tag is not None:
            kwargs["metadata_filter"] = {"tag": tag}
        got = store.search(query_vector=list(q), k=k, **kwargs)
        want = expected(model, q, clock.now, k, user, agent, thread, types, tag)
        assert np.allclose([d for _, d in got], [d for _, d in want], atol=1e-5), (got, want)
        exact = dict(distances(model, q))
        for record, d in got:
            assert abs(exact[record.id] - d) < 1e-5


def distances(model: dict[str, Row], q: Any) -> list[tuple[str, float]]:
    qn = q / np.linalg.norm(q)
    return [
        (rid, float(np.clip(1.0 - row.vector @ qn / np.linalg.norm(row.vector), 0.0, 2.0)))
        for rid, row in model.items()
    ]


def expected(
    model: dict[str, Row],
    q: Any,
    now: datetime,
    k: int,
    user: str | None,
    agent: str | None,
    thread: str | None,
    types: tuple[str, ...] | None,
    tag: str | None,
) -> list[tuple[str, float]]:
    def visible(row: Row) -> bool:
        return (
            (row.expires is None or row.expires > now)
            and (user is None or row.user == user)
            and (agent is None or row.agent == agent)
            and (thread is None or row.thread == thread)
            and (types is None or row.record_type in types)
            and (tag is None or row.tag == tag)
        )

    ranked = [(rid, d) for rid, d in distances(model, q) if visible(model[rid])]
    return sorted(ranked, key=lambda x: x[1])[:k]
