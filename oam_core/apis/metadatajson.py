"""Metadata serialisation: check a record's metadata and turn it into the JSON text a back end stores (docs/store.md#metadata).

Metadata is a JSON object (a dict, or None). ``dump_metadata`` refuses what a store
cannot hold (a non-dict, a value JSON cannot hold, a key or string with a NUL or a
lone surrogate) and the reserved ``$agent_memory`` key unless the library itself
writes it, naming the argument (``metadata[3]``) and the value. The one reserved
object a caller may write is ``MANAGED_MARK``, ``{"$agent_memory": {"managed": true}}``:
the record is managed by the application that wrote it, so the memory pipeline never
changes it (docs/memory-pipeline.md#records-managed-by-their-writer).
``dump_metadata_column`` does the same for one value per record, in one pass in the
common case. Everything here is pure (no I/O), so a rejected call writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

import orjson

from oam_core.apis.storable import check_json_text, storable
from oam_core.errors import InvalidArgumentError, InvalidFilterError
from oam_core.filters import check_json, is_plain_json

RESERVED_KEY = "$agent_memory"
"""Metadata key reserved for the library (provenance, supersede marks); callers may
neither write nor change it (docs/store.md, "Metadata"), except for ``MANAGED_MARK``."""

MANAGED_KEY = "managed"
"""Key under ``$agent_memory`` marking a record as managed by the application that
wrote it (``true``): the extraction pass shows it but never updates nor invalidates
it (docs/memory-pipeline.md#records-managed-by-their-writer)."""

MANAGED_MARK: dict[str, Any] = {MANAGED_KEY: True}
"""The reserved object a caller may write: ``metadata={"$agent_memory": MANAGED_MARK,
...}`` (exactly this object; any other reserved content is the library's)."""


def is_managed_mark(reserved: object) -> bool:
    """Whether ``reserved`` (a metadata's ``$agent_memory`` value) is exactly
    ``MANAGED_MARK``: a dict with the one key ``managed`` whose value is ``True``
    (not ``1``)."""
    return (
        type(reserved) is dict
        and reserved.keys() == {MANAGED_KEY}
        and reserved[MANAGED_KEY] is True
    )


def managed(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of ``metadata`` (a dict or None: empty) carrying ``MANAGED_MARK`` under
    ``RESERVED_KEY``, for a writer whose records the memory pipeline must never change
    (the framework adapters' items, documents and nodes;
    docs/memory-pipeline.md#records-managed-by-their-writer). A ``RESERVED_KEY`` the
    caller put there is left as it is, for the store's check to accept or refuse."""
    out = dict(metadata or {})
    out.setdefault(RESERVED_KEY, dict(MANAGED_MARK))
    return out


_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
"""How stored metadata that needed ``check_json`` is serialised (one encoder:
``json.dumps`` builds one per call); compact, as ``_plain_text`` writes the rest."""


def _plain_text(value: object) -> str | None:
    """``value`` (``is_plain_json``) as compact JSON through orjson, about ten times
    faster than ``json``; None when orjson refuses it (a lone surrogate), which the
    caller then checks the slow way. The text parses back to the same value as
    ``_JSON``'s (floats may be spelt differently: ``1e-5`` for ``1e-05``)."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return None


def json_storable(value: object) -> bool:
    """Whether ``value`` is made of built-in JSON types only (``is_plain_json``) and
    none of its keys and strings holds a NUL or a lone surrogate: one fast pass (a
    type walk, one orjson serialisation, one scan of its text). False means "ask
    ``check_stored_json``", which names the problem (or finds none: a string holding
    a backslash and ``u0000`` looks like an escaped NUL here)."""
    return is_plain_json(value) and _storable_text(value)


def _storable_text(value: object) -> bool:
    """Whether ``value`` (``is_plain_json``) serialises to text without a NUL (escaped)
    or a lone surrogate (orjson refuses one)."""
    text = _plain_text(value)
    return text is not None and "\\u0000" not in text and storable(text)


def check_stored_json(value: object, name: str) -> None:
    """Refuse a JSON-like value a store cannot hold as metadata, naming ``name`` (the
    caller's own argument: a framework adapter checks what it was given this way
    before it writes, so the error never names the store's internal ``metadata[0]``).

    Args:
        value: A dict, list or scalar about to be stored as (part of) metadata.
        name: The caller's name for it (``metadatas[1]``, ``node 'n1' metadata``);
            a NUL or lone surrogate is named by its path (``metadatas[1]['k']``).

    Raises:
        InvalidArgumentError: for an integer outside signed 64 bits, a non-finite
            float, a non-string key, a value that is not JSON, or a key or string
            holding a NUL or a lone surrogate (docs/store.md#text-and-ids).
    """
    if is_plain_json(value):
        if not _storable_text(value):
            check_json_text(value, name)  # names the path (or clears a lookalike)
        return
    try:
        checked = check_json(value, name)
    except InvalidFilterError as exc:  # a stored value, not a filter, is refused
        raise InvalidArgumentError(str(exc)) from None
    check_json_text(checked, name)


def dump_metadata(value: object, name: str = "metadata", *, library: bool = False) -> str | None:
    """Validate metadata (a JSON-compatible dict or None) and serialise it.

    Args:
        value: The metadata.
        name: The argument named in errors.
        library: The library itself writes (extraction provenance): only then may
            ``value`` hold the reserved ``$agent_memory`` key with any object;
            otherwise only ``MANAGED_MARK`` is accepted there.

    Raises:
        InvalidArgumentError: for a non-dict, a value JSON cannot hold, a key or string with
            a NUL or lone surrogate, or (unless ``library``) the reserved key with
            anything but ``MANAGED_MARK``.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{name} must be a dict or None, got {value!r}")
    if isinstance(value, dict) and is_plain_json(value):
        # Built-in JSON types only: serialise, and read NUL (escaped as \u0000 by the
        # encoder) and lone surrogates (kept raw) off the text; the slow path below
        # names the culprit if there is one (or clears a backslash-u0000 lookalike).
        text = _plain_text(value) or ""
        reserved_ok = (
            RESERVED_KEY not in value
            or (library and isinstance(value[RESERVED_KEY], dict))
            or is_managed_mark(value[RESERVED_KEY])
        )
        if text and reserved_ok and "\\u0000" not in text and storable(text):
            return text
    try:
        checked = check_json(value, name)
    except InvalidFilterError as exc:
        raise InvalidArgumentError(str(exc)) from None
    check_json_text(checked, name)
    if RESERVED_KEY in checked:
        reserved = checked[RESERVED_KEY]
        if not library and not is_managed_mark(reserved):
            raise InvalidArgumentError(
                f"{name}[{RESERVED_KEY!r}] is reserved for the library (extraction "
                "provenance); store your own keys under another name (the one object "
                f"you may write there is {{{MANAGED_KEY!r}: True}}: the record is managed "
                "by your application)"
            )
        if not isinstance(reserved, dict):
            raise InvalidArgumentError(
                f"{name}[{RESERVED_KEY!r}] is reserved for the library and must be an "
                f"object, got {reserved!r}"
            )
    return _JSON.encode(checked)


def dump_metadata_column(
    values: Sequence[object], name: str = "metadata", *, library: bool = False
) -> list[str | None]:
    """``dump_metadata`` of every entry of ``values`` (``name[i]`` in errors), the
    common case column-wise: dicts of built-in JSON types without the reserved key
    are serialised, then all their texts are read for NUL and lone surrogates in one
    pass; any other entry, or every entry when that pass finds something, goes
    through ``dump_metadata`` to be checked (and named) on its own.

    Args:
        values: One metadata value (dict or None) per record; the same dict object
            broadcast over the rows is serialised once.

    Raises:
        InvalidArgumentError: as ``dump_metadata``, for the first bad entry.
    """
    plain = _plain_column(values)
    if plain is not None:
        return plain
    out: list[str | None] = []
    seen: dict[int, str | None] = {}
    fast: list[int] = []
    for i, value in enumerate(values):
        if value is None:
            out.append(None)
        elif id(value) in seen:
            out.append(seen[id(value)])
        elif (
            type(value) is dict
            and RESERVED_KEY not in value
            and is_plain_json(value)
            and (text := _plain_text(value)) is not None
        ):
            seen[id(value)] = text
            out.append(text)
            fast.append(i)
        else:
            text = dump_metadata(value, f"{name}[{i}]", library=library)
            seen[id(value)] = text
            out.append(text)
    texts = [cast("str", out[i]) for i in fast]
    joined = "".join(texts)
    if "\\u0000" in joined or not storable(joined):
        for i in fast:  # names the culprit, or clears a backslash-u0000 lookalike
            out[i] = dump_metadata(values[i], f"{name}[{i}]", library=library)
    return out


def _plain_column(values: Sequence[object]) -> list[str | None] | None:
    """The column serialised in two passes when every entry is None or a dict of
    built-in JSON types without the reserved key, and no text needs a closer look
    (an escaped NUL); None otherwise. A dict broadcast over the rows is serialised
    once."""
    if not values:
        return []
    first = values[0]
    if type(first) is dict and all(v is first for v in values):
        if RESERVED_KEY in first or not is_plain_json(first):
            return None
        text = _plain_text(first)
        if text is None:
            return None
        texts: list[str | None] = [text] * len(values)
    elif all(
        v is None or (type(v) is dict and RESERVED_KEY not in v and is_plain_json(v))
        for v in values
    ):
        try:  # orjson refuses lone surrogates: the caller's loop then names the entry
            texts = [None if v is None else orjson.dumps(v).decode() for v in values]
        except orjson.JSONEncodeError:
            return None
    else:
        return None
    if "\\u0000" in "".join([t for t in texts if t is not None]):
        return None
    return texts
