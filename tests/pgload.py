"""Load the conformance suite's pgserver helper (``tests/conformance/_pg.py``) as the
module ``_pg`` from any test directory, so the whole session shares one server."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def pg_module() -> ModuleType:
    """The ``_pg`` helper module (imported once per session)."""
    if "_pg" not in sys.modules:
        path = Path(__file__).parent / "conformance" / "_pg.py"
        spec = importlib.util.spec_from_file_location("_pg", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["_pg"] = module
        spec.loader.exec_module(module)
    return sys.modules["_pg"]
