"""Reference import path ``core.summary`` (seed 000)."""

from oam_core.memory.summary import OracleSummary

__all__ = ["OracleSummary"]
