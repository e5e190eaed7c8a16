"""What text a store can hold: no NUL and no lone surrogate, in ids, text, roles and
metadata (docs/store.md, "Text and ids").

Pure checks (no I/O) shared by the argument checks of every write and by metadata
serialisation (``apis/metadatajson.py``); they raise before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from oam_core.errors import InvalidArgumentError

__all__ = ["check_json_text", "check_text", "storable"]

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
"""NUL and lone surrogates: no back end stores them (PostgreSQL refuses NUL, UTF-8
cannot encode a surrogate, SQLite's JSON functions stop at NUL)."""


def check_text(value: str, name: str) -> str:
    """Return ``value`` if every back end can store it: no NUL (U+0000) and no lone
    surrogate (U+D800..U+DFFF) (docs/store.md, "Text and ids").

    Raises:
        InvalidArgumentError: naming ``name``, the character and its position.
    """
    found = _UNSTORABLE.search(value)
    if found is not None:
        char = found.group()
        what = (
            "a NUL character (U+0000)"
            if char == "\x00"
            else f"a lone surrogate (U+{ord(char):04X})"
        )
        raise InvalidArgumentError(
            f"{name} contains {what} at index {found.start()}; text, ids, roles and "
            "metadata must be valid Unicode without NUL"
        )
    return value


def storable(value: object) -> bool:
    """Whether ``value`` is a string a store could hold (no NUL, no lone surrogate);
    a lookup by an id that is not can only find nothing."""
    return isinstance(value, str) and _UNSTORABLE.search(value) is None


def check_json_text(value: object, name: str) -> None:
    """Apply ``check_text`` to every key and string inside a JSON-like ``value``,
    naming the path (``metadata['a'][0]``). ``value`` must already be checked as JSON
    (so its depth is bounded)."""
    if isinstance(value, str):
        check_text(value, name)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str):
                check_text(key, f"{name} key {key!r}")
            check_json_text(item, f"{name}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_json_text(item, f"{name}[{i}]")
