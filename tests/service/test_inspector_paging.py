"""``oam serve``'s paged lists over HTTP, on SQLite and PostgreSQL: walking the
memories list (``/memories``, "Older memories") or a long thread ("Earlier messages",
"Later messages") to the end shows every item exactly once, in order
(docs/service.md#oam-serve)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape

import pytest
from _seed import EMBEDDER
from starlette.testclient import TestClient

from oam_core import OracleAgentMemory
from oam_core.service.web.app import create_app


@dataclass
class Batches:
    """Ids of three ``add`` calls, each in the order written: facts, then memories,
    then facts again (the records of one call share one ``created_at``)."""

    url: str
    first_facts: list[str]
    memories: list[str]
    last_facts: list[str]

    @property
    def newest_first(self) -> list[str]:
        return self.last_facts[::-1] + self.memories[::-1] + self.first_facts[::-1]


@pytest.fixture
def batches(db_url: str) -> Batches:
    with OracleAgentMemory.open(
        db_url, embedder=EMBEDDER, extract_memories=False, schema_policy="CREATE_IF_NECESSARY"
    ) as memory:
        store = memory.store
        first = store.add([f"early fact {i}" for i in range(70)], "fact", user_ids="alice")
        middle = store.add([f"memory {i}" for i in range(45)], "memory", user_ids="alice")
        last = store.add([f"late fact {i}" for i in range(60)], "fact", user_ids="alice")
        created = {r.created_at for r in store.list("fact", limit=None)}
        assert len(created) == 2  # one timestamp per add call: ties the order must break
    return Batches(db_url, first, middle, last)


@pytest.fixture
def client(batches: Batches) -> Iterator[TestClient]:
    app = create_app(batches.url, embedder=EMBEDDER)
    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


def _memory_ids(html: str) -> list[str]:
    return re.findall(r'<article class="memory[^"]*" data-memory-id="([^"]+)"', html)


def _link(html: str, label: str) -> str | None:
    found = re.search(rf'<a href="([^"]+)">{label}</a>', html)
    return unescape(found.group(1)) if found else None


def _walk(client: TestClient, start: str, label: str) -> list[list[str]]:
    """The ids of every page from ``start`` on, following the ``label`` link."""
    pages: list[list[str]] = []
    url: str | None = start
    while url is not None:
        html = client.get(url).text
        pages.append(_memory_ids(html))
        url = _link(html, label)
        assert len(pages) < 20, "the pages do not end"
    return pages


def test_walking_the_memories_list_shows_every_memory_once_newest_first(
    client: TestClient, batches: Batches
) -> None:
    """trial 35: a third of 120 facts written by one add were never on any page and
    as many were on two (each type was cut by insertion, then re-sorted by
    ``created_at`` with the random id breaking the tie)."""
    pages = _walk(client, "/memories", "Older memories")
    assert [len(p) for p in pages] == [50, 50, 50, 25]
    assert [i for page in pages for i in page] == batches.newest_first
    facts = [i for p in _walk(client, "/memories?types=fact", "Older memories") for i in p]
    assert facts == batches.last_facts[::-1] + batches.first_facts[::-1]
    back = _walk(client, "/memories?page=4", "Newer memories")
    assert back == pages[::-1]


def test_a_user_page_shows_the_newest_memories_by_the_same_order(
    client: TestClient, batches: Batches, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user page lists the newest memories, oldest first: with a cap inside a
    batch, exactly the newest ones of that batch."""
    shown = _memory_ids(client.get("/user?id=alice").text)
    assert shown == batches.newest_first[::-1]
    monkeypatch.setattr("oam_core.service.web.views._LIST_CAP", 80)
    capped = _memory_ids(client.get("/user?id=alice").text)
    assert capped == batches.newest_first[:80][::-1]


def _message_seqs(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<li class="message" id="msg-(\d+)"', html)]


def test_walking_a_long_thread_either_way_shows_every_message_once(
    client: TestClient, batches: Batches, monkeypatch: pytest.MonkeyPatch
) -> None:
    """trial 35: "Earlier messages" from the second page went to message 0 and
    showed the first page size again, overlapping the page before (1,234 messages:
    234-499 twice)."""
    with OracleAgentMemory.open(batches.url, embedder=EMBEDDER, extract_memories=False) as m:
        m.create_thread(thread_id="long", user_id="alice").add_messages(
            [{"role": "user", "content": f"message {i}"} for i in range(11)]
        )
    monkeypatch.setattr("oam_core.service.web.views.MESSAGE_PAGE", 4)
    pages: list[list[int]] = []
    url: str | None = "/thread?id=long"
    while url is not None:
        html = client.get(url).text
        pages.append(_message_seqs(html))
        url = _link(html, "Earlier messages")
    assert pages == [[7, 8, 9, 10], [3, 4, 5, 6], [0, 1, 2]]
    forward: list[list[int]] = []
    url = "/thread?id=long&from=0"
    while url is not None:
        html = client.get(url).text
        forward.append(_message_seqs(html))
        url = _link(html, "Later messages")
    assert forward == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    back = client.get(_link(client.get("/thread?id=long&from=0").text, "Later messages") or "")
    assert _link(back.text, "Earlier messages") == "/thread?id=long&before=4"
    assert _message_seqs(client.get("/thread?id=long&before=4").text) == [0, 1, 2, 3]
    assert "(showing 4–7 of 11)" in client.get("/thread?id=long&before=7").text
    assert client.get("/thread?id=long&before=0").status_code == 400
