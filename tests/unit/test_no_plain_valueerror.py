"""No module raises a plain ``ValueError``: a bad argument is an
``InvalidArgumentError`` (oam_core.checks) or another ``OAMError`` that is also a
``ValueError``, so ``except OAMError`` catches every error ``oam`` raises on purpose
(docs/errors.md). Each file is parsed with ``ast``; a failure names file:line."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def plain_value_errors(package: Path, root: Path = ROOT) -> list[str]:
    """``file:line`` (relative to ``root``) of every ``raise ValueError(...)`` (or bare
    ``raise ValueError``) in the Python files under ``package``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        lines = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id == "ValueError":
                lines.append(node.lineno)
        found += [f"{path.relative_to(root)}:{line}" for line in sorted(lines)]
    return found


def test_the_guard_finds_a_plain_value_error(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(
        "from oam_core.errors import InvalidArgumentError\n"
        "def f(x):\n"
        "    if x:\n"
        "        raise ValueError(f'x must be 0, got {x!r}')\n"
        "    raise InvalidArgumentError('fine')\n"
        "def g():\n"
        "    raise ValueError\n"
    )
    assert plain_value_errors(tmp_path, tmp_path) == ["mod.py:4", "mod.py:7"]


def test_oam_core_raises_no_plain_value_error() -> None:
    found = plain_value_errors(ROOT / "oam_core")
    assert not found, f"{len(found)} plain raise ValueError: " + ", ".join(found)


def test_the_adapters_raise_no_plain_value_error() -> None:
    found = plain_value_errors(ROOT / "integrations")
    assert not found, f"{len(found)} plain raise ValueError: " + ", ".join(found)
