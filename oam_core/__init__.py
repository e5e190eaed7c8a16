"""oam: open agent memory, API-compatible with Oracle's Agent Memory SDK
(docs/concepts.md#names-and-imports).

Everything public is importable from here: the reference SDK's names, the extra
stores, and the exception tree (docs/errors.md); the reference module paths are
mirrored under ``oam_core.core`` and ``oam_core.apis``. ``__all__`` is pinned by
``tests/unit/test_reference_names.py``.
"""

from __future__ import annotations

import logging

from oam_core._lazy import lazy_attributes
from oam_core.apis._sentinel import NOT_SET, NOT_SET_MARKER
from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.contextcard import ContextCard
from oam_core.apis.embedder import IEmbedder
from oam_core.apis.llm import ILlm
from oam_core.apis.memory import IAgentMemory
from oam_core.apis.records import MessageRecord, Record
from oam_core.apis.store import IMemoryStore
from oam_core.apis.summary import Summary
from oam_core.apis.thread import IThread, Message
from oam_core.apis.ttl import TimeToLiveAnchor
from oam_core.errors import (
    ClientClosedError,
    ConfigurationError,
    DatabaseLockedError,
    EmbedderMismatchError,
    InvalidArgumentError,
    InvalidFilterError,
    LLMError,
    MissingApiKeyError,
    NotFoundError,
    OAMError,
    SchemaError,
    StoreClosedError,
    StoreConnectionError,
    StoreError,
    ThreadDeletedError,
    UnknownModelError,
    UnusableEmbeddingsError,
)
from oam_core.memory.client import OracleAgentMemory
from oam_core.memory.config import MemoryExtractionConfig, MemoryExtractionMode
from oam_core.memory.contextcard import OracleContextCard
from oam_core.memory.diagnostics import MemoryPipelineWarning
from oam_core.memory.summary import OracleSummary
from oam_core.memory.thread import OracleThread
from oam_core.store.base import OracleMemoryStore
from oam_core.store.options import (
    MemoryRetentionConfig,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
)
from oam_core.store.sqlite import SQLiteMemoryStore

__version__ = "0.1.0"

# A library's logger stays silent until the application configures logging: without
# this, Python's last-resort handler would print every pipeline warning a second time.
logging.getLogger("oam").addHandler(logging.NullHandler())

_LAZY = {
    "PostgresMemoryStore": "oam_core.store.postgres",
    "OracleDBMemoryStore": "oam_core.store.oracle",
    "OracleDBEmbedder": "oam_core.store.oracle",
    "export_store": "oam_core.transfer",
    "import_store": "oam_core.transfer",
    "copy_store": "oam_core.transfer",
    "TransferSummary": "oam_core.transfer",
}
"""Exports imported on first use, so the server drivers stay optional extras."""
_EXTRAS = {
    "PostgresMemoryStore": "postgres",
    "OracleDBMemoryStore": "oracle",
    "OracleDBEmbedder": "oracle",
}

__all__ = [
    "NOT_SET",
    "NOT_SET_MARKER",
    "ClientClosedError",
    "ConfigurationError",
    "ContextCard",
    "DatabaseLockedError",
    "EmbedderMismatchError",
    "IAgentMemory",
    "IEmbedder",
    "ILlm",
    "IMemoryStore",
    "IThread",
    "InvalidArgumentError",
    "InvalidFilterError",
    "LLMError",
    "MemoryExtractionConfig",
    "MemoryExtractionMode",
    "MemoryPipelineWarning",
    "MemoryRetentionConfig",
    "Message",
    "MessageRecord",
    "MissingApiKeyError",
    "NotFoundError",
    "OAMError",
    "OracleAgentMemory",
    "OracleContextCard",
    "OracleDBEmbedder",
    "OracleDBMemoryStore",
    "OracleMemoryStore",
    "OracleSummary",
    "OracleThread",
    "PendingRecordBatch",
    "PostgresMemoryStore",
    "Record",
    "SQLiteMemoryStore",
    "SchemaError",
    "SchemaPolicy",
    "SearchIndexSyncMode",
    "SearchStrategy",
    "StoreClosedError",
    "StoreConnectionError",
    "StoreError",
    "Summary",
    "ThreadDeletedError",
    "TimeToLiveAnchor",
    "TransferSummary",
    "UnknownModelError",
    "UnusableEmbeddingsError",
    "copy_store",
    "export_store",
    "import_store",
]

__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__, extras=_EXTRAS)
