"""The ``NOT_SET`` marker that tells an omitted argument from an explicit ``None`` (docs/concepts.md#ids-and-times)."""

from __future__ import annotations

import enum
from typing import Literal, TypeAlias, TypeVar


class _NotSetType(enum.Enum):
    NOT_SET = "NOT_SET"

    def __repr__(self) -> str:
        return "NOT_SET"

    def __bool__(self) -> bool:
        return False


NOT_SET = _NotSetType.NOT_SET
"""Default of every optional argument where omitted and ``None`` differ (docs/concepts.md#ids-and-times)."""

NOT_SET_MARKER = NOT_SET
"""The same marker under the name the reference SDK's retention docs use (for
example ``MemoryRetentionConfig(default_ttl_days=NOT_SET_MARKER)``)."""

NotSetType = Literal[_NotSetType.NOT_SET]

T = TypeVar("T")
Maybe: TypeAlias = T | NotSetType
"""``Maybe[X]``: a value of type X, or ``NOT_SET`` when the caller omitted it."""
