"""``--embedder none`` ranks by keywords in every command that searches (trial 48,
f07): ``oam mcp`` answered every ``search_memories`` with "HYBRID search of a text
query needs an embedder" and built cards without relevant memories, while ``oam
search`` fell back to KEYWORD. One rule, ``service.common.search_strategy_for``,
now serves ``oam search``, ``oam card``, ``oam demo``, ``oam mcp`` and ``oam serve``;
VECTOR or HYBRID given without an embedder is refused before anything runs."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlencode

import anyio
import pytest
from _mcp import server_params, structured
from _proc import run_cli
from _seed import EMBEDDER
from mcp import Client
from mcp.client.stdio import stdio_client
from starlette.testclient import TestClient

from oam_core import OracleAgentMemory, SearchStrategy
from oam_core.errors import ConfigurationError, InvalidArgumentError
from oam_core.service.common import checked_strategy, score_kind, search_strategy_for
from oam_core.service.mcp_server import build_server
from oam_core.service.scope import Scope
from oam_core.service.web.app import create_app

T = TypeVar("T")
TEA = "Alice likes green tea"
CHAT = [
    {"role": "user", "content": "I am flying to Lisbon in March for a conference."},
    {"role": "assistant", "content": "Lisbon in March sounds lovely."},
]
CONFERENCE = "The Lisbon conference is about databases"
"""A fact of alice and helper that the card of the thread ``trip`` (CHAT) finds by
its keywords, and only by them."""


@pytest.fixture
def keyword_db(tmp_path: Path) -> str:
    """A store written by ``oam ingest --embedder none`` (thread ``trip`` of alice
    and helper, CHAT), plus the fact CONFERENCE, no vector anywhere."""
    db = str(tmp_path / "kw.db")
    chat = tmp_path / "trip.jsonl"
    chat.write_text("\n".join(json.dumps(m) for m in CHAT) + "\n", encoding="utf-8")
    args = ["ingest", str(chat), "--db", db, "--embedder", "none"]
    result = run_cli([*args, "--user", "alice", "--agent", "helper"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with OracleAgentMemory.open(db, embedder=None, extract_memories=False) as memory:
        memory.store.add(
            [CONFERENCE], "fact", user_ids="alice", agent_ids="helper", record_ids="conf"
        )
        assert memory.store.embedder_identity is None
    return db


# -- the rule -------------------------------------------------------------------------


def _store_at(path: Path, embedder: str | None, strategy: str) -> OracleAgentMemory:
    return OracleAgentMemory.open(
        str(path), embedder=embedder, search_strategy=strategy, extract_memories=False
    )


@pytest.mark.parametrize(
    ("embedder", "recorded", "given", "expected"),
    [
        (None, "HYBRID", None, SearchStrategy.KEYWORD),
        (None, "VECTOR", None, SearchStrategy.KEYWORD),
        (None, "KEYWORD", None, None),
        (None, "HYBRID", "keyword", SearchStrategy.KEYWORD),
        (EMBEDDER, "HYBRID", None, None),
        (EMBEDDER, "VECTOR", None, None),
        (EMBEDDER, "KEYWORD", "hybrid", SearchStrategy.HYBRID),
        (EMBEDDER, "HYBRID", SearchStrategy.VECTOR, SearchStrategy.VECTOR),
    ],
)
def test_the_rule_ranks_by_keywords_only_without_an_embedder_and_a_choice(
    tmp_path: Path,
    embedder: str | None,
    recorded: str,
    given: str | SearchStrategy | None,
    expected: SearchStrategy | None,
) -> None:
    with _store_at(tmp_path / "s.db", embedder, recorded) as memory:
        assert search_strategy_for(memory.store, given) is expected
        assert memory.store.search_strategy is SearchStrategy[recorded]  # not rewritten


@pytest.mark.parametrize("given", ["vector", "HYBRID", SearchStrategy.VECTOR])
def test_the_rule_refuses_vector_and_hybrid_without_an_embedder(
    tmp_path: Path, given: str | SearchStrategy
) -> None:
    name = SearchStrategy.parse(given).name
    with (
        _store_at(tmp_path / "s.db", None, "HYBRID") as memory,
        pytest.raises(ConfigurationError) as raised,
    ):
        search_strategy_for(memory.store, given)
    assert str(raised.value) == (
        f"search_strategy={name} ranks text with an embedder, and there is none "
        "(embedder=None): configure one, or use search_strategy=KEYWORD"
    )
    with pytest.raises(ConfigurationError, match=f"search_strategy={name} "):
        checked_strategy(given, has_embedder=False)
    assert checked_strategy(given, has_embedder=True) is SearchStrategy[name]
    assert checked_strategy(None, has_embedder=False) is None


def test_the_rule_names_an_unknown_strategy(tmp_path: Path) -> None:
    with (
        _store_at(tmp_path / "s.db", None, "HYBRID") as memory,
        pytest.raises(InvalidArgumentError, match="search_strategy must be one of"),
    ):
        search_strategy_for(memory.store, "fuzzy")


def test_a_store_without_an_embedder_searches_by_keywords_inside_the_rule(
    tmp_path: Path,
) -> None:
    with _store_at(tmp_path / "s.db", None, "HYBRID") as memory:
        store = memory.store
        store.add([TEA, "Bob feeds the cat"], "fact", user_ids="alice", record_ids=["t", "c"])
        with pytest.raises(ConfigurationError, match="HYBRID search of a text query"):
            store.search("green tea", 2)
        with store.searching_with(search_strategy_for(store, None)):
            [(record, distance)] = store.search("green tea", 2)
            assert score_kind(store) == "keyword"
        assert (record.id, distance) == ("t", 0.0)


# -- oam mcp over stdio ---------------------------------------------------------------


def _run_mcp(
    args: tuple[str, ...], url: str, cwd: Path, scenario: Callable[[Client], Awaitable[T]]
) -> tuple[T, list[str]]:
    """Run ``scenario(client)`` against ``oam mcp --db URL ARGS`` over stdio; return
    its result and the server's stderr lines."""
    params = server_params(url, *args, cwd=cwd, embedder=None)

    async def run() -> tuple[T, list[str]]:
        with tempfile.TemporaryFile("w+") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as c:
                result = await scenario(c)
            errlog.seek(0)
            return result, errlog.read().splitlines()

    return anyio.run(run)


