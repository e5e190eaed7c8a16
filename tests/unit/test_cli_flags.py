"""The command line shows library messages with its own flags (docs/cli.md): one table,
``clicommon.FLAGS``, maps each library argument to its flag, and every flag it names
is an option of an ``oam`` command."""

from __future__ import annotations

import pytest
import typer
from typer.core import TyperGroup, TyperOption

from oam_core.cli import app
from oam_core.clicommon import FLAGS, PHRASES, cli_words

CASES = [
    # (library message, what the command line prints)
    (
        "dimension 16; allow_embedder_change=True does not cover another dimension",
        "dimension 16; --allow-embedder-change does not cover another dimension",
    ),
    (
        "open it with the same embedder (CLI: --embedder hashing/16), or pass "
        "allow_embedder_change=True if the two produce the same vectors",
        "open it with the same embedder (CLI: --embedder hashing/16), or pass "
        "--allow-embedder-change if the two produce the same vectors",
    ),
    (
        "schema_policy=REQUIRE_EXISTING, but no database exists at 'x.db'",
        "--schema-policy require_existing, but no database exists at 'x.db'",
    ),
    (
        "schema_policy=RECREATE is not supported by the embedded SQLite store",
        "--schema-policy recreate is not supported by the embedded SQLite store",
    ),
    (  # the Oracle store names the enum; earlier releases printed "--schema-policy s"
        "open it with schema_policy=SchemaPolicy.CREATE_IF_EMPTY or CREATE_IF_NECESSARY "
        "to create it",
        "open it with --schema-policy create_if_empty or create_if_necessary to create it",
    ),
    (
        "has none (embedder=None): configure one, pass query_vector, or use "
        "search_strategy=KEYWORD",
        "has none (embedder=None): pass --embedder (e.g. local), or use --strategy keyword",
    ),
    (
        "search_strategy=HYBRID ranks text with an embedder, and there is none "
        "(embedder=None): configure one, or use search_strategy=KEYWORD",
        "--strategy hybrid ranks text with an embedder, and there is none "
        "(--embedder none): pass --embedder (e.g. local), or use --strategy keyword",
    ),
    (
        "reopen it with search_strategy=HYBRID to search by HYBRID",
        "reopen it with --strategy hybrid to search by HYBRID",
    ),
    (
        "VECTOR search finds them not at all until store.reindex() (CLI: oam reindex) embeds them",
        "VECTOR search finds them not at all until `oam reindex` embeds them",
    ),
    (
        "record 'm1' exists; pass on_conflict='skip' or 'replace'",
        "record 'm1' exists; pass --on-conflict skip or replace",
    ),
    (
        "pass reembed=True to embed the text again with the target's embedder",
        "pass --reembed to embed the text again with the target's embedder",
    ),
    (
        "destination: 'b.db' exists; pass overwrite=True (CLI: --overwrite)",
        "destination: 'b.db' exists; pass --overwrite",
    ),
    (
        "no library argument here: schema=1, policy=X",
        "no library argument here: schema=1, policy=X",
    ),
    ("my_schema_policy=X stays", "my_schema_policy=X stays"),
    (
        "got valid_from=2026-01-01T00:00:00+00:00 and valid_until=2025-01-01T00:00:00+00:00",
        "got --valid-from 2026-01-01T00:00:00+00:00 and --valid-until 2025-01-01T00:00:00+00:00",
    ),
]


@pytest.mark.parametrize(("message", "shown"), CASES)
def test_library_words_are_spelled_as_flags(message: str, shown: str) -> None:
    assert cli_words(message) == shown


def test_only_the_commands_own_arguments_are_spelled_as_flags() -> None:
    """A dump field (``valid_from`` of a record oam import reads) is not a flag of
    ``oam import``: it stays as the library wrote it."""
    message = (
        "record 'home-1': valid_until must be later than valid_from, got "
        "valid_from=2026-01-01T00:00:00+00:00 and valid_until=2025-01-01T00:00:00+00:00; "
        "pass on_conflict='skip' or 'replace'"
    )
    assert cli_words(message, {"on_conflict", "reembed"}) == message.replace(
        "on_conflict='skip' or 'replace'", "--on-conflict skip or replace"
    )


def _options() -> set[str]:
    """Every option of every ``oam`` command, subcommands (``oam memories ...``) too."""
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    names: set[str] = set()
    commands = list(group.commands.values())
    while commands:
        command = commands.pop()
        if isinstance(command, TyperGroup):
            commands.extend(command.commands.values())
        for param in command.params:
            if isinstance(param, TyperOption):
                names.update(param.opts)
    return names


def test_every_flag_of_the_table_is_an_option() -> None:
    options = _options()
    named = set(FLAGS.values()) | {
        word.strip("(),`") for cli in PHRASES.values() for word in cli.split() if "--" in word
    }
    assert named - options == set()
    assert {"--allow-embedder-change", "--schema-policy", "--strategy"} <= named
