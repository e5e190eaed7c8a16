"""``search(as_of=)`` and ``list(as_of=)`` agree with a brute-force model over random
histories of adds, updates and invalidations (docs/store.md#validity-windows), on every back end.

Each example writes its own user's memories into one store (the scope keeps the
examples apart); the model computes every window from the operations alone, and the
set of memories valid at a time from those windows."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_validity import vector_windows

from oam_core.errors import InvalidArgumentError
from oam_core.store.versions import memory_versions

_users = itertools.count()

MINUTES = st.integers(min_value=-120, max_value=240)
OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.integers(1, 3),
            st.none() | MINUTES,
            st.none() | st.integers(min_value=1, max_value=300),
        ),
        st.tuples(st.just("update"), st.integers(0, 20)),
        st.tuples(st.just("invalidate"), st.integers(0, 20)),
        st.tuples(st.just("advance"), st.integers(1, 90)),
    ),
    min_size=1,
    max_size=14,
)
PROBES = st.lists(st.integers(min_value=-200, max_value=600), min_size=1, max_size=5)


@dataclass
class Window:
    valid_from: datetime | None
    valid_until: datetime | None

    def holds(self, t: datetime) -> bool:
        return (self.valid_from is None or self.valid_from <= t) and (
            self.valid_until is None or self.valid_until > t
        )


def _parse(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS, probes=PROBES)
def test_as_of_matches_a_brute_force_model(
    make_store: Any, backend: Any, clock: Any, ops: list[Any], probes: list[int]
) -> None:
    stores = _stores(make_store, backend)
    store = stores["keyword"]
    user = f"u{next(_users)}"
    base = clock.now
    model: dict[str, Window] = {}
    order: list[str] = []
    versions = memory_versions(store)
    for op in ops:
        now = clock.now
        if op[0] == "add":
            _, n, start, length = op
            vf = None if start is None else base + timedelta(minutes=start)
            vu = None if length is None else (vf or base) + timedelta(minutes=length)
            ids = store.add(
                [f"note {len(order) + i}" for i in range(n)],
                "memory",
                user_ids=user,
                valid_from=vf,
                valid_until=vu,
            )
            for rid in ids:
                model[rid] = Window(vf, vu)
                order.append(rid)
        elif op[0] in ("update", "invalidate") and order:
            rid = order[op[1] % len(order)]
            w = model[rid]
            # Its window decides (docs/versions.md): a current version can be updated
            # and invalidated (it ends now); one that starts later can be corrected
            # before it holds (it ends at its start and never holds) but is not
            # current, so invalidating it changes nothing; an ended one neither.
            ended = w.valid_until is not None and (
                w.valid_until <= now or (w.valid_from is not None and w.valid_until <= w.valid_from)
            )
            planned = not ended and w.valid_from is not None and w.valid_from > now
            end = now if w.valid_from is None else max(now, w.valid_from)
            if op[0] == "invalidate":
                is_current = not ended and not planned
                assert versions.invalidate_memory(rid) is is_current
                if is_current:
                    w.valid_until = end
            elif not ended:
                new = versions.update_memory(rid, f"note {len(order)}")
                w.valid_until = end
                model[new] = Window(end, None)
                order.append(new)
            else:
                try:
                    versions.update_memory(rid, "never written")
                except InvalidArgumentError:
                    pass
                else:  # pragma: no cover - the assertion below names it
                    raise AssertionError(f"update of a non-current {rid} was accepted")
        elif op[0] == "advance":
            clock.advance(minutes=op[1])
    stored = {r.id: r for r in store.list("memory", user_id=user)}
    assert set(stored) == set(model)
    for rid, w in model.items():
        got = stored[rid]
        assert (_parse(got.valid_from), _parse(got.valid_until)) == (w.valid_from, w.valid_until)
    times = [base + timedelta(minutes=m) for m in probes] + [clock.now]
    times += [t for w in model.values() for t in (w.valid_from, w.valid_until) if t is not None]
    scoped = {"user_id": user, "exact_user_match": True, "k": 100}
    rankers = [stores[name] for name in stores]
    for t in times:
        expected = {rid for rid, w in model.items() if w.holds(t)}
        assert {r.id for r in store.list("memory", user_id=user, as_of=t)} == expected, t
        for ranker in rankers:
            found = {r.id for r, _ in ranker.search("note", as_of=t, **scoped)}
            assert found == expected, (ranker.search_strategy, t)
    now_valid = {rid for rid, w in model.items() if w.holds(clock.now)}
    for ranker in rankers:
        assert {r.id for r, _ in ranker.search("note", **scoped)} == now_valid
        assert {r.id for r, _ in ranker.search("note", as_of=None, **scoped)} == set(model)


def _stores(make_store: Any, backend: Any) -> dict[str, Any]:
    """One store per strategy on one storage, opened once per test (the examples
    share them; each writes its own user's rows)."""
    cache: dict[str, Any] | None = getattr(make_store, "_validity_stores", None)
    if cache is None:
        keyword = make_store(name="model.db", search_strategy="KEYWORD")
        cache = {"keyword": keyword}
        if vector_windows(backend) and backend.shared_storage:
            cache["vector"] = make_store(name="model.db", search_strategy="VECTOR")
        make_store._validity_stores = cache
    return cache
