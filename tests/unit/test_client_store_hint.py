"""``OracleAgentMemory("oam.db")`` (a path as the first positional, which is the
reference SDK's ``store``) is refused with a hint at ``connection=`` and ``open``,
and opens nothing; a URL is not repeated (it may hold a password)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oam_core import InvalidArgumentError, OracleAgentMemory

HINT = (
    "store must be an OracleMemoryStore, got {kind}; to open a database by its path or "
    "URL, pass it as connection=... or use OracleAgentMemory.open(...)"
)


@pytest.mark.parametrize("as_path", [False, True])
def test_a_path_as_store_names_connection_and_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_path: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    given: str | Path = Path("oam.db") if as_path else "oam.db"
    with pytest.raises(InvalidArgumentError) as info:
        OracleAgentMemory(given)  # type: ignore[arg-type]
    kind = type(given).__name__
    assert str(info.value) == HINT.format(kind=kind)
    assert isinstance(info.value, ValueError)
    assert list(tmp_path.iterdir()) == []  # nothing opened or created


def test_a_url_as_store_is_not_repeated() -> None:
    url = "postgresql://app:secret@localhost:5432/agents"
    with pytest.raises(InvalidArgumentError) as info:
        OracleAgentMemory(url)  # type: ignore[arg-type]
    assert "secret" not in str(info.value)
    assert str(info.value) == HINT.format(kind="str")


def test_another_type_as_store_gets_no_hint() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        OracleAgentMemory(3)  # type: ignore[arg-type]
    assert str(info.value) == "store must be an OracleMemoryStore, got int"
