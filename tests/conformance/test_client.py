"""``OracleAgentMemory`` over every store back end (docs/concepts.md#opening, docs/concepts.md#sync-and-async)."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from _fixtures import CountingLlm, run_docstring_examples

from oam_core.apis.records import Record
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.memory.client import OracleAgentMemory
from oam_core.memory.thread import OracleThread
from oam_core.store.options import MemoryRetentionConfig, SearchStrategy
from oam_core.store.sqlite import SQLiteMemoryStore
from oam_core.store.threads import thread_store


@pytest.fixture
def mem(store: Any) -> OracleAgentMemory:
    return OracleAgentMemory(store=store, extract_memories=False)


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "client.db")


# -- Oracle's SDK documentation examples, verbatim (db_pool -> a SQLite path) ---------


@pytest.fixture
def seed_client(db_path: str) -> Any:
    db_pool, embedder, llm = db_path, HashingEmbedder(64), CountingLlm()
    client = OracleAgentMemory(
        connection=db_pool,
        embedder=embedder,
        llm=llm,
    )
    yield client
    client.close()


def test_seed_constructor_examples(db_path: str) -> None:
    db_pool, embedder, llm = db_path, HashingEmbedder(64), CountingLlm()
    client = OracleAgentMemory(
        connection=db_pool,
        embedder=embedder,
        llm=llm,
    )
    read_only_client = OracleAgentMemory(
        connection=db_pool,
        embedder=embedder,
        extract_memories=False,
    )
    assert client.llm is llm and read_only_client.extract_memories is False
    read_only_client.close()
    client.close()


def test_seed_add_agent_example(seed_client: OracleAgentMemory) -> None:
    client = seed_client
    assert client.add_agent("a1", "Support assistant") == "a1"


def test_seed_add_memory_example(seed_client: OracleAgentMemory) -> None:
    client = seed_client
    memory_id = client.add_memory("User likes pizza", memory_id="mem-1")
    assert memory_id == "mem-1"


def test_seed_add_user_example(seed_client: OracleAgentMemory) -> None:
    client = seed_client
    assert client.add_user("u1", "Prefers concise answers.") == "u1"


def test_seed_create_thread_example(seed_client: OracleAgentMemory) -> None:
    client = seed_client
    thread = client.create_thread(thread_id="c1", user_id="u1")
    assert thread.thread_id == "c1"


def test_seed_delete_agent_example(seed_client: OracleAgentMemory) -> None:
    client = seed_client
    assert client.add_agent("a-delete", "Support assistant") == "a-delete"
    assert client.delete_agent("a-delete") == 1


def test_seed_delete_memory_example(seed_client: OracleAgentMemory) -> None:
    client = seed_client
    memory_id = client.add_memory("Temporary memory", memory_id="mem-delete")
    assert client.delete_memory(memory_id) == 1


def test_seed_delete_thread_example(seed_client: OracleAgentMemory) -> None:
    client = seed_client
    thread = client.create_thread(thread_id="c-delete")
    assert client.delete_thread(thread.thread_id) == 1


def test_seed_delete_user_example(seed_client: OracleAgentMemory) -> None:
    client = seed_client
    assert client.add_user("u-delete", "Prefers concise answers.") == "u-delete"
    assert client.delete_user("u-delete") == 1


def test_seed_get_thread_example(seed_client: OracleAgentMemory) -> None:
    client = seed_client
    created = client.create_thread(thread_id="c1", user_id="u1")
    loaded = client.get_thread("c1")
    assert loaded.user_id == "u1"
    assert created.thread_id == loaded.thread_id


def test_docstring_examples_run(make_store: Any) -> None:
    """The examples of Oracle's SDK documentation quoted in the docstrings run as written."""

    names = iter(range(1000))

    def fresh() -> dict[str, Any]:
        store = make_store(name=f"doc{next(names)}.db")
        return {"client": OracleAgentMemory(store=store, llm=CountingLlm())}

    assert run_docstring_examples(OracleAgentMemory, fresh) >= 20


# -- construction ------------------------------------------------------------------------


def test_store_and_connection_are_exclusive(store: Any, db_path: str) -> None:
    with pytest.raises(ValueError, match="both"):
        OracleAgentMemory(store=store, connection=db_path)
    with pytest.raises(ValueError, match="neither"):
        OracleAgentMemory()


