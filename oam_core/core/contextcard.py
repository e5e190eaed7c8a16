"""Reference import path ``core.contextcard`` (seed 000)."""

from oam_core.memory.contextcard import OracleContextCard

__all__ = ["OracleContextCard"]
