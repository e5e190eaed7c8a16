"""``oam serve``'s pages and actions over HTTP, on SQLite and PostgreSQL: status codes,
what each page shows, escaping of stored text, the delete flow with its confirmation
and CSRF check, the access token and the host check (docs/service.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import httpx2
import pytest
from _proc import free_port, run_cli, start_cli, stop, wait_for_port
from _seed import ATTRIBUTE_ATTACK, EMBEDDER, Seeded
from starlette.testclient import TestClient

from oam_core import OracleAgentMemory
from oam_core.service.web.app import create_app

TOKEN = "inspector-test-token-0123456789"


@pytest.fixture
def client(seeded: Seeded) -> Iterator[TestClient]:
    with TestClient(create_app(seeded.url, embedder=EMBEDDER), base_url="http://127.0.0.1") as c:
        yield c


def _open(url: str) -> OracleAgentMemory:
    return OracleAgentMemory.open(url, embedder=EMBEDDER, extract_memories=False)


def _text(html: str) -> str:
    """The page's visible text, roughly: tags removed, whitespace collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def _pages(seeded: Seeded) -> list[str]:
    q = urlencode
    return [
        "/",
        "/user?" + q({"id": "alice"}),
        "/user?" + q({"id": ATTRIBUTE_ATTACK}),
        "/agent?" + q({"id": "helper"}),
        "/thread?" + q({"id": "trip"}),
        "/thread?" + q({"id": "bob-chat"}),
        "/thread/card?" + q({"id": "trip", "recent": 2}),
        "/memory?" + q({"id": seeded.porto}),
        "/memory?" + q({"id": seeded.lisbon}),
        "/memory?" + q({"id": seeded.window_seat}),
        "/message?" + q({"id": seeded.trip_messages[2]}),
        "/search?" + q({"q": "Porto Lisbon"}),
        "/search?" + q({"q": "Rex", "types": "message"}),
        "/memory/delete?" + q({"id": seeded.porto}),
        "/thread/delete?" + q({"id": "trip"}),
    ]


def test_every_page_renders_and_escapes_stored_text(client: TestClient, seeded: Seeded) -> None:
    for page in _pages(seeded):
        response = client.get(page)
        assert response.status_code == 200, (page, response.text[:500])
        assert response.headers["content-type"].startswith("text/html")
        html = response.text
        assert "<script>alert" not in html and "<img src=x" not in html, page
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert response.headers["x-frame-options"] == "DENY"
        scripts = re.findall(r"<script[^>]*>", html)
        assert scripts == ['<script src="/static/htmx.min.js" defer>'], page
    thread = client.get("/thread?id=trip").text
    assert (
        "Change of plan: Porto instead. &lt;script&gt;alert(&#39;oam&#39;)&lt;/script&gt;" in thread
    )
    bob = client.get("/user?" + urlencode({"id": ATTRIBUTE_ATTACK})).text
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in bob
    memory = client.get(f"/memory?id={seeded.window_seat}").text
    assert "&lt;script&gt;" in memory  # the metadata JSON, escaped too


def test_index_lists_users_and_agents(client: TestClient) -> None:
    text = _text(client.get("/").text)
    assert "Users" in text and "alice 1 thread Frequent traveller; likes trains." in text
    assert "Agents" in text and "helper 2 threads" in text


def test_thread_page_shows_messages_in_order_and_memories_with_provenance(
    client: TestClient, seeded: Seeded
) -> None:
    html = client.get("/thread?id=trip").text
    text = _text(html)
    first = text.index("user 2026-03-01T10:00:00")
    second = text.index("assistant 2026-03-01T10:00:05")
    third = text.index("user 2026-03-02T09:00:00")
    assert first < second < third
    assert "Messages 3" in text and "Memories 3" in text
    assert re.findall(r'<li class="message" id="(msg-\d+)" data-role="(\w+)"', html) == [
        ("msg-0", "user"),
        ("msg-1", "assistant"),
        ("msg-2", "user"),
    ]
    porto = html[html.index(f'data-memory-id="{seeded.porto}"') :]
    porto = porto[: porto.index("</article>")]
    assert 'href="#msg-2"' in porto and "Replaces" in porto and seeded.lisbon in porto
    lisbon = html[html.index(f'data-memory-id="{seeded.lisbon}"') :]
    lisbon = lisbon[: lisbon.index("</article>")]
    assert (
        'class="memory superseded"' in html[html.index(f'data-memory-id="{seeded.lisbon}"') - 40 :]
    )
    assert 'href="#msg-0"' in lisbon and 'href="#msg-1"' in lisbon
    assert f'Superseded by <a href="/memory?id={seeded.porto}"' in lisbon
    assert "the trip moved to Porto" in lisbon


