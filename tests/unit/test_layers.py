"""Which package may import which (README.md, "What is where"): ``apis/`` (plain types,
no I/O) imports nothing from ``store/``, the command line reaches the library through
its public names, and no two modules import each other, directly or in a circle.

Every import counts, including those inside functions; only imports under
``if TYPE_CHECKING:`` (which never run) are left out."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

import oam_core

ROOT = Path(oam_core.__file__).parent


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in sorted(ROOT.rglob("*.py"))}


def _imports(name: str) -> set[str]:
    """The ``oam_core`` modules ``name`` imports (a name imported from a package
    counts as its submodule when there is one)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for n in ast.walk(node))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in MODULES else base)
    return {m for m in found if m in MODULES and m != name}


def _graph() -> dict[str, set[str]]:
    """Each module's imports; a package's ``__init__`` importing its own submodules
    is no circle (they import the package first), so those edges are left out."""
    return {
        name: {
            dep
            for dep in _imports(name)
            if not (MODULES[dep].name == "__init__.py" and name.startswith(dep + "."))
        }
        for name in MODULES
    }


def test_apis_imports_nothing_from_store() -> None:
    reached = {
        (name, dep)
        for name in MODULES
        if name.startswith("oam_core.apis")
        for dep in _imports(name)
        if dep.startswith("oam_core.store")
    }
    assert reached == set()


def test_no_import_circles() -> None:
    try:
        TopologicalSorter(_graph()).prepare()
    except CycleError as exc:
        pytest.fail(f"import circle: {' -> '.join(exc.args[1])}")


@pytest.mark.parametrize(
    "module", ["oam_core.cli", "oam_core.transfer.cli", "oam_core.service.commands"]
)
def test_commands_use_public_names(module: str) -> None:
    """The commands import ``oam_core``'s public packages, not the store's internals."""
    internal = {dep for dep in _imports(module) if dep.startswith("oam_core.store")}
    assert internal == set()
