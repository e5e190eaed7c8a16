"""A recording fake of the python-oracledb connection/cursor/pool API (tests only).

It records every call as a ``Call`` (``execute``, ``executemany``, ``setinputsizes``,
``commit``, ``rollback``) and answers queries from scripted rules. To let the real
store run end to end it also remembers, per table, the ids inserted with
``executemany`` (with generated pks), so ``SELECT id, pk ... WHERE id IN`` sees
them; a rollback forgets what the transaction inserted. Nothing else of Oracle is
emulated: tests assert on the recorded statements.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Rows = list[tuple[Any, ...]]
Answer = Rows | Callable[[str, dict[str, Any]], Rows]


@dataclass
class Call:
    """One recorded driver call."""

    kind: str
    sql: str = ""
    binds: Any = None
    sizes: dict[str, Any] = field(default_factory=dict)


class FakeDbError(Exception):
    """An ``oracledb.DatabaseError`` look-alike: ``args[0].code`` is the ORA number
    (0 for a driver error), ``args[0].full_code`` the full code (``ORA-00054``, or
    ``full_code`` as given, such as ``DPY-4005``). Its module is the driver's, as the
    store tells driver errors by it."""

    __module__ = "oracledb.exceptions"

    def __init__(self, code: int, message: str, full_code: str = "") -> None:
        full = full_code or f"ORA-{code:05d}"
        err = type("_Error", (), {"code": code, "message": message, "full_code": full})()
        super().__init__(err)
        self.message = f"{full}: {message}"

    def __str__(self) -> str:
        return self.message


class FakeConnection:
    """Records calls; ``script(pattern, rows)`` answers matching queries,
    ``fail(pattern, exc)`` raises on a matching statement."""

    __module__ = "oracledb.connection"

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.rules: list[tuple[re.Pattern[str], Answer]] = []
        self.failures: list[tuple[re.Pattern[str], BaseException, int]] = []
        self.committed_ids: dict[str, dict[str, int]] = {}
        self.pending_ids: dict[str, dict[str, int]] = {}
        self.next_pk = 1
        self.rowcounts: list[tuple[re.Pattern[str], int]] = []

    # -- scripting ----------------------------------------------------------------

    def script(self, pattern: str, answer: Answer) -> None:
        """Answer queries whose SQL matches ``pattern`` (regex search) with ``answer``."""
        self.rules.insert(0, (re.compile(pattern, re.S), answer))

    def fail(self, pattern: str, exc: BaseException, times: int = 1) -> None:
        """Raise ``exc`` on the next ``times`` statements matching ``pattern``."""
        self.failures.append((re.compile(pattern, re.S), exc, times))

    def rowcount(self, pattern: str, count: int) -> None:
        """Report ``count`` as the rowcount of DML matching ``pattern``."""
        self.rowcounts.insert(0, (re.compile(pattern, re.S), count))

    # -- driver API -----------------------------------------------------------------

    def cursor(self) -> FakeCursor:
        return FakeCursor(self)

    def commit(self) -> None:
        self.calls.append(Call("commit"))
        for table, ids in self.pending_ids.items():
            self.committed_ids.setdefault(table, {}).update(ids)
        self.pending_ids = {}

    def rollback(self) -> None:
        self.calls.append(Call("rollback"))
        self.pending_ids = {}

    def close(self) -> None:
        self.calls.append(Call("close"))

    # -- views ----------------------------------------------------------------------

    def statements(self, kind: str | None = None) -> list[Call]:
        """Recorded execute/executemany calls (optionally of one kind)."""
        kinds = {kind} if kind else {"execute", "executemany"}
        return [c for c in self.calls if c.kind in kinds]

    def sql(self) -> list[str]:
        """SQL text of every recorded statement, in order."""
        return [c.sql for c in self.statements()]

    def kinds(self) -> list[str]:
        """Kinds of all recorded calls except setinputsizes, in order."""
        return [c.kind for c in self.calls if c.kind != "setinputsizes"]

    def reset(self) -> None:
        self.calls.clear()

    # -- internals ------------------------------------------------------------------

    def _check_fail(self, sql: str) -> None:
        for i, (pat, exc, times) in enumerate(self.failures):
            if pat.search(sql):
                if times <= 1:
                    del self.failures[i]
                else:
                    self.failures[i] = (pat, exc, times - 1)
                raise exc

    def _ids(self, table: str) -> dict[str, int]:
        return {**self.committed_ids.get(table, {}), **self.pending_ids.get(table, {})}

    def answer(self, sql: str, binds: dict[str, Any]) -> Rows:
        for pat, ans in self.rules:
            if pat.search(sql):
                return ans(sql, binds) if callable(ans) else list(ans)
        m = re.match(r"SELECT id, pk FROM (\w+) WHERE id IN", sql)
        if m:
            known = self._ids(m.group(1))
            return [(v, known[v]) for k, v in binds.items() if k.startswith("i") and v in known]
        return []

    def record_insert(self, sql: str, rows: list[dict[str, Any]]) -> None:
        m = re.match(r"INSERT INTO (\w+) \(id,", sql)
        if m:
            pending = self.pending_ids.setdefault(m.group(1), {})
            for row in rows:
                pending[row["id"]] = self.next_pk
                self.next_pk += 1


class FakeCursor:
    """Cursor of a ``FakeConnection``."""

    def __init__(self, conn: FakeConnection) -> None:
        self.conn = conn
        self.outputtypehandler: Any = None
        self.rowcount = 0
        self._rows: Rows = []

    def setinputsizes(self, **sizes: Any) -> None:
        self.conn.calls.append(Call("setinputsizes", sizes=dict(sizes)))

    def _rowcount(self, sql: str, default: int) -> int:
        for pat, n in self.conn.rowcounts:
            if pat.search(sql):
                return n
        return default

    def execute(self, sql: str, binds: dict[str, Any] | None = None) -> None:
        binds = dict(binds or {})
        self.conn.calls.append(Call("execute", sql, binds))
        self.conn._check_fail(sql)
        self._rows = self.conn.answer(sql, binds)
        self.rowcount = self._rowcount(sql, len(self._rows))

    def executemany(self, sql: str, rows: list[dict[str, Any]]) -> None:
        self.conn.calls.append(Call("executemany", sql, list(rows)))
        self.conn._check_fail(sql)
        self.conn.record_insert(sql, rows)
        self.rowcount = len(rows)

    def fetchall(self) -> Rows:
        rows, self._rows = self._rows, []
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows.pop(0) if self._rows else None


class FakePool:
    """A pool lending one ``FakeConnection`` (records acquire/release on it)."""

    __module__ = "oracledb.pool"

    def __init__(self, conn: FakeConnection | None = None) -> None:
        self.conn = conn or FakeConnection()
        self.acquired = 0
        self.released = 0
        self.acquire_error: BaseException | None = None
        """Raised by the next ``acquire`` (then cleared), e.g. a pool timeout."""

    def acquire(self) -> FakeConnection:
        if self.acquire_error is not None:
            exc, self.acquire_error = self.acquire_error, None
            raise exc
        self.acquired += 1
        return self.conn

    def release(self, conn: FakeConnection) -> None:
        assert conn is self.conn
        self.released += 1
