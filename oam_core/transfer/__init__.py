"""Moving memory between stores (docs/transfer.md): the oam dump (versioned JSON Lines),
``export_store``, ``import_store``, ``copy_store``, ``backup_sqlite`` and the mem0
import. Everything goes through the stores' public methods ``dump_rows``,
``dump_counts`` and ``restore_rows``, so it works the same on every back end.
"""

from __future__ import annotations

from oam_core.transfer.backup import BackupSummary, backup_sqlite
from oam_core.transfer.copy import copy_store
from oam_core.transfer.mem0 import import_mem0
from oam_core.transfer.reader import import_store
from oam_core.transfer.summary import TransferError, TransferSummary
from oam_core.transfer.writer import export_store

__all__ = [
    "BackupSummary",
    "TransferError",
    "TransferSummary",
    "backup_sqlite",
    "copy_store",
    "export_store",
    "import_mem0",
    "import_store",
]