@pytest.mark.parametrize(
    "option",
    [
        {"schema_policy": "CREATE_IF_NECESSARY"},
        {"table_name_prefix": "p"},
        {"memory_store_id": "s1"},
        {"search_strategy": SearchStrategy.KEYWORD},
        {"memory_retention_config": MemoryRetentionConfig()},
    ],
)
def test_db_options_with_store_are_rejected(store: Any, option: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(option))):
        OracleAgentMemory(store=store, **option)


def test_embedder_with_store(store: Any) -> None:
    with pytest.raises(ValueError, match="embedder"):
        OracleAgentMemory(store=store, embedder=HashingEmbedder(64))
    same = OracleAgentMemory(store=store, embedder=store.embedder, extract_memories=False)
    assert same.embedder is store.embedder


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"store": "not a store"}, "store"),
        ({"connection": ":memory:", "llm": 42}, "llm"),
        ({"connection": ":memory:", "extract_memories": None}, "extract_memories"),
        ({"connection": ":memory:", "embedder": 42}, "embedder"),
        ({"connection": ":memory:", "search_strategy": "FUZZY"}, "search_strategy"),
        ({"connection": ":memory:", "schema_policy": "SOMETIMES"}, "schema_policy"),
        ({"connection": ":memory:", "schema_policy": "RECREATE"}, "RECREATE"),
        ({"connection": ":memory:", "schema_policy": "REQUIRE_EXISTING"}, "REQUIRE_EXISTING"),
        ({"connection": ""}, "connection"),
        ({"connection": 3.5}, "connection"),
    ],
)
def test_bad_constructor_arguments(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        OracleAgentMemory(**kwargs)


class _FakeDriverObject:
    pass


@pytest.mark.parametrize("module", ["psycopg.connection", "psycopg_pool.pool"])
def test_unknown_psycopg_objects_are_rejected(module: str) -> None:
    """A psycopg-module object that is neither a pool nor a connection is named."""
    fake = type("Cursor", (_FakeDriverObject,), {"__module__": module})()
    with pytest.raises(ValueError, match=r"PostgreSQL connection must be .* got Cursor"):
        OracleAgentMemory(connection=fake)


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("mysql://localhost/db", "scheme"),
        ("sqlite://host/db.sqlite", "sqlite:///"),
        ("sqlite:///x.db?mode=ro", "sqlite:///"),
    ],
)
def test_unsupported_urls(url: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        OracleAgentMemory.open(url)
    with pytest.raises(ValueError, match=match):
        OracleAgentMemory(connection=url)


@pytest.mark.parametrize("module", ["oracledb.connection", "oracledb.pool"])
def test_oracle_driver_objects_open_the_oracle_store(module: str) -> None:
    # An object that is neither a connection nor a pool reaches OracleDBMemoryStore,
    # which names the argument (tests/oracle drives a working fake connection).
    fake = type("Connection", (_FakeDriverObject,), {"__module__": module})()
    with pytest.raises(ValueError, match="oracledb connection pool or connection"):
        OracleAgentMemory(connection=fake)


def test_sqlite3_connection_is_rejected() -> None:
    conn = sqlite3.connect(":memory:")
    try:
        with pytest.raises(ValueError, match="path"):
            OracleAgentMemory(connection=conn)
    finally:
        conn.close()


def _check_roundtrip(make: Any, other: Any | None = None) -> None:
    first = make()
    thread_id = first.create_thread(user_id="u1").thread_id
    first.get_thread(thread_id).add_messages([{"role": "user", "content": "hi"}])
    first.close()
    second = (other or make)()
    assert [m.content for m in second.get_thread(thread_id).get_messages()] == ["hi"]
    second.close()


def test_connection_forms_reach_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "forms.db"
    kwargs: dict[str, Any] = {"extract_memories": False}
    _check_roundtrip(
        lambda: OracleAgentMemory(connection=path, **kwargs),
        lambda: OracleAgentMemory(connection=str(path), **kwargs),
    )
    _check_roundtrip(lambda: OracleAgentMemory.open(f"sqlite:///{path}", **kwargs))
    _check_roundtrip(
        lambda: OracleAgentMemory.open("sqlite:///rel.db", **kwargs),
        lambda: OracleAgentMemory(connection=tmp_path / "rel.db", **kwargs),
    )
    _check_roundtrip(
        lambda: OracleAgentMemory.open(f"sqlite:///{path}", **kwargs),
        lambda: OracleAgentMemory.open(path, **kwargs),
    )


@pytest.mark.parametrize("target", [":memory:", "sqlite://:memory:", "sqlite:///:memory:"])
def test_in_memory_targets(target: str) -> None:
    with OracleAgentMemory.open(target, extract_memories=False) as client:
        assert isinstance(client.store, SQLiteMemoryStore)
        assert client.store.path == ":memory:"
        assert client.add_agent("a1", "x") == "a1"


def test_open_rejects_store_or_connection(store: Any) -> None:
    with pytest.raises(ValueError, match="store"):
        OracleAgentMemory.open(":memory:", store=store)
    with pytest.raises(ValueError, match="connection"):
        OracleAgentMemory.open(":memory:", connection=":memory:")


def test_connection_options_reach_the_store(db_path: str) -> None:
    retention = MemoryRetentionConfig(default_ttl_days=7)
    client = OracleAgentMemory(
        connection=db_path,
        embedder="hashing/16",
        search_strategy="hybrid",
        memory_retention_config=retention,
        memory_store_id="s1",
        schema_policy="CREATE_IF_NECESSARY",
        extract_memories=False,
    )
    store = client.store
    assert isinstance(store, SQLiteMemoryStore)
    assert isinstance(store.embedder, HashingEmbedder) and store.embedder.embedding_dimension == 16
    assert store.search_strategy is SearchStrategy.HYBRID
    assert store.memory_retention_config == retention
    assert store.memory_store_id == "s1"
    client.close()
    again = OracleAgentMemory(
        connection=db_path,
        schema_policy="REQUIRE_EXISTING",
        extract_memories=False,
        embedder="hashing/16",
        search_strategy="hybrid",
        memory_store_id="s1",
    )
    again.close()


def test_table_name_prefix_is_a_deprecated_alias(db_path: str) -> None:
    with pytest.warns(DeprecationWarning, match="memory_store_id"):
        client = OracleAgentMemory(
            connection=db_path, table_name_prefix="legacy", extract_memories=False
        )
    assert client.store.memory_store_id == "legacy"  # type: ignore[attr-defined]
    client.close()
    with pytest.raises(ValueError, match="not both"):
        OracleAgentMemory(
            connection=db_path,
            table_name_prefix="a",
            memory_store_id="b",
            extract_memories=False,
        )


def test_close_and_context_managers(db_path: str, store: Any) -> None:
    with OracleAgentMemory(connection=db_path, extract_memories=False) as owned:
        owned.add_user("u1", "x")
    owned.close()  # idempotent
    with pytest.raises(Exception):  # noqa: B017 - the store is closed, any error will do
        owned.store.get("user_profile", "u1")
    with OracleAgentMemory(store=store, extract_memories=False) as borrowed:
        borrowed.add_user("u2", "y")
    assert store.get("user_profile", "u2") is not None  # a passed store stays open

    async def run() -> None:
        async with OracleAgentMemory(store=store, extract_memories=False) as client:
            await client.add_user_async("u3", "z")

    anyio.run(run)
    assert store.get("user_profile", "u3") is not None


# -- LLM requirement (docs/concepts.md#the-client-and-threads) ------------------------


def test_llm_requirement_rule(store: Any) -> None:
    strict = OracleAgentMemory(store=store)
    with pytest.raises(ValueError, match="LLM"):
        strict.create_thread(thread_id="no-llm")
    assert strict.list_threads() == []
    assert strict.create_thread(thread_id="off", extract_memories=False).extract_memories is False
    llm = CountingLlm()
    with_llm = strict.create_thread(thread_id="own-llm", llm=llm)
    assert with_llm.llm is llm and with_llm.extract_memories is True
    assert OracleAgentMemory(store=store, llm=llm).create_thread(thread_id="client-llm").llm is llm
    with pytest.raises(ValueError, match="LLM"):
        OracleAgentMemory(store=store, llm=llm).create_thread(thread_id="x", llm=None)
    # reopening (as in Oracle's SDK): omitted llm / extract_memories are the client's, never
    # what create_thread was given
    with pytest.raises(ValueError, match="LLM"):
        strict.get_thread("off")
    with pytest.raises(ValueError, match="LLM"):
        strict.get_thread("own-llm")
    assert strict.get_thread("own-llm", llm=llm).llm is llm
    assert strict.get_thread("own-llm", extract_memories=False).extract_memories is False
    with pytest.raises(ValueError, match="LLM"):
        strict.get_thread("off", extract_memories=True)
    relaxed = OracleAgentMemory(store=store, extract_memories=False)
    assert relaxed.get_thread("own-llm").llm is None
    assert relaxed.get_thread("own-llm").extract_memories is False
    assert relaxed.get_thread("off").extract_memories is False
    with_client_llm = OracleAgentMemory(store=store, llm=llm)
    reopened = with_client_llm.get_thread("off")
    assert reopened.llm is llm and reopened.extract_memories is True


# -- create_thread / get_thread ------------------------------------------------------


def test_omitted_ids_are_generated(mem: OracleAgentMemory) -> None:
    thread = mem.create_thread()
    for value in (thread.thread_id, thread.user_id, thread.agent_id):
        assert str(uuid.UUID(str(value))) == value
    loaded = mem.get_thread(thread.thread_id)
    assert (loaded.user_id, loaded.agent_id) == (thread.user_id, thread.agent_id)


@pytest.mark.parametrize("name", ["thread_id", "user_id", "agent_id"])
@pytest.mark.parametrize("value", [None, "", "  ", 7])
def test_explicit_bad_ids_are_rejected(mem: OracleAgentMemory, name: str, value: Any) -> None:
    with pytest.raises(ValueError, match=name):
        mem.create_thread(**{name: value})
    assert mem.list_threads() == []


def test_get_thread_unknown_and_bad_ids(mem: OracleAgentMemory) -> None:
    with pytest.raises(KeyError, match="nope"):
        mem.get_thread("nope")
    with pytest.raises(ValueError, match="thread_id"):
        mem.get_thread(None)  # type: ignore[arg-type]


def test_create_thread_persists_metadata_and_rejects_duplicates(mem: OracleAgentMemory) -> None:
    mem.create_thread(thread_id="dup", user_id="u1", metadata={"topic": "trip"})
    with pytest.raises(ValueError, match="dup"):
        mem.create_thread(thread_id="dup")
    loaded = mem.get_thread("dup")
    assert loaded.metadata == {"topic": "trip"}
    with pytest.raises(ValueError, match="metadata"):
        mem.create_thread(metadata=["x"])  # type: ignore[arg-type]


def test_get_thread_restores_config_and_overrides_win(mem: OracleAgentMemory) -> None:
    mem.create_thread(
        thread_id="cfg",
        memory_extraction_window=12,
        memory_extraction_frequency=4,
        context_card_token_limit=50,
        enable_context_summary=True,
    )
    loaded = mem.get_thread("cfg")
    assert loaded.config.memory_extraction_window == 12
    assert loaded.config.memory_extraction_frequency == 4
    assert loaded.config.context_card_token_limit == 50
    assert loaded.config.enable_context_summary is True
    assert loaded.config.max_message_token_length == 15_000  # default
    assert loaded.config.context_summary_update_frequency == -1
    override = mem.get_thread("cfg", memory_extraction_window=3, enable_context_summary=False)
    assert override.config.memory_extraction_window == 3
    assert override.config.enable_context_summary is False
    assert override.config.memory_extraction_frequency == 4
    assert mem.get_thread("cfg").config.memory_extraction_window == 12  # not written back


def test_get_thread_restores_pipeline_state(mem: OracleAgentMemory, store: Any) -> None:
    mem.create_thread(thread_id="st")
    assert thread_store(store).update_thread_row("st", state={"watermark": 7}) == 1
    assert mem.get_thread("st")._state == {"watermark": 7}


@pytest.mark.parametrize(
    "option",
    [
        {"memory_extraction_window": 0},
        {"memory_extraction_frequency": -2},
        {"context_summary_update_frequency": 1.5},
        {"max_message_token_length": "big"},
        {"enable_context_summary": 1},
    ],
)
def test_invalid_thread_options(mem: OracleAgentMemory, option: dict[str, Any]) -> None:
    name = next(iter(option))
    with pytest.raises(ValueError, match=name):
        mem.create_thread(thread_id="bad", **option)
    assert mem.list_threads() == []
    mem.create_thread(thread_id="good")
    with pytest.raises(ValueError, match=name):
        mem.get_thread("good", **option)


def test_unknown_thread_kwargs(mem: OracleAgentMemory) -> None:
    with pytest.raises(TypeError, match="bogus"):
        mem.create_thread(bogus=1)
    assert mem.create_thread(thread_id="p", persist_messages_in_config=True).thread_id == "p"
    with pytest.raises(TypeError, match="bogus"):
        mem.get_thread("p", bogus=1)


# -- records -----------------------------------------------------------------------------


def test_add_memory_scope(mem: OracleAgentMemory, store: Any) -> None:
    unscoped = store.get("memory", mem.add_memory("x"))
    assert (unscoped.user_id, unscoped.agent_id, unscoped.thread_id) == (None, None, None)
    scoped = store.get("memory", mem.add_memory("y", user_id="u", agent_id="a", thread_id="t"))
    assert (scoped.user_id, scoped.agent_id, scoped.thread_id) == ("u", "a", "t")
    meta = store.get("memory", mem.add_memory("z", metadata={"k": "v"}, ttl_days=3))
    assert meta.metadata == {"k": "v"} and meta.expires_at is not None
    with pytest.raises(ValueError):
        mem.add_memory(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="record_type"):
        mem.add_memory("w", record_type="fact")


@pytest.mark.parametrize("content", ["", "   ", "\n\t"])
def test_add_memory_refuses_blank_text(
    mem: OracleAgentMemory, store: Any, rejected: Any, content: str
) -> None:
    """review F7: a memory without words is refused, naming the argument, by the
    client and the thread, sync and async."""
    thread = mem.create_thread(thread_id="t1", user_id="u", agent_id="a")
    with rejected(store, match="content must be non-blank text"):
        mem.add_memory(content)
    with rejected(store, match="content must be non-blank text"):
        thread.add_memory(content)
    with rejected(store, match="content must be non-blank text"):
        asyncio.run(mem.add_memory_async(content, user_id="u"))


def test_delete_memory_finds_every_memory_like_type(mem: OracleAgentMemory, store: Any) -> None:
    for record_type in ("memory", "fact", "preference", "guideline"):
        (record_id,) = store.add([f"a {record_type}"], record_type, thread_ids="t1")
        assert mem.delete_memory(record_id) == 1
        assert store.get(record_type, record_id) is None
    (msg,) = store.add(["a message"], "message", thread_ids="t1", roles="user")
    assert mem.delete_memory(msg) == 0
    assert mem.delete_memory("unknown") == 0
    with pytest.raises(ValueError):
        mem.delete_memory("")


def test_delete_user_cascades(mem: OracleAgentMemory, store: Any) -> None:
    mem.add_user("u1", "Prefers tea")
    thread = mem.create_thread(thread_id="t1", user_id="u1")
    thread.add_messages([{"role": "user", "content": "hi"}])
    kept = mem.create_thread(thread_id="t2", user_id="u2")
    assert mem.delete_user("u1", cascade=False) == 1
    assert thread_store(store).get_thread_row("t1") is not None
    assert mem.delete_user("u1") == 0  # profile gone, cleanup still runs
    assert thread_store(store).get_thread_row("t1") is None
    assert thread.get_messages() == []
    assert thread_store(store).get_thread_row(kept.thread_id) is not None
    with pytest.raises(ValueError, match="cascade"):
        mem.delete_agent("a1", cascade="yes")  # type: ignore[arg-type]


def test_delete_thread_removes_everything(mem: OracleAgentMemory, store: Any) -> None:
    thread = mem.create_thread(thread_id="gone", user_id="u1", agent_id="a1")
    thread.add_messages([{"role": "user", "content": "pizza talk"}])
    thread.add_memory("pizza memory")
    assert mem.delete_thread("gone") == 1
    assert mem.search("pizza") == []
    assert mem.delete_thread("gone") == 0
    with pytest.raises(KeyError):
        mem.get_thread("gone")


def test_search_scope(mem: OracleAgentMemory) -> None:
    mem.add_memory("pizza for u1", user_id="u1", memory_id="m1")
    mem.add_memory("pizza for u2", user_id="u2", memory_id="m2")
    mem.add_memory("pizza for nobody", memory_id="m0")
    mem.add_memory("pizza in thread", user_id="u1", thread_id="t1", memory_id="m3")

    def ids(results: list[tuple[Record, float]]) -> list[str]:
        return sorted(r.id for r, _ in results)

    assert ids(mem.search("pizza", k=10)) == ["m0", "m1", "m2", "m3"]
    assert ids(mem.search("pizza", user_id="u1", k=10)) == ["m1", "m3"]
    assert ids(mem.search("pizza", user_id=None, k=10)) == ["m0"]
    assert ids(mem.search("pizza", user_id="u1", thread_id="t1")) == ["m3"]
    assert len(mem.search("pizza", k=2)) == 2
    assert mem.search("pizza", record_types={"fact"}) == []
    assert ids(mem.search("pizza", metadata_filter=None, k=10)) == ["m0", "m1", "m2", "m3"]
    with pytest.raises(ValueError):
        mem.search("pizza", k=0)
    with pytest.raises(ValueError):
        mem.search("pizza", record_types="memory")


def test_list_threads(mem: OracleAgentMemory) -> None:
    mem.create_thread(thread_id="a", user_id="u1", agent_id="x")
    mem.create_thread(thread_id="b", user_id="u2", agent_id="x")
    mem.create_thread(thread_id="c", user_id="u1", agent_id="y")
    assert [r.thread_id for r in mem.list_threads()] == ["a", "b", "c"]
    assert [r.thread_id for r in mem.list_threads(user_id="u1")] == ["a", "c"]
    assert [r.thread_id for r in mem.list_threads(user_id="u1", agent_id="x")] == ["a"]


# -- async twins and loops (docs/concepts.md#sync-and-async; C18) -------------------


def test_async_twins_match_sync(mem: OracleAgentMemory) -> None:
    def sync_side() -> list[Any]:
        thread = mem.create_thread(
            thread_id="s", user_id="su", agent_id="sa", extract_memories=False
        )
        mem.add_user("su", "Likes tea")
        mem.add_agent("sa", "Helper")
        mem.add_memory("tea memory", user_id="su", memory_id="s-m")
        return [
            mem.get_thread("s").user_id,
            [r.id for r, _ in mem.search("tea", user_id="su")],
            [r.thread_id for r in mem.list_threads(user_id="su")],
            mem.delete_memory("s-m"),
            mem.delete_thread(thread.thread_id),
            mem.delete_user("su"),
            mem.delete_agent("sa"),
        ]

    async def async_side() -> list[Any]:
        thread = await mem.create_thread_async(
            thread_id="as", user_id="au", agent_id="aa", extract_memories=False
        )
        await mem.add_user_async("au", "Likes tea")
        await mem.add_agent_async("aa", "Helper")
        await mem.add_memory_async("tea memory", user_id="au", memory_id="as-m")
        return [
            (await mem.get_thread_async("as")).user_id,
            [r.id for r, _ in await mem.search_async("tea", user_id="au")],
            [r.thread_id for r in await mem.list_threads_async(user_id="au")],
            await mem.delete_memory_async("as-m"),
            await mem.delete_thread_async(thread.thread_id),
            await mem.delete_user_async("au"),
            await mem.delete_agent_async("aa"),
        ]

    expected = sync_side()
    got = anyio.run(async_side)
    assert got == [
        "au",
        [{"s-m": "as-m", "su": "au"}[i] for i in expected[1]],
        ["as"],
        *expected[3:],
    ]
    assert expected[3:] == [1, 1, 1, 1]


def test_async_errors_match_sync(mem: OracleAgentMemory) -> None:
    async def run() -> None:
        with pytest.raises(KeyError):
            await mem.get_thread_async("missing")
        with pytest.raises(ValueError):
            await mem.create_thread_async(thread_id=None)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            await mem.create_thread_async(bogus=True)

    anyio.run(run)


def test_sync_client_inside_a_running_loop(mem: OracleAgentMemory) -> None:
    async def run() -> OracleThread:
        thread = mem.create_thread(thread_id="loop")
        mem.add_memory("inside", user_id=thread.user_id)
        return mem.get_thread("loop")

    assert asyncio.run(run()).thread_id == "loop"
