"""llama_index_oam: LlamaIndex adapters over the public ``oam_core`` API.

* ``OAMVectorStore``: a ``BasePydanticVectorStore`` over an ``OracleMemoryStore``.
* ``OAMChatStore``: a ``BaseChatStore`` (``ChatMemoryBuffer``) over ``oam`` threads.
* ``OAMDBChatStore``: an ``AsyncDBChatStore`` keeping ``Memory``'s short-term queue in
  ``oam`` threads.
* ``OAMMemoryBlock``: a ``Memory`` block that stores flushed messages in the session's
  thread and returns its context card.
* ``OAMEmbedding``: an ``oam`` embedder as a LlamaIndex embedding model.

Installed by the ``llamaindex`` extra (``pip install "oam[llamaindex]"``).
"""

from __future__ import annotations

from llama_index_oam.chat_store import OAMChatStore, OAMDBChatStore
from llama_index_oam.embedding import OAMEmbedding
from llama_index_oam.filters import UnsupportedFilterError
from llama_index_oam.memory_block import OAMMemoryBlock
from llama_index_oam.vector_store import OAMVectorStore

__all__ = [
    "OAMChatStore",
    "OAMDBChatStore",
    "OAMEmbedding",
    "OAMMemoryBlock",
    "OAMVectorStore",
    "UnsupportedFilterError",
]
