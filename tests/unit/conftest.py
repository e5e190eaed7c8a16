"""Fixtures of the CLI tests (test_cli.py, test_cli_first_hour.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import MESSAGES
from typer.testing import CliRunner


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def chat(tmp_path: Path) -> Path:
    """A four-message JSONL chat (``MESSAGES`` of test_cli.py)."""
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in MESSAGES), encoding="utf-8")
    return path
