"""``oam serve`` and the versions of a memory, over HTTP on SQLite and PostgreSQL (docs/versions.md,
docs/service.md#oam-serve): each memory shows its validity window and
history; a person corrects a memory (a new version with a reason) or invalidates it
through POST forms refused, like a delete, without the CSRF token or from another
origin; search marks the versions that no longer hold when asked to show them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape

import pytest
from _html import hidden, page_text
from _seed import EMBEDDER
from starlette.testclient import TestClient

from oam_core import OracleAgentMemory
from oam_core.service.web.app import create_app


@dataclass
class Chain:
    url: str
    lisbon: str
    porto: str
    car: str


def _open(url: str, **kwargs: object) -> OracleAgentMemory:
    return OracleAgentMemory.open(url, embedder=EMBEDDER, extract_memories=False, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def chain(db_url: str) -> Chain:
    with _open(db_url, schema_policy="CREATE_IF_NECESSARY") as memory:
        lisbon = memory.add_memory("Alice lives in Lisbon", user_id="alice", agent_id="helper")
        porto = memory.update_memory(lisbon, "Alice lives in Porto", reason="moved north")
        car = memory.add_memory("Alice has a red car", user_id="alice", agent_id="helper")
    return Chain(db_url, lisbon, porto, car)


@pytest.fixture
def client(chain: Chain) -> Iterator[TestClient]:
    with TestClient(create_app(chain.url, embedder=EMBEDDER), base_url="http://127.0.0.1") as c:
        yield c


def _textarea(html: str) -> str:
    match = re.search(r"<textarea[^>]*>(.*?)</textarea>", html, re.S)
    assert match, html
    return unescape(match.group(1))


def test_a_correction_over_a_text_changed_meanwhile_is_refused_showing_it(
    client: TestClient, chain: Chain
) -> None:
    """trial 35: the form carried no version, so an in-place fix another process made
    while the form was open (``store.update``, the documented typo fix) was silently
    replaced by the person's edit of the older text."""
    form_page = client.get("/memory/update", params={"id": chain.car})
    shown = _textarea(form_page.text).strip()
    assert shown == "Alice has a red car"
    with _open(chain.url) as other:
        assert other.store.update("memory", chain.car, text="Alice has a dark red car") == 1
    form = {
        "id": chain.car,
        "content": "Alice has a blue car",
        "reason": "repainted",
        "csrf_token": hidden(form_page.text, "csrf_token"),
        "based_on": hidden(form_page.text, "based_on"),
    }
    refused = client.post("/memory/update", data=form)
    assert refused.status_code == 409
    assert "changed by another writer" in page_text(refused.text)
    assert "Alice has a dark red car" in page_text(refused.text.split("<textarea")[0])
    assert _textarea(refused.text).strip() == "Alice has a blue car"  # the person's text kept
    with _open(chain.url) as memory:
        [only] = memory.get_memory_history(chain.car)
        assert only.content == "Alice has a dark red car" and only.valid_until is None
    without = client.post("/memory/update", data={k: v for k, v in form.items() if k != "based_on"})
    assert without.status_code == 409
    again = {**form, "based_on": hidden(refused.text, "based_on")}
    saved = client.post("/memory/update", data=again, follow_redirects=False)
    assert saved.status_code == 303
    with _open(chain.url) as memory:
        history = memory.get_memory_history(chain.car)
        assert [r.content for r in history] == ["Alice has a dark red car", "Alice has a blue car"]


def test_a_memory_page_shows_its_window_and_history(client: TestClient, chain: Chain) -> None:
    page = client.get("/memory", params={"id": chain.porto})
    assert page.status_code == 200
    text = page_text(page.text).split("History")[1]
    assert text.index("Alice lives in Lisbon") < text.index("Alice lives in Porto (this memory)")
    assert "superseded : moved north" in text or "superseded: moved north" in text
    assert "holds now" in text
    with _open(chain.url) as memory:
        old = memory.store.get("memory", chain.lisbon)
        assert old is not None and old.valid_until is not None
    assert f"until {old.valid_until}" in page_text(page.text)
    lisbon = client.get("/memory", params={"id": chain.lisbon}).text
    assert "Correct…" not in lisbon and "Invalidate…" not in lisbon  # not current
    assert "Correct…" in page.text and "Invalidate…" in page.text
    single = page_text(client.get("/memory", params={"id": chain.car}).text)
    assert "Valid always" in single and "has one version" in single


