"""The ``oam`` command line: ingest conversations, search them, show context cards.

A thin layer over the library: files are read by :mod:`oam_core.ingest`, everything
else goes through ``OracleAgentMemory`` and the store. Every command works on one
SQLite file or PostgreSQL database (``--db``: a path, default ``./oam.db``, or a
``postgresql://`` URL; PostgreSQL needs the ``postgres`` extra) and runs without an LLM
(``extract_memories=False``), so only messages are stored and searched.

Errors a user can cause (a missing or malformed file, an unknown thread, a database
opened with another embedder dimension) print one ``Error: ...`` line on stderr and
exit with code 1 (2 for a file or option that does not exist); they never print a
traceback. Any other exception is reported the same way (its type and message on one
line, exit code 1) unless ``--debug`` or ``OAM_DEBUG=1`` asks for the traceback.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata, resources
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

import oam_core
from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.records import Record
from oam_core.apis.thread import to_message
from oam_core.embedders import resolve_embedder
from oam_core.ingest import Conversation, IngestError, load_conversations
from oam_core.memory.client import OracleAgentMemory
from oam_core.store.base import OracleMemoryStore
from oam_core.store.connect import backend_of, sqlite_target
from oam_core.store.options import SchemaPolicy, SearchStrategy
from oam_core.store.planning import dump_metadata
from oam_core.store.sqlite import SQLiteMemoryStore

__all__ = ["app", "main"]

try:  # PostgreSQL errors read as database errors when the postgres extra is installed
    from psycopg import Error as _PgError

    _DB_ERRORS: tuple[type[BaseException], ...] = (_PgError,)
except ImportError:  # pragma: no cover - without the extra
    _DB_ERRORS = ()

DEMO_FILE = "demo_conversation.jsonl"
DEMO_THREAD = "demo-trip-planning"
DEMO_USER = "demo-user"
DEMO_AGENT = "demo-assistant"
DEMO_QUESTIONS = (
    "What is the user's dog called?",
    "Which city is the user flying to in March?",
    "What food can't the user eat?",
    "What is the user's job?",
)
_BATCH = 64
"""Messages per ``add_messages`` call while ingesting (one transaction each)."""

app = typer.Typer(
    name="oam",
    help="Agent memory in a SQLite file or PostgreSQL: ingest chats, search them, build context cards.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DbOption = Annotated[
    str,
    typer.Option(
        "--db",
        help="SQLite database file (created if missing) or a postgresql:// URL "
        "(the store is created there by ingest and demo).",
    ),
]
EmbedderOption = Annotated[
    str,
    typer.Option(
        "--embedder",
        help="'local' (offline all-MiniLM-L6-v2), 'hashing' or 'hashing/<dim>' (no "
        "model, word overlap only), or a LiteLLM model id. Use the same one for "
        "every command on a database.",
    ),
]
StrategyOption = Annotated[
    SearchStrategy | None,
    typer.Option(
        "--strategy",
        case_sensitive=False,
        help="How search ranks results. Default: a PostgreSQL store's own strategy; "
        "hybrid for SQLite and for new stores.",
    ),
]


class CliError(Exception):
    """A user-facing failure: printed as one line, then exit with ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


_debug = False
"""Set by the global ``--debug`` flag: unexpected exceptions are re-raised."""

_DIMENSION_HINT = (
    "; pass the --embedder the database was ingested with "
    "(e.g. --embedder hashing/64 for a 64-dimension database)"
)


def main() -> None:
    """Entry point of the ``oam`` console script."""
    app()


def _version() -> str:
    try:
        return metadata.version("oam")
    except metadata.PackageNotFoundError:
        return oam_core.__version__


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"oam {_version()}")
        raise typer.Exit()


@app.callback()
def _global_options(
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Show the traceback of unexpected errors (or OAM_DEBUG=1)."),
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the oam version and exit.",
        ),
    ] = False,
) -> None:
    """Agent memory in a SQLite file or PostgreSQL: ingest chats, search them, build context cards."""
    global _debug
    del version
    _debug = debug


def _debugging() -> bool:
    return _debug or os.environ.get("OAM_DEBUG", "").strip().lower() in {"1", "true", "yes"}


@contextmanager
def _user_errors() -> Iterator[None]:
    """Turn every error into one stderr line and an exit code (never a traceback)."""
    try:
        yield
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except CliError as exc:
        _fail(str(exc), exc.code)
    except IngestError as exc:
        _fail(str(exc), 1)
    except KeyError as exc:
        _fail(str(exc.args[0]) if exc.args else "not found", 1)
    except (ValueError, ImportError, OSError) as exc:
        message = str(exc)
        if "stores vectors of dimension" in message:
            message += _DIMENSION_HINT
        _fail(message, 1)
    except sqlite3.Error as exc:
        _fail(f"database error: {exc}", 1)
    except _DB_ERRORS as exc:
        _fail(f"database error: {exc}", 1)
    except Exception as exc:
        if _debugging():
            raise
        _fail(f"{type(exc).__name__}: {exc}", 1)


