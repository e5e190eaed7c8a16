"""The upper layers' own exceptions sit in the one tree of ``oam_core.errors`` and
keep the built-in base they always had (docs/errors.md; issue 16 item 6). Each is
raised where its docs say; the store-side ones are in
``tests/conformance/test_errors.py``."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oam_core import MissingApiKeyError, OracleAgentMemory, UnknownModelError
from oam_core._litellm import missing_key_error
from oam_core.cli import CliError, app
from oam_core.errors import (
    ConfigurationError,
    InvalidArgumentError,
    LLMError,
    NotFoundError,
    OAMError,
    StoreConnectionError,
)
from oam_core.ingest import IngestError, load_conversations
from oam_core.llms.litellm import EmptyReplyError
from oam_core.memory.jsonrepair import UnusableReplyError, parse_json_reply
from oam_core.service.scope import Scope, ScopeError
from oam_core.store.backend import IdsTakenError
from oam_core.store.sqlite.openfile import StoreFileGoneError


@pytest.mark.parametrize(
    ("cls", "parents"),
    [
        (MissingApiKeyError, (LLMError, ConfigurationError, ValueError)),
        (UnknownModelError, (ConfigurationError, ValueError)),
        (EmptyReplyError, (LLMError, ValueError)),
        (UnusableReplyError, (LLMError, ValueError)),
        (IngestError, (InvalidArgumentError, ValueError)),
        (ScopeError, (NotFoundError, LookupError)),
        (CliError, (OAMError,)),
        (StoreFileGoneError, (StoreConnectionError, ConnectionError)),
        (IdsTakenError, (InvalidArgumentError, ValueError)),
    ],
)
def test_each_class_keeps_its_builtin_and_joins_the_tree(
    cls: type[Exception], parents: tuple[type[Exception], ...]
) -> None:
    assert issubclass(cls, OAMError)
    for parent in parents:
        assert issubclass(cls, parent)


def test_a_missing_api_key_is_an_llm_error_naming_the_variable() -> None:
    litellm = types.SimpleNamespace(
        validate_environment=lambda model: {"missing_keys": ["OPENAI_API_KEY"]}
    )
    found = missing_key_error(
        RuntimeError("Missing credentials. Please pass an `api_key`"),
        "openai/x",
        litellm,  # type: ignore[arg-type]
    )
    assert isinstance(found, MissingApiKeyError)
    assert isinstance(found, LLMError) and isinstance(found, ValueError)
    assert "set OPENAI_API_KEY" in str(found)


def test_an_unusable_reply_is_an_llm_error() -> None:
    with pytest.raises(LLMError) as raised:
        parse_json_reply("no json here, just prose")
    assert isinstance(raised.value, UnusableReplyError)
    assert isinstance(raised.value, ValueError)


def test_a_bad_conversation_file_is_an_invalid_argument(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(InvalidArgumentError) as raised:
        load_conversations(missing)
    assert isinstance(raised.value, IngestError) and isinstance(raised.value, ValueError)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(IngestError, match=r"bad\.jsonl"):
        load_conversations(bad)


def test_a_thread_outside_the_scope_is_not_found() -> None:
    scope = Scope(user_id="u1")
    with pytest.raises(NotFoundError) as raised:
        scope.thread(None, "t9")
    assert isinstance(raised.value, ScopeError) and isinstance(raised.value, LookupError)
    assert str(raised.value).startswith("no thread 't9'")


def test_cli_errors_are_one_line_with_their_exit_code(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["ingest", str(tmp_path / "nope.jsonl")])
    assert result.exit_code == 2
    assert (
        result.output.strip().splitlines()[-1] == f"Error: {tmp_path / 'nope.jsonl'}: no such file"
    )


def test_extraction_without_an_llm_is_a_configuration_error() -> None:
    with OracleAgentMemory(connection=":memory:") as client:
        with pytest.raises(ConfigurationError, match="needs an LLM") as raised:
            client.create_thread(thread_id="t1")
        assert isinstance(raised.value, ValueError)
        assert client.get_thread_row("t1") is None  # nothing written
