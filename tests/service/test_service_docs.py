"""docs/service.md and the README stay true: the tracing example runs (in a fresh
interpreter, since it sets the process's tracer provider), every option of both
commands is documented, and the README shows both commands in one line each."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from oam_core.cli import app

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "service.md").read_text(encoding="utf-8")


def test_the_tracing_example_prints_its_spans(tmp_path: Path) -> None:
    [block] = [b for b in re.findall(r"```python\n(.*?)```", DOC, re.S) if ">>>" not in b]
    result = subprocess.run(
        [sys.executable, "-c", block], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "oam.store.add 1" in lines and "oam.store.search 1" in lines
    assert any(line.startswith("oam.embed ") for line in lines)


def test_every_option_of_both_commands_is_documented() -> None:
    for command in ("mcp", "serve"):
        help_text = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
        options = set(re.findall(r"(--[a-z][a-z-]+)", help_text)) - {"--help"}
        assert options, help_text
        missing = sorted(o for o in options if o not in DOC)
        assert not missing, f"oam {command}: {missing} not in docs/service.md"


def test_readme_shows_both_commands_in_one_line_each() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r'^pip install -e "\.\[mcp\]" && oam mcp --db \S+ --user \S+', readme, re.M)
    assert re.search(r'^pip install -e "\.\[serve\]" && oam serve --db \S+', readme, re.M)
