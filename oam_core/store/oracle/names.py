"""Managed object names of one Oracle memory store (docs/oracle.md#managed-objects-prefix-id_; docs/store.md#schema).

``memory_store_id`` is joined to every managed object name with an underscore
(letter first, letters/digits/underscore, at most 16 characters). The deprecated
``table_name_prefix`` is used verbatim as a prefix. Names are upper-case and never
quoted, so they reach DDL only after this validation (DDL takes no binds).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.errors import InvalidArgumentError

_STORE_ID = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,15}")
_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,16}")


def resolve_prefix(table_name_prefix: Maybe[str | None], memory_store_id: Maybe[str | None]) -> str:
    """Return the object-name prefix from ``memory_store_id`` or ``table_name_prefix``.

    Args:
        table_name_prefix: Deprecated (in Oracle's SDK since 26.6.0; docs/oracle.md#options); used verbatim, e.g.
            ``"APP_"``. Emits a ``DeprecationWarning``.
        memory_store_id: Stable id of the store; the prefix is ``ID_`` upper-cased.

    Returns:
        ``""`` when both are omitted (or None), else the upper-case prefix.

    Raises:
        ValueError: when both are given, or a value breaks the format rules
            (``memory_store_id``: letter first, letters/digits/underscore, at most
            16 characters; ``table_name_prefix``: the same with at most 17).
    """
    has_prefix = table_name_prefix is not NOT_SET and table_name_prefix is not None
    has_id = memory_store_id is not NOT_SET and memory_store_id is not None
    if has_prefix and has_id:
        raise InvalidArgumentError("pass either memory_store_id or table_name_prefix, not both")
    if has_id:
        if not isinstance(memory_store_id, str) or not _STORE_ID.fullmatch(memory_store_id):
            raise InvalidArgumentError(
                "memory_store_id must start with a letter, hold only letters, digits and "
                f"underscores, and have at most 16 characters; got {memory_store_id!r}"
            )
        return memory_store_id.upper() + "_"
    if has_prefix:
        warnings.warn(
            "table_name_prefix is deprecated (since 26.6.0, removed in 27.1); "
            "use memory_store_id instead",
            DeprecationWarning,
            stacklevel=3,
        )
        if not isinstance(table_name_prefix, str) or not _PREFIX.fullmatch(table_name_prefix):
            raise InvalidArgumentError(
                "table_name_prefix must start with a letter, hold only letters, digits and "
                f"underscores, and have at most 17 characters; got {table_name_prefix!r}"
            )
        return table_name_prefix.upper()
    return ""


@dataclass(frozen=True)
class Names:
    """Every managed object name for one prefix (all upper-case, unquoted).

    Attributes:
        prefix: The prefix of every name.
        windows: The record tables and search rows have the validity columns
            ``valid_from``/``valid_until`` (schema version 4 on); False for an older
            schema opened without DDL, whose statements never name them (windows.py).
    """

    prefix: str
    windows: bool = True

    def _n(self, base: str) -> str:
        return f"{self.prefix}{base}"

    @property
    def meta(self) -> str:
        """Schema metadata table (version, vector dimension, retention, ...)."""
        return self._n("MEMORY_STORE_META")

    @property
    def threads(self) -> str:
        return self._n("THREADS")

    @property
    def profiles(self) -> str:
        return self._n("ACTOR_PROFILES")

    @property
    def messages(self) -> str:
        return self._n("MESSAGES")

    @property
    def memories(self) -> str:
        return self._n("MEMORIES")

    @property
    def chunks(self) -> str:
        return self._n("RECORD_CHUNKS")

    @property
    def chunk_sources(self) -> str:
        """The messages each search row quotes (``store/quotes.py``)."""
        return self._n("CHUNK_SOURCES")

    @property
    def vector_index(self) -> str:
        return self._n("CHUNKS_VEC_IX")

    @property
    def text_index(self) -> str:
        return self._n("CHUNKS_TEXT_IX")

    @property
    def hybrid_index(self) -> str:
        return self._n("CHUNKS_HYBRID_IX")

    @property
    def vectorizer(self) -> str:
        """DBMS_VECTOR_CHAIN vectorizer preference of the hybrid index."""
        return self._n("OAM_VECTORIZER")

    @property
    def purge_job(self) -> str:
        """DBMS_SCHEDULER job deleting expired rows."""
        return self._n("OAM_PURGE_JOB")

    @property
    def tables(self) -> tuple[str, ...]:
        """Managed tables in creation order."""
        return (
            self.meta,
            self.threads,
            self.profiles,
            self.messages,
            self.memories,
            self.chunks,
            self.chunk_sources,
        )

    def record_table(self, family: str) -> str:
        """The table of a record family (``message``, ``memory``, a profile type, ``thread``).

        Raises:
            ValueError: for an unknown family.
        """
        tables = {
            "message": self.messages,
            "memory": self.memories,
            "user_profile": self.profiles,
            "agent_profile": self.profiles,
            "thread": self.threads,
        }
        if family not in tables:
            raise InvalidArgumentError(f"unknown record family {family!r}")
        return tables[family]
