"""Bad arguments to the LangChain and LangGraph adapters: each is an
``InvalidArgumentError`` naming the argument and the value, raised before anything is
read or written (docs/errors.md, docs/langchain.md). Found by a fresh-user trial
(trial 48: f05, f06)."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_oam import OAMVectorStore

from oam_core.errors import InvalidArgumentError


@pytest.fixture
def vs() -> OAMVectorStore:
    return OAMVectorStore(DeterministicFakeEmbedding(size=16))


def test_a_bare_string_as_texts_or_ids_is_refused_and_nothing_is_written(
    vs: OAMVectorStore,
) -> None:
    """f05: ``add_texts("hello")`` wrote five one-letter documents."""
    with pytest.raises(
        InvalidArgumentError, match=r"^texts must be a list of texts, got the bare string 'hello'$"
    ):
        vs.add_texts("hello")
    with pytest.raises(InvalidArgumentError, match=r"^texts must be a list of texts"):
        asyncio.run(vs.aadd_texts("hello"))
    with pytest.raises(
        InvalidArgumentError, match=r"^ids must be a list of ids, got the bare string 'xyz'$"
    ):
        vs.add_texts(["a", "b", "c"], ids="xyz")  # type: ignore[arg-type]
    assert vs.store.list("memory") == []
    assert vs.add_texts(("t" for t in ["hello"]), ids=["h"]) == ["h"]  # any iterable
    assert [d.page_content for d in vs.get_by_ids(["h"])] == ["t"]


def test_ids_that_are_no_list_are_refused_as_by_delete(vs: OAMVectorStore) -> None:
    """``get_by_ids`` and ``delete`` share the one check (``checks.check_list``)."""
    vs.add_texts(["doc"], ids=["doc-7"])
    for call in (vs.get_by_ids, vs.delete):
        with pytest.raises(InvalidArgumentError, match=r"^ids must be a list of ids, got the bare"):
            call("doc-7")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"^ids must be a list of ids, got int 7$"):
        vs.get_by_ids(7)  # type: ignore[arg-type]
    assert [d.id for d in vs.get_by_ids(["doc-7"])] == ["doc-7"]
