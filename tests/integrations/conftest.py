"""Fixtures shared by the framework adapter tests: a fresh PostgreSQL database (a new
schema on the session's ``pgserver``, see ``tests/conformance/_pg.py``) for the
adapters' ``connection=`` and ``from_conn_string`` paths."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "conformance"))

import _pg  # the conformance suite's server helper: one module for both suites


@pytest.fixture
def pg_url() -> str:
    """The URL of an empty PostgreSQL schema (skips when no server can start)."""
    try:
        return _pg.conninfo_for(_pg.new_schema())
    except _pg.ServerUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL: a new SQLite file, then an empty PostgreSQL schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'chat.db'}"
    pg: str = request.getfixturevalue("pg_url")
    return pg


DOCS = Path(__file__).resolve().parents[2] / "docs"


def quick_start(page: str) -> tuple[str, str]:
    """The plain ``python`` block of a docs page's "Quick start" section and the
    ``text`` block of what it prints (both fenced, in that order)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```.*?```text\n(.*?)```", section, re.DOTALL)
    assert found, f"{page}: no python and text blocks under Quick start"
    code, printed = found.group(1), found.group(2)
    assert ">>>" not in code, f"{page}: the quick start must be plain Python"
    return code, printed


@pytest.fixture
def run_quick_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> object:
    """``run(page) -> (printed, expected)``: runs a page's quick start as a user
    would (a fresh ``__main__`` module, in an empty current directory)."""

    def run(page: str) -> tuple[str, str]:
        code, expected = quick_start(page)
        monkeypatch.chdir(tmp_path)
        capsys.readouterr()
        exec(compile(code, f"docs/{page} quick start", "exec"), {"__name__": "__main__"})
        return capsys.readouterr().out, expected

    return run