async def _save_and_recall(client: Client) -> tuple[list[tuple[str, str]], str]:
    """Save TEA, start a thread, and return the search hits and the thread's card."""
    structured(await client.call_tool("add_memory", {"content": TEA}))
    added = structured(
        await client.call_tool(
            "add_messages", {"messages": [{"role": "user", "content": "What tea should I buy?"}]}
        )
    )
    hits = structured(await client.call_tool("search_memories", {"query": "green tea"}))
    card = structured(await client.call_tool("get_context_card", {"thread_id": added["thread_id"]}))
    return [(h["content"], h["score_kind"]) for h in hits], card


def test_mcp_without_an_embedder_searches_and_builds_cards_by_keywords(
    db_url: str, tmp_path: Path
) -> None:
    args = ("--user", "alice", "--agent", "helper", "--create", "--embedder", "none")
    (hits, card), lines = _run_mcp(args, db_url, tmp_path, _save_and_recall)
    assert hits == [(TEA, "keyword")]
    assert TEA in card
    assert lines[0] == (
        "oam mcp: INFO: no embedder (--embedder none): search_memories and context cards "
        "rank by keywords, as --strategy keyword; the store's own strategy, hybrid, needs "
        "an embedder (`oam reindex --embedder local` embeds the records stored without "
        "vectors)"
    )
    assert lines[1].startswith("oam ") and "waiting for a client" in lines[1]
    assert len(lines) == 2, lines
    with OracleAgentMemory.open(db_url, embedder=None, extract_memories=False) as memory:
        assert memory.store.search_strategy is SearchStrategy.HYBRID  # not rewritten


