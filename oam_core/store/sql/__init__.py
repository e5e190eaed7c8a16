"""The SQL layer that the SQLite and PostgreSQL back ends share:

- ``dialect``: ``Dialect``, what differs between them, and the driver-error boundary;
- ``statements``: every shared statement as a pure function returning a ``Stmt``;
- ``backend``: the ``Backend``/``Tx`` primitives over those statements;
- ``schema``: the shared tables in each back end's column types;
- ``filter``: the base of the metadata-filter compilers;
- ``rows``: row decoding;
- ``store``: the open-time configuration checks of both stores.

Each back end keeps what is its own (connections, vector and full-text ranking, the
insert path) in ``store/sqlite`` and ``store/postgres``; see docs/store.md#schema.
"""
