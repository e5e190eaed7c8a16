"""The ``oam memories`` commands, registered by ``oam_core/cli.py``: list and show the
stored memories with their validity windows and history, correct one (a new version
with a reason), invalidate one, delete one (docs/cli.md#memories; docs/versions.md).

They open ``--db`` as every command does (``clicommon.memory_at``) and reach the
library through the client: ``update_memory``, ``invalidate_memory``,
``get_memory_history``, ``delete_memory``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

import typer

from oam_core import OracleAgentMemory, Record, SchemaPolicy
from oam_core.clicommon import CliError, memory_at, user_errors
from oam_core.memory.newest import newest_first
from oam_core.service.common import window_text

__all__ = ["MEMORY_TYPES", "register"]

MEMORY_TYPES = ("fact", "guideline", "memory", "preference")
"""The memory-like record types ``oam memories`` reads."""

memories_app = typer.Typer(
    name="memories",
    help="List, show, correct, invalidate or delete stored memories (docs/cli.md#memories).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

DbOption = Annotated[
    str,
    typer.Option("--db", help="SQLite database file (~ is expanded) or a postgresql:// URL."),
]
EmbedderOption = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        help="The embedder the new version is embedded with; default: the one the "
        "database recorded (docs/cli.md#embedders).",
    ),
]
PolicyOption = Annotated[
    SchemaPolicy | None,
    typer.Option(
        "--schema-policy",
        case_sensitive=False,
        help="What may be done to the database's schema (docs/store.md#schema-policies); "
        "default require_existing.",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (one object a line).")]
Reason = Annotated[str | None, typer.Option("--reason", help="Why; kept with the ended version.")]


def register(app: typer.Typer) -> None:
    """Add ``oam memories`` to ``app``."""
    app.add_typer(memories_app, name="memories")


def _find(memory: OracleAgentMemory, memory_id: str) -> Record:
    """The memory-like record ``memory_id``, whatever its type.

    Raises:
        CliError: when there is none.
    """
    for record_type in MEMORY_TYPES:
        found = memory.store.get(record_type, memory_id)
        if found is not None:
            return found
    raise CliError(f"no memory {memory_id!r} in the database (see `oam memories list`)")


def _json(record: Record, **extra: Any) -> str:
    keys = (record.metadata or {}).get("$agent_memory")
    reserved = dict(keys) if isinstance(keys, dict) else {}
    managed = reserved.pop("managed", None) is True
    own = {k: v for k, v in (record.metadata or {}).items() if k != "$agent_memory"}
    body = {
        "id": record.id,
        "record_type": record.record_type,
        "content": record.content,
        "valid_from": record.valid_from,
        "valid_until": record.valid_until,
        "user_id": record.user_id,
        "agent_id": record.agent_id,
        "thread_id": record.thread_id,
        "timestamp": record.timestamp,
        "created_at": record.created_at,
        "metadata": own or None,
        "versions": reserved or None,
        "managed": managed,
        **extra,
    }
    return json.dumps(body, ensure_ascii=False)


def _short(text: str | None, limit: int = 100) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@memories_app.command("list")
def list_cmd(
    db: DbOption = "oam.db",
    schema_policy: PolicyOption = None,
    user: Annotated[str | None, typer.Option(help="Only memories of this user.")] = None,
    agent: Annotated[str | None, typer.Option(help="Only memories of this agent.")] = None,
    thread: Annotated[str | None, typer.Option(help="Only memories of this thread.")] = None,
    record_type: Annotated[
        list[str] | None,
        typer.Option(
            "--type", help="Only this type (repeat for several): " + ", ".join(MEMORY_TYPES)
        ),
    ] = None,
    every_version: Annotated[
        bool,
        typer.Option("--all", help="Also versions that no longer hold (superseded, invalidated)."),
    ] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Most memories (the newest).")] = 50,
    as_json: JsonOption = False,
) -> None:
    """List the memories that hold now (with --all every version), oldest first, each
    with its type, validity window and text."""
    types = record_type or list(MEMORY_TYPES)
    with user_errors():
        unknown = [t for t in types if t not in MEMORY_TYPES]
        if unknown:
            raise CliError(
                f"--type must be one of {', '.join(MEMORY_TYPES)}, got {unknown[0]!r}", 2
            )
        with memory_at(db, "none", policy=schema_policy) as memory:
            scope: dict[str, Any] = {
                name: value
                for name, value in (("user_id", user), ("agent_id", agent), ("thread_id", thread))
                if value is not None
            }
            now = memory.store.runtime.now()
            when: dict[str, Any] = {} if every_version else {"as_of": now}
            newest, _ = newest_first(memory.store, types, limit, **scope, **when)
    found = newest[::-1]  # the newest ``limit``, oldest first
    if as_json:
        for record in found:
            typer.echo(_json(record))
        return
    if not found:
        typer.echo(
            "No memories." if every_version else "No memories hold now (--all: every version)."
        )
        return
    for record in found:
        state = _window_state(record, now) if every_version else ""
        typer.echo(
            f"{record.id}  {record.record_type}  valid {window_text(record)}{state}  "
            f"user {record.user_id or '-'}\n    {_short(record.content)}"
        )


def _window_state(record: Record, now: datetime) -> str:
    """What ``oam memories list --all`` adds to a version's window: " (ended)" when it
    no longer holds, " (planned)" when it holds only from a later time, else ""."""
    # The window ends are ISO 8601 strings in UTC (Record).
    if record.valid_until is not None and datetime.fromisoformat(record.valid_until) <= now:
        return " (ended)"
    if record.valid_from is not None and datetime.fromisoformat(record.valid_from) > now:
        return " (planned)"
    return ""


@memories_app.command("show")
def show_cmd(
    memory_id: Annotated[str, typer.Argument(metavar="MEMORY_ID", help="The memory's id.")],
    db: DbOption = "oam.db",
    schema_policy: PolicyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one memory and its history: every version, oldest first, with its
    validity window and the reason of each change."""
    with user_errors(), memory_at(db, "none", policy=schema_policy) as memory:
        record = _find(memory, memory_id)
        history = memory.get_memory_history(memory_id)
    if as_json:
        typer.echo(_json(record, history=[json.loads(_json(r)) for r in history]))
        return
    typer.echo(f"{record.id}  {record.record_type}")
    typer.echo(f"  {record.content}")
    typer.echo(f"  valid {window_text(record)}")
    for name in ("user_id", "agent_id", "thread_id", "timestamp", "created_at"):
        value = getattr(record, name)
        if value is not None:
            typer.echo(f"  {name.removesuffix('_id')}: {value}")
    typer.echo(f"History ({len(history)} version{'s' if len(history) != 1 else ''}):")
    for n, version in enumerate(history, start=1):
        keys = (version.metadata or {}).get("$agent_memory")
        reason = keys.get("reason") if isinstance(keys, dict) else None
        mark = "  <- this one" if version.id == record.id else ""
        typer.echo(
            f"  {n}. {version.id}  valid {window_text(version)}{mark}\n"
            f"     {_short(version.content)}" + (f"\n     reason: {reason}" if reason else "")
        )


