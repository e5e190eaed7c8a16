"""``oam serve`` when the store cannot answer: another process holds the SQLite write
lock past the store's wait, or the PostgreSQL server went away. Every page and action
answers the 503 page with the library's message and "try again", never a bare
"Internal Server Error" with a traceback (docs/service.md#oam-serve)."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import httpx
import pytest
from _html import hidden, page_text
from _seed import EMBEDDER
from starlette.testclient import TestClient

from oam_core import OracleAgentMemory
from oam_core.service.web.app import create_app
from tests.pgload import pg_module


def _seed(url: str) -> str:
    with OracleAgentMemory.open(
        url, embedder=EMBEDDER, extract_memories=False, schema_policy="CREATE_IF_NECESSARY"
    ) as memory:
        memory.create_thread(thread_id="t", user_id="alice", agent_id="helper")
        return memory.add_memory("Alice likes tea", user_id="alice", agent_id="helper")


def _assert_unavailable(response: httpx.Response, title: str, says: str) -> None:
    text = page_text(response.text)
    assert response.status_code == 503, text[:500]
    assert title in text and says in text and "Try again" in text, text
    assert response.headers["retry-after"] == "5"


def test_writes_while_another_process_holds_the_write_lock_are_the_busy_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """trial 35: a correction waited the store's 30 s, then answered Starlette's
    plain-text 500 and logged a traceback of the ``DatabaseLockedError``."""
    monkeypatch.setattr("oam_core.store.sqlite.backend.BUSY_TIMEOUT_S", 0.3)
    path = tmp_path / "m.db"
    memory_id = _seed(str(path))
    with TestClient(create_app(str(path), embedder=EMBEDDER), base_url="http://127.0.0.1") as c:
        form_page = c.get("/memory/update", params={"id": memory_id}).text
        token, based_on = hidden(form_page, "csrf_token"), hidden(form_page, "based_on")
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another writer, as a long `oam import`
        try:
            with caplog.at_level(logging.ERROR):
                assert c.get("/memories").status_code == 200  # reads go on
                posts = {
                    "/memory/update": {"content": "Alice likes green tea", "based_on": based_on},
                    "/memory/invalidate": {},
                    "/memory/delete": {},
                    "/thread/delete": {"id": "t"},
                }
                for action, extra in posts.items():
                    form = {"id": memory_id, "csrf_token": token, **extra}
                    _assert_unavailable(c.post(action, data=form), "Store busy", "is locked")
            assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
        finally:
            holder.rollback()
            holder.close()
        form = {"id": memory_id, "csrf_token": token, "content": "Alice likes green tea"}
        saved = c.post("/memory/update", data={**form, "based_on": based_on})
        assert saved.status_code == 200 and "Alice likes green tea" in saved.text


def test_every_page_is_the_unavailable_page_when_the_postgres_server_is_gone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A PostgreSQL server stopped under a running inspector: pages and actions say
    ``StoreConnectionError``'s message and to try again (503)."""
    pg = pg_module()
    try:
        server, url = pg.own_server()
    except pg.ServerUnavailable as exc:
        pytest.skip(str(exc))
    try:
        memory_id = _seed(url)
        with TestClient(create_app(url, embedder=EMBEDDER), base_url="http://127.0.0.1") as c:
            token = hidden(c.get("/memory/delete", params={"id": memory_id}).text, "csrf_token")
            assert c.get("/memories").status_code == 200
            server.cleanup()  # stops the server
            with caplog.at_level(logging.ERROR):
                for page in ("/", "/memories", f"/memory?id={memory_id}", "/thread?id=t"):
                    _assert_unavailable(c.get(page), "Store unavailable", "cannot connect")
                delete = c.post("/memory/delete", data={"id": memory_id, "csrf_token": token})
                _assert_unavailable(delete, "Store unavailable", "cannot connect")
            assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    finally:
        server.cleanup()
