"""README examples run as written: every ```python block without ``>>>``
prompts is executed in a fresh temporary directory.

The README's hosted model id (``openai/gpt-4o-mini``) is answered by a local fake
here, so the example runs offline; everything else in it is real."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import oam_core.llms
from oam_core.apis.llm import ILlm

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [b for b in BLOCK.findall(text) if ">>>" not in b]


README_MODEL = "openai/gpt-4o-mini"


class _FakeHostedLlm(ILlm):
    """Stands in for the README's hosted model: answers every pipeline prompt."""

    calls = 0

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        _FakeHostedLlm.calls += 1
        properties = (response_json_schema or {}).get("properties", {})
        if "summary" in properties:
            return json.dumps({"summary": "Alice is vegetarian.", "topics": ["Diet"]})
        memory = {
            "text": "Alice is vegetarian",
            "record_type": "preference",
            "timestamp": None,
            "supersedes": [],
        }
        return json.dumps({"memories": [memory]})


@pytest.mark.parametrize("code", _blocks())
def test_readme_python_block_runs(
    code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = oam_core.llms.resolve_llm

    def resolve(value: Any, name: str = "llm") -> ILlm | None:
        return _FakeHostedLlm() if value == README_MODEL else real(value, name)

    monkeypatch.setattr(oam_core.llms, "resolve_llm", resolve)
    monkeypatch.chdir(tmp_path)
    _FakeHostedLlm.calls = 0
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    if README_MODEL in code:
        assert _FakeHostedLlm.calls >= 2  # extraction and summary ran
        assert "Alice is vegetarian" in capsys.readouterr().out


def test_readme_has_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert 'pip install -e ".[local]" && oam demo' in text
    assert 'pip install -e ".[all]" && python -m pytest' in text