def test_memory_page_shows_the_history(client: TestClient, seeded: Seeded) -> None:
    text = _text(client.get(f"/memory?id={seeded.porto}").text).split("History")[1]
    assert text.index("Alice is flying to Lisbon in March") < text.index("(this memory)")
    text = _text(client.get(f"/memory?id={seeded.lisbon}").text).split("History")[1]
    assert text.index("(this memory)") < text.index("Alice is going to Porto in March")
    assert "has one version: it neither replaced" in _text(
        client.get(f"/memory?id={seeded.window_seat}").text
    )


def test_context_card_page_shows_the_card_as_the_llm_sees_it(client: TestClient) -> None:
    html = client.get("/thread/card?id=trip&recent=1").text
    card = html[html.index('<pre class="card">') :]
    assert card.startswith('<pre class="card">&lt;context_card&gt;')
    assert "&lt;recent_messages&gt;" in card and "Change of plan: Porto instead." in card


@pytest.mark.parametrize("query", ["recent=-1", "recent=201", "relevant=abc", "relevant=2.5"])
def test_context_card_page_refuses_a_bad_count_naming_it(client: TestClient, query: str) -> None:
    name, value = query.split("=")
    response = client.get(f"/thread/card?id=trip&{query}")
    assert response.status_code == 400
    assert f"{name} must be a whole number from 0 to" in _text(response.text)
    assert repr(value) in _text(response.text).replace("&#39;", "'")


def test_search_shows_scores_and_honours_scope_and_filter(
    client: TestClient, seeded: Seeded
) -> None:
    html = client.get("/search?" + urlencode({"q": "Porto Lisbon March", "k": 5})).text
    # issue 21: scores (higher is better), as the CLI shows them, not distances
    rows = re.findall(r'<td class="num"[^>]*>([0-9.-]+)</td>', html)
    assert rows and [float(d) for d in rows] == sorted((float(d) for d in rows), reverse=True)
    assert f"/memory?id={seeded.porto}" in html
    scoped = client.get("/search?" + urlencode({"q": "Rex dog", "user": "alice"})).text
    assert "Rex" not in _text(scoped[scoped.index('id="results"') :])
    mine = client.get("/search?" + urlencode({"q": "Rex dog", "user": ATTRIBUTE_ATTACK})).text
    assert f"/memory?id={seeded.bob_memory}" in mine
    filtered = client.get(
        "/search?" + urlencode({"q": "Alice", "filter": '{"note": "nothing"}'})
    ).text
    assert "No results." in filtered
    bad = client.get("/search?" + urlencode({"q": "Alice", "filter": "{not json"}))
    assert bad.status_code == 400 and "metadata filter is not valid JSON" in bad.text
    bad_type = client.get("/search?" + urlencode({"q": "Alice", "types": "thread"}))
    assert bad_type.status_code == 400 and "record_types" in bad_type.text
    for strategy in ("vector", "keyword", "hybrid"):
        response = client.get("/search?" + urlencode({"q": "Porto", "strategy": strategy}))
        assert response.status_code == 200, (strategy, response.text[-800:])
        assert f"/memory?id={seeded.porto}" in response.text, strategy


