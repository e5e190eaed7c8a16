"""A plain ``pip install oam`` (no extras): what needs an extra says which one to
install, never a bare ``ModuleNotFoundError`` of some dependency
(the extras in pyproject.toml, README.md). Runs in a subprocess in which every module that only an
extra installs cannot be imported; which those are is read from pyproject.toml."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement string."""
    bare = re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", bare).lower()


def _extras_only_modules() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_name(r) for r in project["dependencies"]}
    extra = {
        _name(r)
        for group, reqs in project["optional-dependencies"].items()
        if group not in ("dev", "bench", "record")
        for r in reqs
        if not r.startswith("oam[")
    }
    only = extra - core
    blocked = []
    for module, dists in importlib.metadata.packages_distributions().items():
        names = {re.sub(r"[-_.]+", "-", d).lower() for d in dists}
        if names and names <= only | {"oam"} and not names <= {"oam"} and module.isidentifier():
            blocked.append(module)
    return sorted(blocked)


SCRIPT = """
import importlib.abc, importlib.util, json, sys
BLOCKED = set(json.loads(sys.argv[1]))

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Block())
real_find_spec = importlib.util.find_spec

def find_spec(name, package=None):  # what an absent module gives: None, no error
    if name.split(".")[0] in BLOCKED:
        return None
    return real_find_spec(name, package)

importlib.util.find_spec = find_spec
from oam_core import OracleAgentMemory
try:
    OracleAgentMemory.open(sys.argv[2], **json.loads(sys.argv[3]))
except ImportError as exc:
    print(type(exc).__name__, exc)
else:
    print("opened")
"""


@pytest.mark.parametrize(
    ("url", "kwargs", "hint"),
    [
        (":memory:", {"llm": "openai/gpt-4o-mini"}, 'pip install "oam[litellm]"'),
        (":memory:", {"embedder": "openai/text-embedding-3-small"}, 'pip install "oam[litellm]"'),
        ("oracle://app:secret@localhost:1521/FREEPDB1", {}, "pip install 'oam[oracle]'"),
        ("postgresql://u:p@localhost:5432/db", {}, "pip install 'oam[postgres]'"),
    ],
)
def test_a_missing_extra_names_the_extra(url: str, kwargs: dict[str, str], hint: str) -> None:
    blocked = _extras_only_modules()
    assert {"litellm", "oracledb", "psycopg"} <= set(blocked)
    assert "tenacity" not in blocked  # a core dependency: the retry loop imports it
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(SCRIPT),
            json.dumps(blocked),
            url,
            json.dumps(kwargs),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ImportError ") and hint in out.stdout, out.stdout
