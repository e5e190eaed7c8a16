"""The ``oam mcp`` and ``oam serve`` commands, registered by ``oam_core/cli.py``
(docs/service.md).

Importing this module imports only typer; the MCP SDK, Starlette and uvicorn are
imported when a command runs, so the rest of the CLI works without the ``mcp`` and
``serve`` extras. A failure before serving (a missing extra, a bad option, a store
that cannot be opened) prints one ``Error: ...`` line on stderr and exits with 1, or
2 for a database that does not exist (docs/cli.md#commands).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from oam_core import SchemaPolicy, SearchStrategy
from oam_core import __version__ as oam_version
from oam_core.clicommon import cli_words, embedder_for, exit_code_of
from oam_core.errors import OAMError
from oam_core.service.common import DEFAULT_MAX_CONTENT_CHARS, DEFAULT_MAX_QUERY_CHARS

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from oam_core import OracleAgentMemory

__all__ = ["MCP_TOKEN_ENV", "SERVE_TOKEN_ENV", "mcp", "serve"]

MCP_TOKEN_ENV = "OAM_MCP_TOKEN"
"""Environment variable read for ``oam mcp --http --token``."""
SERVE_TOKEN_ENV = "OAM_SERVE_TOKEN"
"""Environment variable read for ``oam serve --token``."""

Db = Annotated[
    str,
    typer.Option("--db", help="SQLite file or sqlite:/// URL, or a postgresql:// URL."),
]
Embedder = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        help="'local' (offline), 'hashing/<dim>', 'none' (keyword search only) or a "
        "LiteLLM embedding model id: the one the store was written with. Default: "
        "the embedder the database recorded, else 'local'.",
    ),
]
Strategy = Annotated[
    SearchStrategy | None,
    typer.Option(
        "--strategy",
        case_sensitive=False,
        help="How this server's searches rank (default: the store's recorded strategy, "
        "which is not changed; keyword with --embedder none, which refuses vector and "
        "hybrid).",
    ),
]
Host = Annotated[str, typer.Option("--host", help="Interface to bind (default: loopback only).")]
Policy = Annotated[
    SchemaPolicy | None,
    typer.Option(
        "--schema-policy",
        case_sensitive=False,
        help="What may be done to the database's schema (docs/store.md#schema-policies); "
        "default require_existing (mcp --create: create_if_necessary).",
    ),
]


def _fail(message: str, code: int = 1) -> None:
    typer.echo("Error: " + " ".join(message.split()), err=True)
    raise typer.Exit(code)


_OWN_FLAGS = {"mcp": {"search_strategy", "schema_policy"}, "serve": {"schema_policy"}}
"""The library arguments (``clicommon.FLAGS``) each command has a flag for: its
messages name those flags (``--strategy keyword``), not the library's arguments."""


@contextmanager
def _startup_errors(extra: str) -> Iterator[None]:
    """Report what stops a command before it serves as one line on stderr, with the
    command's own flags for the library's arguments (``cli_words``)."""
    try:
        yield
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in {"mcp", "starlette", "uvicorn", "jinja2"}:
            _fail(f"this command needs the {extra} extra: pip install 'oam[{extra}]' ({exc})")
        _fail(str(exc))
    except (ValueError, KeyError, ImportError, OSError, OAMError) as exc:
        message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        _fail(cli_words(message, _OWN_FLAGS[extra]), exit_code_of(exc))


