"""One score convention everywhere (issue 21): ``oam search --json``, ``oam mcp``'s
``search_memories`` and the inspector's search show ``score = 1 - distance``, higher
is better, labelled by what it measures (cosine, keyword, hybrid); the inspector
searches messages by default, so a store filled by ``oam ingest`` finds something."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlencode

import anyio
import pytest
from _mcp import mcp_session, structured
from _proc import run_cli
from _seed import EMBEDDER
from starlette.testclient import TestClient

from oam_core.service.web.app import create_app

CHAT = [
    {"role": "user", "content": "I am flying to Lisbon in March for a conference."},
    {"role": "assistant", "content": "Lisbon in March sounds lovely."},
    {"role": "user", "content": "My dog Rex stays with my sister."},
]


@pytest.fixture
def ingested(db_url: str, tmp_path: Path) -> str:
    chat = tmp_path / "chat.jsonl"
    chat.write_text("\n".join(json.dumps(m) for m in CHAT) + "\n", encoding="utf-8")
    args = ["ingest", str(chat), "--db", db_url, "--embedder", EMBEDDER, "--user", "alice"]
    result = run_cli(args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return db_url


@pytest.mark.parametrize("strategy", ["vector", "keyword", "hybrid"])
def test_cli_mcp_and_inspector_show_the_same_scores(
    ingested: str, tmp_path: Path, strategy: str
) -> None:
    query = "flying to Lisbon in March"
    args = ["search", query, "--db", ingested, "--embedder", EMBEDDER, "--strategy", strategy]
    cli = run_cli([*args, "--json", "-k", "3"], cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    expected = [json.loads(line) for line in cli.stdout.splitlines()]
    kind = {"vector": "cosine", "keyword": "keyword", "hybrid": "hybrid"}[strategy]
    assert expected and {e["score_kind"] for e in expected} == {kind}

    async def scenario() -> list[dict[str, object]]:
        args = ("--user", "alice", "--strategy", strategy)
        async with mcp_session(ingested, *args, cwd=tmp_path) as client:
            found = await client.call_tool(
                "search_memories", {"query": query, "k": 3, "record_types": ["message"]}
            )
            return list(structured(found))

    hits = anyio.run(scenario)
    assert [h["id"] for h in hits] == [e["id"] for e in expected]
    for hit, want in zip(hits, expected, strict=True):
        assert hit["score_kind"] == kind
        assert hit["score"] == pytest.approx(want["score"], abs=1e-6)
        assert hit["score"] == pytest.approx(1 - hit["distance"], abs=1e-9)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)

    with TestClient(create_app(ingested, embedder=EMBEDDER), base_url="http://127.0.0.1") as web:
        page = web.get("/search?" + urlencode({"q": query, "k": 3, "strategy": strategy}))
    assert page.status_code == 200
    assert f"<th>score ({kind})</th>" in page.text and "distance" not in page.text.lower()
    shown = [float(v) for v in re.findall(r'<td class="num"[^>]*>([0-9.-]+)</td>', page.text)]
    assert shown == [round(float(str(e["score"])), 2) for e in expected]


def test_the_inspector_finds_ingested_messages_by_default(ingested: str) -> None:
    """issue 21: the search box searched memory types only, so a store filled by
    ``oam ingest`` (messages) answered "No results"."""
    with TestClient(create_app(ingested, embedder=EMBEDDER), base_url="http://127.0.0.1") as web:
        page = web.get("/search?" + urlencode({"q": "dog Rex"}))
        assert page.status_code == 200 and "No results." not in page.text
        assert "My dog Rex stays with my sister." in page.text
        form = web.get("/search").text
        assert re.search(r'value="message" checked', form)


@pytest.mark.parametrize(("strategy", "kind"), [("vector", "fused"), ("hybrid", "hybrid")])
def test_memories_fused_with_messages_are_labelled_fused(
    ingested: str, tmp_path: Path, strategy: str, kind: str
) -> None:
    """A search for messages and memories together fuses the two lists by rank
    (docs/retrieval.md#memories-and-messages-together): under VECTOR its score is no
    cosine similarity, so it is not labelled ``cosine``."""

    async def scenario() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        args = ("--user", "alice", "--strategy", strategy)
        async with mcp_session(ingested, *args, cwd=tmp_path) as client:
            await client.call_tool(
                "add_memory", {"content": "Alice flies to Lisbon in March", "record_type": "fact"}
            )
            both = await client.call_tool(
                "search_memories",
                {"query": "Lisbon in March", "k": 4, "record_types": ["message", "fact"]},
            )
            facts = await client.call_tool(
                "search_memories", {"query": "Lisbon in March", "k": 4, "record_types": ["fact"]}
            )
            return list(structured(both)), list(structured(facts))

    both, facts = anyio.run(scenario)
    assert {h["record_type"] for h in both} == {"message", "fact"}
    assert {h["score_kind"] for h in both} == {kind}
    # one kind alone is the store's own ranking, labelled by its strategy
    assert [h["score_kind"] for h in facts] == [{"vector": "cosine", "hybrid": "hybrid"}[strategy]]
