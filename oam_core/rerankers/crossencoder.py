"""A cross-encoder reranker on ONNX Runtime, offline, from a sha256-pinned model file.

A cross-encoder reads the query and one passage together (``[CLS] query [SEP]
passage [SEP]``) and outputs one relevance logit, which is far more precise than
comparing two separately computed embeddings, at the price of one transformer run
per candidate. Any BERT-style cross-encoder exported to ONNX works (for example the
MS MARCO MiniLM cross-encoders): the graph takes ``input_ids`` and
``attention_mask`` (and ``token_type_ids`` when it declares them) and returns logits
of shape ``(batch, 1)`` or ``(batch,)``; for ``(batch, 2)`` the last column is the
relevant class. The tokenizer is the model's ``tokenizer.json``. Nothing is
downloaded: the caller names the files, and the model file must have the sha256 the
caller pins. Needs ``onnxruntime`` and ``tokenizers``: ``pip install "oam[rerank]"``.
See docs/retrieval.md.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from oam_core._onnx import cpu_session, default_threads, missing_modules_error, sha256_of
from oam_core.apis.embedder import check_texts
from oam_core.checks import check_int, check_optional_int
from oam_core.errors import InvalidArgumentError
from oam_core.rerankers import DEFAULT_CANDIDATES, IReranker

__all__ = ["CrossEncoderReranker"]

_RUNTIME_MODULES = ("onnxruntime", "tokenizers")
_INSTALL_HINT = 'pip install "oam[rerank]"'


@dataclass(frozen=True)
class _Runtime:
    session: Any
    tokenizer: Any
    inputs: frozenset[str]


class CrossEncoderReranker(IReranker):
    """Re-scores (query, passage) pairs with an ONNX cross-encoder on the CPU.

    The model loads on the first ``score`` call (or ``load()``), once per instance and
    thread-safely, after its sha256 is checked. Pairs longer than ``max_length``
    word pieces are cut from the end of the passage (the query is kept whole unless
    it alone is too long).

    Args:
        model_path: The ``.onnx`` file.
        tokenizer_path: The model's ``tokenizer.json``.
        sha256: The model file's expected sha256 (64 hex digits): a file that does not
            match is refused.
        candidates: How many first-stage results a store re-scores (positive).
        max_length: Longest pair in word pieces, special tokens included (>= 8).
        batch_size: Pairs per ONNX run (positive).
        num_threads: ONNX Runtime intra-op threads (positive), or None for the CPUs
            available, at most 4.

    Raises:
        ValueError: for a non-positive or non-int option, or a ``sha256`` that is not
            64 hex digits.
        ImportError: if onnxruntime or tokenizers is missing (``oam[rerank]``).
    """

    def __init__(
        self,
        model_path: str | Path,
        tokenizer_path: str | Path,
        *,
        sha256: str,
        candidates: int = DEFAULT_CANDIDATES,
        max_length: int = 512,
        batch_size: int = 16,
        num_threads: int | None = None,
    ) -> None:
        for name, value, low in (
            ("candidates", candidates, 1),
            ("max_length", max_length, 8),
            ("batch_size", batch_size, 1),
        ):
            check_int(value, name, minimum=low)
        check_optional_int(num_threads, "num_threads", minimum=1)
        if not isinstance(sha256, str) or len(sha256) != 64 or not _is_hex(sha256):
            raise InvalidArgumentError(f"sha256 must be 64 hex digits, got {sha256!r}")
        missing = [name for name in _RUNTIME_MODULES if importlib.util.find_spec(name) is None]
        if missing:
            raise missing_modules_error("CrossEncoderReranker", missing, "rerank", _INSTALL_HINT)
        self.model_path = Path(model_path)
        self.tokenizer_path = Path(tokenizer_path)
        self.sha256 = sha256.lower()
        self.candidates = candidates
        self.max_length = max_length
        self.batch_size = batch_size
        self.num_threads = num_threads if num_threads is not None else default_threads()
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"CrossEncoderReranker({str(self.model_path)!r}, candidates={self.candidates}, "
            f"max_length={self.max_length})"
        )

    def load(self) -> None:
        """Load the model now instead of on the first ``score`` call.

        Raises:
            FileNotFoundError: if the model or tokenizer file is missing.
            RuntimeError: if the model file does not have the pinned sha256.
        """
        self._get_runtime()

    def score(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Relevance logits of ``texts`` for ``query``.

        Args:
            query: The search query.
            texts: Candidate passages; may be empty.

        Returns:
            float32 array of shape ``(len(texts),)``, higher = more relevant.

        Raises:
            TypeError: if ``texts`` is a single str or holds a non-string.
            FileNotFoundError: if the model or tokenizer file is missing.
            RuntimeError: if the model file does not have the pinned sha256.
        """
        items = check_texts(texts)
        out = np.zeros(len(items), dtype=np.float32)
        if not items:
            return out
        runtime = self._get_runtime()
        encodings = [runtime.tokenizer.encode(query, text) for text in items]
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in rows)
            feeds = {
                name: np.zeros((len(rows), width), dtype=np.int64)
                for name in ("input_ids", "attention_mask", "token_type_ids")
            }
            for r, i in enumerate(rows):
                enc = encodings[i]
                n = len(enc.ids)
                feeds["input_ids"][r, :n] = enc.ids
                feeds["attention_mask"][r, :n] = enc.attention_mask
                feeds["token_type_ids"][r, :n] = enc.type_ids
            (logits,) = runtime.session.run(
                None, {name: value for name, value in feeds.items() if name in runtime.inputs}
            )[:1]
            out[rows] = _relevance(np.asarray(logits, dtype=np.float32))
        return out

    def _get_runtime(self) -> _Runtime:
        runtime = self._runtime
        if runtime is not None:
            return runtime
        with self._lock:
            if self._runtime is None:
                self._runtime = self._load_runtime()
            return self._runtime

    def _load_runtime(self) -> _Runtime:
        for path in (self.model_path, self.tokenizer_path):
            if not path.is_file():
                raise FileNotFoundError(f"CrossEncoderReranker: {path} is not a file")
        actual = sha256_of(self.model_path)
        if actual != self.sha256:
            raise RuntimeError(
                f"{self.model_path} has sha256 {actual}, expected {self.sha256}; the file is "
                "corrupt or not the pinned model"
            )
        tokenizers = importlib.import_module("tokenizers")
        tokenizer = tokenizers.Tokenizer.from_file(str(self.tokenizer_path))
        tokenizer.no_padding()
        tokenizer.enable_truncation(self.max_length, strategy="longest_first")
        session = cpu_session(self.model_path, self.num_threads)
        inputs = frozenset(i.name for i in session.get_inputs())
        if not {"input_ids", "attention_mask"} <= inputs:
            raise RuntimeError(
                f"{self.model_path} is not a cross-encoder: its inputs are {sorted(inputs)}, "
                "expected input_ids and attention_mask"
            )
        return _Runtime(session=session, tokenizer=tokenizer, inputs=inputs)


def _relevance(logits: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """One relevance logit per row: ``(n,)`` as is, ``(n, 1)`` flattened, ``(n, c)``
    its last column (the "relevant" class)."""
    if logits.ndim == 1:
        return logits
    return logits.reshape(logits.shape[0], -1)[:, -1]


def _is_hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return True
