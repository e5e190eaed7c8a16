"""What ``SQLiteMemoryStore`` and ``PostgresMemoryStore`` share when they open: the
configuration stored in ``oam_meta`` (docs/store.md#schema).

At open a store reads the stored rows, checks its embedder and vector dimension
against them (``EmbedderMismatchError``, ``SchemaError``), takes the stored strategy
and retention config where the caller gave none, and writes back what changed.
"""

from __future__ import annotations

import json
from dataclasses import asdict

from oam_core.errors import SchemaError
from oam_core.store.base import OracleMemoryStore
from oam_core.store.identity import META_KEY as IDENTITY_META_KEY
from oam_core.store.identity import reopen_hint
from oam_core.store.options import MemoryRetentionConfig, SearchStrategy


class SqlMemoryStore(OracleMemoryStore):
    """``OracleMemoryStore`` with the open-time configuration checks of the SQL back
    ends (constructor arguments: see ``OracleMemoryStore``)."""

    def _adopt_config(
        self,
        meta: dict[str, str],
        where: str,
        *,
        strategy_given: bool,
        retention: MemoryRetentionConfig | None,
    ) -> None:
        """Check the store against the stored configuration ``meta`` and adopt what
        the caller left open.

        Args:
            meta: The ``oam_meta`` rows.
            where: Names the database in error messages.
            strategy_given: The caller chose a search strategy (else the stored one
                is used).
            retention: The caller's retention config (None: the stored one is used).

        Raises:
            EmbedderMismatchError: (a ValueError) when the store's embedder is not the
                recorded one (docs/store.md#embedder-identity).
            SchemaError: (a ValueError) when the stored vector dimension differs
                from the store's.
        """
        self.runtime.adopt_identity(meta.get(IDENTITY_META_KEY), where)
        stored_dim = meta.get("vector_dim")
        if stored_dim is not None:
            if self.vector_dim is not None and int(stored_dim) != self.vector_dim:
                recorded = self.embedder_identity
                given = (
                    f"embedder {self.embedder.embedder_id!r} of dimension {self.vector_dim}"
                    if self.embedder is not None
                    else f"dimension {self.vector_dim}"
                )
                message = (
                    f"{where} records vector dimension {stored_dim} and no embedder yet, "
                    f"but this store was opened with {given}; open it with an embedder "
                    f"of dimension {stored_dim}"
                )
                if recorded is not None:  # no embedder, or allow_embedder_change
                    allowed = self.embedder is not None and self.runtime.identity.allow_change
                    message = (
                        f"{where} stores vectors of dimension {stored_dim} written by "
                        f"embedder {recorded.embedder_id!r}, but this store was opened with "
                        + (given if self.embedder is not None else f"vector_dim={self.vector_dim}")
                        + (
                            "; allow_embedder_change=True does not cover another dimension"
                            if allowed
                            else ""
                        )
                        + ": open it with the recorded embedder "
                        + reopen_hint(recorded.embedder_id)
                        + ("" if self.embedder is not None else f" or vector_dim={stored_dim}")
                    )
                raise SchemaError(message)
            self.vector_dim = int(stored_dim)
        if not strategy_given and "search_strategy" in meta:
            self.search_strategy = SearchStrategy.parse(meta["search_strategy"])
        if retention is None and "retention" in meta:
            self.memory_retention_config = MemoryRetentionConfig(**json.loads(meta["retention"]))

    def _learn_dim_later(self, meta: dict[str, str], holds_records: bool) -> None:
        """Leave the vector dimension to the first vector written when the storage
        records none yet but already holds records (written without an embedder):
        opening it with an embedder, for a search say, records nothing, so
        ``reindex`` with another embedder stays possible (docs/store.md#schema). A
        new, empty store records the dimension it is opened with."""
        if "vector_dim" not in meta and self.vector_dim is not None and holds_records:
            self.vector_dim = None

    def _config_meta(self, schema_version: int) -> dict[str, str]:
        """The ``oam_meta`` rows that record this store's configuration."""
        return {
            "schema_version": str(schema_version),
            "search_strategy": self.search_strategy.value,
            "retention": json.dumps(asdict(self.memory_retention_config)),
        }
