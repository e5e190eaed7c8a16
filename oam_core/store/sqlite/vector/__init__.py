"""In-process vector index of the embedded store: a cache of SQLite, never the truth.

``SQLiteMemoryStore`` keeps every chunk row in SQLite. This package mirrors the
searchable ones (chunks with a vector) in memory: a float32 matrix of unit vectors
and, next to it, the columns a search filters on (record type, thread/user/agent ids
as small integer codes, expiry, the validity window, a live flag). Scope, expiry and
validity filtering is then array work, without a SQL round trip per query; metadata
filters still select candidate chunks in SQL first and are ranked from the matrix.
Documented in ``docs/sqlite.md``.

One module per job, inner ones first:

- ``ivf``: the ANN index (faiss IVF, 8-bit codes), its build and calibration;
- ``threads``: how its background threads run (faiss on one OpenMP thread);
- ``file``: the index file ``<database>.oamvec`` (format, reading, atomic writes) and
  when it is trusted;
- ``mirror``: the arrays (vectors, keys, scope and type codes, expiry, validity
  windows, live rows);
- ``ranking``: the candidate rows of a search and the nearest records among them;
- ``split``: a grown store's retrain, splitting the serving index's lists;
- ``tail``: the rows written after the ANN index took rows in, assigned to its lists
  in a background thread;
- ``saving``: writing the index file from a background thread while searches go on;
- ``loading``: filling the matrix from SQLite in a background thread after the index
  file (which holds no vector) was read;
- ``builds``: the ANN index's life (inline or background builds, recall checks,
  compaction, when the file is written);
- ``changelog``: catching the mirror up with SQLite (new rows, the change log of
  deletes and updates, the first load from the index file);
- ``feed``: the chunks a write committed, handed to the mirror by the writer;
- ``index``: ``VectorIndex``, the facade the SQLite back end uses.
"""

from __future__ import annotations

from oam_core.store.sqlite.vector.changelog import LOG_KEEP
from oam_core.store.sqlite.vector.file import FORMAT_VERSION, index_path
from oam_core.store.sqlite.vector.index import VectorIndex
from oam_core.store.sqlite.vector.ivf import BoolArray, FloatArray, IntArray

__all__ = [
    "FORMAT_VERSION",
    "LOG_KEEP",
    "BoolArray",
    "FloatArray",
    "IntArray",
    "VectorIndex",
    "index_path",
]