def _log_to_stderr() -> None:
    """Send the MCP server's log (``oam.service.mcp``: the details of failures a
    client gets only a summary of) to stderr, one plain line per record plus the
    traceback, whatever the SDK does with the root logger."""
    import logging

    logger = logging.getLogger("oam.service.mcp")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("oam mcp: %(levelname)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


@contextmanager
def _warnings_logged() -> Iterator[None]:
    """Show the warnings raised while the server runs (the library's: records stored
    without vectors, docs/store.md#embedder-identity) as one server log line each, in
    the command's words (`` `oam reindex` ``), instead of Python's two lines with a
    source path and ``store.reindex()``."""
    import logging
    import warnings

    logger = logging.getLogger("oam.service.mcp")

    def show(message: Warning | str, *_args: object, **_kwargs: object) -> None:
        logger.warning(cli_words(" ".join(str(message).split()), _OWN_FLAGS["mcp"]))

    shown = warnings.showwarning
    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def _note_keywords(memory: OracleAgentMemory, strategy: SearchStrategy | None) -> None:
    """Say on stderr (the server log) when the server ranks by keywords because it
    has no embedder, though the store's own strategy is another one
    (``search_strategy_for``)."""
    import logging

    from oam_core.service.common import search_strategy_for

    store = memory.store
    if strategy is None and search_strategy_for(store, None) is not None:
        logging.getLogger("oam.service.mcp").info(
            "no embedder (--embedder none): search_memories and context cards rank by "
            "keywords, as --strategy keyword; the store's own strategy, "
            f"{store.search_strategy.value.lower()}, needs an embedder (`oam reindex "
            "--embedder local` embeds the records stored without vectors)"
        )


def _shown_db(db: str) -> str:
    """``db`` for a message: a URL without its password."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(db)
    if parts.password is None:
        return db
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _embedder(db: str, given: str | None) -> str | None:
    """The embedder name ``open_memory`` gets: ``--embedder``, else the one ``db``
    recorded, else ``local`` (``clicommon.embedder_for``); None for ``none``."""
    value = embedder_for(db, given)
    return None if value.strip().lower() == "none" else value


User = Annotated[str | None, typer.Option("--user", help="The user this server is confined to.")]
Agent = Annotated[str | None, typer.Option("--agent", help="The agent this server is confined to.")]
Llm = Annotated[
    str | None,
    typer.Option(
        "--llm",
        help="LiteLLM model id that extracts memories from added messages "
        "(needs oam[litellm]); without it messages are stored as they are.",
    ),
]
LlmApiBase = Annotated[
    str | None, typer.Option("--llm-api-base", help="Base URL of the LLM's API.")
]
Http = Annotated[
    bool, typer.Option("--http", help="Serve streamable HTTP at /mcp instead of stdio.")
]
Port = Annotated[int, typer.Option("--port", min=1, max=65535, help="HTTP port.")]
McpToken = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar=MCP_TOKEN_ENV,
        help=f"HTTP only: bearer token every request must carry (or {MCP_TOKEN_ENV}); "
        "required when --host is not a loopback address.",
    ),
]
Create = Annotated[
    bool,
    typer.Option("--create", help="Create the store when the database has none yet."),
]
MaxContentChars = Annotated[
    int,
    typer.Option(
        "--max-content-chars",
        min=1,
        help="Most characters of one message or memory, and of one add_messages call "
        "in all; larger calls are refused with a tool error.",
    ),
]
McpMaxQueryChars = Annotated[
    int,
    typer.Option(
        "--max-query-chars",
        min=1,
        help="Most characters of a search_memories query; longer ones are refused.",
    ),
]


def mcp(
    db: Db = "oam.db",
    user: User = None,
    agent: Agent = None,
    embedder: Embedder = None,
    strategy: Strategy = None,
    llm: Llm = None,
    llm_api_base: LlmApiBase = None,
    http: Http = False,
    host: Host = "127.0.0.1",
    port: Port = 8000,
    token: McpToken = None,
    create: Create = False,
    schema_policy: Policy = None,
    max_content_chars: MaxContentChars = DEFAULT_MAX_CONTENT_CHARS,
    max_query_chars: McpMaxQueryChars = DEFAULT_MAX_QUERY_CHARS,
) -> None:
    """Serve one user's (or agent's) memory to MCP clients: stdio by default, --http for
    streamable HTTP. Clients cannot read or write outside --user/--agent. The store
    must exist unless --create is given."""
    with _startup_errors("mcp"):
        from oam_core.service.common import checked_strategy, open_memory
        from oam_core.service.mcp_server import Limits, build_server
        from oam_core.service.scope import Scope

        scope = Scope(user_id=user, agent_id=agent)
        if http:
            from oam_core.service.web.security import check_bind

            check_bind(host, token, MCP_TOKEN_ENV)
        chosen = _embedder(db, embedder)
        checked_strategy(strategy, has_embedder=chosen is not None)  # before --create
        memory = open_memory(
            db,
            embedder=chosen,
            llm=llm,
            llm_api_base=llm_api_base,
            must_exist=not create,
            missing_hint="pass --create to start a new store there",
            schema_policy=schema_policy,
        )
    _log_to_stderr()
    try:
        with _startup_errors("mcp"):
            limits = Limits(max_content_chars=max_content_chars, max_query_chars=max_query_chars)
            server = build_server(memory, scope, search_strategy=strategy, limits=limits)
        _note_keywords(memory, strategy)
        where = f"{scope.describe()} on "
        with _warnings_logged():
            if http:
                _serve_mcp_http(server, where, host, port, token)
            else:
                _serve_mcp_stdio(server, where, db)
    finally:
        memory.close()


def _serve_mcp_stdio(server: MCPServer, where: str, db: str) -> None:
    """Run ``server`` on stdin/stdout until the client leaves."""
    # stdout carries the protocol; one line on stderr tells a person at a terminal
    # that the server is up and waiting for a client.
    typer.echo(
        f"oam {oam_version}: MCP server for {where}stdio "
        f"(store {_shown_db(db)}); waiting for a client (Ctrl-C to stop)",
        err=True,
    )
    sys.stderr.flush()
    server.run("stdio")


def _serve_mcp_http(server: MCPServer, where: str, host: str, port: int, token: str | None) -> None:
    """Run ``server`` as streamable HTTP at ``http://host:port/mcp``, every request
    checked for ``token`` (header only: a token in a URL would end up in logs)."""
    import uvicorn

    from oam_core.service.web.security import TokenMiddleware

    app = TokenMiddleware(
        server.streamable_http_app(host=host),
        token=token,
        allowed_hosts=None,
        header_only=True,
    )
    typer.echo(f"oam {oam_version}: MCP server for {where}http://{host}:{port}/mcp", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def serve(
    db: Db = "oam.db",
    embedder: Embedder = None,
    schema_policy: Policy = None,
    host: Host = "127.0.0.1",
    port: Port = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar=SERVE_TOKEN_ENV,
            help=f"Access token checked on every request (or {SERVE_TOKEN_ENV}); "
            "required when --host is not a loopback address.",
        ),
    ] = None,
    max_query_chars: Annotated[
        int,
        typer.Option(
            "--max-query-chars",
            min=1,
            help="Most characters of a search query; longer ones get the 400 page.",
        ),
    ] = DEFAULT_MAX_QUERY_CHARS,
) -> None:
    """Browse a store in a local web inspector: users, threads, messages, memories with
    their sources, search and context cards; delete a memory or a thread."""
    with _startup_errors("serve"):
        import uvicorn

        from oam_core.service.web.app import create_app
        from oam_core.service.web.security import check_bind, is_loopback

        check_bind(host, token, SERVE_TOKEN_ENV)
        app = create_app(
            db,
            embedder=_embedder(db, embedder),
            token=token,
            allowed_hosts=None if is_loopback(host) else ["*"],
            schema_policy=schema_policy,
            max_query_chars=max_query_chars,
        )
    where = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
    hint = "?token=..." if token else ""
    typer.echo(f"oam inspector for {db} on {where}{hint} (Ctrl-C to stop)", err=True)
    sys.stderr.flush()
    uvicorn.run(app, host=host, port=port, log_level="warning")


def register(app: typer.Typer) -> None:
    """Add ``oam mcp`` and ``oam serve`` to the ``oam`` command (``cli.COMMAND_MODULES``)."""
    app.command("mcp")(mcp)
    app.command("serve")(serve)
