"""How python-oracledb's exceptions map onto ``oam_core.errors`` (docs/errors.md).

The session (``session.py``) maps every exception that leaves a connection it lent
or a unit of work, by the error's full code (``ORA-nnnnn`` from the database,
``DPY-nnnn`` from the driver):

- cannot connect or the connection was lost (``DPY-6xxx``, listener and network
  errors ``ORA-12xxx``, ``ORA-01017`` bad credentials, ``ORA-01033``/``ORA-01034``
  database not open, ``ORA-03113``/``ORA-03114``/``ORA-03135`` connection lost,
  ``DPY-1001``/``DPY-4011`` not connected) -> ``StoreConnectionError``;
- a lock or pool wait that timed out (``ORA-00054`` resource busy, ``ORA-30006``
  wait timeout, ``ORA-04021`` lock wait on an object, ``ORA-00060`` deadlock,
  ``DPY-4005`` no pooled connection free in time) -> ``DatabaseLockedError``;
- any other ``oracledb`` error -> ``StoreError``.
"""

from __future__ import annotations

from oam_core.errors import (
    DatabaseLockedError,
    OAMError,
    StoreClosedError,
    StoreConnectionError,
    StoreError,
)

_CONNECTION_CODES = frozenset(
    {
        "ORA-01017",
        "ORA-01033",
        "ORA-01034",
        "ORA-03113",
        "ORA-03114",
        "ORA-03135",
        "DPY-1001",
        "DPY-4011",
    }
)
_POOL_CLOSED = "DPY-1002"
"""python-oracledb's "connection pool is not open": the store (its pool) was closed."""
_LOCK_CODES = frozenset({"ORA-00054", "ORA-00060", "ORA-04021", "ORA-30006", "DPY-4005"})


def full_code(exc: BaseException) -> str:
    """The error's full code (``ORA-00054``, ``DPY-4005``), or ``""``."""
    err = exc.args[0] if exc.args else None
    text = getattr(err, "full_code", "")
    if isinstance(text, str) and text:
        return text
    code = getattr(err, "code", None)
    return f"ORA-{code:05d}" if isinstance(code, int) and code > 0 else ""


def driver_exception(exc: BaseException) -> BaseException:
    """``exc``, or the driver exception an ``OAMError`` was mapped from."""
    if isinstance(exc, OAMError) and exc.__cause__ is not None:
        return exc.__cause__
    return exc


def is_oracledb_error(exc: BaseException) -> bool:
    """Whether ``exc`` is one of python-oracledb's exceptions (told by its module, so
    the driver need not be imported)."""
    return type(exc).__module__.split(".", 1)[0] == "oracledb"


def map_error(exc: BaseException, where: str) -> Exception | None:
    """The ``oam_core.errors`` exception for an ``oracledb`` exception (None for
    others).

    Args:
        exc: The exception raised by python-oracledb.
        where: Names the database in the message.
    """
    if not is_oracledb_error(exc):
        return None
    code = full_code(exc)
    text = " ".join(str(exc).split())
    if code == _POOL_CLOSED:
        return StoreClosedError(f"the store on {where} was closed; open it again ({text})")
    if code in _LOCK_CODES:
        return DatabaseLockedError(
            f"{where}: a lock or a pooled connection was not had in time ({text}); retry, "
            "or find the session that holds it"
        )
    if code in _CONNECTION_CODES or code.startswith(("DPY-6", "ORA-12")):
        return StoreConnectionError(f"cannot connect to {where}: {text}")
    return StoreError(f"Oracle Database error on {where}: {text}")
