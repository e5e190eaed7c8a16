"""Conformance: an error names the call that was made and gives advice that call can
follow (docs/errors.md)."""

from __future__ import annotations

from typing import Any

import pytest

from oam_core import OracleAgentMemory
from oam_core.errors import InvalidArgumentError


@pytest.mark.parametrize(
    ("call", "method"),
    [
        (lambda s: s.add(["x"], "thread"), "add"),
        (lambda s: s.update("thread", "t1", text="x"), "update"),
        (lambda s: s.delete_records("thread", ["t1"]), "delete_records"),
    ],
)
def test_a_thread_record_names_the_method_called(store: Any, call: Any, method: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        call(store)
    assert str(err.value).startswith(
        f"record_type 'thread' cannot be written with {method}(); create a thread"
    )


@pytest.mark.parametrize("name", ["get_thread", "delete_thread"])
def test_an_id_that_must_exist_gives_no_advice_to_omit_it(name: str) -> None:
    with OracleAgentMemory(
        connection=":memory:", embedder="hashing/64", extract_memories=False
    ) as memory:
        with pytest.raises(InvalidArgumentError) as err:
            getattr(memory, name)(None)
        assert str(err.value) == "thread_id must be a non-empty str, got None"
        with pytest.raises(InvalidArgumentError, match="user_id must be a non-empty str \\(omit"):
            memory.create_thread(user_id=None)  # there, omitting it generates one
