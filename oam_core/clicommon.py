"""What every ``oam`` command shares (docs/cli.md): errors and warnings as one line
each, library argument names spelled as the command line's flags, and ``--db`` opened
the way ``OracleAgentMemory(connection=...)`` opens it.

The commands of ``oam_core/cli.py``, ``oam_core/transfer/cli.py``,
``oam_core/memorycli.py`` and ``oam_core/service/commands.py`` use these helpers; they reach the library only
through its public names (``oam_core``, ``oam_core.connection``,
``oam_core.embedders``).
"""

from __future__ import annotations

import logging
import os
import re
import warnings
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import typer

from oam_core import NOT_SET, OracleAgentMemory, SchemaPolicy, SearchStrategy
from oam_core.connection import backend_of, sqlite_holds_store, sqlite_target
from oam_core.embedders import resolve_embedder, resolves_recorded_id
from oam_core.errors import OAMError, SchemaError, StoreConnectionError, StoreError
from oam_core.ingest import IngestError
from oam_core.service.common import checked_strategy

__all__ = [
    "DEFAULT_EMBEDDER",
    "FLAGS",
    "PHRASES",
    "CliError",
    "cli_words",
    "db_target",
    "debugging",
    "embedder_for",
    "memory_at",
    "quiet_litellm",
    "require_db",
    "set_debug",
    "user_errors",
]

DEFAULT_EMBEDDER = "local"
"""The embedder of a new database when ``--embedder`` is not given."""


