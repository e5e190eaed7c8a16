"""``--strategy`` of ``oam search``, the inspector's ``?strategy=`` and ``oam mcp
--strategy`` rank that call's searches their way and leave the store's recorded
default search strategy as it was, on SQLite and PostgreSQL (a fresh-user review
found all three rewriting it)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import anyio
import pytest
from _mcp import mcp_session, structured
from _seed import EMBEDDER
from starlette.testclient import TestClient
from typer.testing import CliRunner

from oam_core import OracleAgentMemory, SearchStrategy
from oam_core.cli import app
from oam_core.service.web.app import create_app
from oam_core.store.strategy import searching_with, strategy_of


@pytest.fixture
def vector_store(db_url: str) -> str:
    """A store created with VECTOR as its default, holding one fact of alice."""
    with OracleAgentMemory.open(
        db_url, embedder=EMBEDDER, search_strategy="VECTOR", extract_memories=False
    ) as memory:
        memory.store.add(
            ["Alice is going to Porto in March", "Bob feeds the cat"],
            "fact",
            user_ids="alice",
        )
    return db_url


def _recorded(url: str) -> SearchStrategy:
    with OracleAgentMemory.open(
        url, embedder=EMBEDDER, extract_memories=False, schema_policy="REQUIRE_EXISTING"
    ) as memory:
        return memory.store.search_strategy


def test_cli_search_strategy_is_per_call(vector_store: str) -> None:
    runner = CliRunner()
    args = ["--db", vector_store, "--embedder", EMBEDDER, "--json"]
    result = runner.invoke(app, ["search", "Porto", *args, "--strategy", "keyword"])
    assert result.exit_code == 0, result.output
    top = json.loads(result.stdout.splitlines()[0])
    assert (top["score_kind"], top["distance"]) == ("keyword", 0.0)
    assert _recorded(vector_store) is SearchStrategy.VECTOR
    plain = runner.invoke(app, ["search", "Porto", *args])
    assert json.loads(plain.stdout.splitlines()[0])["score_kind"] == "cosine", plain.output
    card = runner.invoke(app, ["card", "nothing", "--db", vector_store, "--strategy", "hybrid"])
    assert card.exit_code == 1 and _recorded(vector_store) is SearchStrategy.VECTOR


def test_inspector_strategy_is_per_request(vector_store: str) -> None:
    with TestClient(
        create_app(vector_store, embedder=EMBEDDER), base_url="http://127.0.0.1"
    ) as client:
        for strategy in ("keyword", "hybrid", "vector"):
            response = client.get("/search?" + urlencode({"q": "Porto", "strategy": strategy}))
            assert response.status_code == 200, response.text[-500:]
            assert "Porto" in response.text
        assert _recorded(vector_store) is SearchStrategy.VECTOR
        bad = client.get("/search?" + urlencode({"q": "Porto", "strategy": "fuzzy"}))
        assert bad.status_code == 400 and "search_strategy must be one of" in bad.text
    assert _recorded(vector_store) is SearchStrategy.VECTOR


def test_mcp_strategy_is_per_call(vector_store: str, tmp_path: Path) -> None:
    async def scenario() -> None:
        args = ("--user", "alice", "--strategy", "keyword")
        async with mcp_session(vector_store, *args, cwd=tmp_path) as client:
            hits = structured(await client.call_tool("search_memories", {"query": "Porto"}))
            assert hits[0]["distance"] == 0.0 and "Porto" in hits[0]["content"]
        async with mcp_session(vector_store, "--user", "alice", cwd=tmp_path) as client:
            hits = structured(await client.call_tool("search_memories", {"query": "Porto"}))
            assert hits[0]["distance"] > 0.0  # cosine distance: the store's VECTOR

    anyio.run(scenario)
    assert _recorded(vector_store) is SearchStrategy.VECTOR


def test_the_override_is_bound_to_one_store_and_one_block(vector_store: str) -> None:
    with (
        OracleAgentMemory.open(vector_store, embedder=EMBEDDER, extract_memories=False) as a,
        OracleAgentMemory.open(vector_store, embedder=EMBEDDER, extract_memories=False) as b,
    ):
        with searching_with(a.store, "keyword"):
            assert strategy_of(a.store) is SearchStrategy.KEYWORD
            assert strategy_of(b.store) is SearchStrategy.VECTOR
            [(_record, distance)] = a.store.search("Porto", 1)
            assert distance == 0.0
        assert strategy_of(a.store) is SearchStrategy.VECTOR
        with (
            pytest.raises(ValueError, match="search_strategy must be one of"),
            searching_with(a.store, "fuzzy"),
        ):
            pass
    assert _recorded(vector_store) is SearchStrategy.VECTOR


def test_ingest_records_the_strategy_only_of_a_store_it_creates(
    db_url: str, tmp_path: Path
) -> None:
    chat = tmp_path / "c.jsonl"
    chat.write_text('{"role": "user", "content": "My cat sleeps on the piano"}\n', "utf-8")
    runner = CliRunner()
    args = ["--db", db_url, "--embedder", EMBEDDER]
    first = runner.invoke(app, ["ingest", str(chat), *args, "--strategy", "keyword"])
    assert first.exit_code == 0, first.output
    assert _recorded(db_url) is SearchStrategy.KEYWORD
    again = runner.invoke(app, ["ingest", str(chat), *args, "--strategy", "vector", "--replace"])
    assert again.exit_code == 0, again.output
    assert _recorded(db_url) is SearchStrategy.KEYWORD
