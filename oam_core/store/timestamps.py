"""Event timestamps: the store's name for ``oam_core.apis.timestamps`` (the one
implementation, docs/store.md#timestamps)."""

from __future__ import annotations

from oam_core.apis.timestamps import normalize_timestamp, parse_timestamp

__all__ = ["normalize_timestamp", "parse_timestamp"]
