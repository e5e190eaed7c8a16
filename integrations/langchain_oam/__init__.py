"""LangChain and LangGraph adapters for ``oam`` (issue 4): thin layers
over the public core API, with no storage logic of their own.

- ``OAMChatMessageHistory``: a ``BaseChatMessageHistory`` over an ``OracleThread``.
- ``OAMVectorStore``: a ``VectorStore`` over an ``OracleMemoryStore``.
- ``OAMRetriever``: a ``BaseRetriever`` over a client or store.
- ``OAMStore``: a LangGraph ``BaseStore`` (long-term memory across threads).
- ``LangChainEmbedder`` / ``OAMEmbeddings``: embedding wrappers both ways.

Installed by ``pip install "oam[langchain]"``; user guide in ``docs/langchain.md``.
"""

from __future__ import annotations

from langchain_oam._dropped import DroppedHistoryWriteError
from langchain_oam.chat_history import OAMChatMessageHistory
from langchain_oam.embeddings import LangChainEmbedder, OAMEmbeddings
from langchain_oam.retrievers import OAMRetriever
from langchain_oam.store import OAMStore
from langchain_oam.vectorstores import OAMVectorStore

__all__ = [
    "DroppedHistoryWriteError",
    "LangChainEmbedder",
    "OAMChatMessageHistory",
    "OAMEmbeddings",
    "OAMRetriever",
    "OAMStore",
    "OAMVectorStore",
]