@pytest.mark.parametrize("k", ["-5", "abc", "0", "", "101", "2.5"])
def test_search_rejects_a_bad_k_visibly(client: TestClient, k: str) -> None:
    """review F7: a bad k is a 400 with the reason on the page, never a silent default."""
    response = client.get("/search?" + urlencode({"q": "Porto", "k": k}))
    assert response.status_code == 400, response.text[-500:]
    assert f"k must be a whole number from 1 to 100, got {k!r}" in unescape(response.text)
    assert 'class="results"' not in response.text


def test_unknown_ids_are_404(client: TestClient) -> None:
    for page in (
        "/thread?id=nope",
        "/memory?id=nope",
        "/message?id=nope",
        "/user?id=nope",
        "/agent?id=nope",
        "/thread/card?id=nope",
        "/thread/delete?id=nope",
        "/memory/delete?id=nope",
        "/thread",
    ):
        response = client.get(page)
        assert response.status_code == 404, page
        assert "<h1>Not found</h1>" in response.text
    assert client.get("/no-such-page").status_code == 404


def _csrf(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([0-9a-f]{64})"', html)
    assert match, html
    return match.group(1)


def test_delete_memory_after_confirmation_with_csrf(client: TestClient, seeded: Seeded) -> None:
    confirm = client.get(f"/memory/delete?id={seeded.window_seat}")
    assert "Alice prefers window seats" in confirm.text and "cannot be undone" in confirm.text
    token = _csrf(confirm.text)
    form = {"id": seeded.window_seat, "next": "/thread?id=trip"}
    assert client.post("/memory/delete", data=form).status_code == 403
    assert client.post("/memory/delete", data={**form, "csrf_token": "0" * 64}).status_code == 403
    cross = client.post(
        "/memory/delete",
        data={**form, "csrf_token": token},
        headers={"origin": "http://evil.example"},
    )
    assert cross.status_code == 403
    opaque = client.post(
        "/memory/delete", data={**form, "csrf_token": token}, headers={"origin": "null"}
    )
    assert opaque.status_code == 403
    mine = dict(client.cookies)
    client.cookies.clear()
    client.get("/")  # another browser: a session of its own, same form token
    assert client.post("/memory/delete", data={**form, "csrf_token": token}).status_code == 403
    client.cookies.clear()
    client.cookies.update(mine)
    assert client.get("/memory/delete", params={"id": seeded.window_seat}).status_code == 200
    with _open(seeded.url) as memory:
        assert memory.store.get("memory", seeded.window_seat) is not None
    done = client.post("/memory/delete", data={**form, "csrf_token": token}, follow_redirects=False)
    assert done.status_code == 303
    assert done.headers["location"] == "/thread?" + urlencode(
        {"id": "trip", "deleted_memory": seeded.window_seat}
    )
    landed = unescape(_text(client.get(done.headers["location"]).text))
    assert f"Deleted memory '{seeded.window_seat}'." in landed
    with _open(seeded.url) as memory:
        assert memory.store.get("memory", seeded.window_seat) is None
        assert memory.store.get("fact", seeded.porto) is not None
    again = client.post("/memory/delete", data={**form, "csrf_token": token})
    assert again.status_code == 404
    escape = client.post(
        "/memory/delete",
        data={"id": seeded.porto, "csrf_token": token, "next": "//evil.example/"},
        follow_redirects=False,
    )
    assert escape.status_code == 303
    assert escape.headers["location"] == "/?" + urlencode({"deleted_memory": seeded.porto})


def test_delete_thread_after_confirmation(client: TestClient, seeded: Seeded) -> None:
    confirm = client.get("/thread/delete?id=trip")
    assert "3 messages and every memory" in confirm.text
    done = client.post(
        "/thread/delete",
        data={"id": "trip", "next": "/user?id=alice", "csrf_token": _csrf(confirm.text)},
        follow_redirects=False,
    )
    assert done.status_code == 303
    assert done.headers["location"] == "/user?id=alice&deleted_thread=trip"
    assert "Deleted thread 'trip'." in unescape(client.get(done.headers["location"]).text)
    assert client.get("/thread?id=trip").status_code == 404
    with _open(seeded.url) as memory:
        assert memory.get_thread_row("trip") is None
        assert memory.store.get("fact", seeded.porto) is None
        assert memory.store.count_thread_messages("bob-chat") == 1


def test_writes_are_post_only(client: TestClient, seeded: Seeded) -> None:
    assert client.put("/memory/delete", data={"id": seeded.porto}).status_code == 405
    assert client.post("/memory", data={"id": seeded.porto}).status_code == 405
    assert client.post("/thread", data={"id": "trip"}).status_code == 405


def _token_client(seeded: Seeded) -> TestClient:
    app = create_app(seeded.url, embedder=EMBEDDER, token=TOKEN)
    return TestClient(app, base_url="http://127.0.0.1")


def test_token_is_checked_on_every_request(seeded: Seeded) -> None:
    with _token_client(seeded) as anonymous:
        for page in (
            "/",
            "/thread?id=trip",
            "/static/htmx.min.js",
            "/static/oam.css",
            "/search?q=x",
        ):
            response = anonymous.get(page)
            assert response.status_code == 401, page
            assert "Porto" not in response.text and "needs its access token" in response.text
        assert anonymous.post("/thread/delete", data={"id": "trip"}).status_code == 401
        assert anonymous.get("/", params={"token": "wrong-" + TOKEN}).status_code == 401
        assert anonymous.get("/", headers={"authorization": "Bearer nope"}).status_code == 401
    with _token_client(seeded) as bearer:
        response = bearer.get("/thread?id=trip", headers={"authorization": f"Bearer {TOKEN}"})
        assert response.status_code == 200 and "Porto" in response.text
    with _token_client(seeded) as browser:
        login = browser.get(
            "/thread", params={"id": "trip", "token": TOKEN}, follow_redirects=False
        )
        assert login.status_code == 303 and login.headers["location"] == "/thread?id=trip"
        assert (
            "oam_token=" in login.headers["set-cookie"]
            and "HttpOnly" in login.headers["set-cookie"]
        )
        assert browser.get("/thread?id=trip").status_code == 200  # the cookie now
        assert browser.get("/static/htmx.min.js").status_code == 200


def test_host_header_is_checked_when_bound_to_loopback(seeded: Seeded) -> None:
    with TestClient(create_app(seeded.url, embedder=EMBEDDER), base_url="http://evil.example") as c:
        assert c.get("/").status_code == 400
    with TestClient(
        create_app(seeded.url, embedder=EMBEDDER), base_url="http://localhost:8765"
    ) as c:
        assert c.get("/").status_code == 200


def test_serve_refuses_to_bind_off_loopback_without_a_token(tmp_path: Path, seeded: Seeded) -> None:
    result = run_cli(["serve", "--db", seeded.url, "--host", "0.0.0.0"], cwd=tmp_path)
    assert result.returncode == 1
    assert "Error: binding to 0.0.0.0 exposes the store beyond this machine" in result.stderr
    short = run_cli(
        ["serve", "--db", seeded.url, "--host", "0.0.0.0", "--token", "short"], cwd=tmp_path
    )
    assert short.returncode == 1 and "at least 16 characters" in short.stderr
    missing = run_cli(["serve", "--db", str(tmp_path / "missing.db")], cwd=tmp_path)
    # a database that does not exist exits 2, as every command (docs/cli.md#commands)
    assert missing.returncode == 2 and "no such database" in missing.stderr
    # the real path and a remedy serve has (it has no --create), never a literal "--db ..."
    assert "--db ..." not in missing.stderr and "--create to start" not in missing.stderr
    assert f"create it with `oam ingest FILE --db {tmp_path / 'missing.db'}`" in missing.stderr
    assert not (tmp_path / "missing.db").exists()


def test_serve_answers_over_real_http_with_the_token_from_the_environment(
    seeded: Seeded, tmp_path: Path
) -> None:
    port = free_port()
    process = start_cli(
        ["serve", "--db", seeded.url, "--embedder", EMBEDDER, "--port", str(port)],
        cwd=tmp_path,
        env={"OAM_SERVE_TOKEN": TOKEN},
    )
    try:
        wait_for_port(port, process)
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(base + "/").status_code == 401
        page = httpx.get(base + "/thread?id=trip", headers={"authorization": f"Bearer {TOKEN}"})
        assert page.status_code == 200 and "Lisbon" in page.text
    finally:
        stop(process)


HUGE = "9" * 5000
"""Longer than Python's integer-string limit (4300 digits): int() of it raises."""


@pytest.mark.parametrize(
    ("page", "name", "value"),
    [
        ("/search?q=Porto&k=" + HUGE, "k", HUGE),
        ("/thread/card?id=trip&relevant=" + HUGE, "relevant", HUGE),
        ("/thread/card?id=trip&recent=" + HUGE, "recent", HUGE),
        ("/thread?id=trip&from=" + HUGE, "from", HUGE),
        ("/thread?" + urlencode({"id": "trip", "from": "²"}), "from", "²"),
        ("/thread?" + urlencode({"id": "trip", "from": "-1"}), "from", "-1"),
    ],
    ids=["k", "relevant", "recent", "from", "from-superscript", "from-negative"],
)
def test_a_huge_or_non_ascii_number_is_the_400_page(
    client: TestClient, page: str, name: str, value: str
) -> None:
    """issue 14: a 5,000-digit number or a superscript digit was a 500."""
    response = client.get(page)
    assert response.status_code == 400, response.text[-300:]
    text = unescape(_text(response.text))
    assert f"{name} must be a whole number" in text
    assert repr(value)[:40] in text


def test_the_thread_page_still_pages_with_a_valid_from(client: TestClient) -> None:
    def shown(page: str) -> list[str]:
        return re.findall(r'<li class="message" id="(msg-\d+)"', client.get(page).text)

    assert shown("/thread?id=trip&from=1") == ["msg-1", "msg-2"]
    assert shown("/thread?id=trip&from=99") == ["msg-2"]  # past the end: the last one


@pytest.mark.parametrize(
    "path", ["//evil.example/x", "///evil.example/x", "/\\evil.example/x", "//evil.example"]
)
def test_the_token_redirect_stays_on_the_app(seeded: Seeded, path: str) -> None:
    """issue 14: ``GET //evil.example/x?token=T`` redirected to ``//evil.example/x``,
    a protocol-relative URL of another site, with the token cookie set."""
    with _token_client(seeded) as browser:
        raw = f"{path}?token={TOKEN}&a=1".encode()
        url = httpx2.URL("http://127.0.0.1").copy_with(raw_path=raw)  # sent as is
        response = browser.get(url, follow_redirects=False)
        assert response.status_code == 303
        location = response.headers["location"]
        assert location.startswith("/") and not location.startswith(("//", "/\\")), location
        assert httpx.URL("http://127.0.0.1:8765").join(location).host == "127.0.0.1"
        assert location.endswith("evil.example/x?a=1") or location.endswith("evil.example?a=1")


def _memory_ids(html: str) -> list[str]:
    return re.findall(r'<article class="memory[^"]*" data-memory-id="([^"]+)"', html)


def test_the_memories_page_lists_every_thread_with_filters_and_pages(
    client: TestClient, seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 21: memories could only be seen one thread or one user at a time."""
    every = _memory_ids(client.get("/memories").text)
    assert set(every) == {seeded.lisbon, seeded.porto, seeded.window_seat, seeded.bob_memory}
    assert every[0] == seeded.bob_memory  # newest first
    mine = client.get("/memories?" + urlencode({"user": "alice"})).text
    assert set(_memory_ids(mine)) == {seeded.lisbon, seeded.porto, seeded.window_seat}
    facts = client.get("/memories?" + urlencode({"types": "fact", "agent": "helper"})).text
    assert _memory_ids(facts) == [seeded.porto, seeded.lisbon]
    bob = client.get("/memories?" + urlencode({"thread": "bob-chat"})).text
    assert _memory_ids(bob) == [seeded.bob_memory]
    assert "No memories." in client.get("/memories?user=nobody").text
    bad = client.get("/memories?types=message")
    assert bad.status_code == 400 and "types must be among" in unescape(bad.text)
    assert client.get("/memories?page=0").status_code == 400

    monkeypatch.setattr("oam_core.service.web.views.MEMORY_PAGE", 3)
    first = client.get("/memories?" + urlencode({"user": "alice"})).text
    assert len(_memory_ids(first)) == 3 and "Older memories" not in first
    first = client.get("/memories").text
    assert _memory_ids(first) == every[:3] and "Newer memories" not in first
    older = re.search(r'<a href="([^"]+)">Older memories</a>', first)
    assert older
    second = client.get(unescape(older.group(1))).text
    assert _memory_ids(second) == every[3:] and "Newer memories" in second


def test_a_long_thread_pages_both_ways(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("oam_core.service.web.views.MESSAGE_PAGE", 1)
    latest = client.get("/thread?id=trip").text
    assert re.findall(r'<li class="message" id="(msg-\d+)"', latest) == ["msg-2"]
    assert "Earlier messages</a> (showing 3–3 of 3)" in latest
    oldest = client.get("/thread?id=trip&from=0").text
    assert re.findall(r'<li class="message" id="(msg-\d+)"', oldest) == ["msg-0"]
    later = re.search(r'<a href="([^"]+)">Later messages</a>', oldest)
    assert later and unescape(later.group(1)) == "/thread?id=trip&from=1"


def test_a_query_over_the_limit_is_the_400_page_before_any_embedding(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 60 KB query kept the local embedder busy for 20 s: the inspector refuses a
    query over ``max_query_chars`` as the MCP server does (docs/service.md)."""
    app = create_app(seeded.url, embedder=EMBEDDER, max_query_chars=50)
    with TestClient(app, base_url="http://127.0.0.1") as browser:
        embedded: list[int] = []
        embedder = app.state.inspector.memory.store.embedder
        real = embedder.embed

        def counting(texts: Any, **kwargs: Any) -> Any:
            embedded.append(len(texts))
            return real(texts, **kwargs)

        monkeypatch.setattr(embedder, "embed", counting)
        response = browser.get("/search?" + urlencode({"q": "Lisbon " * 20}))
        assert response.status_code == 400
        text = unescape(_text(response.text))
        assert "query: 140 characters, over the limit of 50" in text
        assert "--max-query-chars" in text
        assert embedded == []
        ok = browser.get("/search?" + urlencode({"q": "Lisbon"}))
        assert ok.status_code == 200
        assert embedded  # the counter sees a search that runs


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_a_bad_query_limit_is_refused_naming_it(seeded: Seeded, bad: object) -> None:
    with pytest.raises(ValueError, match="max_query_chars must be a whole number"):
        create_app(seeded.url, embedder=EMBEDDER, max_query_chars=bad)  # type: ignore[arg-type]


def test_deleting_the_only_thread_of_a_user_lands_on_the_index_saying_so(
    client: TestClient, seeded: Seeded
) -> None:
    """trial 35: the delete went back to the owner's page, a 404 "no user" when the
    thread was all the store held of them, which read as a failed delete."""
    with _open(seeded.url) as memory:
        memory.create_thread(thread_id="hi", user_id="carol").add_messages(
            [{"role": "user", "content": "hello"}]
        )
    fake = client.get("/user?" + urlencode({"id": "carol", "deleted_thread": "hi"}))
    assert fake.status_code == 200 and "Deleted thread" not in fake.text  # still there
    confirm = client.get("/thread/delete?id=hi").text
    assert 'name="next" value="/user?id=carol"' in confirm
    done = client.post(
        "/thread/delete",
        data={"id": "hi", "next": "/user?id=carol", "csrf_token": _csrf(confirm)},
    )
    assert done.status_code == 200 and str(done.url) == "http://127.0.0.1/?deleted_thread=hi"
    text = _text(done.text)
    assert "Deleted thread 'hi'." in unescape(text) and "carol" not in text
    assert client.get("/user?id=carol").status_code == 404