def _fail(message: str, code: int) -> NoReturn:
    typer.echo("Error: " + (" ".join(message.split()) or "unknown error"), err=True)
    raise typer.Exit(code)


@contextmanager
def _memory(
    db: str, embedder: str, strategy: SearchStrategy | None, *, create: bool = False
) -> Iterator[tuple[OracleAgentMemory, OracleMemoryStore]]:
    """Open the store and the client over ``db``; close them when the block ends."""
    _quiet_litellm(embedder)
    model = resolve_embedder(embedder)
    store = _open_store(
        db,
        create=create,
        embedder=model,
        vector_dim=model.embedding_dimension if model is not None else None,
        search_strategy=strategy,
    )
    try:
        yield OracleAgentMemory(store=store, extract_memories=False), store
    finally:
        store.close()


def _open_store(db: str, *, create: bool, **kwargs: Any) -> OracleMemoryStore:
    """The store at ``db``: a SQLite file, or a PostgreSQL store for a
    ``postgresql://`` URL (created there when ``create``, else it must exist)."""
    if backend_of(db) == "postgres":
        from oam_core.store.postgres import PostgresMemoryStore
        from oam_core.store.postgres.store import postgres_conninfo

        conninfo = postgres_conninfo(db)
        if create and kwargs.get("search_strategy", SearchStrategy.HYBRID) is None:
            # An existing store keeps its strategy; a new one gets the CLI's HYBRID.
            try:
                return PostgresMemoryStore(
                    conninfo, schema_policy=SchemaPolicy.REQUIRE_EXISTING, **kwargs
                )
            except ValueError:
                kwargs["search_strategy"] = SearchStrategy.HYBRID
        policy = SchemaPolicy.CREATE_IF_NECESSARY if create else SchemaPolicy.REQUIRE_EXISTING
        return PostgresMemoryStore(conninfo, schema_policy=policy, **kwargs)
    if "search_strategy" in kwargs and kwargs["search_strategy"] is None:
        kwargs["search_strategy"] = SearchStrategy.HYBRID
    return SQLiteMemoryStore(sqlite_target(db), **kwargs)


def _quiet_litellm(embedder: str) -> None:
    """Stop LiteLLM printing banners, cost-map fetch warnings and retry logs: the CLI
    reports a failure as one ``Error:`` line."""
    name = embedder.strip()
    if name == "local" or name.startswith(("local/", "hashing")):
        return
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if not _debugging():
        for logger in ("LiteLLM", "LiteLLM Proxy", "LiteLLM Router", "oam", "httpx"):
            logging.getLogger(logger).setLevel(logging.ERROR)
    try:
        import litellm
    except ImportError:
        return
    litellm.suppress_debug_info = True


def _where(conversation: Conversation, index: int, source: Path | None) -> str:
    if index < len(conversation.locations):
        return conversation.locations[index]
    prefix = f"{source}: " if source is not None else ""
    return f"{prefix}thread {conversation.thread_id!r} message [{index}]"


def _validate(conversations: Sequence[Conversation], source: Path | None) -> None:
    """Check every message the way the store will, before anything is written."""
    for conversation in conversations:
        for index, message in enumerate(conversation.messages):
            try:
                checked = to_message(message)
                dump_metadata(checked.metadata)
                for text in (checked.role, checked.content, checked.timestamp, checked.id):
                    if text is not None:
                        text.encode("utf-8")
            except (ValueError, TypeError) as exc:
                raise CliError(f"{_where(conversation, index, source)}: {exc}") from None


