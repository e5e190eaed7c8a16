"""The inspector in a real headless browser: Debian's Chromium driven by Playwright
(never a downloaded browser), against ``oam serve`` on a seeded store, on SQLite and
PostgreSQL. Skipped, with the reason, only when no Chromium is installed (CI installs
it: .ci/run)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from _proc import free_port, start_cli, stop, wait_for_port
from _seed import EMBEDDER, SCRIPT, Seeded
from playwright.sync_api import Browser, Page, expect, sync_playwright

from oam_core import OracleAgentMemory

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
"""Flags that keep Chromium off the closed network (no background connections)."""

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium installed (apt-get install chromium chromium-driver)"
)


@pytest.fixture
def server(seeded: Seeded, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    process = start_cli(
        ["serve", "--db", seeded.url, "--embedder", EMBEDDER, "--port", str(port)], cwd=tmp_path
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    assert CHROMIUM is not None
    with sync_playwright() as playwright:
        browser: Browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=FLAGS, headless=True
        )
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            yield context.new_page()
        finally:
            browser.close()


def test_a_person_reads_a_thread_and_follows_a_memory_to_its_source(
    server: str, page: Page, seeded: Seeded, tmp_path: Path
) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)

    page.goto(f"{server}/")
    page.get_by_role("link", name="alice").click()
    page.get_by_role("link", name="trip").first.click()
    expect(page).to_have_url(f"{server}/thread?id=trip")
    expect(page.get_by_role("heading", level=1)).to_have_text("Thread trip")

    messages = page.locator("li.message")
    expect(messages).to_have_count(3)
    assert [messages.nth(i).locator(".role").inner_text() for i in range(3)] == [
        "user",
        "assistant",
        "user",
    ]
    assert messages.nth(0).locator("time").inner_text().startswith("2026-03-01T10:00:00")
    # Stored markup is shown as text, never run.
    expect(messages.nth(2).locator(".content")).to_have_text(
        f"Change of plan: Porto instead. {SCRIPT}"
    )

    porto = page.locator(f'article.memory[data-memory-id="{seeded.porto}"]')
    lisbon = page.locator(f'article.memory[data-memory-id="{seeded.lisbon}"]')
    expect(porto.locator(".content")).to_have_text(
        f"Alice is going to Porto in March, not Lisbon {SCRIPT}"
    )
    expect(lisbon.locator(".badge.status")).to_have_text("superseded")
    expect(lisbon.locator(".chain")).to_contain_text("Superseded by")
    assert (
        lisbon.evaluate("e => getComputedStyle(e.querySelector('p.content')).textDecorationLine")
        == "line-through"
    )

    page.screenshot(path=str(tmp_path / "thread.png"), full_page=True)

    porto.get_by_role("link", name="user #2").click()
    expect(page).to_have_url(f"{server}/thread?id=trip#msg-2")
    target = page.locator("#msg-2")
    expect(target).to_be_in_viewport()
    assert page.evaluate("document.querySelector(':target').id") == "msg-2"
    assert target.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 244, 194)"
    page.screenshot(path=str(tmp_path / "source-message.png"))

    lisbon.get_by_role("link", name=seeded.porto).click()
    expect(page).to_have_url(f"{server}/memory?id={seeded.porto}")
    chain = page.locator("ol.chain-list li")
    expect(chain).to_have_count(2)
    expect(chain.nth(0)).to_contain_text("Alice is flying to Lisbon in March")
    expect(chain.nth(1)).to_contain_text("(this memory)")

    assert dialogs == [] and errors == []
    assert (tmp_path / "thread.png").stat().st_size > 10_000


def test_search_updates_in_place_and_a_memory_is_deleted_after_confirmation(
    server: str, page: Page, seeded: Seeded, tmp_path: Path
) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{server}/search")
    page.get_by_label("query").fill("window seats")
    with page.expect_request(
        lambda r: "/search?" in r.url and r.headers.get("hx-request") == "true"
    ):
        page.get_by_role("button", name="Search").click()
    first = page.locator("table.results tbody tr").first
    expect(first).to_contain_text("Alice prefers window seats")
    assert float(first.locator("td.num").inner_text()) >= 0
    expect(page).to_have_url(re.compile(r"/search\?q=window(\+|%20)seats&"))

    first.get_by_role("link", name="Alice prefers window seats").click()
    page.get_by_role("link", name="Delete…").click()
    expect(page.locator(".confirm")).to_contain_text("cannot be undone")
    page.get_by_role("button", name="Delete memory").click()
    expect(page).to_have_url(f"{server}/thread?id=trip&deleted_memory={seeded.window_seat}")
    expect(page.locator("p.notice")).to_have_text(f"Deleted memory '{seeded.window_seat}'.")
    expect(page.locator(f'article.memory[data-memory-id="{seeded.window_seat}"]')).to_have_count(0)
    expect(page.locator("article.memory")).to_have_count(2)
    page.screenshot(path=str(tmp_path / "after-delete.png"), full_page=True)
    assert errors == []


def test_pages_stack_on_a_narrow_screen(server: str, page: Page, tmp_path: Path) -> None:
    """issue 21: at phone width the thread's two columns stayed side by side and the
    pages scrolled sideways."""
    page.set_viewport_size({"width": 400, "height": 800})
    for path in ("/", "/thread?id=trip", "/user?id=alice", "/search?q=Porto", "/memories"):
        page.goto(server + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 400, (path, width)
    page.goto(server + "/thread?id=trip")
    messages = page.locator("section.messages-column").bounding_box()
    memories = page.locator("section.memories-column").bounding_box()
    assert messages and memories
    assert memories["y"] >= messages["y"] + messages["height"]  # below, not beside
    assert memories["width"] > 300 and messages["width"] > 300
    page.screenshot(path=str(tmp_path / "narrow-thread.png"), full_page=True)
    assert (tmp_path / "narrow-thread.png").stat().st_size > 10_000


def test_a_person_corrects_a_memory_then_invalidates_it(
    server: str, page: Page, seeded: Seeded, tmp_path: Path
) -> None:
    """docs/service.md#oam-serve: the inspector shows a memory's window and history and lets a person
    correct it (a new version with a reason) or invalidate it."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{server}/memory?id={seeded.window_seat}")
    card = page.locator(f'article.memory[data-memory-id="{seeded.window_seat}"]')
    expect(card.locator("p.window")).to_contain_text("Valid")
    card.get_by_role("link", name="Correct…").click()
    page.locator("textarea[name=content]").fill("Alice prefers aisle seats")
    page.locator("input[name=reason]").fill("changed her mind")
    page.get_by_role("button", name="Save new version").click()
    expect(page).to_have_url(re.compile(r"/memory\?id="))
    assert seeded.window_seat not in page.url
    versions = page.locator("ol.history li")
    expect(versions).to_have_count(2)
    expect(versions.nth(0)).to_contain_text("Alice prefers window seats")
    expect(versions.nth(0)).to_contain_text("changed her mind")
    expect(versions.nth(1)).to_contain_text("Alice prefers aisle seats (this memory)")
    expect(versions.nth(1)).to_contain_text("holds now")

    page.get_by_role("link", name="Invalidate…").click()
    page.locator("input[name=reason]").fill("flies no more")
    page.get_by_role("button", name="Invalidate memory").click()
    expect(page.locator("article.memory .badge.status")).to_have_text("invalidated")
    expect(page.locator("ol.history li").nth(1)).to_contain_text("flies no more")
    page.screenshot(path=str(tmp_path / "history.png"), full_page=True)
    assert errors == []


def test_correcting_one_word_of_a_multi_line_memory_keeps_its_line_ends(
    server: str, page: Page, seeded: Seeded
) -> None:
    """trial 35: the textarea dropped the text's leading newline (the HTML parser
    eats one right after ``<textarea>``) and the browser sent every line end as CRLF,
    so the new version differed in every line from the one corrected."""
    original = "\nAllergies:\n- penicillin\n- peanuts"
    with OracleAgentMemory.open(seeded.url, embedder=EMBEDDER, extract_memories=False) as memory:
        memory_id = memory.add_memory(original, user_id="alice", agent_id="helper")
    page.goto(f"{server}/memory/update?id={memory_id}")
    box = page.locator("textarea[name=content]")
    assert box.input_value() == original
    box.fill(box.input_value().replace("peanuts", "tree nuts"))
    page.get_by_role("button", name="Save new version").click()
    expect(page).to_have_url(re.compile(r"/memory\?id="))
    with OracleAgentMemory.open(seeded.url, embedder=EMBEDDER, extract_memories=False) as memory:
        history = memory.get_memory_history(memory_id)
    assert [r.content for r in history] == [original, "\nAllergies:\n- penicillin\n- tree nuts"]