def test_memories_current_until_a_later_end_show_as_current(
    client: TestClient, chain: Chain
) -> None:
    """A memory invalidated for a later time, or replaced by a version planned for
    later, holds until then: no ended badge, "holds now", both actions; the plan
    shows as planned, correctable but not invalidatable."""
    with _open(chain.url) as memory:
        assert memory.invalidate_memory(chain.car, valid_until="2099-01-01", reason="selling")
        plan = memory.update_memory(chain.porto, "Alice lives in Oslo", valid_from="2098-01-01")
    for memory_id in (chain.car, chain.porto):
        page = client.get("/memory", params={"id": memory_id}).text
        card = page_text(page.split("<h2>History")[0])
        assert "invalidated" not in card and "superseded" not in card.split("Superseded by")[0]
        assert "Correct…" in page and "Invalidate…" in page
    history = page_text(client.get("/memory", params={"id": chain.porto}).text).split("History")[1]
    porto_line = history.split("Alice lives in Porto (this memory)")[1].split(
        "Alice lives in Oslo"
    )[0]
    assert "holds now" in porto_line and "planned" in history.split("Alice lives in Oslo")[1]
    planned = client.get("/memory", params={"id": plan}).text
    assert "Correct…" in planned and "Invalidate…" not in planned
    assert "planned" in page_text(planned.split("<h2>History")[0])


def test_correcting_a_memory_writes_a_new_version_after_the_checks(
    client: TestClient, chain: Chain
) -> None:
    form_page = client.get("/memory/update", params={"id": chain.porto})
    assert form_page.status_code == 200 and "Alice lives in Porto" in form_page.text
    token = hidden(form_page.text, "csrf_token")
    form = {
        "id": chain.porto,
        "content": "Alice lives in Berlin",
        "reason": "moved abroad",
        "based_on": hidden(form_page.text, "based_on"),
    }
    assert client.post("/memory/update", data=form).status_code == 403
    assert client.post("/memory/update", data={**form, "csrf_token": "0" * 64}).status_code == 403
    for origin in ("http://evil.example", "null"):
        cross = client.post(
            "/memory/update", data={**form, "csrf_token": token}, headers={"origin": origin}
        )
        assert cross.status_code == 403
    with _open(chain.url) as memory:
        assert [r.id for r in memory.get_memory_history(chain.porto)] == [chain.lisbon, chain.porto]
    done = client.post("/memory/update", data={**form, "csrf_token": token}, follow_redirects=False)
    assert done.status_code == 303
    new_id = done.headers["location"].split("id=")[1]
    with _open(chain.url) as memory:
        history = memory.get_memory_history(chain.porto)
        assert [r.id for r in history] == [chain.lisbon, chain.porto, new_id]
        assert history[-1].content == "Alice lives in Berlin" and history[-1].user_id == "alice"
        assert history[1].metadata is not None
        assert history[1].metadata["$agent_memory"]["reason"] == "moved abroad"
    stale = client.post("/memory/update", data={**form, "csrf_token": token})
    assert stale.status_code == 400 and "memory_id" in stale.text
    based_on = hidden(client.get("/memory/update", params={"id": new_id}).text, "based_on")
    blank = {"id": new_id, "content": "  ", "csrf_token": token, "based_on": based_on}
    assert client.post("/memory/update", data=blank).status_code == 400
    missing = client.post(
        "/memory/update", data={"id": "no-such", "content": "x", "csrf_token": token}
    )
    assert missing.status_code == 404


