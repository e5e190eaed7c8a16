"""Reference import path ``core.contextcard`` (Oracle's SDK; docs/concepts.md#names-and-imports)."""

from oam_core.memory.contextcard import OracleContextCard

__all__ = ["OracleContextCard"]
