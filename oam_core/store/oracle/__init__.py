"""Oracle Database 23ai back end (docs/oracle.md): ``OracleDBMemoryStore``, ``OracleDBEmbedder``.

Needs ``python-oracledb`` (``pip install 'oam[oracle]'``), imported lazily by the
modules that talk to a database.
"""

from __future__ import annotations

from oam_core.store.oracle.embedder import OracleDBEmbedder
from oam_core.store.oracle.store import OracleDBMemoryStore

__all__ = ["OracleDBEmbedder", "OracleDBMemoryStore"]
