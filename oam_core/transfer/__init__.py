"""Moving memory between stores (docs/transfer.md): the oam dump (versioned JSON Lines),
``export_store``, ``import_store``, ``copy_store``, ``backup_sqlite`` and the mem0
import. Everything goes through the stores' public methods ``dump_rows``,
``dump_counts`` and ``restore_rows``, so it works the same on every back end.
"""

from __future__ import annotations

from oam_core.transfer.copy import copy_store
from oam_core.transfer.reader import import_store
from oam_core.transfer.summary import TransferError, TransferSummary
from oam_core.transfer.writer import export_store

__all__ = ["TransferError", "TransferSummary", "copy_store", "export_store", "import_store"]
