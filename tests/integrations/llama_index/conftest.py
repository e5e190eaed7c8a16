"""Fixtures for the LlamaIndex adapter tests.

No warning filters are relaxed here: llama-index-core imports cleanly under
``filterwarnings = error`` and needs no network (its tiktoken and NLTK files ship in
the wheel under ``llama_index/core/_static``).

LlamaIndex's sync wrappers (``Memory.get``/``put``) run coroutines on
``asyncio.get_event_loop()``, which creates a loop that nobody closes; the
``event_loop`` fixture installs one per test and closes it afterwards, so no
``ResourceWarning`` for an unclosed loop surfaces in a later test.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from oam_core import OracleAgentMemory, SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder


@pytest.fixture
def event_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A fresh current event loop for LlamaIndex's sync wrappers, closed afterwards."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield loop
    finally:
        loop.close()
        asyncio.set_event_loop(None)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh SQLite file path."""
    return tmp_path / "oam.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[SQLiteMemoryStore]:
    """A real SQLite file store without embedder (nodes bring their vectors)."""
    s = SQLiteMemoryStore(db_path)
    yield s
    s.close()


@pytest.fixture
def embedded_store(db_path: Path) -> Iterator[SQLiteMemoryStore]:
    """A real SQLite file store with the fast hashing embedder."""
    s = SQLiteMemoryStore(db_path, embedder=HashingEmbedder(64))
    yield s
    s.close()


@pytest.fixture
def memory(db_path: Path) -> Iterator[OracleAgentMemory]:
    """A client over a SQLite file with the hashing embedder and no LLM."""
    m = OracleAgentMemory(
        connection=str(db_path), embedder=HashingEmbedder(64), extract_memories=False
    )
    yield m
    m.close()