def _ingest(
    memory: OracleAgentMemory,
    store: OracleMemoryStore,
    conversations: Sequence[Conversation],
    *,
    replace: bool,
    console: Console,
    source: Path | None = None,
) -> int:
    """Write each conversation as one thread; return the number of messages written.

    Every message is validated first. A conversation whose write still fails midway
    has its thread deleted, so no partial thread is left behind.

    Raises:
        CliError: if a thread exists already and ``replace`` is False, or a message
            is invalid (nothing is written then), or a write fails (the failing
            thread is deleted; the error names the file and the message).
    """
    _validate(conversations, source)
    existing = {row.thread_id for row in store.list_thread_rows()}
    clashes = [c.thread_id for c in conversations if c.thread_id in existing]
    if clashes and not replace:
        shown = ", ".join(clashes[:3]) + (" ..." if len(clashes) > 3 else "")
        raise CliError(
            f"thread(s) already in the database: {shown}; use --replace to overwrite them"
        )
    total = sum(len(c.messages) for c in conversations)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    written = 0
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("Ingesting", total=total)
        for conversation in conversations:
            if conversation.thread_id in existing:
                memory.delete_thread(conversation.thread_id)
            thread = memory.create_thread(
                thread_id=conversation.thread_id,
                user_id=NOT_SET if conversation.user_id is None else conversation.user_id,
                agent_id=NOT_SET if conversation.agent_id is None else conversation.agent_id,
            )
            progress.update(task, description=f"Ingesting {conversation.thread_id}")
            start = 0
            try:
                for start in range(0, len(conversation.messages), _BATCH):
                    batch = conversation.messages[start : start + _BATCH]
                    thread.add_messages(batch)
                    written += len(batch)
                    progress.advance(task, len(batch))
            except (typer.Exit, typer.Abort):
                raise
            except BaseException as exc:
                memory.delete_thread(conversation.thread_id)
                if not isinstance(exc, Exception):
                    raise
                first = _where(conversation, start, source)
                last = min(start + _BATCH, len(conversation.messages)) - 1
                span = "" if last == start else f" to {_where(conversation, last, source)}"
                message = str(exc) or type(exc).__name__
                raise CliError(
                    f"{first}{span}: {message}; thread {conversation.thread_id!r} was not written"
                ) from exc
    return written


