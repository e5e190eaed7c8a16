"""Fixtures and collection rules of the LangChain / LangGraph adapter tests.

langchain-tests' standard suites write their async tests as bare ``async def``
methods, expecting pytest-asyncio's ``auto`` mode. The project runs pytest-asyncio in
its default ``strict`` mode (so nothing changes for the rest of the suite), so the
hook below marks the coroutine tests collected *in this directory only* with
``pytest.mark.asyncio``. It runs inside pytest-asyncio's own collection wrapper
(``trylast``), before that wrapper turns marked coroutines into asyncio test items.
No warning filter is needed here: the suites run clean under ``filterwarnings=error``.
``pytest_collection_modifyitems`` skips, with their reasons, the standard tests a
KEYWORD store cannot pass (``test_lc_standard.KEYWORD_SKIPS``).
"""

from __future__ import annotations

import inspect
from collections.abc import Generator, Iterator
from typing import Any

import pluggy
import pytest

from oam_core import OracleAgentMemory, SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_pycollect_makeitem(
    collector: pytest.Collector, name: str, obj: object
) -> Generator[None, pluggy.Result[Any], None]:
    outcome = yield
    result = outcome.get_result()
    items = result if isinstance(result, list) else [result]
    for item in items:
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(
            getattr(item, "obj", None)
        ):
            item.add_marker(pytest.mark.asyncio)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip the standard tests a module lists in ``KEYWORD_SKIPS``
    (``"Class::test_name" -> reason``) without overriding them (langchain-tests
    forbids overrides, ``test_no_overrides_DO_NOT_OVERRIDE``)."""
    for item in items:
        skips = getattr(getattr(item, "module", None), "KEYWORD_SKIPS", None)
        cls = getattr(item, "cls", None)
        if not skips or cls is None or not isinstance(item, pytest.Function):
            continue
        reason = skips.get(f"{cls.__name__}::{item.originalname}")
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def memory(tmp_path: Any) -> Iterator[OracleAgentMemory]:
    """A client over a real SQLite file with the fast hashing embedder, no LLM."""
    store = SQLiteMemoryStore(tmp_path / "lc.db", embedder=HashingEmbedder(64))
    client = OracleAgentMemory(store=store, extract_memories=False)
    try:
        yield client
    finally:
        client.close()
        store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def memory_both(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[OracleAgentMemory]:
    """A client over a real SQLite file, then over the tests' PostgreSQL server, with
    the hashing embedder and no LLM."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'both.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    client = OracleAgentMemory.open(url, embedder="hashing/64", extract_memories=False)
    try:
        yield client
    finally:
        client.close()
