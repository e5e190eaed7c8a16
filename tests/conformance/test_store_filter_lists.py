"""Long value lists and wide boolean filters (docs/filters.md#long-lists): ``$in`` /
``$nin`` / ``$array_contains_any`` with 100,000 values and ``$or`` / ``$and`` with
1,000 branches give the reference evaluator's answer (``filters.matches``) on every
back end, in ``list`` and ``search``; a filter too wide for one statement is an
``InvalidArgumentError`` naming ``metadata_filter``, never a connection error; and
``delete_records`` of many ids is a bounded number of statements."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from oam_core.errors import InvalidArgumentError, StoreConnectionError
from oam_core.filters import matches, parse_filter

BIG = 100_000

DOCS: list[dict[str, Any] | None] = [
    {"n": 1, "s": "a", "tags": ["x", 1]},
    {"n": 1.0, "s": "b", "tags": ["y"]},
    {"n": True, "s": "1", "tags": [True]},
    {"n": "1", "s": '["a"]', "tags": []},
    {"n": None, "s": "ä ü", "tags": "x"},
    {"n": 2**62, "s": "v99999"},
    {"n": -0.5, "s": "v5", "tags": [["x"]]},
    {"n": [1], "s": ["a"]},
    {"n": {"k": 1}, "s": {"a": 1}},
    {"n": False, "s": "v100000"},
    {},
    None,
    {"n": 77_777, "s": "zzz", "tags": ["v123", "q"]},
    {"n": 12.25, "s": "v0", "tags": ["v9999"]},
]
IDS = [f"d{i:02d}" for i in range(len(DOCS))]

# 100,000 values: many that match nothing, some that match, every scalar kind.
TAIL: list[Any] = [1, "a", None, 12.25, False, "ä ü", 2**62, "q"]
VALUES: list[Any] = [*(f"v{i}" for i in range(BIG - len(TAIL))), *TAIL]
NUMBERS: list[Any] = [*range(10, BIG + 7), 1.0, -0.5, 12.25]


@pytest.fixture
def listed(store: Any) -> Any:
    store.add([f"pizza {i}" for i in IDS], "memory", record_ids=IDS, metadata=DOCS)
    return store


def _want(flt: dict[str, Any]) -> list[str]:
    tree = parse_filter(flt)
    return [i for i, d in zip(IDS, DOCS, strict=True) if matches(d, tree)]


def _check(store: Any, flt: dict[str, Any]) -> list[str]:
    want = _want(flt)
    assert [r.id for r in store.list("memory", limit=None, metadata_filter=flt)] == want
    found = store.search("pizza", 100, metadata_filter=flt)
    assert sorted(r.id for r, _ in found) == want
    return want


@pytest.mark.parametrize("key", ["n", "s", "tags"])
@pytest.mark.parametrize("values", [VALUES, NUMBERS], ids=["mixed", "numbers"])
def test_in_and_nin_with_100000_values_equal_the_reference(
    listed: Any, key: str, values: list[Any]
) -> None:
    assert len(values) == BIG
    hits = _check(listed, {key: {"$in": values}})
    misses = _check(listed, {key: {"$nin": values}})
    assert sorted(hits + misses) == IDS
    assert bool(hits) == (key == "n" or (values is VALUES and key == "s"))
    _check(listed, {"$not": {key: {"$in": values}}, "n": {"$exists": True}})


def test_in_keeps_json_types_apart_in_long_lists(listed: Any) -> None:
    """``True`` is not ``1``, ``"1"`` is not ``1``, ``1.0`` is ``1``: as in short lists."""
    pad = [f"p{i}" for i in range(5_000)]
    assert _check(listed, {"n": {"$in": [*pad, 1]}}) == ["d00", "d01"]
    assert _check(listed, {"n": {"$in": [*pad, True]}}) == ["d02"]
    assert _check(listed, {"n": {"$in": [*pad, "1"]}}) == ["d03"]
    assert _check(listed, {"n": {"$in": [*pad, None]}}) == ["d04"]
    assert _check(listed, {"s": {"$in": [*pad, '["a"]']}}) == ["d03"]


def test_array_contains_any_with_100000_values(listed: Any) -> None:
    assert _check(listed, {"tags": {"$array_contains_any": VALUES}}) == ["d00", "d12", "d13"]
    assert _check(listed, {"tags": {"$array_contains_any": NUMBERS}}) == ["d00"]


@pytest.mark.parametrize("width", [1_000])
def test_or_and_and_with_many_branches_equal_the_reference(listed: Any, width: int) -> None:
    ors = {"$or": [{"n": i} for i in range(width)] + [{"s": "zzz"}]}
    assert _check(listed, ors) == ["d00", "d01", "d12"]
    ands = {"$and": [{"s": {"$ne": f"v{i}"}} for i in range(width)]}
    assert _check(listed, ands) == [i for i in IDS if i not in ("d06", "d13")]
    field_or = {"s": {"$or": [{"$eq": f"v{i}"} for i in range(width)]}}
    assert _check(listed, field_or) == ["d06", "d13"]
    nested = {"$or": [{"$and": [{"n": i}, {"s": {"$ne": "b"}}]} for i in range(width)]}
    assert _check(listed, nested) == ["d00"]


def test_a_filter_too_wide_for_one_statement_is_an_invalid_argument(listed: Any) -> None:
    """A bound exists only for the number of conditions (docs/filters.md#long-lists):
    it is named, with the limit, before any query runs."""
    flt = {"$or": [{"s": f"v{i}", "n": {"$gt": i}} for i in range(40_000)]}
    for call in (
        lambda: listed.list("memory", metadata_filter=flt),
        lambda: listed.search("pizza", 5, metadata_filter=flt),
    ):
        with pytest.raises(InvalidArgumentError, match=r"metadata_filter.*at most [\d,]+") as info:
            call()
        assert not isinstance(info.value, StoreConnectionError)


def test_delete_records_of_many_ids(store: Any) -> None:
    ids = [f"r{i}" for i in range(1_200)]
    store.add(["x"] * len(ids), "memory", record_ids=ids)
    store.add(["y"], "message", record_ids="r5")
    asked = [f"zz{i}" for i in range(3_000)] + ids[::2] + ids[::2]
    assert store.delete_records("memory", asked) == 600
    assert [r.id for r in store.list("memory", limit=None)] == ids[1::2]
    assert [r.id for r in store.list("message")] == ["r5"]


def test_postgres_delete_of_70000_ids_is_a_bounded_number_of_statements(
    backend: Any, store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend.id != "postgres":
        pytest.skip("counts PostgreSQL statements")
    real = [f"r{i}" for i in range(500)]
    store.add(["x"] * len(real), "memory", record_ids=real)
    ids = [f"gone{i}" for i in range(69_500)] + real
    statements = _count_statements(monkeypatch)
    assert store.delete_records("memory", ids) == 500
    monkeypatch.undo()
    deletes = [s for s in statements if "DELETE" in s]
    assert 1 <= len(deletes) <= 3, statements
    assert len(statements) <= 10, statements
    assert store.list("memory", limit=None) == []


def _count_statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement psycopg executes from now on (until ``monkeypatch.undo()``)."""
    statements: list[str] = []
    execute = psycopg.Cursor.execute

    def counted(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        statements.append(str(query))
        return execute(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    return statements


def test_postgres_upsert_replaces_many_ids_with_one_delete(
    backend: Any, store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``upsert`` deletes the records it replaces in one statement, not one per id."""
    if backend.id != "postgres":
        pytest.skip("counts PostgreSQL statements")
    ids = [f"r{i}" for i in range(1_000)]
    store.add(["old"] * len(ids), "memory", record_ids=ids)
    statements = _count_statements(monkeypatch)
    assert store.upsert(["new"] * len(ids), "memory", record_ids=ids) == ids
    monkeypatch.undo()
    deletes = [s for s in statements if s.lstrip().startswith("DELETE FROM records")]
    assert len(deletes) == 1, deletes
    assert {r.content for r in store.list("memory", limit=None)} == {"new"}


def test_postgres_too_many_parameters_is_not_a_connection_error(conninfo: str) -> None:
    """libpq refuses more than 65,535 parameters without a SQLSTATE; the connection is
    fine, so retrying would fail the same way: a ``StoreError``, not a connection one."""
    from oam_core.store.postgres.dialect import map_error

    with psycopg.connect(conninfo) as conn:
        marks = ", ".join(["%s"] * 70_000)
        with pytest.raises(psycopg.Error) as info:
            conn.execute(f"SELECT 1 WHERE 1 IN ({marks})", list(range(70_000)))
        assert conn.execute("SELECT 2").fetchone() == (2,)
    mapped = map_error(info.value, "PostgreSQL test")
    assert mapped is not None
    assert not isinstance(mapped, StoreConnectionError), mapped
