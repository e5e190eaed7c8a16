"""The ``oam export``, ``oam import``, ``oam copy`` and ``oam backup`` commands,
registered by ``oam_core/cli.py`` (docs/cli.md#moving-memory-between-stores,
docs/transfer.md). Each shows a progress bar on stderr and prints a one-line
summary."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, BinaryIO, Literal

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from oam_core.clicommon import CliError, db_target, embedder_for, memory_at, user_errors
from oam_core.connection import MEMORY, backend_of, sqlite_target
from oam_core.errors import InvalidArgumentError
from oam_core.transfer import (
    TransferSummary,
    backup_sqlite,
    copy_store,
    export_store,
    import_mem0,
    import_store,
)

__all__ = ["backup_cmd", "copy_cmd", "export_cmd", "import_cmd", "register"]


class Conflict(str, Enum):
    """``--on-conflict`` values."""

    ERROR = "error"
    SKIP = "skip"
    REPLACE = "replace"


OnConflict = Literal["error", "skip", "replace"]
"""The ``on_conflict`` argument of ``import_store``, ``copy_store`` and ``import_mem0``."""

ON_CONFLICT: dict[Conflict, OnConflict] = {
    Conflict.ERROR: "error",
    Conflict.SKIP: "skip",
    Conflict.REPLACE: "replace",
}
"""``--on-conflict`` as the library's ``on_conflict``."""


class Source(str, Enum):
    """``--from`` values."""

    oam = "oam"
    mem0 = "mem0"


DbOption = Annotated[
    str,
    typer.Option(
        "--db",
        help="SQLite database file (~ is expanded) or a postgresql:// or oracle:// URL.",
    ),
]
EmbedderOption = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        help="The target's embedder ('local', 'hashing/<dim>', a LiteLLM model id): used "
        "by --reembed and --from mem0. Default: the one the target recorded, else "
        "'local'. Without them no model is loaded: the vectors are copied.",
    ),
]
UserOption = Annotated[
    list[str] | None,
    typer.Option(
        "--user",
        help="Only this user's threads, messages, memories and profile (repeat for several users).",
    ),
]
ConflictOption = Annotated[
    Conflict,
    typer.Option(
        "--on-conflict",
        case_sensitive=False,
        help="An id the target already holds: error (stop before anything is "
        "written), skip (keep the target's row; completes an interrupted import), "
        "replace.",
    ),
]
ReembedOption = Annotated[
    bool,
    typer.Option(
        "--reembed",
        help="Embed the text again with the target's embedder (--embedder) instead of "
        "copying the vectors; needed when the source used another embedder.",
    ),
]
CreateOption = Annotated[
    bool,
    typer.Option("--create", help="Create the target store if it does not exist."),
]


_CREATE = "pass --create to create it"
"""What a missing SQLite target of ``oam import`` or ``oam copy`` suggests."""

_READ = "give the file of an existing store"
"""What a missing SQLite store to read (``oam export``, ``oam copy``'s source) says."""


@contextmanager
def _bar(verb: str) -> Iterator[Callable[[int, int], None]]:
    """A transient progress bar on stderr when it is a terminal; yields the
    ``progress`` callback (without a terminal a callback that does nothing, so
    nothing, not even an empty line, is written to stderr)."""
    console = Console(stderr=True)
    if not console.is_terminal:
        yield lambda done, total: None
        return
    columns = (TextColumn(verb), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(verb, total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=max(total, done))

        yield advance


TRANSFER_FLAGS = frozenset({"on_conflict", "reembed"})
"""The library arguments ``oam import`` and ``oam copy`` set with flags
(``clicommon.cli_words``): a dump field such as ``valid_from`` is never shown as a flag."""
FILE_FLAGS = frozenset({"overwrite"})
"""The same for ``oam export`` and ``oam backup``."""


def _done(verb: str, summary: TransferSummary, where: str) -> None:
    typer.echo(f"{verb} {where}: {summary.line()}")


def _target_embedder(db: str, given: str | None, needs: bool) -> str:
    """``--embedder`` for a target: as given; else the recorded one when the
    command embeds (``needs``), else 'none' (vectors are copied, no model loaded)."""
    if given is not None:
        return given
    return embedder_for(db, None) if needs else "none"


def _same_store(src: str, dst: str) -> bool:
    """Whether two ``--db`` values name one store: the same SQLite file, or the same
    URL."""
    if src == dst:
        return True
    try:
        if backend_of(src) != "sqlite" or backend_of(dst) != "sqlite":
            return False
        a, b = sqlite_target(src), sqlite_target(dst)
    except ValueError:
        return False  # the command's own opening reports it
    return MEMORY not in (a, b) and Path(a).resolve() == Path(b).resolve()


def _new_file(db: str, create: bool) -> Path | None:
    """The SQLite file ``--create`` is about to create (None: not a new SQLite file)."""
    if not create or backend_of(db) != "sqlite":
        return None
    target = sqlite_target(db_target(db))
    if target == MEMORY or target.startswith("file:"):
        return None
    path = Path(target).expanduser()
    return None if path.exists() else path


def _drop_if_empty(path: Path) -> None:
    """Remove the store file a failed command created (with its ``-wal``, ``-shm``
    and vector index files) when it holds no row, so the target is as it was; a
    file holding committed batches stays (a re-run with ``--on-conflict skip``
    completes it)."""
    from oam_core import SQLiteMemoryStore

    if not path.is_file():
        return
    try:
        with SQLiteMemoryStore(str(path)) as store:
            empty = not any(store.dump_counts().values())
    except Exception:  # not a store this can read: leave it
        return
    if empty:
        for extra in (path, *path.parent.glob(f"{path.name}*.oamvec")):
            extra.unlink(missing_ok=True)
        for suffix in ("-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)


def export_cmd(
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            help="The dump to write: .jsonl, or .jsonl.gz compressed; '-' writes to stdout.",
        ),
    ],
    db: DbOption = "oam.db",
    user: UserOption = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace FILE if it exists.")
    ] = False,
) -> None:
    """Write a store's whole content (or some users') to an oam dump file."""
    if str(file) != "-" and file.is_dir():
        with user_errors():
            raise InvalidArgumentError(f"FILE: {str(file)!r} is a directory; give a file name")
    if str(file) != "-" and file.exists() and not overwrite:
        with user_errors():
            raise InvalidArgumentError(
                f"FILE: {str(file)!r} exists; pass --overwrite to replace it "
                "(the store to read is --db)"
            )
    with (
        user_errors(FILE_FLAGS),
        memory_at(db, "none", missing=_READ) as memory,
        _bar("Exporting") as advance,
    ):
        if str(file) == "-":
            out = typer.get_binary_stream("stdout")
            summary = export_store(memory.store, out, user_ids=user, progress=advance)
        else:
            summary = export_store(memory.store, file, user_ids=user, progress=advance)
    if str(file) != "-":
        _done("Exported", summary, f"{db} -> {file}")