@app.command()
def ingest(
    file: Annotated[Path, typer.Argument(help="A .jsonl/.json chat file or a LoCoMo file.")],
    db: DbOption = "oam.db",
    embedder: EmbedderOption = "local",
    strategy: StrategyOption = None,
    user: Annotated[
        str | None, typer.Option(help="User id for the threads (LoCoMo: replaces sample id).")
    ] = None,
    agent: Annotated[str | None, typer.Option(help="Agent id for the threads.")] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Delete threads with the same id first.")
    ] = False,
) -> None:
    """Store every conversation in FILE as one thread (messages only, no LLM)."""
    err = Console(stderr=True)
    with _user_errors():
        if not file.exists():
            raise CliError(f"{file}: no such file", code=2)
        conversations = load_conversations(file, user_id=user, agent_id=agent)
        started = time.perf_counter()
        with _memory(db, embedder, strategy, create=True) as (memory, store):
            written = _ingest(
                memory, store, conversations, replace=replace, console=err, source=file
            )
        elapsed = time.perf_counter() - started
    rate = written / elapsed if elapsed > 0 else 0.0
    typer.echo(
        f"Ingested {written} messages into {len(conversations)} thread(s) in {db} "
        f"({elapsed:.1f} s, {rate:.0f} messages/s)."
    )


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for, in natural language.")],
    db: DbOption = "oam.db",
    embedder: EmbedderOption = "local",
    strategy: StrategyOption = None,
    user: Annotated[str | None, typer.Option(help="Only records of this user.")] = None,
    thread: Annotated[str | None, typer.Option(help="Only records of this thread.")] = None,
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="How many results.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """Search the stored messages (and memories) for QUERY."""
    with _user_errors():
        _require_db(db)
        with _memory(db, embedder, strategy) as (_, store):
            results = store.search(
                query,
                k,
                user_id=user,
                exact_user_match=user is not None,
                thread_id=thread,
                exact_thread_match=thread is not None,
            )
    if as_json:
        for record, distance in results:
            typer.echo(json.dumps(_record_json(record, distance), ensure_ascii=False))
        return
    console = Console(highlight=False, soft_wrap=True)
    if not results:
        console.print("No results.")
    _print_results(console, results)


@app.command()
def card(
    thread_id: Annotated[str, typer.Argument(help="The thread to build a context card for.")],
    db: DbOption = "oam.db",
    embedder: EmbedderOption = "local",
    strategy: StrategyOption = None,
    recent: Annotated[
        int, typer.Option("--recent", min=0, help="Recent messages to include verbatim.")
    ] = 0,
    relevant: Annotated[
        int, typer.Option("--relevant", min=0, help="Most relevant records to include.")
    ] = 5,
) -> None:
    """Print the context card of THREAD_ID (the text an agent puts in its prompt)."""
    with _user_errors():
        _require_db(db)
        with _memory(db, embedder, strategy) as (memory, store):
            content = _context_card(memory, store, thread_id, recent=recent, relevant=relevant)
    typer.echo(content if content else "(empty context card)")


@app.command()
def threads(
    db: DbOption = "oam.db",
    user: Annotated[str | None, typer.Option(help="Only threads of this user.")] = None,
) -> None:
    """List the threads in the database with their message counts."""
    with _user_errors():
        _require_db(db)
        store = _open_store(db, create=False)
        try:
            rows = store.list_thread_rows(user_id=user) if user else store.list_thread_rows()
            counts = [store.count_thread_messages(row.thread_id) for row in rows]
        finally:
            store.close()
    if not rows:
        typer.echo(f"No threads in {db}.")
        return
    header = ("thread", "user", "agent", "messages", "created")
    table = [header] + [
        (row.thread_id, row.user_id or "-", row.agent_id or "-", str(count), row.created_at[:19])
        for row, count in zip(rows, counts, strict=True)
    ]
    widths = [max(len(line[col]) for line in table) for col in range(len(header))]
    for line in table:
        typer.echo("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))


@app.command()
def demo(
    db: DbOption = "oam.db",
    embedder: EmbedderOption = "local",
    strategy: StrategyOption = None,
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="Results per question.")] = 3,
) -> None:
    """Ingest a bundled 260-message chat, then answer a few questions from memory."""
    console = Console(highlight=False, soft_wrap=True)
    with _user_errors():
        with resources.as_file(resources.files("oam_core") / "demo" / DEMO_FILE) as path:
            [conversation] = load_conversations(path, user_id=DEMO_USER, agent_id=DEMO_AGENT)
        conversation = Conversation(
            thread_id=DEMO_THREAD,
            user_id=conversation.user_id,
            agent_id=conversation.agent_id,
            messages=conversation.messages,
        )
        with _memory(db, embedder, strategy, create=True) as (memory, store):
            exists = store.get_thread_row(DEMO_THREAD) is not None
            complete = exists and store.count_thread_messages(DEMO_THREAD) == len(
                conversation.messages
            )
            if complete:
                console.print(f"Thread {DEMO_THREAD} is already in {db}; reusing it.")
            else:
                # Missing, or left incomplete by an interrupted run: (re)ingest it.
                err = Console(stderr=True)
                written = _ingest(memory, store, [conversation], replace=exists, console=err)
                console.print(f"Ingested {written} messages into thread {DEMO_THREAD} ({db}).")
            for question in DEMO_QUESTIONS:
                results = store.search(question, k, user_id=DEMO_USER, exact_user_match=True)
                console.print(f"\n[bold]Q: {escape(question)}[/bold]")
                _print_results(console, results)
            content = _context_card(memory, store, DEMO_THREAD, recent=2, relevant=5)
    console.print(f"\n[bold]Context card of {DEMO_THREAD}[/bold] (no LLM: fallback summary)")
    typer.echo(content)
    console.print(
        f'\nTry: oam search "Who is looking after Moose?" --db {db}'
        + ("" if embedder == "local" else f" --embedder {embedder}")
    )


def _require_db(db: str) -> None:
    if backend_of(db) == "postgres":
        return  # opened with REQUIRE_EXISTING: a missing store is a clear error
    path = sqlite_target(db)
    if path != ":memory:" and not Path(path).exists():
        raise CliError(f"{db}: no such database; create it with `oam ingest FILE --db {db}`", 2)


def _context_card(
    memory: OracleAgentMemory,
    store: OracleMemoryStore,
    thread_id: str,
    *,
    recent: int,
    relevant: int,
) -> str:
    if store.get_thread_row(thread_id) is None:
        raise CliError(f"no thread {thread_id!r} in the database (see `oam threads`)")
    thread = memory.get_thread(thread_id)
    card = thread.get_context_card(max_recent_messages=recent, max_relevant_results=relevant)
    return card.content


def _print_results(console: Console, results: Sequence[tuple[Record, float]]) -> None:
    for rank, (record, distance) in enumerate(results, start=1):
        role = getattr(record, "role", None)
        who = f"{role} " if role else ""
        when = f" {record.timestamp}" if record.timestamp else ""
        console.print(
            f"{rank:>2}. [dim]{distance:.3f} {record.record_type} "
            f"{escape(record.thread_id or '-')}{escape(when)}[/dim]\n"
            f"    {escape(who)}{escape(_shorten(record.content or ''))}"
        )


def _shorten(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _record_json(record: Record, distance: float) -> dict[str, Any]:
    return {
        "id": record.id,
        "record_type": record.record_type,
        "distance": distance,
        "thread_id": record.thread_id,
        "user_id": record.user_id,
        "role": getattr(record, "role", None),
        "timestamp": record.timestamp,
        "content": record.content,
        "metadata": record.metadata,
    }


# `oam mcp` and `oam serve` live in oam_core/service (their extras load when they run).
from oam_core.service import commands as _service  # noqa: E402

app.command("mcp")(_service.mcp)
app.command("serve")(_service.serve)

if __name__ == "__main__":
    main()
