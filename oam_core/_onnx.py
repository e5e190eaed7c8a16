"""ONNX Runtime plumbing shared by the local embedder and the cross-encoder reranker:
pinned model files (sha256), the thread count, and one CPU session per model."""

from __future__ import annotations

import hashlib
import importlib
import os
from pathlib import Path
from typing import Any

MAX_DEFAULT_THREADS = 4


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def default_threads() -> int:
    """CPUs this process may use (affinity-aware), capped at 4: small models do not
    scale further."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_DEFAULT_THREADS, cpus))


def missing_modules_error(user: str, missing: list[str], extra: str, hint: str) -> ImportError:
    """``ImportError`` naming every missing module in one sentence, e.g.
    ``LocalEmbedder needs onnxruntime and tokenizers, which are not installed;
    install the local extra: pip install "oam[local]"``.

    Args:
        user: The class that needs them.
        missing: Their import names, at least one.
        extra: The extra that installs them.
        hint: The install command.
    """
    names = missing[0] if len(missing) == 1 else f"{', '.join(missing[:-1])} and {missing[-1]}"
    verb = "is" if len(missing) == 1 else "are"
    return ImportError(
        f"{user} needs {names}, which {verb} not installed; install the {extra} extra: {hint}"
    )


def cpu_session(path: Path, threads: int) -> Any:
    """An ``onnxruntime.InferenceSession`` on the CPU with ``threads`` intra-op
    threads, sequential execution and no busy-waiting between runs (a library shares
    the CPU with its host).

    Raises:
        ImportError: if onnxruntime is not installed.
    """
    ort = importlib.import_module("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