class CliError(OAMError):
    """A user-facing failure: printed as one line, then exit with ``code``
    (docs/errors.md)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


_debug = False
"""Set by the global ``--debug`` flag: unexpected exceptions are re-raised."""


def set_debug(on: bool) -> None:
    """Record the global ``--debug`` flag (``oam --debug ...``)."""
    global _debug
    _debug = on


def debugging() -> bool:
    """Whether ``--debug`` or ``OAM_DEBUG=1`` asks for tracebacks and library logs."""
    return _debug or os.environ.get("OAM_DEBUG", "").strip().lower() in {"1", "true", "yes"}


# -- library words as flags -----------------------------------------------------------

FLAGS: dict[str, str] = {
    "allow_embedder_change": "--allow-embedder-change",
    "schema_policy": "--schema-policy",
    "search_strategy": "--strategy",
    "on_conflict": "--on-conflict",
    "reembed": "--reembed",
    "overwrite": "--overwrite",
    "valid_from": "--valid-from",
    "valid_until": "--valid-until",
    "reason": "--reason",
}
"""The library's argument names and the flags that set them. A message naming an
argument with a value, ``name=VALUE``, is shown as ``--flag value``: ``True`` as the
flag alone, an enum member (``CREATE_IF_NECESSARY``, ``SchemaPolicy.RECREATE``) by its
lower-case name, a quoted string without its quotes; alternatives (``'skip' or
'replace'``, ``HYBRID, KEYWORD``) follow the first value."""

PHRASES: dict[str, str] = {
    "overwrite=True (CLI: --overwrite)": "--overwrite",
    "store.reindex() (CLI: oam reindex)": "`oam reindex`",
    "configure one, pass query_vector, or": "pass --embedder (e.g. local), or",
    "(embedder=None): configure one, or": "(--embedder none): pass --embedder (e.g. local), or",
    "valid_from must be": "--valid-from must be",
    "valid_until must be": "--valid-until must be",
}
"""Library phrases with no argument of their own, and what the command line says
instead (replaced before ``FLAGS`` is applied)."""

_SEPARATORS = (" or ", ", ")
"""What joins alternative values (``'skip' or 'replace'``)."""


def cli_words(message: str, own: Collection[str] | None = None) -> str:
    """``message`` (a library error or warning) with the library's argument names
    spelled as this command line's flags (``PHRASES``, then ``FLAGS``).

    Args:
        message: The library's text.
        own: The library argument names (keys of ``FLAGS``) the command sets with a
            flag of its own; only those are rewritten (a phrase naming another one is
            left as it is), so a field of a file the command reads (a dump's
            ``valid_from``) is never shown as a flag the command does not have.
            None: every one of ``FLAGS``.
    """
    names = FLAGS if own is None else {k: v for k, v in FLAGS.items() if k in own}
    others = [k for k in FLAGS if k not in names]
    for library, cli in PHRASES.items():
        if not any(k in library for k in others):
            message = message.replace(library, cli)
    for name, flag in names.items():
        message = _spell(message, name, flag)
    return message


def _spell(message: str, name: str, flag: str) -> str:
    """Every ``name=VALUE[ or VALUE...]`` of ``message`` as ``flag value[ or value]``."""
    out: list[str] = []
    rest = message
    while (at := rest.find(name + "=")) >= 0:
        if at > 0 and (rest[at - 1].isalnum() or rest[at - 1] == "_"):
            out.append(rest[: at + len(name)])  # part of a longer name
            rest = rest[at + len(name) :]
            continue
        out.append(rest[:at])
        rest = rest[at + len(name) + 1 :]
        first, rest = _value(rest)
        values = [] if first is None or first == "True" else [first]
        while values and (joined := _alternative(rest)) is not None:
            separator, value, rest = joined
            values.append(separator + value)
        if values:
            out.append(" ".join([flag, "".join(values)]))
        else:  # a value the flag spells as it is (a time): keep it apart from the flag
            out.append(flag + " " if first is None and rest[:1].strip() else flag)
    return "".join(out) + rest


def _value(text: str) -> tuple[str | None, str]:
    """The value at the start of ``text`` as the command line writes it, and the text
    after it; None when there is none (``name=`` followed by anything else)."""
    if text.startswith("'"):
        end = text.find("'", 1)
        if end > 1:
            return text[1:end], text[end + 1 :]
        return None, text
    end = 0
    while end < len(text) and (text[end].isalnum() or text[end] in "_."):
        end += 1
    word = text[:end].rstrip(".")
    if not word:
        return None, text
    if word == "True":
        return word, text[len(word) :]
    member = word.rpartition(".")[2]
    if member.isupper():
        return member.lower(), text[len(word) :]
    return None, text


def _alternative(text: str) -> tuple[str, str, str] | None:
    """``(separator, value, rest)`` when ``text`` starts with another value joined by
    one of ``_SEPARATORS``, else None."""
    for separator in _SEPARATORS:
        if text.startswith(separator):
            value, rest = _value(text[len(separator) :])
            if value is not None and value != "True":
                return separator, value, rest
    return None


# -- errors and warnings --------------------------------------------------------------


@contextmanager
def user_errors(own: Collection[str] | None = None) -> Iterator[None]:
    """Turn every error into one stderr line and an exit code (never a traceback), and
    every warning into one ``Warning:`` line (docs/cli.md#commands); ``own``: the
    library argument names the command has flags for (``cli_words``; None: all).

    Exit codes: a ``CliError`` its own; 141 (128 + SIGPIPE, what a shell shows for
    a Unix tool a pipe's reader left) and no message when stdout's reader is gone;
    1 for anything else. With ``--debug`` an unexpected exception (not one a user can
    cause) is re-raised with its traceback.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except CliError as exc:
            _fail(str(exc), exc.code, caught, own)
        except IngestError as exc:
            _fail(str(exc), 1, caught, own)
        except KeyError as exc:
            _fail(str(exc.args[0]) if exc.args else "not found", 1, caught, own)
        except BrokenPipeError:  # the reader of stdout left (`oam export - | head`)
            _stdout_gone()
        except StoreError as exc:  # driver errors, mapped by the store (docs/errors.md)
            _fail(cli_words(str(exc), own), _store_error_code(exc), caught, own)
        except (ValueError, ImportError, OSError) as exc:
            message = cli_words(str(exc), own)
            if "has no oam store" in message:
                message += "; or create it with `oam ingest FILE --db ...`"
            _fail(message, exit_code_of(exc), caught, own)
        except Exception as exc:
            if debugging():
                raise
            _fail(f"{type(exc).__name__}: {exc}", 1, caught, own)
        _print_warnings(caught, own)


# PostgreSQL refuses a connection to a missing database with FATAL 3D000, which
# reaches the client as message text only (no SQLSTATE on a failed connect).
_MISSING_DATABASE = re.compile(r'database "[^"]*" does not exist')


def _store_error_code(exc: StoreError) -> int:
    """2 for a server database that does not exist (as for a missing SQLite file,
    docs/cli.md#commands), 1 for any other store failure."""
    if isinstance(exc, StoreConnectionError) and _MISSING_DATABASE.search(str(exc)):
        return 2
    return 1


def exit_code_of(exc: Exception) -> int:
    """The exit code of a command stopped by ``exc`` before it ran (docs/cli.md#commands):
    2 for a database that does not exist or holds no oam store (a missing SQLite
    file, as ``service.common`` reports it, a PostgreSQL database the server lacks
    or one without the store's tables), 1 otherwise."""
    if isinstance(exc, StoreError):
        return _store_error_code(exc)
    if isinstance(exc, SchemaError) and (
        ": no such database;" in str(exc) or "has no oam store" in str(exc)
    ):
        return 2  # a server database without a store, as a SQLite file without one
    return 1


def _print_warnings(
    caught: Sequence[warnings.WarningMessage], own: Collection[str] | None = None
) -> None:
    seen: set[str] = set()
    for item in caught:
        text = cli_words(" ".join(str(item.message).split()), own)
        if text not in seen:
            seen.add(text)
            typer.echo(f"Warning: {text}", err=True)


def _stdout_gone() -> NoReturn:
    """Stop quietly when stdout's reader has left (``| head``), as Unix tools do:
    stdout now points at the null device, so the flush at exit cannot fail again."""
    import sys

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (a test runner's): nothing to flush
        pass
    raise typer.Exit(141)


def _fail(
    message: str,
    code: int,
    caught: Sequence[warnings.WarningMessage] = (),
    own: Collection[str] | None = None,
) -> NoReturn:
    _print_warnings(caught, own)
    typer.echo("Error: " + (" ".join(message.split()) or "unknown error"), err=True)
    raise typer.Exit(code)


# -- opening the database -------------------------------------------------------------


def db_target(db: str) -> str:
    """The connection for ``--db``: a URL as given, or a SQLite path with ``~``
    expanded whose directory exists.

    Raises:
        CliError: naming the directory when it does not exist (exit code 2).
    """
    if backend_of(db) != "sqlite":
        return db
    path = sqlite_target(db)
    if path == ":memory:":
        return path
    expanded = Path(os.path.expanduser(path))
    if not expanded.parent.is_dir():
        raise CliError(f"--db {db}: the directory {expanded.parent} does not exist", 2)
    return str(expanded)


def require_db(db: str, policy: SchemaPolicy | None = None, hint: str | None = None) -> None:
    """A SQLite ``--db`` must exist, and hold a store, for the commands that only read
    (unless ``--schema-policy`` lets them create it): an empty file or another
    program's database is left as it is, not made a store (a server refuses a
    missing store on its own).

    Args:
        db, policy: The ``--db`` value and ``--schema-policy``.
        hint: What the error suggests after the missing database (None: create it
            with ``oam ingest``; a command with ``--create`` names that flag).

    Raises:
        CliError: naming ``db`` and how to create the store (exit code 2).
    """
    if policy not in (None, SchemaPolicy.REQUIRE_EXISTING):
        return
    target = db_target(db)
    if backend_of(target) != "sqlite" or target == ":memory:":
        return
    if hint is None:
        hint = f"create it with `oam ingest FILE --db {db}`"
    if not Path(target).exists():
        raise CliError(f"{db}: no such database; {hint}", 2)
    if not sqlite_holds_store(target):
        raise CliError(f"{db}: no oam store there; {hint}", 2)


def _peek(db: str) -> tuple[bool, str | None]:
    """Whether ``db`` holds an oam store, and the id of the embedder it recorded
    (opened read-only in spirit: a peek never creates anything)."""
    target = db_target(db)
    if backend_of(target) == "sqlite" and (
        target == ":memory:" or not Path(target).exists() or not sqlite_holds_store(target)
    ):
        return False, None
    try:
        peek = OracleAgentMemory(
            connection=target,
            embedder=None,
            extract_memories=False,
            schema_policy=SchemaPolicy.REQUIRE_EXISTING,
        )
    except SchemaError:
        return False, None  # no store there yet
    with peek:
        identity = peek.store.embedder_identity
        return True, None if identity is None else identity.embedder_id


def _embedder_name(given: str | None, recorded: str | None, db: str) -> str:
    """``--embedder`` as given, else the one the database recorded, else the default."""
    if given is not None:
        return given
    if recorded is None:
        return DEFAULT_EMBEDDER
    if resolves_recorded_id(recorded):
        return recorded
    raise CliError(
        f"{db} was written with embedder {recorded!r}, which the CLI cannot load; pass "
        "--embedder (docs/cli.md#embedders)"
    )


def embedder_for(db: str, given: str | None) -> str:
    """The embedder a command uses on ``db``: ``given`` (``--embedder``), else the one
    the database recorded, else ``DEFAULT_EMBEDDER`` (docs/cli.md#embedders).

    Raises:
        CliError: when the recorded embedder is one the CLI cannot load (an Oracle
            in-database model, a LangChain class).
    """
    if given is not None:
        return given
    _exists, recorded = _peek(db)
    return _embedder_name(None, recorded, db)


@contextmanager
def memory_at(
    db: str,
    embedder: str | None,
    strategy: SearchStrategy | None = None,
    policy: SchemaPolicy | None = None,
    allow_embedder_change: bool = False,
    *,
    create: bool = False,
    missing: str | None = None,
) -> Iterator[OracleAgentMemory]:
    """The client over ``db``, opened as ``OracleAgentMemory(connection=...)`` opens it
    (``create``: the default policy creates the store, else a missing SQLite file
    is an error unless ``policy`` may create it, suggesting ``missing``: see
    ``require_db``'s ``hint``); closed when the block ends.

    ``strategy`` ranks this command's searches and is not recorded: the store keeps
    its default, except a store this command creates, whose default it becomes
    (docs/cli.md#commands). VECTOR or HYBRID without an embedder is refused
    before the store is opened or created (``service.common.checked_strategy``).

    Raises:
        CliError: for a missing database or one written with an embedder the CLI
            cannot load; the library's errors pass through (``user_errors`` prints
            them).
        ConfigurationError: for ``strategy`` VECTOR or HYBRID and no embedder.
    """
    if not create:
        require_db(db, policy, missing)
    chosen = policy or (
        SchemaPolicy.CREATE_IF_NECESSARY if create else SchemaPolicy.REQUIRE_EXISTING
    )
    exists, recorded = _peek(db) if embedder is None or strategy is not None else (True, None)
    name = _embedder_name(embedder, recorded, db)
    with quiet_litellm(name):
        model = resolve_embedder(name)
        # Before the store is opened: a refused --strategy creates or writes nothing.
        checked_strategy(strategy, has_embedder=model is not None)
        exists = exists and chosen is not SchemaPolicy.RECREATE
        new_default = strategy if strategy is not None and not exists else None
        memory = OracleAgentMemory(
            connection=db_target(db),
            embedder=model,
            extract_memories=False,
            schema_policy=chosen,
            search_strategy=NOT_SET if new_default is None else new_default,
            allow_embedder_change=allow_embedder_change,
        )
        try:
            with memory.store.searching_with(None if new_default is not None else strategy):
                yield memory
        finally:
            memory.close()


_NOISY_LOGGERS = ("LiteLLM", "LiteLLM Proxy", "LiteLLM Router", "oam", "httpx")


@contextmanager
def quiet_litellm(embedder: str) -> Iterator[None]:
    """Keep LiteLLM's and httpx's retry logs off the terminal while the block runs:
    the CLI reports a failure as one ``Error:`` line. The loggers' levels are put
    back when it ends, so a command run in-process (``CliRunner``, a notebook)
    leaves logging as it found it."""
    name = embedder.strip()
    if name in ("local", "none") or name.startswith(("local/", "hashing")) or debugging():
        yield
        return
    loggers = [logging.getLogger(n) for n in _NOISY_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)
