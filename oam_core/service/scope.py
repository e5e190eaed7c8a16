"""The scope an ``oam mcp`` server is fixed to: one user, one agent, or both
(docs/service.md).

Every read is filtered by the scope inside the store query, and every record or
thread a client names by id is checked against it before it is read, written or
deleted. The same message answers "does not exist" and "belongs to someone else", so a
client cannot probe other scopes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oam_core.apis.records import Record, ThreadRow
from oam_core.errors import InvalidArgumentError, NotFoundError

__all__ = ["Scope", "ScopeError"]


class ScopeError(NotFoundError):
    """A record or thread a client named is not in the server's scope (or does not
    exist: the two are not told apart). A ``NotFoundError``, so a ``LookupError`` as
    before (docs/errors.md)."""


def _check(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise InvalidArgumentError(f"{name} must be a non-blank string without NUL, got {value!r}")
    return value


@dataclass(frozen=True)
class Scope:
    """A fixed user and/or agent scope.

    Attributes:
        user_id: Only records and threads of this user (None: any user).
        agent_id: Only records and threads of this agent (None: any agent).

    Raises:
        ValueError: when both are None, or one is blank or not a string.
    """

    user_id: str | None = None
    agent_id: str | None = None

    def __post_init__(self) -> None:
        _check("user_id", self.user_id)
        _check("agent_id", self.agent_id)
        if self.user_id is None and self.agent_id is None:
            raise InvalidArgumentError(
                "a scope needs a user_id, an agent_id or both (--user / --agent)"
            )

    def describe(self) -> str:
        """``"user 'alice', agent 'helper'"`` style text for messages."""
        parts = []
        if self.user_id is not None:
            parts.append(f"user {self.user_id!r}")
        if self.agent_id is not None:
            parts.append(f"agent {self.agent_id!r}")
        return ", ".join(parts)

    def filters(self) -> dict[str, Any]:
        """Keyword arguments restricting ``client.search``, ``client.list_threads``
        and ``store.list`` to the scope (given ids are matched exactly)."""
        out: dict[str, Any] = {}
        if self.user_id is not None:
            out["user_id"] = self.user_id
        if self.agent_id is not None:
            out["agent_id"] = self.agent_id
        return out

    def owns(self, item: Record | ThreadRow) -> bool:
        """Whether a record or thread row lies inside the scope."""
        if self.user_id is not None and item.user_id != self.user_id:
            return False
        return self.agent_id is None or item.agent_id == self.agent_id

    def thread(self, row: ThreadRow | None, thread_id: str) -> ThreadRow:
        """Return ``row`` if it exists and lies inside the scope.

        Raises:
            ScopeError: otherwise (the same message either way).
        """
        if row is None or not self.owns(row):
            raise ScopeError(f"no thread {thread_id!r} in this server's scope ({self.describe()})")
        return row

    def record(self, record: Record | None, kind: str, record_id: str) -> Record:
        """Return ``record`` if it exists and lies inside the scope.

        Raises:
            ScopeError: otherwise (the same message either way).
        """
        if record is None or not self.owns(record):
            raise ScopeError(f"no {kind} {record_id!r} in this server's scope ({self.describe()})")
        return record
