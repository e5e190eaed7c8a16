"""Fixtures shared by the framework adapter tests: a fresh PostgreSQL database (a new
schema on the session's ``pgserver``, see ``tests/conformance/_pg.py``) for the
adapters' ``connection=`` and ``from_conn_string`` paths."""

from __future__ import annotations

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
