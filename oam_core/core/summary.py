"""Reference import path ``core.summary`` (Oracle's SDK; docs/concepts.md#names-and-imports)."""

from oam_core.memory.summary import OracleSummary

__all__ = ["OracleSummary"]