def test_mcp_with_strategy_keyword_and_no_embedder_says_nothing_more(
    tmp_path: Path,
) -> None:
    args = ("--user", "alice", "--create", "--embedder", "none", "--strategy", "keyword")
    (hits, _card), lines = _run_mcp(args, str(tmp_path / "k.db"), tmp_path, _save_and_recall)
    assert hits == [(TEA, "keyword")]
    assert len(lines) == 1 and "waiting for a client" in lines[0], lines


def test_mcp_on_a_store_ingested_without_vectors_finds_by_keywords(
    keyword_db: str, tmp_path: Path
) -> None:
    """A keyword-only store (``oam ingest --embedder none``) served with ``--embedder
    none`` and no ``--strategy``: its memories and messages are found, and its
    thread's card shows the fact its words name."""

    async def recall(client: Client) -> tuple[list[tuple[str, str]], list[str], str]:
        facts = structured(await client.call_tool("search_memories", {"query": "conference"}))
        query = {"query": "lovely", "record_types": ["message"], "k": 1}
        messages = structured(await client.call_tool("search_memories", query))
        card = structured(await client.call_tool("get_context_card", {"thread_id": "trip"}))
        return (
            [(h["id"], h["score_kind"]) for h in facts],
            [h["content"] for h in messages],
            card,
        )

    args = ("--user", "alice", "--agent", "helper", "--embedder", "none")
    (facts, messages, card), lines = _run_mcp(args, keyword_db, tmp_path, recall)
    assert facts == [("conf", "keyword")]
    assert messages == [CHAT[1]["content"]]
    assert CONFERENCE in card
    assert "no embedder (--embedder none)" in lines[0]


