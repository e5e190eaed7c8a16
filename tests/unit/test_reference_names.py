"""Names the reference SDK's pages use are importable where they use them (issue 14, 8)."""

from __future__ import annotations


def test_not_set_marker_is_the_not_set_sentinel() -> None:
    import oam_core
    from oam_core.apis._sentinel import NOT_SET
    from oam_core.core.retention import NOT_SET_MARKER, MemoryRetentionConfig

    assert NOT_SET_MARKER is NOT_SET is oam_core.NOT_SET_MARKER is oam_core.NOT_SET
    config = MemoryRetentionConfig(default_ttl_days=NOT_SET_MARKER, max_ttl_days=NOT_SET_MARKER)
    assert (config.default_ttl_days, config.max_ttl_days) == (None, None)
    assert "NOT_SET_MARKER" in oam_core.__all__


# -- the public surface (docs/concepts.md#names-and-imports) ---------------------------------------

REFERENCE_NAMES = {
    "OracleAgentMemory",
    "OracleThread",
    "OracleMemoryStore",
    "OracleDBMemoryStore",
    "OracleContextCard",
    "OracleSummary",
    "SearchStrategy",
    "SearchIndexSyncMode",
    "SchemaPolicy",
    "MemoryRetentionConfig",
    "TimeToLiveAnchor",
    "PendingRecordBatch",
    "Message",
    "Record",
    "MessageRecord",
    "ContextCard",
    "Summary",
    "IEmbedder",
    "ILlm",
    "IThread",
    "IAgentMemory",
    "IMemoryStore",
    "OracleDBEmbedder",
    "MemoryExtractionConfig",
    "MemoryExtractionMode",
    "NOT_SET",
}
"""Every name of the reference SDK's pages, importable from ``oam_core``."""

OAM_EXTRAS = {
    "NOT_SET_MARKER",
    "SQLiteMemoryStore",
    "PostgresMemoryStore",
    "MemoryPipelineWarning",
    "export_store",
    "import_store",
    "copy_store",
    "TransferSummary",
}
"""oam additions (docs/concepts.md#names-and-imports): the embedded and PostgreSQL stores, the sentinel alias, the
pipeline's warning category, moving memory between stores (docs/transfer.md)."""

ERRORS = {
    "OAMError",
    "InvalidArgumentError",
    "InvalidFilterError",
    "ConfigurationError",
    "SchemaError",
    "EmbedderMismatchError",
    "NotFoundError",
    "ThreadDeletedError",
    "StoreError",
    "StoreConnectionError",
    "StoreClosedError",
    "DatabaseLockedError",
    "LLMError",
    "MissingApiKeyError",
    "UnknownModelError",
    "ClientClosedError",
    "UnusableEmbeddingsError",
}
"""The exception tree of ``oam_core.errors`` (docs/errors.md)."""


def test_the_public_surface_is_exactly_the_pinned_one() -> None:
    import oam_core
    import oam_core.errors

    assert set(oam_core.__all__) == REFERENCE_NAMES | OAM_EXTRAS | ERRORS
    assert len(oam_core.__all__) == len(set(oam_core.__all__))
    assert set(oam_core.errors.__all__) == ERRORS
    for name in oam_core.__all__:
        assert getattr(oam_core, name) is not None, name
    assert set(dir(oam_core)) >= set(oam_core.__all__)


def test_the_errors_are_one_tree_and_keep_the_reference_builtins() -> None:
    import oam_core

    for name in ERRORS:
        assert issubclass(getattr(oam_core, name), oam_core.OAMError), name
    builtin = {
        "InvalidArgumentError": ValueError,
        "InvalidFilterError": ValueError,
        "ConfigurationError": ValueError,
        "SchemaError": ValueError,
        "EmbedderMismatchError": ValueError,
        "NotFoundError": KeyError,
        "ThreadDeletedError": ValueError,
        "StoreConnectionError": ConnectionError,
        "DatabaseLockedError": TimeoutError,
        "LLMError": RuntimeError,
        "ClientClosedError": ValueError,
        "UnusableEmbeddingsError": ValueError,
        "StoreClosedError": ValueError,
        "MissingApiKeyError": ValueError,
        "UnknownModelError": ValueError,
    }
    for name, base in builtin.items():
        assert issubclass(getattr(oam_core, name), base), name


def test_the_reference_module_paths_hold_their_names() -> None:
    import oam_core
    from oam_core import apis, core
    from oam_core.apis import (
        batch,
        contextcard,
        embedder,
        llm,
        memory,
        records,
        store,
        summary,
        thread,
        ttl,
    )
    from oam_core.core import contextcard as core_card
    from oam_core.core import dbsearch, retention
    from oam_core.core import summary as core_summary

    assert thread.Message is oam_core.Message and thread.IThread is oam_core.IThread
    assert contextcard.ContextCard is oam_core.ContextCard
    assert summary.Summary is oam_core.Summary
    assert ttl.TimeToLiveAnchor is oam_core.TimeToLiveAnchor
    assert batch.PendingRecordBatch is oam_core.PendingRecordBatch
    assert records.Record is oam_core.Record and records.MessageRecord is oam_core.MessageRecord
    assert embedder.IEmbedder is oam_core.IEmbedder and llm.ILlm is oam_core.ILlm
    assert memory.IAgentMemory is oam_core.IAgentMemory
    assert store.IMemoryStore is oam_core.IMemoryStore
    assert dbsearch.SearchStrategy is oam_core.SearchStrategy
    assert dbsearch.SearchIndexSyncMode is oam_core.SearchIndexSyncMode
    assert retention.MemoryRetentionConfig is oam_core.MemoryRetentionConfig
    assert core_card.OracleContextCard is oam_core.OracleContextCard
    assert core_summary.OracleSummary is oam_core.OracleSummary
    assert set(core.__all__) == {
        "MemoryExtractionConfig",
        "MemoryExtractionMode",
        "MemoryRetentionConfig",
        "OracleAgentMemory",
        "OracleDBEmbedder",
        "OracleDBMemoryStore",
        "OracleMemoryStore",
        "OracleThread",
        "SQLiteMemoryStore",
        "SchemaPolicy",
        "SearchIndexSyncMode",
        "SearchStrategy",
    }
    for name in core.__all__:
        assert getattr(core, name) is getattr(oam_core, name), name
    assert apis.__name__ == "oam_core.apis"


def test_the_store_back_ends_keep_their_public_import_paths() -> None:
    import oam_core
    from oam_core.store.postgres import PostgresMemoryStore
    from oam_core.store.sqlite import SQLiteMemoryStore

    assert SQLiteMemoryStore is oam_core.SQLiteMemoryStore
    assert PostgresMemoryStore is oam_core.PostgresMemoryStore
    assert issubclass(SQLiteMemoryStore, oam_core.OracleMemoryStore)
