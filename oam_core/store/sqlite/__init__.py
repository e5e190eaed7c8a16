"""The embedded SQLite back end (stdlib ``sqlite3``, WAL, FTS5), in small modules:

- ``schema``: DDL, versions and upgrades of a store file;
- ``filter``: metadata filters compiled to SQLite JSON SQL;
- ``dialect``: the ``Dialect`` of the shared SQL layer and the ``sqlite3`` error map;
- ``keyword``: FTS5 BM25 keyword ranking;
- ``backend``: the ``Backend``/``Tx`` contract (connection, vector mirror, inserts);
- ``vector``: the in-process vector index (a package, one module per job);
- ``store``: ``SQLiteMemoryStore``.

See docs/sqlite.md.
"""

from __future__ import annotations

from oam_core.store.sqlite.store import SQLiteMemoryStore

__all__ = ["SQLiteMemoryStore"]
