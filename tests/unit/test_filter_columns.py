"""Metadata columns of the SQLite store's VECTOR search (``sqlite/metacolumns.py``,
docs/sqlite.md#metadata-filters): a string-equality filter answered from a key's
values read once gives the same records and distances as the SQL filter, on values
of every JSON type at that key; the columns are read on the second miss, dropped by
any write, refused for other filters, for scoped searches and for keys with too many
values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.filters import matches, parse_filter
from oam_core.store.sqlite import metacolumns
from oam_core.store.sqlite.metacolumns import Columns, string_tests

DIM = 8
CATS: list[Any] = [
    "c0",
    "c1",
    "c2",
    "c1",
    1,
    1.5,
    True,
    None,
    ["c1"],
    {"c1": "c1"},
    "[c1",
    "{c1}",
    "é",
    "c1 ",
    "C1",
    'q"uote',
    "",
]


def _metadata(i: int) -> dict[str, Any] | None:
    if i % 11 == 10:
        return None
    if i % 11 == 9:
        return {"lang": "en"}
    md: dict[str, Any] = {"cat": CATS[i % len(CATS)], "lang": "en" if i % 3 else "fr"}
    if i % 5 == 0:
        md["a.b"] = "dot"
    return md


N = 120
METADATA = [_metadata(i) for i in range(N)]


def _vecs(n: int, seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, DIM)).astype(np.float32)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = SQLiteMemoryStore(tmp_path / "m.db", vector_dim=DIM, search_strategy="VECTOR")
    vecs = _vecs(N)
    ids = [f"r{i:03d}" for i in range(N)]
    mem = [i for i in range(N) if i % 4]
    s.add(
        [f"text {i}" for i in mem],
        "memory",
        record_ids=[ids[i] for i in mem],
        metadata=[METADATA[i] for i in mem],
        embeddings=vecs[mem],
        user_ids=[f"u{i % 3}" for i in mem],
    )
    other = [i for i in range(N) if not i % 4]
    s.add(
        [f"text {i}" for i in other],
        "fact",
        record_ids=[ids[i] for i in other],
        metadata=[METADATA[i] for i in other],
        embeddings=vecs[other],
        user_ids=[f"u{i % 3}" for i in other],
    )
    yield s
    s.close()


def _search(store: Any, flt: Any, **kw: Any) -> list[tuple[str, float]]:
    q = np.linspace(-1.0, 1.0, DIM).astype(np.float32)
    return [(r.id, d) for r, d in store.search(query_vector=q, k=N, metadata_filter=flt, **kw)]


def _expected_ids(flt: Any, types: set[str]) -> set[str]:
    conds = parse_filter(flt)
    return {
        f"r{i:03d}"
        for i in range(N)
        if ("memory" if i % 4 else "fact") in types and matches(METADATA[i], conds)
    }


FILTERS: list[Any] = [
    {"cat": "c1"},
    {"cat": {"$in": ["c1", "c2", "c9"]}},
    {"cat": {"$in": [f"c{i}" for i in range(30)] + ["é"]}},  # a long list: json_each in SQL
    {"cat": "c1", "lang": "en"},
    {"cat": "[c1"},
    {"cat": "{c1}"},
    {"cat": "é"},
    {"cat": ""},
    {"cat": 'q"uote'},
    {"cat": "C1"},
    {"cat": "missing"},
    {"a.b": "dot"},
    {"lang": {"$in": ["en", "fr"]}, "cat": {"$in": ["c0", "c2"]}},
]


def test_columns_give_the_records_and_distances_of_the_sql_filter(store: Any) -> None:
    columns = store._impl.filters.columns
    columns.max_columns = 100
    for flt in FILTERS:
        for types in (None, ["memory"], ["memory", "fact"]):
            kw: dict[str, Any] = {} if types is None else {"record_types": types}
            want = _expected_ids(flt, set(types or ["memory", "fact"]))
            store._impl.filters.clear()  # the filter runs again, not from the result cache
            first = _search(store, flt, **kw)  # SQL (first miss of the key)
            assert {i for i, _ in first} == want
            store._impl.filters.clear()
            second = _search(store, flt, **kw)  # reads the columns of the filter's keys
            assert second == first
            store._impl.filters.clear()
            assert _search(store, flt, **kw) == first  # from the columns
    # One read per key and record-type set: cat, lang and a.b, three type sets.
    assert columns.builds == 9 and len(columns.columns) == 9
    assert metacolumns.MAX_COLUMNS == 8


def test_a_column_holds_only_the_text_values_of_its_key(store: Any) -> None:
    _search(store, {"cat": "c1"})
    store._impl.filters.clear()
    _search(store, {"cat": "c2"})
    (column,) = store._impl.filters.columns.columns.values()
    texts = [md["cat"] for md in METADATA if md and isinstance(md.get("cat"), str)]
    assert sorted(column.groups) == sorted(set(texts))
    assert column.size == len(texts)
    assert len(column.groups["c1"]) == texts.count("c1")


def test_a_write_drops_the_columns(store: Any) -> None:
    assert len(_search(store, {"cat": "c2"})) == len(
        _expected_ids({"cat": "c2"}, {"memory", "fact"})
    )
    store._impl.filters.clear()
    before = _search(store, {"cat": "c1"})
    assert store._impl.filters.columns.builds == 1
    store.add(
        ["new"],
        "memory",
        record_ids=["new"],
        metadata=[{"cat": "c1"}],
        embeddings=_vecs(1, seed=7),
    )
    after = _search(store, {"cat": "c1"})
    assert {i for i, _ in after} == {i for i, _ in before} | {"new"}
    assert not store._impl.filters.columns.columns  # this state's first miss: SQL
    store._impl.filters.clear()
    assert _search(store, {"cat": "c1"}) == after  # read again at the new state
    assert store._impl.filters.columns.builds == 2


@pytest.mark.parametrize(
    "flt",
    [
        {"cat": 1},
        {"cat": {"$ne": "c1"}},
        {"cat": {"$in": ["c1", 1]}},
        {"$or": [{"cat": "c1"}, {"cat": "c2"}]},
        {"$not": {"cat": "c1"}},
        {"cat": {"$gte": "c1"}},
        {"cat": {"$array_contains": "c1"}},
    ],
)
def test_other_filters_run_in_sql(store: Any, flt: Any) -> None:
    for _ in range(3):
        store._impl.filters.clear()
        got = _search(store, flt)
        assert {i for i, _ in got} == _expected_ids(flt, {"memory", "fact"})
    assert store._impl.filters.columns.builds == 0


def test_scoped_searches_run_in_sql(store: Any) -> None:
    for _ in range(3):
        store._impl.filters.clear()
        got = _search(store, {"cat": "c1"}, user_id="u1", exact_user_match=True)
        want = {
            f"r{i:03d}" for i in range(N) if i % 3 == 1 and (METADATA[i] or {}).get("cat") == "c1"
        }
        assert {i for i, _ in got} == want
    assert store._impl.filters.columns.builds == 0


def test_a_key_with_too_many_values_is_refused(store: Any) -> None:
    columns = store._impl.filters.columns
    columns.max_values = 3
    for _ in range(3):
        store._impl.filters.clear()
        got = _search(store, {"cat": "c1"})
        assert {i for i, _ in got} == _expected_ids({"cat": "c1"}, {"memory", "fact"})
    assert columns.builds == 1 and not columns.columns and len(columns.refused) == 1


def test_string_tests() -> None:
    assert string_tests(parse_filter({"a": "x", "b": {"$in": ["y", "z"]}})) == [
        ("a", ("x",)),
        ("b", ("y", "z")),
    ]
    assert string_tests(parse_filter({"a": 1})) is None
    assert string_tests(parse_filter({"a": {"$in": ["x", None]}})) is None
    assert string_tests(parse_filter({"é": "x"})) is None  # not read by path in SQL
    assert string_tests(parse_filter({"a": {"b": "x"}})) is None
    assert string_tests(()) is None


def test_bounds_drop_the_least_recent_column(tmp_path: Path) -> None:
    s = SQLiteMemoryStore(tmp_path / "b.db", vector_dim=DIM, search_strategy="VECTOR")
    s.add(
        ["a", "b"],
        "memory",
        record_ids=["a", "b"],
        metadata=[{"k1": "x", "k2": "y", "k3": "z"}, {"k1": "x", "k2": "y", "k3": "w"}],
        embeddings=_vecs(2),
    )
    cols: Columns = s._impl.filters.columns
    cols.max_columns = 2
    for key in ("k1", "k2", "k3"):
        for value in ("x", "y"):
            s._impl.filters.clear()
            _search(s, {key: value})
    assert [ckey[0] for ckey in cols.columns] == ["k2", "k3"] and cols.size == 4
    s.close()
