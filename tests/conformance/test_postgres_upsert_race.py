"""Two writers upserting one id on PostgreSQL (docs/postgres.md#concurrency-and-durability):
both succeed and the later one wins, as on SQLite, where writers take turns.

The interleaving is injected, not timed: ``SqlTx.existing_ids`` (the upsert's look for
its stored ids) is wrapped so that, right after it read, a second store object on its
own connection writes the same id and commits. The upsert's insert then meets a unique
violation; its transaction runs again, finds that record and replaces it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import InvalidArgumentError
from oam_core.store.backend import IdsTakenError
from oam_core.store.sql.backend import SqlTx
from oam_core.store.writes import UPSERT_ATTEMPTS

pytest.importorskip("psycopg")


def _open(conninfo: str) -> Any:
    from oam_core.store.postgres import PostgresMemoryStore

    return PostgresMemoryStore(
        conninfo, embedder=HashingEmbedder(16), schema_policy="CREATE_IF_NECESSARY"
    )


@pytest.fixture
def stores(conninfo: str) -> Iterator[tuple[Any, Any]]:
    """The writer under test and the other writer: two store objects (two pools)."""
    mine, other = _open(conninfo), _open(conninfo)
    yield mine, other
    mine.close()
    other.close()


def _between(
    monkeypatch: pytest.MonkeyPatch, times: int, write: Callable[[int], None]
) -> list[Sequence[str]]:
    """Run ``write(n)`` (the other writer) right after each of the first ``times``
    calls of ``SqlTx.existing_ids`` made by this test's writer; return the id lists
    looked up."""
    looked: list[Sequence[str]] = []
    real = SqlTx.existing_ids

    def existing_ids(self: SqlTx, family: str, ids: Sequence[str]) -> set[str]:
        found = real(self, family, ids)
        looked.append(list(ids))
        if len(looked) <= times:
            monkeypatch.setattr(SqlTx, "existing_ids", real)  # the other writer looks too
            try:
                write(len(looked))
            finally:
                monkeypatch.setattr(SqlTx, "existing_ids", existing_ids)
        return found

    monkeypatch.setattr(SqlTx, "existing_ids", existing_ids)
    return looked


def _contents(store: Any, record_id: str) -> list[str]:
    return [r.content for r in store.list("memory", limit=None) if r.id == record_id]


def test_an_upsert_of_a_new_id_another_writer_stores_meanwhile_replaces_it(
    stores: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, other = stores
    looked = _between(
        monkeypatch, 1, lambda n: other.upsert(["other's version"], "memory", record_ids="doc-1")
    )
    assert mine.upsert(["my version"], "memory", record_ids="doc-1", user_ids="u") == ["doc-1"]
    assert looked == [["doc-1"], ["doc-1"]]  # looked, met the other's row, looked again
    assert _contents(mine, "doc-1") == ["my version"]
    assert _contents(other, "doc-1") == ["my version"]
    assert [r.id for r, _ in mine.search("my version", 5)] == ["doc-1"]
    assert other.search("other's", 5, record_types={"memory"})[0][0].content == "my version"


def test_an_upsert_of_a_stored_id_another_writer_replaces_meanwhile_replaces_it(
    stores: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, other = stores
    mine.add(["first version"], "memory", record_ids="doc-2")
    _between(
        monkeypatch, 1, lambda n: other.upsert(["other's version"], "memory", record_ids="doc-2")
    )
    assert mine.upsert(["my version"], "memory", record_ids="doc-2") == ["doc-2"]
    assert _contents(other, "doc-2") == ["my version"]


def test_a_batch_upsert_keeps_its_other_records_once(
    stores: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, other = stores
    _between(monkeypatch, 1, lambda n: other.add(["other's b"], "memory", record_ids="b"))
    ids = mine.upsert(["my a", "my b", "my c"], "memory", record_ids=["a", "b", "c"])
    assert ids == ["a", "b", "c"]
    stored = sorted((r.id, r.content) for r in other.list("memory", limit=None))
    assert stored == [("a", "my a"), ("b", "my b"), ("c", "my c")]


def test_an_upsert_gives_up_after_its_attempts_and_writes_nothing(
    stores: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, other = stores

    def keep_taking(n: int) -> None:  # every attempt, a new id of the call is taken
        other.add([f"other's {n}"], "memory", record_ids=f"id-{n}")

    ids = [f"id-{n}" for n in range(1, UPSERT_ATTEMPTS + 1)]
    looked = _between(monkeypatch, UPSERT_ATTEMPTS, keep_taking)
    with pytest.raises(IdsTakenError, match="written concurrently"):
        mine.upsert([f"mine {i}" for i in ids], "memory", record_ids=ids)
    assert len(looked) == UPSERT_ATTEMPTS
    stored = sorted((r.id, r.content) for r in other.list("memory", limit=None))
    assert stored == [(i, f"other's {n}") for n, i in enumerate(ids, 1)]


def test_an_add_of_an_id_another_writer_stores_meanwhile_is_refused(
    stores: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, other = stores
    _between(monkeypatch, 1, lambda n: other.add(["other's"], "memory", record_ids="doc-3"))
    with pytest.raises(InvalidArgumentError, match=r"already exist \(written concurrently\)"):
        mine.add(["mine"], "memory", record_ids="doc-3")
    assert _contents(other, "doc-3") == ["other's"]
