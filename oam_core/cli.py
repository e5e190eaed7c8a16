"""The ``oam`` command line: ingest conversations, search them, show context cards.

A thin layer over the library (docs/cli.md): files are read by :mod:`oam_core.ingest`,
every database is opened the way ``OracleAgentMemory(connection=...)`` opens it
(``--db``: a SQLite path, default ``./oam.db``, or a ``postgresql://`` URL), so a
command and a Python program on the same database rank alike. Commands run without
an LLM (``extract_memories=False``): messages are stored and searched.

Errors a user can cause (a missing or malformed file, an unknown thread, a database
written with another embedder) print one ``Error: ...`` line on stderr and exit with
code 1 (2 for a file, database or option that does not exist); they never print a
traceback. Warnings print as ``Warning: ...`` lines, library argument names spelled
as flags (``clicommon.FLAGS``). Any other exception is reported the same way unless
``--debug`` (anywhere on the line) or ``OAM_DEBUG=1`` asks for the traceback.

A command in a module of its own: write ``def register(app: typer.Typer) -> None``
there (it may use the helpers of ``oam_core.clicommon``: ``user_errors``,
``memory_at``, ``db_target``, ``embedder_for``, ``CliError``) and add the module to
``COMMAND_MODULES``.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Sequence
from dataclasses import replace as with_fields
from importlib import metadata, resources
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from typer.core import TyperGroup

import oam_core
from oam_core import OracleAgentMemory, OracleMemoryStore, Record, SchemaPolicy, SearchStrategy
from oam_core.apis.thread import participant_name
from oam_core.clicommon import (
    CliError,
    memory_at,
    set_debug,
    user_errors,
)
from oam_core.ingest import Conversation, load_conversations
from oam_core.ingest_writer import WriteMode, plural, validate_conversations, write_conversations
from oam_core.service.common import (
    hit_score_kind,
    open_thread,
    score_kind,
    search_strategy_for,
)

__all__ = ["COMMAND_MODULES", "CliError", "app", "main"]

COMMAND_MODULES: tuple[str, ...] = (
    "oam_core.service.commands",
    "oam_core.transfer.cli",
    "oam_core.memorycli",
)
"""Modules whose ``register(app)`` adds commands (see the module docstring)."""

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
DEFAULT_USER = "default-user"
"""User id of ingested chats when ``--user`` is not given (LoCoMo: the sample id)."""
DEFAULT_AGENT = "default-agent"
"""Agent id of ingested chats when ``--agent`` is not given."""


class _Group(TyperGroup):
    """Accepts the global ``--debug`` anywhere before a ``--``, not only before the
    command name."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        cut = args.index("--") if "--" in args else len(args)
        if "--debug" in args[:cut]:
            args = ["--debug", *(a for i, a in enumerate(args) if i >= cut or a != "--debug")]
        return super().parse_args(ctx, args)


app = typer.Typer(
    name="oam",
    cls=_Group,
    help="Agent memory in a SQLite file or PostgreSQL: ingest chats, search them, build "
    "context cards. Every command takes --db (default ./oam.db). See docs/cli.md.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

DbOption = Annotated[
    str,
    typer.Option(
        "--db",
        help="SQLite database file (~ is expanded; created by ingest and demo) or a "
        "postgresql:// URL.",
    ),
]
EmbedderOption = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        help="'local' (offline all-MiniLM-L6-v2), 'hashing' or 'hashing/<dim>' (word "
        "overlap only), a LiteLLM model id, or 'none' (keyword search only; "
        "`oam reindex` adds the vectors later). Default: the embedder the database "
        "was written with, 'local' for a new one.",
    ),
]
StrategyOption = Annotated[
    SearchStrategy | None,
    typer.Option(
        "--strategy",
        case_sensitive=False,
        help="How this command's searches rank. Default: the store's recorded strategy "
        "(hybrid for a new store), keyword with --embedder none; the recorded one is "
        "not changed, except by ingest or demo creating the store.",
    ),
]
PolicyOption = Annotated[
    SchemaPolicy | None,
    typer.Option(
        "--schema-policy",
        case_sensitive=False,
        help="What may be done to the database's schema: create_if_necessary (default "
        "of ingest and demo), require_existing (default of the other commands), "
        "create_if_empty, recreate (PostgreSQL only; destructive).",
    ),
]
AllowChangeOption = Annotated[
    bool,
    typer.Option(
        "--allow-embedder-change",
        help="Open a database written with another embedder of the same dimension.",
    ),
]


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
    """Agent memory in a SQLite file or PostgreSQL: ingest chats, search them, build
    context cards. Every command takes --db (default ./oam.db). See docs/cli.md."""
    del version
    set_debug(debug)


