"""``OracleDBEmbedder``: embeddings from an in-database ONNX model (docs/concepts.md#embedders; docs/oracle.md#options).

Runs ``VECTOR_EMBEDDING(model USING :text AS DATA)`` (docs/oracle.md) on the
given connection or pool. ``SearchStrategy.HYBRID`` requires this embedder: the
store's hybrid vector index is built with the same model, so queries and index agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oam_core.apis.embedder import IEmbedder
from oam_core.errors import InvalidArgumentError, UnusableEmbeddingsError
from oam_core.store.oracle.session import Session, fetchone
from oam_core.store.oracle.stmt import Stmt

_MODEL = re.compile(r"[A-Za-z][A-Za-z0-9_$#]{0,127}(\.[A-Za-z][A-Za-z0-9_$#]{0,127})?")


MAX_INPUT_BYTES = 4000
"""VECTOR_EMBEDDING takes VARCHAR2 input (other types are converted to it), so texts are
cut to the 4000-byte VARCHAR2 limit of a STANDARD ``MAX_STRING_SIZE`` database; the
store's chunks (at most ``max_input_tokens * 3.5`` characters) normally fit."""


def fit_varchar2(text: str, limit: int = MAX_INPUT_BYTES) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, never inside a character."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")


def embed_statement(model: str, text: str) -> Stmt:
    """The query embedding one text with ``model`` (a validated identifier); the text
    is a VARCHAR2 bind (VECTOR_EMBEDDING input; sqlrf VECTOR_EMBEDDING)."""
    return Stmt(
        f"SELECT VECTOR_EMBEDDING({model} USING :text AS DATA) FROM dual",
        {"text": fit_varchar2(text)},
    )


class OracleDBEmbedder(IEmbedder):
    """Embed texts with a model loaded into Oracle Database (``DBMS_VECTOR.LOAD_ONNX_MODEL``).

    Args:
        connection: An ``oracledb`` connection or pool (a raw connection is used
            under a lock, a pool lends one connection per call).
        model: The mining model name, optionally ``owner.name`` (unquoted identifier:
            letter first, letters/digits/``_$#``).
        dimension: The model's vector length, if known; else probed once with one
            embedding.
        max_input_tokens: Longest input the model embeds without truncation (tokens).

    Raises:
        ValueError: for an invalid model name, a non-positive ``dimension`` or
            ``max_input_tokens``, or a ``connection`` that is neither a connection nor a pool.
    """

    def __init__(
        self,
        connection: Any,
        model: str,
        *,
        dimension: int | None = None,
        max_input_tokens: int = 512,
    ) -> None:
        if not isinstance(model, str) or not _MODEL.fullmatch(model):
            raise InvalidArgumentError(
                f"model must be an Oracle model name like 'ALL_MINILM_L12_V2', got {model!r}"
            )
        for name, value in (("dimension", dimension), ("max_input_tokens", max_input_tokens)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise InvalidArgumentError(f"{name} must be a positive int, got {value!r}")
        self.session = Session(connection)
        self.model = model.upper()
        self.max_input_tokens = max_input_tokens
        self._dim = dimension

    @property
    def embedding_dimension(self) -> int:
        """The model's vector length (probed with one embedding when not given)."""
        if self._dim is None:
            self._dim = int(self._embed_one("dimension probe").shape[0])
        return self._dim

    @property
    def embedder_id(self) -> str:
        """``"oracledb/<MODEL>"``, the in-database model (docs/store.md#embedder-identity)."""
        return f"oracledb/{self.model}"

    def _embed_one(self, text: str) -> npt.NDArray[np.float32]:
        with self.session.connection() as conn:
            row = fetchone(conn, embed_statement(self.model, text))
        if row is None or row[0] is None:
            raise UnusableEmbeddingsError(
                f"model {self.model} returned no embedding for {text[:40]!r}"
            )
        return np.asarray(row[0], dtype=np.float32)

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Embed each text with one ``VECTOR_EMBEDDING`` query (empty input: no query).

        Returns:
            float32 array ``(len(texts), embedding_dimension)``.

        Raises:
            ValueError: if the model returns no vector or vectors of another length.
        """
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        with self.session.connection() as conn:
            rows = [fetchone(conn, embed_statement(self.model, t)) for t in texts]
        vectors = []
        for text, row in zip(texts, rows, strict=True):
            if row is None or row[0] is None:
                raise UnusableEmbeddingsError(
                    f"model {self.model} returned no embedding for {text[:40]!r}"
                )
            vectors.append(np.asarray(row[0], dtype=np.float32))
        out = np.stack(vectors)
        if self._dim is None:
            self._dim = out.shape[1]
        if out.shape[1] != self._dim:
            raise UnusableEmbeddingsError(
                f"model {self.model} returned dimension {out.shape[1]}, expected {self._dim}"
            )
        return out
