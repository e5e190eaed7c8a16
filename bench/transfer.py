"""Rates and peak memory of moving memory between stores (docs/transfer.md).

Usage: ``python bench/transfer.py --records 100000 [--dim 384] [--pg] [--out FILE]``.

Every phase runs in a child process of its own, so its peak RSS (``ru_maxrss``) is its
own: a bulk ``add`` of N fact records with precomputed vectors into SQLite file A (in
calls of 10,000 records, the store's own bulk path); ``export_store`` A -> a
``.jsonl`` dump; ``import_store`` dump -> a new SQLite file B; ``copy_store`` A -> a new
SQLite file C; with ``--pg``, a store of ``--pg-records`` records copied SQLite ->
PostgreSQL (the tests' ``pgserver``) -> SQLite D, whose dump must equal the first
one's apart from the header's time. Prints
one JSON report: records/s per phase, the import/add ratio (of the rates, and of the
CPU seconds of the add and import calls, ``import_vs_add_cpu``), peak RSS in MB
(``ru_maxrss``, which counts the database pages SQLite reads through its memory map),
peak anonymous memory in MB (the process's own heap and arrays, what a USS counts
but shared libraries; ``AnonPeak``) and peak file-backed resident memory (mapped
files and libraries), and the 1-minute load average at the start and end of each
phase (the machine is shared). ``--skip-copy``
leaves out the copies.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 10_000
WORDS = [
    "lisbon",
    "berlin",
    "coffee",
    "tea",
    "dog",
    "cat",
    "piano",
    "violin",
    "train",
    "plane",
    "rust",
    "python",
]


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class AnonPeak:
    """The peak of the process's anonymous memory (``RssAnon`` of /proc/self/status,
    sampled every 20 ms): its own heap and arrays, without the pages of the database
    file that SQLite reads through its memory map (docs/sqlite.md), which
    ``ru_maxrss`` counts although they are the file's page cache."""

    def __init__(self) -> None:
        import threading

        self.peak_kb = 0
        self.peak_file_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))
                    elif line.startswith("RssFile:"):
                        self.peak_file_kb = max(self.peak_file_kb, int(line.split()[1]))
        except OSError:
            pass

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self._sample()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        self._sample()
        return self.peak_kb / 1024


def _store(path: str, dim: int) -> Any:
    from oam_core import SQLiteMemoryStore

    return SQLiteMemoryStore(path, vector_dim=dim)


