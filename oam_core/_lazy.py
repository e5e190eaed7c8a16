"""Lazy package attributes: optional back ends are imported on first access only."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any


def lazy_attributes(
    package: str,
    namespace: MutableMapping[str, Any],
    lazy: Mapping[str, str],
    public: Sequence[str],
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``: a name in ``lazy``
    (name -> module) is imported from its module on first access and cached in
    ``namespace`` (the package's ``globals()``).

    Raises (from ``__getattr__``):
        AttributeError: for a name that is neither lazy nor defined.
        ImportError: when the lazy module's optional dependency is missing.
    """

    def getattr_(name: str) -> Any:
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *public})

    return getattr_, dir_
