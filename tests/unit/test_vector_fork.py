"""A child process made by ``fork`` after faiss ran a parallel region runs faiss on
one OpenMP thread (``vector/threads.guard_fork``; docs/sqlite.md#consistency-with-other-processes). Without
it the child's first parallel faiss call waited for ever for the parent's OpenMP
threads, which ``fork`` does not copy (a prefork worker pool, multiprocessing's
default start method on Linux): reproduced with faiss alone, the child hangs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("faiss")

CHILD = """
import os, signal, sys
import numpy as np
from oam_core.store.sqlite.vector.ivf import load_faiss
faiss = load_faiss()
x = np.random.default_rng(0).standard_normal((20000, 64)).astype("float32")
index = faiss.IndexIVFFlat(faiss.IndexFlatIP(64), 64, 64, faiss.METRIC_INNER_PRODUCT)
index.train(x)
index.add(x)
index.search(x[:2000], 10)  # a parallel region in the parent
pid = os.fork()
if pid == 0:
    signal.alarm(20)  # a hung child dies of SIGALRM
    index.add(x[:5000])
    found = index.search(x[:2000], 10)[1]
    os._exit(0 if (found[:, 0] % 20000 == np.arange(2000)).mean() > 0.9 else 3)
_, status = os.waitpid(pid, 0)
print("child exit", os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_runs_faiss(tmp_path: Path) -> None:
    script = tmp_path / "fork_child.py"
    script.write_text(CHILD)
    env = {**os.environ, "OMP_NUM_THREADS": "2"}  # the parent runs a real thread team
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "child exit 0"
