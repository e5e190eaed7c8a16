"""Lazy package attributes: optional back ends are imported on first access only.

The one helper for this (``oam_core``, ``oam_core.core``, ``oam_core.embedders``,
``oam_core.llms``, ``oam_core.rerankers`` use it), so importing the package never
imports an optional dependency.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any


def lazy_attributes(
    package: str,
    namespace: MutableMapping[str, Any],
    lazy: Mapping[str, str],
    public: Sequence[str],
    *,
    extras: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``: a name in ``lazy``
    (name -> module) is imported from its module on first access and cached in
    ``namespace`` (the package's ``globals()``).

    Args:
        package: The package's ``__name__``.
        namespace: The package's ``globals()``.
        lazy: Lazy name -> module that defines it.
        public: The package's ``__all__``.
        extras: Lazy name -> the ``oam`` extra that installs its dependency; an
            ``ImportError`` then says ``pip install 'oam[<extra>]'``.

    Raises (from ``__getattr__``):
        AttributeError: for a name that is neither lazy nor defined.
        ImportError: when the lazy module's optional dependency is missing.
    """
    hints = extras or {}

    def getattr_(name: str) -> Any:
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            found = importlib.import_module(module)
        except ImportError as exc:
            extra = hints.get(name)
            if extra is None:
                raise
            raise ImportError(
                f"{name} needs the {extra} extra: pip install 'oam[{extra}]' ({exc})"
            ) from exc
        value = getattr(found, name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *public})

    return getattr_, dir_