def phase_add(path: str, n: int, dim: int) -> dict[str, Any]:
    import numpy as np

    store = _store(path, dim)
    rng = np.random.default_rng(7)
    seconds = cpu = 0.0
    for start in range(0, n, CHUNK):
        size = min(CHUNK, n - start)
        vectors = rng.standard_normal((size, dim), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        texts = [
            f"record {start + i} {WORDS[(start + i) % 12]} {WORDS[(start + i) % 7]}"
            for i in range(size)
        ]
        users = [f"user-{(start + i) % 100}" for i in range(size)]
        began, began_cpu = time.perf_counter(), time.process_time()
        store.add(texts, "fact", embeddings=vectors, user_ids=users)
        seconds += time.perf_counter() - began
        cpu += time.process_time() - began_cpu
    store.close()
    return {"seconds": seconds, "records_per_s": n / seconds, "cpu_seconds": cpu}


def phase_export(path: str, dump: str, dim: int) -> dict[str, Any]:
    from oam_core import export_store

    store = _store(path, dim)
    summary = export_store(store, dump)
    store.close()
    return {
        "seconds": summary.seconds,
        "records_per_s": summary.total / summary.seconds,
        "bytes": os.path.getsize(dump),
    }


def phase_import(
    dump: str, path: str, dim: int, batch_rows: int = 0, on_conflict: str = "error"
) -> dict[str, Any]:
    from oam_core import import_store

    store = _store(path, dim)
    began_cpu = time.process_time()
    # ``batch_rows`` 0: import's own default (``--phase import`` alone, to try others)
    summary = import_store(
        store,
        dump,
        on_conflict=on_conflict,
        **({"batch_rows": batch_rows} if batch_rows else {}),
    )
    cpu = time.process_time() - began_cpu
    store.close()
    return {
        "seconds": summary.seconds,
        "records_per_s": summary.total / summary.seconds,
        "cpu_seconds": cpu,
    }


def _open(url: str, dim: int) -> Any:
    if url.startswith("postgresql"):
        from oam_core.store.postgres import PostgresMemoryStore

        return PostgresMemoryStore(url, vector_dim=dim, schema_policy="CREATE_IF_NECESSARY")
    return _store(url, dim)


def phase_copy(source: str, target: str, dim: int) -> dict[str, Any]:
    from oam_core import copy_store

    a, b = _open(source, dim), _open(target, dim)
    began_cpu = time.process_time()
    summary = copy_store(a, b)
    cpu = time.process_time() - began_cpu
    a.close()
    b.close()
    return {
        "seconds": summary.seconds,
        "records_per_s": summary.total / summary.seconds,
        "cpu_seconds": cpu,
    }


def phase_dump_equal(first: str, second: str, dim: int) -> dict[str, Any]:
    import hashlib

    import orjson

    from oam_core import export_store

    digests = []
    for path in (first, second):
        store = _store(path, dim)
        out = Path(path + ".check.jsonl")
        export_store(store, out)
        store.close()
        h = hashlib.sha256()
        with open(out, "rb") as f:
            head = orjson.loads(f.readline())
            del head["created_at"]
            h.update(orjson.dumps(head))
            for line in f:
                h.update(line)
        out.unlink()
        digests.append(h.hexdigest())
    return {"identical": digests[0] == digests[1], "sha256": digests[0]}


PHASES = {
    "add": phase_add,
    "export": phase_export,
    "import": phase_import,
    "copy": phase_copy,
    "dump_equal": phase_dump_equal,
}


def _child(phase: str, *args: Any) -> dict[str, Any]:
    # A PYTHONPATH given stays (to measure another tree's code with this script).
    path = os.environ.get("PYTHONPATH") or f"{ROOT}{os.pathsep}{ROOT / 'integrations'}"
    env = {**os.environ, "PYTHONPATH": path}
    out = subprocess.run(
        [sys.executable, __file__, "--phase", phase, *map(str, args)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(out.stdout.splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--pg", action="store_true", help="also copy through PostgreSQL")
    parser.add_argument(
        "--pg-records",
        type=int,
        default=2000,
        help="records of the PostgreSQL round trip (its HNSW inserts are slow on small machines)",
    )
    parser.add_argument("--skip-copy", action="store_true", help="leave out the copies")
    parser.add_argument("--dir", default=None, help="work directory (default: a temp dir)")
    parser.add_argument("--out", default=None)
    parser.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.phase:
        fn = PHASES[ns.phase]
        values: list[Any] = [int(a) if a.isdigit() else a for a in ns.args]
        anon = AnonPeak()
        load = os.getloadavg()[0]
        result = fn(*values)
        result["peak_anon_mb"] = round(anon.stop(), 1)
        result["peak_file_mb"] = round(anon.peak_file_kb / 1024, 1)
        result["peak_rss_mb"] = round(_peak_mb(), 1)
        result["load_1min"] = [round(load, 1), round(os.getloadavg()[0], 1)]
        print(json.dumps(result))
        return
    work = Path(ns.dir or tempfile.mkdtemp(prefix="oam-transfer-"))
    work.mkdir(parents=True, exist_ok=True)
    a, dump, b, c = (str(work / name) for name in ("a.db", "a.jsonl", "b.db", "c.db"))
    n, dim = ns.records, ns.dim
    report: dict[str, Any] = {"records": n, "dim": dim}
    report["add"] = _child("add", a, n, dim)
    report["export"] = _child("export", a, dump, dim)
    report["import"] = _child("import", dump, b, dim)
    if not ns.skip_copy:
        report["copy_sqlite_sqlite"] = _child("copy", a, c, dim)
    report["import_vs_add"] = round(
        report["import"]["records_per_s"] / report["add"]["records_per_s"], 3
    )
    # CPU seconds (the process's, its threads included) of the same comparison: less
    # moved by the other jobs of a shared machine than the wall-clock rates.
    report["import_vs_add_cpu"] = round(
        report["add"]["cpu_seconds"] / report["import"]["cpu_seconds"], 3
    )
    if ns.pg:
        sys.path.insert(0, str(ROOT / "tests" / "conformance"))
        import _pg

        url = _pg.conninfo_for(_pg.new_schema())
        small, d = str(work / "small.db"), str(work / "d.db")
        m = ns.pg_records
        report["pg_records"] = m
        _child("add", small, m, dim)
        report["copy_sqlite_postgres"] = _child("copy", small, url, dim)
        report["copy_postgres_sqlite"] = _child("copy", url, d, dim)
        report["sqlite_postgres_sqlite_dumps"] = _child("dump_equal", small, d, dim)
    text = json.dumps(report, indent=2)
    print(text)
    if ns.out:
        Path(ns.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