def import_cmd(
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            help="An oam dump (.jsonl or .jsonl.gz), or "
            "with --from mem0 the JSON of mem0's get_all(); - reads standard input.",
        ),
    ],
    db: DbOption = "oam.db",
    on_conflict: ConflictOption = Conflict.ERROR,
    reembed: ReembedOption = False,
    create: CreateOption = False,
    embedder: EmbedderOption = None,
    from_: Annotated[
        Source,
        typer.Option(
            "--from",
            case_sensitive=False,
            help="The file's kind: oam (a dump) or mem0 (embedded with --embedder).",
        ),
    ] = Source.oam,
) -> None:
    """Read an oam dump (or mem0 memories) into a store, batch by batch."""
    conflict = ON_CONFLICT[on_conflict]
    mem0 = from_ is Source.mem0
    with user_errors(TRANSFER_FLAGS):
        # "-": standard input, as `oam export -` writes standard output (a pipe is
        # spooled to a temporary file: the dump is read twice).
        source: Path | BinaryIO = sys.stdin.buffer if str(file) == "-" else file
        if isinstance(source, Path) and source.is_dir():
            raise CliError(f"FILE: {str(file)!r} is a directory, not a file")
        if isinstance(source, Path) and not source.is_file():
            raise CliError(f"FILE: no such file {str(file)!r}", 2)
        name = _target_embedder(db, embedder, reembed or mem0)
        fresh = _new_file(db, create)
        try:
            with (
                memory_at(db, name, create=create, missing=_CREATE) as memory,
                _bar("Importing") as advance,
            ):
                if mem0:
                    summary = import_mem0(
                        memory.store, source, on_conflict=conflict, progress=advance
                    )
                else:
                    summary = import_store(
                        memory.store,
                        source,
                        on_conflict=conflict,
                        reembed=reembed,
                        progress=advance,
                    )
        except BaseException:
            if fresh is not None:
                _drop_if_empty(fresh)
            raise
    _done("Imported", summary, f"{file} -> {db}")


def copy_cmd(
    src: Annotated[
        str, typer.Argument(metavar="SRC", help="The source store: a SQLite file or URL.")
    ],
    dst: Annotated[
        str, typer.Argument(metavar="DST", help="The target store: a SQLite file or URL.")
    ],
    user: UserOption = None,
    on_conflict: ConflictOption = Conflict.ERROR,
    reembed: ReembedOption = False,
    create: CreateOption = False,
    embedder: EmbedderOption = None,
) -> None:
    """Copy one store into another (SQLite, PostgreSQL, Oracle) without a file."""
    with user_errors(TRANSFER_FLAGS):
        if _same_store(src, dst):
            raise InvalidArgumentError(f"DST: {dst!r} is the source store {src!r}")
        name = _target_embedder(dst, embedder, reembed)
        fresh = _new_file(dst, create)
        try:
            with (
                memory_at(src, "none", missing=_READ) as source,
                memory_at(dst, name, create=create, missing=_CREATE) as target,
                _bar("Copying") as advance,
            ):
                summary = copy_store(
                    source.store,
                    target.store,
                    user_ids=user,
                    on_conflict=ON_CONFLICT[on_conflict],
                    reembed=reembed,
                    progress=advance,
                )
        except BaseException:
            if fresh is not None:
                _drop_if_empty(fresh)
            raise
    _done("Copied", summary, f"{src} -> {dst}")


def backup_cmd(
    dest: Annotated[Path, typer.Argument(metavar="DEST", help="The backup file to write.")],
    db: DbOption = "oam.db",
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace DEST if it exists.")
    ] = False,
) -> None:
    """A consistent copy of a live SQLite store (SQLite's online backup) while other
    processes write, with its vector index file."""
    with user_errors(FILE_FLAGS):
        if backend_of(db) != "sqlite":
            raise CliError(
                "--db: backup works on SQLite store files only; copy a PostgreSQL or "
                "Oracle store with `oam copy` or `oam export`"
            )
        source = db_target(db)
        if source != MEMORY and not Path(sqlite_target(source)).expanduser().exists():
            raise CliError(f"--db: no such database file {db!r}", 2)
        summary = backup_sqlite(source, dest, overwrite=overwrite)
    typer.echo(f"Backed up {db} -> {summary.line()}")


def register(app: typer.Typer) -> None:
    """Add the transfer commands to ``app`` (``cli.COMMAND_MODULES``)."""
    app.command("export")(export_cmd)
    app.command("import")(import_cmd)
    app.command("copy")(copy_cmd)
    app.command("backup")(backup_cmd)
