"""The PostgreSQL back end (pgvector + tsvector), in small modules:

- ``schema``: DDL, schema policies, the version row;
- ``filter``: metadata filters compiled to jsonb SQL;
- ``fulltext``: keyword tokens and BM25 terms;
- ``dialect``: the ``Backend``/``Tx`` contract in PostgreSQL SQL;
- ``store``: ``PostgresMemoryStore`` and its pool.

Importing this package needs the ``postgres`` extra (psycopg, psycopg_pool).
"""

from __future__ import annotations

from oam_core.store.postgres.store import PostgresMemoryStore, make_pool, open_postgres

__all__ = ["PostgresMemoryStore", "make_pool", "open_postgres"]
