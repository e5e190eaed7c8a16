"""Store configuration enums and the retention config (docs/store.md#ttl-and-retention, docs/store.md#schema-policies)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.errors import InvalidArgumentError


class SearchStrategy(str, enum.Enum):
    """How ``search`` ranks records (docs/store.md#search-strategies; ``core.dbsearch.SearchStrategy``).

    ``VECTOR``: cosine distance of the best chunk (needs an embedder or a
    ``query_vector``). ``KEYWORD``: BM25 over the query's terms in the retrieval text
    (no embedder; rejects ``query_vector``). ``HYBRID``: reciprocal rank fusion of both.
    """

    VECTOR = "VECTOR"
    KEYWORD = "KEYWORD"
    HYBRID = "HYBRID"

    @classmethod
    def parse(cls, value: SearchStrategy | str) -> SearchStrategy:
        """Accept a member or its name in any case; raise ValueError naming the value."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str) and value.upper() in cls.__members__:
            return cls[value.upper()]
        raise InvalidArgumentError(
            f"search_strategy must be one of {[m.name for m in cls]}, got {value!r}"
        )


class SearchIndexSyncMode(str, enum.Enum):
    """When database-managed text indexes see new rows (docs/oracle.md#options; Oracle only).

    ``ON_COMMIT`` (default), ``MANUAL``, ``AUTO`` (HYBRID only). The embedded and
    PostgreSQL stores always index within the writing transaction.
    """

    ON_COMMIT = "ON_COMMIT"
    MANUAL = "MANUAL"
    AUTO = "AUTO"


class SchemaPolicy(str, enum.Enum):
    """What a store may do to its schema at start (docs/store.md#schema-policies).

    ``REQUIRE_EXISTING`` never runs DDL; ``CREATE_IF_EMPTY`` bootstraps an empty
    database; ``CREATE_IF_NECESSARY`` creates missing objects and applies supported
    upgrades; ``RECREATE`` drops and recreates every managed object (destructive).
    """

    REQUIRE_EXISTING = "REQUIRE_EXISTING"
    CREATE_IF_EMPTY = "CREATE_IF_EMPTY"
    CREATE_IF_NECESSARY = "CREATE_IF_NECESSARY"
    RECREATE = "RECREATE"

    @classmethod
    def parse(cls, value: SchemaPolicy | str) -> SchemaPolicy:
        """Accept a member or its name in any case; raise ValueError naming the value."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str) and value.upper() in cls.__members__:
            return cls[value.upper()]
        raise InvalidArgumentError(
            f"schema_policy must be one of {[m.name for m in cls]}, got {value!r}"
        )


@dataclass(frozen=True)
class MemoryRetentionConfig:
    """Store-wide retention for messages and memory-like records (docs/store.md#ttl-and-retention).

    Args:
        default_ttl_days: Days to live when a write omits ``ttl_days``; ``None`` (the
            resolved default) means such rows never expire.
        max_ttl_days: Hard cap in days; larger values are clamped with a
            ``UserWarning`` and ``ttl_days=None`` resolves to it. ``None``: no cap.

    Raises:
        ValueError: if a value is not a non-negative int or None, or the default
            exceeds the maximum.
    """

    default_ttl_days: Maybe[int | None] = field(default=NOT_SET)
    max_ttl_days: Maybe[int | None] = field(default=NOT_SET)

    def __post_init__(self) -> None:
        for name in ("default_ttl_days", "max_ttl_days"):
            value = getattr(self, name)
            if value is NOT_SET:
                object.__setattr__(self, name, None)
                continue
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise InvalidArgumentError(
                    f"{name} must be a non-negative int or None, got {value!r}"
                )
        default, cap = self.default_ttl_days, self.max_ttl_days
        if isinstance(default, int) and isinstance(cap, int) and default > cap:
            raise InvalidArgumentError(
                f"default_ttl_days={default} exceeds max_ttl_days={cap}; lower the default"
            )