def test_invalidating_a_memory_after_the_checks(client: TestClient, chain: Chain) -> None:
    form_page = client.get("/memory/invalidate", params={"id": chain.car})
    assert form_page.status_code == 200 and "Alice has a red car" in form_page.text
    token = hidden(form_page.text, "csrf_token")
    form = {"id": chain.car, "reason": "sold it"}
    assert client.post("/memory/invalidate", data=form).status_code == 403
    cross = client.post(
        "/memory/invalidate",
        data={**form, "csrf_token": token},
        headers={"origin": "http://evil.example"},
    )
    assert cross.status_code == 403
    with _open(chain.url) as memory:
        record = memory.store.get("memory", chain.car)
        assert record is not None and record.valid_until is None
    done = client.post(
        "/memory/invalidate", data={**form, "csrf_token": token}, follow_redirects=False
    )
    assert done.status_code == 303 and done.headers["location"] == f"/memory?id={chain.car}"
    with _open(chain.url) as memory:
        record = memory.store.get("memory", chain.car)
        assert record is not None and record.valid_until is not None
        assert record.metadata is not None
        assert record.metadata["$agent_memory"]["reason"] == "sold it"
    page = page_text(client.get("/memory", params={"id": chain.car}).text)
    assert "invalidated" in page and "Invalidated : sold it" in page
    again = client.post("/memory/invalidate", data={**form, "csrf_token": token})
    assert again.status_code == 409
    assert client.get("/memory/update", params={"id": "no-such"}).status_code == 404
    assert client.put("/memory/invalidate", data=form).status_code == 405


def test_search_shows_current_memories_and_marks_past_versions_when_asked(
    client: TestClient, chain: Chain
) -> None:
    params = {"q": "Alice lives", "types": "memory", "strategy": "keyword"}
    now = client.get("/search", params=params)
    assert now.status_code == 200
    assert "Alice lives in Porto" in now.text and "Alice lives in Lisbon" not in now.text
    every = client.get("/search", params={**params, "versions": "all"})
    assert every.status_code == 200
    rows = re.findall(r"<tr( class=\"past-version\")?>(.*?)</tr>", every.text, re.S)
    marked = {("Lisbon" in row, bool(past)) for past, row in rows if "Alice lives" in row}
    assert marked == {(True, True), (False, False)}
    assert 'name="versions" value="all" checked' in every.text


def test_a_correction_sent_with_crlf_line_ends_is_stored_with_lf(
    client: TestClient, chain: Chain
) -> None:
    """What a browser sends for a textarea (every line end as CRLF) is stored with
    LF; the form writes a newline right after ``<textarea>`` so the HTML parser,
    which drops one there, keeps a text's own leading newline."""
    with _open(chain.url) as memory:
        multi = memory.add_memory("\nCars:\n- red", user_id="alice", agent_id="helper")
    form_page = client.get("/memory/update", params={"id": multi})
    assert re.search(r"<textarea[^>]*>\n\nCars:\n- red</textarea>", form_page.text)
    form = {
        "id": multi,
        "content": "\r\nCars:\r\n- blue",
        "csrf_token": hidden(form_page.text, "csrf_token"),
        "based_on": hidden(form_page.text, "based_on"),
    }
    saved = client.post("/memory/update", data=form, follow_redirects=False)
    assert saved.status_code == 303
    with _open(chain.url) as memory:
        assert [r.content for r in memory.get_memory_history(multi)] == [
            "\nCars:\n- red",
            "\nCars:\n- blue",
        ]


def test_the_version_actions_take_the_posted_id_as_given(client: TestClient, chain: Chain) -> None:
    """trial 51 f03: the correct and invalidate actions stripped the posted id, so on
    memory " x" they acted on memory "x"."""
    with _open(chain.url) as memory:
        memory.add_memory("the padded one", user_id="alice", memory_id=" x")
        memory.add_memory("the plain one", user_id="alice", memory_id="x")
    page = client.get("/memory/invalidate", params={"id": " x"})
    form = {"id": " x", "reason": "gone", "csrf_token": hidden(page.text, "csrf_token")}
    assert client.post("/memory/invalidate", data=form, follow_redirects=False).status_code == 303
    page = client.get("/memory/update", params={"id": " x"})
    assert _textarea(page.text).strip() == "the padded one"
    with _open(chain.url) as memory:
        padded, plain = memory.store.get("memory", " x"), memory.store.get("memory", "x")
        assert padded is not None and padded.valid_until is not None
        assert plain is not None and plain.valid_until is None