@pytest.mark.parametrize("strategy", ["vector", "hybrid"])
def test_mcp_refuses_vector_or_hybrid_without_an_embedder_before_creating(
    tmp_path: Path, strategy: str
) -> None:
    db = tmp_path / "new.db"
    args = ["mcp", "--db", str(db), "--user", "alice", "--create", "--embedder", "none"]
    result = run_cli([*args, "--strategy", strategy], cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == (
        f"Error: --strategy {strategy} ranks text with an embedder, and there is none "
        "(--embedder none): pass --embedder (e.g. local), or use --strategy keyword\n"
    )
    assert not db.exists()


def test_build_server_refuses_hybrid_without_an_embedder(tmp_path: Path) -> None:
    with (
        _store_at(tmp_path / "s.db", None, "HYBRID") as memory,
        pytest.raises(ConfigurationError, match="search_strategy=HYBRID ranks text"),
    ):
        build_server(memory, Scope(user_id="alice"), search_strategy="hybrid")


def test_mcp_shows_a_library_warning_as_one_log_line(keyword_db: str, tmp_path: Path) -> None:
    """Records stored without vectors, served with an embedder: the warning is one
    ``oam mcp: WARNING:`` line in the command's words, not Python's two lines."""

    async def search(client: Client) -> list[str]:
        query = {"query": "Lisbon", "record_types": ["message"], "k": 1}
        hits = structured(await client.call_tool("search_memories", query))
        return [h["score_kind"] for h in hits]

    args = ("--user", "alice", "--embedder", EMBEDDER)
    kinds, lines = _run_mcp(args, keyword_db, tmp_path, search)
    assert kinds == ["hybrid"]
    [warning] = [line for line in lines if "WARNING" in line]
    assert warning.startswith("oam mcp: WARNING: 3 record(s) of this store (e.g. ")
    assert warning.endswith(
        "HYBRID search finds them by keywords only until `oam reindex` embeds them"
    )
    assert not any("UserWarning" in line or "store.reindex()" in line for line in lines)


def test_mcp_search_error_still_names_an_unknown_strategy(tmp_path: Path) -> None:
    args = ["mcp", "--db", str(tmp_path / "n.db"), "--user", "a", "--create"]
    result = run_cli([*args, "--embedder", "none", "--strategy", "fuzzy"], cwd=tmp_path)
    assert result.returncode == 2 and "fuzzy" in result.stderr  # typer refuses the choice


# -- the other commands ---------------------------------------------------------------


def test_cli_card_and_search_rank_by_keywords_without_an_embedder(
    keyword_db: str, tmp_path: Path
) -> None:
    card = run_cli(["card", "trip", "--db", keyword_db, "--embedder", "none"], cwd=tmp_path)
    assert card.returncode == 0, card.stderr
    assert f"<content>{CONFERENCE}</content>" in card.stdout
    args = ["--db", keyword_db, "--embedder", "none", "--json", "-k", "1"]
    found = run_cli(["search", "databases", *args], cwd=tmp_path)
    [hit] = [json.loads(line) for line in found.stdout.splitlines()]
    assert (hit["id"], hit["score_kind"], hit["score"]) == ("conf", "keyword", 1.0)
    refused = run_cli(
        ["card", "trip", "--db", keyword_db, "--embedder", "none", "--strategy", "hybrid"],
        cwd=tmp_path,
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: --strategy hybrid ranks text with an embedder")


def test_cli_demo_without_an_embedder_answers_by_keywords(tmp_path: Path) -> None:
    db = str(tmp_path / "demo.db")
    result = run_cli(["demo", "--db", db, "--embedder", "none", "-k", "1"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(" keyword ") == 4  # one answer to each question
    refused = run_cli(
        ["demo", "--db", str(tmp_path / "d2.db"), "--embedder", "none", "--strategy", "vector"],
        cwd=tmp_path,
    )
    assert refused.returncode == 1 and "--strategy vector ranks text" in refused.stderr
    assert "Ingested" not in refused.stdout  # refused before anything was written


@pytest.mark.parametrize("command", ["demo", "ingest"])
@pytest.mark.parametrize("strategy", ["vector", "hybrid"])
def test_cli_demo_and_ingest_refuse_vector_or_hybrid_without_an_embedder_before_creating(
    tmp_path: Path, command: str, strategy: str
) -> None:
    """Trial 50 f04: ``demo`` refused after creating the store (a new empty store was
    left behind) and ``ingest`` did not refuse at all (a store recorded VECTOR with no
    vector, where ``oam search`` found nothing)."""
    chat = tmp_path / "trip.jsonl"
    chat.write_text("\n".join(json.dumps(m) for m in CHAT) + "\n", encoding="utf-8")
    db = tmp_path / "new.db"
    source = [str(chat)] if command == "ingest" else []
    args = [command, *source, "--db", str(db), "--embedder", "none", "--strategy", strategy]
    result = run_cli(args, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: --strategy {strategy} ranks text with an embedder, and there is none "
        "(--embedder none): pass --embedder (e.g. local), or use --strategy keyword\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trip.jsonl"]


def test_inspector_without_an_embedder_searches_and_builds_cards_by_keywords(
    keyword_db: str,
) -> None:
    with TestClient(create_app(keyword_db, embedder=None), base_url="http://127.0.0.1") as web:
        page = web.get("/search?" + urlencode({"q": "databases"}))
        assert page.status_code == 200, page.text[-500:]
        assert CONFERENCE in page.text and "keyword search" in page.text
        card = web.get("/thread/card?" + urlencode({"id": "trip"}))
        assert card.status_code == 200
        assert CONFERENCE in card.text
        refused = web.get("/search?" + urlencode({"q": "databases", "strategy": "hybrid"}))
        assert refused.status_code == 400
        assert "search_strategy=HYBRID ranks text with an embedder" in refused.text