# -- ingesting -----------------------------------------------------------------------


def _ingest(
    memory: OracleAgentMemory,
    conversations: Sequence[Conversation],
    *,
    mode: WriteMode = "new",
    console: Console,
    source: Path | None = None,
) -> tuple[int, int]:
    """``write_conversations`` with a progress bar on ``console``; returns
    ``(messages written, threads skipped)``."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    total = sum(len(c.messages) for c in conversations)
    with Progress(*columns, TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task("Ingesting", total=total)

        def advance(thread_id: str, messages: int) -> None:
            progress.update(task, description=f"Ingesting {thread_id}", advance=messages)

        return write_conversations(
            memory, conversations, mode=mode, source=source, on_progress=advance
        )


def _with_ids(
    conversations: Sequence[Conversation], user: str | None, agent: str | None
) -> list[Conversation]:
    """Give every conversation a stable user and agent (the defaults when not given)."""
    return [
        with_fields(
            c,
            user_id=user if user is not None else c.user_id or DEFAULT_USER,
            agent_id=agent if agent is not None else c.agent_id or DEFAULT_AGENT,
        )
        for c in conversations
    ]


@app.command()
def ingest(
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE", help="A .jsonl/.json chat file or a LoCoMo file (~ is expanded)."
        ),
    ],
    db: DbOption = "oam.db",
    embedder: EmbedderOption = None,
    strategy: StrategyOption = None,
    schema_policy: PolicyOption = None,
    user: Annotated[
        str | None,
        typer.Option(
            help=f"User id of the threads (default {DEFAULT_USER}; LoCoMo: the sample id)."
        ),
    ] = None,
    agent: Annotated[
        str | None, typer.Option(help=f"Agent id of the threads (default {DEFAULT_AGENT}).")
    ] = None,
    sample: Annotated[
        list[str] | None,
        typer.Option("--sample", help="Only this LoCoMo sample (repeat for several)."),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite threads with the same id.")
    ] = False,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Skip threads already stored (continue an interrupted run)."),
    ] = False,
    allow_embedder_change: AllowChangeOption = False,
) -> None:
    """Store every conversation in FILE as one thread (messages only, no LLM)."""
    err = Console(stderr=True)
    with user_errors():
        if replace and resume:
            raise CliError("--replace and --resume exclude each other", 2)
        file = file.expanduser()
        if not file.exists():
            raise CliError(f"{file}: no such file", code=2)
        conversations = load_conversations(file, samples=sample)
        conversations = _with_ids(conversations, user, agent)
        validate_conversations(conversations, file)  # before the store is created
        started = time.perf_counter()
        with memory_at(
            db,
            embedder,
            strategy,
            create=True,
            policy=schema_policy,
            allow_embedder_change=allow_embedder_change,
        ) as memory:
            mode: WriteMode = "replace" if replace else "resume" if resume else "new"
            written, skipped = _ingest(memory, conversations, mode=mode, console=err, source=file)
            used = memory.store.embedder_identity
        elapsed = time.perf_counter() - started
    threads = len(conversations) - skipped
    rate = written / elapsed if elapsed > 0 else 0.0
    typer.echo(
        f"Ingested {plural(written, 'message')} into {plural(threads, 'thread')} in {db} "
        f"({elapsed:.1f} s, {rate:.0f} messages/s)."
    )
    if skipped:
        typer.echo(f"Skipped {plural(skipped, 'thread')} already in the database (--resume).")
    users = sorted({c.user_id or "" for c in conversations})
    agents = sorted({c.agent_id or "" for c in conversations})
    shown = ", ".join(users[:5]) + (" ..." if len(users) > 5 else "")
    typer.echo(
        f"User: {shown}; agent: {', '.join(agents[:3])}; embedder: "
        f"{used.embedder_id if used else 'none (keyword search only)'}."
    )


# -- reading -------------------------------------------------------------------------


def _speaker(record: Record) -> str:
    """``Caroline (user)``, ``user``, or ``""`` for records without a role."""
    role = getattr(record, "role", None) or ""
    name = participant_name(record.metadata)
    return f"{name} ({role})" if name and role else name or role


@app.command()
def search(
    query: Annotated[
        str, typer.Argument(metavar="QUERY", help="What to look for, in natural language.")
    ],
    db: DbOption = "oam.db",
    embedder: EmbedderOption = None,
    strategy: StrategyOption = None,
    schema_policy: PolicyOption = None,
    user: Annotated[str | None, typer.Option(help="Only records of this user.")] = None,
    thread: Annotated[str | None, typer.Option(help="Only records of this thread.")] = None,
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="How many results.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
    allow_embedder_change: AllowChangeOption = False,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            help="Memories that held at this time (ISO 8601, e.g. 2024-06-01) instead of now.",
        ),
    ] = None,
    every_version: Annotated[
        bool,
        typer.Option("--all-versions", help="Also memories that no longer hold."),
    ] = False,
) -> None:
    """Search the stored messages (and memories) for QUERY. Each result shows its
    score (higher is better) and what the score is: cosine, keyword or hybrid.
    Memories are those that hold now, unless --as-of or --all-versions says otherwise
    (docs/versions.md)."""
    when: dict[str, Any] = {}
    if every_version:
        when["as_of"] = None
    elif as_of is not None:
        when["as_of"] = as_of
    with (
        user_errors(),
        memory_at(db, embedder, strategy, schema_policy, allow_embedder_change) as memory,
    ):
        if as_of is not None and every_version:
            raise CliError("--as-of and --all-versions exclude each other", 2)
        store = memory.store
        # Without an embedder (and --strategy) the command ranks by keywords, as each
        # result's score kind shows.
        with store.searching_with(search_strategy_for(store, strategy)):
            results = store.search(
                query,
                k,
                user_id=user,
                exact_user_match=user is not None,
                thread_id=thread,
                exact_thread_match=thread is not None,
                **when,
            )
            kind = score_kind(store)
    if as_json:
        for record, distance in results:
            typer.echo(json.dumps(_record_json(record, distance, kind), ensure_ascii=False))
        return
    console = Console(highlight=False, soft_wrap=True)
    if not results:
        console.print("No results.")
    _print_results(console, results, kind)


@app.command()
def card(
    thread_id: Annotated[
        str, typer.Argument(metavar="THREAD_ID", help="The thread to build a context card for.")
    ],
    db: DbOption = "oam.db",
    embedder: EmbedderOption = None,
    strategy: StrategyOption = None,
    schema_policy: PolicyOption = None,
    recent: Annotated[
        int, typer.Option("--recent", min=0, help="Recent messages to include verbatim.")
    ] = 0,
    relevant: Annotated[
        int, typer.Option("--relevant", min=0, help="Most relevant records to include.")
    ] = 5,
    allow_embedder_change: AllowChangeOption = False,
) -> None:
    """Print the context card of THREAD_ID (the text an agent puts in its prompt)."""
    with (
        user_errors(),
        memory_at(db, embedder, strategy, schema_policy, allow_embedder_change) as memory,
        memory.store.searching_with(search_strategy_for(memory.store, strategy)),
    ):
        content = _context_card(memory, thread_id, recent=recent, relevant=relevant)
    typer.echo(content if content else "(empty context card)")


@app.command()
def threads(
    db: DbOption = "oam.db",
    schema_policy: PolicyOption = None,
    user: Annotated[str | None, typer.Option(help="Only threads of this user.")] = None,
) -> None:
    """List the threads in the database with their message counts and speakers."""
    with user_errors(), memory_at(db, "none", policy=schema_policy) as memory:
        store = memory.store
        rows = memory.list_threads(user_id=user) if user else memory.list_threads()
        counts = [store.count_thread_messages(row.thread_id) for row in rows]
        speakers = [_speakers(store, row.thread_id) for row in rows]
    if not rows:
        typer.echo(f"No threads in {db}.")
        return
    header = ("thread", "user", "agent", "messages", "speakers", "created")
    table = [header] + [
        (row.thread_id, row.user_id or "-", row.agent_id or "-", str(n), who, row.created_at[:19])
        for row, n, who in zip(rows, counts, speakers, strict=True)
    ]
    widths = [max(len(line[col]) for line in table) for col in range(len(header))]
    for line in table:
        cells = zip(line, widths, strict=True)
        typer.echo("  ".join(cell.ljust(width) for cell, width in cells).rstrip())


def _speakers(store: OracleMemoryStore, thread_id: str) -> str:
    """The named speakers of a thread (``Ana, Ben``), or ``-``."""
    names = dict.fromkeys(
        name
        for message in store.list_thread_messages(thread_id)
        if (name := participant_name(message.metadata)) is not None
    )
    listed = list(names)
    return ", ".join(listed[:4]) + (f" +{len(listed) - 4}" if len(listed) > 4 else "") or "-"


@app.command()
def reindex(
    db: DbOption = "oam.db",
    embedder: EmbedderOption = None,
    schema_policy: PolicyOption = None,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, help="Records embedded per transaction.")
    ] = 256,
    allow_embedder_change: AllowChangeOption = False,
) -> None:
    """Embed the records stored without vectors (e.g. ingested with --embedder none),
    so vector and hybrid search find them."""
    with (
        user_errors(),
        memory_at(
            db, embedder, policy=schema_policy, allow_embedder_change=allow_embedder_change
        ) as memory,
    ):
        store = memory.store
        if store.embedder is None:
            raise CliError("reindex needs an embedder: pass --embedder", 2)
        count = store.reindex(batch_size=batch_size)
        used = store.embedder_identity
    if count:
        name = used.embedder_id if used else "the embedder"
        typer.echo(f"Embedded {plural(count, 'record')} with {name} in {db}.")
    else:
        typer.echo(f"Nothing to embed: every record in {db} has its vectors.")


@app.command()
def demo(
    db: DbOption = "oam.db",
    embedder: EmbedderOption = None,
    strategy: StrategyOption = None,
    schema_policy: PolicyOption = None,
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="Results per question.")] = 3,
) -> None:
    """Ingest a bundled 260-message chat, then answer a few questions from memory."""
    console = Console(highlight=False, soft_wrap=True)
    with user_errors():
        with resources.as_file(resources.files("oam_core") / "demo" / DEMO_FILE) as path:
            [conversation] = load_conversations(path, user_id=DEMO_USER, agent_id=DEMO_AGENT)
        conversation = with_fields(conversation, thread_id=DEMO_THREAD)
        with (
            memory_at(db, embedder, strategy, create=True, policy=schema_policy) as memory,
            memory.store.searching_with(search_strategy_for(memory.store, strategy)),
        ):
            store = memory.store
            exists = memory.get_thread_row(DEMO_THREAD) is not None
            complete = exists and store.count_thread_messages(DEMO_THREAD) == len(
                conversation.messages
            )
            if complete:
                console.print(f"Thread {DEMO_THREAD} is already in {db}; reusing it.")
            else:
                # Missing, or left incomplete by an older oam: (re)write it whole.
                err = Console(stderr=True)
                mode: WriteMode = "replace" if exists else "new"
                written, _ = _ingest(memory, [conversation], mode=mode, console=err)
                console.print(f"Ingested {written} messages into thread {DEMO_THREAD} ({db}).")
            kind = score_kind(store)
            for question in DEMO_QUESTIONS:
                results = store.search(question, k, user_id=DEMO_USER, exact_user_match=True)
                console.print(f"\n[bold]Q: {escape(question)}[/bold]")
                _print_results(console, results, kind)
            content = _context_card(memory, DEMO_THREAD, recent=2, relevant=5)
            used = store.embedder_identity
    console.print(f"\n[bold]Context card of {DEMO_THREAD}[/bold] (no LLM: fallback summary)")
    typer.echo(content)
    name = used.embedder_id if used else "none"
    console.print(
        f'\nTry: oam search "Who is looking after Moose?" --db {db}'
        + ("" if embedder is None else f" --embedder {name}")
    )


def _context_card(memory: OracleAgentMemory, thread_id: str, *, recent: int, relevant: int) -> str:
    if memory.get_thread_row(thread_id) is None:
        raise CliError(f"no thread {thread_id!r} in the database (see `oam threads`)")
    thread = open_thread(memory, thread_id)
    card = thread.get_context_card(max_recent_messages=recent, max_relevant_results=relevant)
    return card.content


def _print_results(console: Console, results: Sequence[tuple[Record, float]], kind: str) -> None:
    for rank, (record, distance) in enumerate(results, start=1):
        who = _speaker(record)
        when = f" {record.timestamp}" if record.timestamp else ""
        console.print(
            f"{rank:>2}. [dim]{hit_score_kind(distance, kind)} {1.0 - distance:.2f}  "
            f"{record.record_type} "
            f"{escape(record.thread_id or '-')}{escape(when)}[/dim]\n"
            f"    {escape(who + ': ' if who else '')}{escape(_shorten(record.content or ''))}"
        )


def _shorten(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _record_json(record: Record, distance: float, kind: str) -> dict[str, Any]:
    return {
        "id": record.id,
        "record_type": record.record_type,
        "score": 1.0 - distance,
        "score_kind": hit_score_kind(distance, kind),
        "distance": distance,
        "thread_id": record.thread_id,
        "user_id": record.user_id,
        "role": getattr(record, "role", None),
        "name": participant_name(record.metadata),
        "timestamp": record.timestamp,
        "content": record.content,
        "metadata": record.metadata,
    }


for _module in COMMAND_MODULES:
    importlib.import_module(_module).register(app)


if __name__ == "__main__":
    main()
