"""Parts of a store beside its public API: ``ThreadStore`` (store/threads.py) and
``MemoryVersions`` (store/versions.py) work on one store through its runtime, one
object per store object (docs/layout.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from oam_core.store.runtime import StoreRuntime

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

__all__ = ["StorePart", "part_of"]


class StorePart:
    """A part of one store that runs on its runtime.

    Args:
        runtime: The store's runtime; its back end runs every call.
        store: The store itself, only to name it (``repr``, telemetry spans).
    """

    def __init__(self, runtime: StoreRuntime, store: OracleMemoryStore) -> None:
        self.runtime = runtime
        self.store = store

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.store!r})"


P = TypeVar("P", bound=StorePart)


def part_of(store: OracleMemoryStore, kind: type[P]) -> P:
    """The one ``kind`` of ``store`` (the same object on every call, made on the first)."""
    key = f"_part_{kind.__name__}"
    found = store.__dict__.get(key)
    if found is None:  # setdefault: two first callers still share one object
        found = store.__dict__.setdefault(key, kind(store.runtime, store))
    assert isinstance(found, kind)
    return found
