"""Argument checks of the store's reads, searches and deletes: scope ids, metadata
filters, record-type sets and counts (docs/store.md#scopes, docs/filters.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.records import SEARCHABLE_TYPES
from oam_core.filters import parse_filter
from oam_core.store import planning
from oam_core.store.backend import Predicate

__all__ = ["filter_arg", "findable", "int_or_none", "scope_arg", "types_arg"]


def scope_arg(value: Maybe[str | None], name: str) -> Maybe[str | None]:
    """A scope id as given (``NOT_SET``: unconstrained; None: only unscoped rows).

    Raises:
        ValueError: for anything but a str, None or ``NOT_SET``.
    """
    if value is NOT_SET or value is None:
        return value
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a str, None or omitted, got {value!r}")
    return value


def filter_arg(value: Maybe[dict[str, Any] | None]) -> Any:
    """A metadata filter parsed to its tree (``NOT_SET``/None passed through).

    Raises:
        ValueError: for a filter outside the language, or an operand holding NUL or
            a lone surrogate.
    """
    if value is NOT_SET or value is None:
        return value
    tree = parse_filter(value)
    # No stored key or string holds NUL or a lone surrogate (metadatajson.dump_metadata),
    # and SQLite's JSON functions would stop at a NUL: such an operand is an error.
    planning.check_json_text(value, "metadata_filter")
    return tree


def findable(pred: Predicate) -> bool:
    """False when a scope id of ``pred`` cannot be stored (NUL, lone surrogate): then
    no record matches and the back end is not asked."""
    return all(
        value is NOT_SET or value is None or planning.storable(value)
        for value in (pred.thread_id, pred.user_id, pred.agent_id)
    )


def types_arg(record_types: Iterable[str] | None) -> frozenset[str]:
    """The searched record types (None: messages, memory-like records and profiles).

    Raises:
        ValueError: for a bare string, an unknown or empty set.
    """
    if record_types is None:
        return SEARCHABLE_TYPES
    if isinstance(record_types, (str, bytes)):
        raise ValueError(
            f"record_types must be a set of type names, got the bare string {record_types!r}; "
            f"write {{{record_types!r}}}"
        )
    try:
        types = frozenset(record_types)
    except TypeError:
        raise ValueError(
            f"record_types must be a set of type names, got {record_types!r}"
        ) from None
    unknown = types - SEARCHABLE_TYPES
    if unknown:
        raise ValueError(
            f"unknown record_types {sorted(map(str, unknown))}; searchable: {sorted(SEARCHABLE_TYPES)}"
        )
    if not types:
        raise ValueError("record_types must not be empty")
    return types


def int_or_none(name: str, value: object) -> None:
    """Refuse a position or bound that is neither an int nor None.

    Raises:
        ValueError: naming ``name`` and the value.
    """
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"{name} must be an int or None, got {value!r}")