@memories_app.command("update")
def update_cmd(
    memory_id: Annotated[
        str, typer.Argument(metavar="MEMORY_ID", help="Id of the memory's current version.")
    ],
    content: Annotated[str, typer.Argument(metavar="CONTENT", help="The corrected text.")],
    db: DbOption = "oam.db",
    schema_policy: PolicyOption = None,
    embedder: EmbedderOption = None,
    reason: Reason = None,
    valid_from: Annotated[
        str | None,
        typer.Option(
            "--valid-from", help="When the new version started to hold (ISO-8601); default now."
        ),
    ] = None,
) -> None:
    """Correct a memory: store CONTENT as a new version (same type and scope) and end
    the old one, which stays in the history. Prints the new id."""
    with user_errors(), memory_at(db, embedder, policy=schema_policy) as memory:
        _find(memory, memory_id)
        when: dict[str, Any] = {} if valid_from is None else {"valid_from": valid_from}
        new_id = memory.update_memory(memory_id, content, reason=reason, **when)
    typer.echo(new_id)


@memories_app.command("invalidate")
def invalidate_cmd(
    memory_id: Annotated[str, typer.Argument(metavar="MEMORY_ID", help="The memory's id.")],
    db: DbOption = "oam.db",
    schema_policy: PolicyOption = None,
    reason: Reason = None,
    valid_until: Annotated[
        str | None,
        typer.Option("--valid-until", help="When it stopped holding (ISO-8601); default now."),
    ] = None,
) -> None:
    """End a memory without a replacement (it stays in the history)."""
    with user_errors(), memory_at(db, None, policy=schema_policy) as memory:
        _find(memory, memory_id)
        when: dict[str, Any] = {} if valid_until is None else {"valid_until": valid_until}
        ended = memory.invalidate_memory(memory_id, reason=reason, **when)
    typer.echo(
        f"Invalidated {memory_id}."
        if ended
        else f"{memory_id} is not current (no longer held, or planned for later); nothing changed."
    )


@memories_app.command("delete")
def delete_cmd(
    memory_id: Annotated[str, typer.Argument(metavar="MEMORY_ID", help="The memory's id.")],
    db: DbOption = "oam.db",
    schema_policy: PolicyOption = None,
) -> None:
    """Delete one memory version for good (to keep its history, use update or
    invalidate)."""
    with user_errors(), memory_at(db, None, policy=schema_policy) as memory:
        _find(memory, memory_id)
        memory.delete_memory(memory_id)
    typer.echo(f"Deleted {memory_id}.")
