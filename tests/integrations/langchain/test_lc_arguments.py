"""Bad arguments to the LangChain and LangGraph adapters: each is an
``InvalidArgumentError`` naming the argument and the value, raised before anything is
read or written (docs/errors.md, docs/langchain.md). Found by a fresh-user trial
(trial 48: f05, f06)."""

from __future__ import annotations

import asyncio
import re

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_oam import OAMRetriever, OAMStore, OAMVectorStore
from langgraph.store.memory import InMemoryStore

from oam_core import OracleAgentMemory
from oam_core.errors import InvalidArgumentError, InvalidFilterError


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


def test_add_documents_names_an_entry_that_is_no_document(vs: OAMVectorStore) -> None:
    """f06: ``add_documents(["text"])`` was an AttributeError."""
    good = Document(page_content="ok", id="g")
    for call in (vs.add_documents, lambda d: asyncio.run(vs.aadd_documents(d))):
        with pytest.raises(
            InvalidArgumentError, match=r"^documents\[1\] must be a Document, got 'text'$"
        ):
            call([good, "text"])
    with pytest.raises(InvalidArgumentError, match=r"^documents must be a list of Document"):
        vs.add_documents("text")  # type: ignore[arg-type]
    assert vs.store.list("memory") == []
    assert vs.add_documents([good]) == ["g"]
    assert vs.add_documents([good], ids=["other"]) == ["other"]


def test_get_by_ids_none_is_named(vs: OAMVectorStore) -> None:
    """f06: ``get_by_ids(None)`` was a TypeError ('NoneType' object is not iterable)."""
    with pytest.raises(InvalidArgumentError, match=r"^ids must be a list of ids, got None$"):
        vs.get_by_ids(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"^ids must be a list of ids, got None$"):
        asyncio.run(vs.aget_by_ids(None))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["0.5", 7, -1.5, True, float("nan")])
def test_a_score_threshold_per_call_is_checked_as_at_construction(
    memory: OracleAgentMemory, bad: object
) -> None:
    """f06: ``"0.5"`` was a TypeError, and the retriever's per-call ``7`` returned []
    though its constructor refuses it (relevance lies in [-1, 1])."""
    named = rf"^score_threshold must be a number in \[-1, 1\] or None, got {re.escape(repr(bad))}$"
    vs = OAMVectorStore(DeterministicFakeEmbedding(size=16), store=memory.store)
    vs.add_texts(["Alice's dog is Biscuit"], ids=["a"])
    with pytest.raises(InvalidArgumentError, match=named):
        vs.similarity_search_with_relevance_scores("dog", score_threshold=bad)
    with pytest.raises(InvalidArgumentError, match=named):
        asyncio.run(vs.asimilarity_search_with_relevance_scores("dog", score_threshold=bad))
    retriever = OAMRetriever(memory, search_type="similarity_score_threshold", score_threshold=0.0)
    with pytest.raises(InvalidArgumentError, match=named):
        retriever.invoke("dog", score_threshold=bad)
    if isinstance(bad, float):  # langchain-core's retriever refuses other kinds itself
        lc_retriever = vs.as_retriever(
            search_type="similarity_score_threshold", search_kwargs={"score_threshold": bad}
        )
        with pytest.raises(InvalidArgumentError, match=named):
            lc_retriever.invoke("dog")
    with pytest.raises(ValueError, match="score_threshold"):  # the constructor's own check
        OAMRetriever(memory, search_type="similarity_score_threshold", score_threshold=bad)
    assert [d.id for d in retriever.invoke("Alice's dog is Biscuit", score_threshold=1)] == ["a"]
    hits = vs.similarity_search_with_relevance_scores("Alice's dog is Biscuit", score_threshold=1)
    assert [d.id for d, _ in hits] == ["a"]


@pytest.fixture
def lg(memory: OracleAgentMemory) -> OAMStore:
    store = OAMStore(memory)
    store.put(("a", "b"), "k", {"text": "x", "v": 1})
    return store


def test_langgraph_search_and_listing_arguments_are_named(lg: OAMStore) -> None:
    """f06: ``query=5`` was an AttributeError, ``max_depth="1"`` a TypeError and
    ``max_depth=-1`` cut ``("a", "b")`` to ``("a",)`` by a negative slice."""
    with pytest.raises(InvalidArgumentError, match=r"^query must be a str or None, got 5$"):
        lg.search(("a",), query=5)  # type: ignore[arg-type]
    for bad in [-1, "1", 1.0]:
        with pytest.raises(
            InvalidArgumentError, match=rf"^max_depth must be an int >= 0 or None, got {bad!r}$"
        ):
            lg.list_namespaces(max_depth=bad)  # type: ignore[arg-type]
    reference = InMemoryStore()
    reference.put(("a", "b"), "k", {"text": "x", "v": 1})
    for depth in [None, 0, 1, 2]:
        got = lg.list_namespaces(max_depth=depth)
        assert (
            got
            == reference.list_namespaces(max_depth=depth)
            == ([("a", "b")[:depth]] if depth is not None else [("a", "b")])
        )


def test_langgraph_filter_errors_name_the_callers_filter(lg: OAMStore) -> None:
    """f06: the error named the store's layout, ``metadata_filter['value']['v']``."""
    with pytest.raises(InvalidFilterError, match=r"^filter\['v'\]\.\$bogus: unknown operator"):
        lg.search(("a",), filter={"v": {"$bogus": 1}})
    with pytest.raises(InvalidArgumentError, match=r"^filter\['v'\] contains a NUL"):
        lg.search(("a",), filter={"v": "a\x00b"})
    with pytest.raises(InvalidFilterError, match=r"^filter\.\$or: \$or needs a non-empty list"):
        lg.search(("a",), filter={"$or": []})
    assert [i.key for i in lg.search(("a",), filter={"v": {"$gt": 0}})] == ["k"]
    vs = OAMVectorStore(DeterministicFakeEmbedding(size=16))
    with pytest.raises(InvalidFilterError, match=r"^filter\['v'\]\.\$bogus: unknown operator"):
        vs.similarity_search("x", filter={"v": {"$bogus": 1}})


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ({"v": float("nan")}, r"^value\['v'\]: nan is not a JSON number$"),
        ({"v": {"w": [1, float("inf")]}}, r"^value\['v'\]: inf is not a JSON number$"),
        ({"v": 2**70}, r"^value\['v'\]: integer 1180591620717411303424 does not fit"),
        ({"a\x00": 1}, r"^value key 'a\\x00' contains a NUL"),
    ],
)
def test_langgraph_put_names_the_key_of_a_value_json_cannot_hold(
    lg: OAMStore, value: dict[str, object], named: str
) -> None:
    """f06: a NaN was ``value is not JSON-serializable: Out of range float values ...``
    without its key, where a NUL is named by its path."""
    with pytest.raises(InvalidArgumentError, match=named):
        lg.put(("a",), "n", value)
    assert lg.get(("a",), "n") is None
