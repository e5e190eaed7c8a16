"""README examples run as written (STYLE §9): every ```python block without ``>>>``
prompts is executed in a fresh temporary directory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [b for b in BLOCK.findall(text) if ">>>" not in b]


@pytest.mark.parametrize("code", _blocks())
def test_readme_python_block_runs(
    code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})


def test_readme_has_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert 'pip install -e ".[local]" && oam demo' in text
    assert 'pip install -e ".[all]" && python -m pytest' in text
