"""Embedder for any hosted model that LiteLLM can reach (docs/concepts.md#embedders).

``litellm`` is an optional dependency (``pip install "oam[litellm]"``). It is imported
on the first request, never when ``oam_core`` is imported, and always with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` so that importing it does not fetch a price map
from the internet.

Retries: LiteLLM's ``num_retries`` only retries completion calls, and ``max_retries``
only reaches OpenAI-style clients, so this module retries embedding calls itself,
around ``litellm.embedding`` / ``litellm.aembedding`` (HTTP stays LiteLLM's job), and
passes ``max_retries=0`` down so that attempts do not multiply.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

import anyio
import numpy as np
import numpy.typing as npt

from oam_core._litellm import (
    BACKOFF_MAX,
    async_retrying,
    import_litellm,
    import_litellm_async,
    is_transient,
    require_litellm,
    retrying,
    send,
    send_async,
)
from oam_core.apis.embedder import IEmbedder, check_texts
from oam_core.checks import check_int, check_optional_int, check_seconds
from oam_core.errors import InvalidArgumentError, UnusableEmbeddingsError

__all__ = ["LiteLLMEmbedder"]

logger = logging.getLogger("oam")

_PROBE_TEXT = "dimension probe"


def _known_dimension(litellm: Any, model: str) -> int | None:
    """The vector length LiteLLM's bundled model table gives ``model``
    (``output_vector_size``), or None when the table does not know it. Reads the
    local table only: no request is sent."""
    try:
        size = litellm.get_model_info(model).get("output_vector_size")
    except Exception:  # an unknown model is an exception of LiteLLM's own kinds
        return None
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


# Former names of the shared helpers, kept for callers and tests.
_is_transient = is_transient
_BACKOFF_MAX = BACKOFF_MAX

# Indirections so tests can skip the backoff sleeps.
_sleep = time.sleep
_sleep_async = anyio.sleep


def _import_litellm() -> ModuleType:
    """Import litellm with the offline price map.

    Raises:
        ImportError: if litellm is not installed, saying how to install it.
    """
    return import_litellm("LiteLLMEmbedder")


class LiteLLMEmbedder(IEmbedder):
    """Embeds texts through ``litellm.embedding`` (``"openai/text-embedding-3-small"`` style ids).

    Texts are sent in requests of at most ``batch_size`` inputs, in order. Each
    request is retried up to ``max_retries`` times, with full-jitter exponential
    backoff, on transient errors only (rate limit, timeout, connection, HTTP 408,
    409, 429 and 5xx); other errors, and the last transient one, propagate as
    LiteLLM raised them. ``embed_async`` awaits ``litellm.aembedding`` (docs/concepts.md#sync-and-async).

    Args:
        model: LiteLLM model id, e.g. ``"openai/text-embedding-3-small"``.
        dimensions: Vector length to request from the model (models that support
            shortening, such as OpenAI's v3), or None for the model's native length,
            which the first access to ``embedding_dimension`` discovers with one
            probe request.
        api_base: Endpoint URL, or None for LiteLLM's default for the provider.
        api_key: API key, or None for the provider's environment variable.
        timeout: Seconds allowed per request attempt.
        max_retries: Retries per request after the first attempt (0 disables them).
        max_input_tokens: Longest input, in tokens, that the model accepts; sets the
            store's chunk size (``chunk_chars``).
        batch_size: Most inputs sent in one request.
        **kwargs: Passed to every ``litellm.embedding`` call (e.g. ``api_version``,
            ``input_type``); vectors must come back as float lists, so not
            ``encoding_format="base64"``.

    Raises:
        InvalidArgumentError: if a numeric argument is out of range or ``model`` is
            empty.
        ImportError: if litellm is not installed (install ``oam[litellm]``).
    """

    def __init__(
        self,
        model: str,
        *,
        dimensions: int | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        max_input_tokens: int = 512,
        batch_size: int = 96,
        **kwargs: Any,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidArgumentError(f"model must be a non-empty LiteLLM model id, got {model!r}")
        check_optional_int(dimensions, "dimensions", minimum=1)
        check_int(max_retries, "max_retries", minimum=0)
        check_int(max_input_tokens, "max_input_tokens", minimum=1)
        check_int(batch_size, "batch_size", minimum=1)
        timeout = check_seconds(timeout, "timeout")
        require_litellm("LiteLLMEmbedder")
        self.model = model
        self.dimensions = dimensions
        self.api_base = api_base
        self.api_key = api_key
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.max_input_tokens = max_input_tokens
        self.batch_size = batch_size
        self.extra_kwargs: dict[str, Any] = dict(kwargs)
        self._dimension: int | None = dimensions
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LiteLLMEmbedder(model={self.model!r}, dimensions={self.dimensions!r})"

    @property
    def embedder_id(self) -> str:
        """The LiteLLM model id, e.g. ``"openai/text-embedding-3-small"``
        (docs/store.md#embedder-identity)."""
        return self.model

    @property
    def embedding_dimension(self) -> int:
        """Vector length: ``dimensions`` if given, else LiteLLM's model table's
        ``output_vector_size`` for a model it knows (``text-embedding-3-small``: 1536),
        else learnt from the first response.

        Only for a model the table does not know, when nothing has been embedded yet,
        this sends one probe request (once): the only text oam itself ever sends to an
        embedder (docs/concepts.md#embedders).

        Raises:
            ImportError: if litellm is not installed.
            Exception: whatever LiteLLM raises if the probe request fails.
        """
        if self._dimension is None:
            with self._lock:
                if self._dimension is None:
                    litellm = _import_litellm()
                    self._dimension = _known_dimension(litellm, self.model)
                    if self._dimension is None:
                        self._embed_batch(litellm, [_PROBE_TEXT])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Embed texts with blocking ``litellm.embedding`` requests.

        Args:
            texts: The texts, in order; may be empty (no request is sent unless the
                dimension is still unknown).
            is_query: Ignored; queries and documents get the same request.

        Returns:
            float32 array of shape ``(len(texts), embedding_dimension)``, rows in input
            order (LiteLLM's ``index`` field), values as the provider returned them.

        Raises:
            TypeError: if ``texts`` is a single ``str`` or holds a non-string.
            UnusableEmbeddingsError: if the provider returns the wrong number or length
                of vectors.
            ImportError: if litellm is not installed.
            Exception: LiteLLM's error when a request fails (after retries if transient).
        """
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.embedding_dimension), dtype=np.float32)
        litellm = _import_litellm()
        parts = [
            self._embed_batch(litellm, items[i : i + self.batch_size])
            for i in range(0, len(items), self.batch_size)
        ]
        return np.concatenate(parts, axis=0)

    async def embed_async(
        self, texts: Sequence[str], *, is_query: bool = False
    ) -> npt.NDArray[np.float32]:
        """Async twin of ``embed``: awaits ``litellm.aembedding``, batches in sequence.

        Args, returns and raises as ``embed``.
        """
        items = check_texts(texts)
        litellm = await import_litellm_async("LiteLLMEmbedder")
        if not items:
            if self._dimension is None:
                self._dimension = _known_dimension(litellm, self.model)
            if self._dimension is None:
                await self._embed_batch_async(litellm, [_PROBE_TEXT])
            return np.zeros((0, self.embedding_dimension), dtype=np.float32)
        parts = [
            await self._embed_batch_async(litellm, items[i : i + self.batch_size])
            for i in range(0, len(items), self.batch_size)
        ]
        return np.concatenate(parts, axis=0)

    # Shared, I/O-free pieces of one request.

    def _request(self, batch: list[str]) -> dict[str, Any]:
        request: dict[str, Any] = {
            **self.extra_kwargs,
            "model": self.model,
            "input": batch,
            "timeout": self.timeout,
            "max_retries": 0,
        }
        if self.dimensions is not None:
            request["dimensions"] = self.dimensions
        if self.api_base is not None:
            request["api_base"] = self.api_base
        if self.api_key is not None:
            request["api_key"] = self.api_key
        return request

    def _parse(self, response: Any, expected: int) -> npt.NDArray[np.float32]:
        data = response["data"] if isinstance(response, Mapping) else response.data
        rows: list[tuple[int, Any]] = []
        for position, item in enumerate(data):
            if isinstance(item, Mapping):
                index, vector = item.get("index", position), item["embedding"]
            else:
                index, vector = getattr(item, "index", position), item.embedding
            rows.append((position if index is None else int(index), vector))
        rows.sort(key=lambda row: row[0])
        if len(rows) != expected:
            raise UnusableEmbeddingsError(
                f"{self.model} returned {len(rows)} embeddings for {expected} inputs"
            )
        try:
            out = np.asarray([vector for _, vector in rows], dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise UnusableEmbeddingsError(
                f"{self.model} returned embeddings that are not equal-length float lists"
            ) from exc
        if out.ndim != 2 or out.shape[1] == 0:
            raise UnusableEmbeddingsError(f"{self.model} returned embeddings of shape {out.shape}")
        if self._dimension is None:
            self._dimension = int(out.shape[1])
        elif out.shape[1] != self._dimension:
            raise UnusableEmbeddingsError(
                f"{self.model} returned {out.shape[1]}-dimensional vectors, "
                f"expected {self._dimension}"
            )
        return out

    # Thin I/O layers.

    def _embed_batch(self, litellm: ModuleType, batch: list[str]) -> npt.NDArray[np.float32]:
        request = self._request(batch)
        loop = retrying(self.max_retries, litellm, lambda s: _sleep(s))
        response = send(loop, litellm.embedding, self.model, litellm, request)
        return self._parse(response, len(batch))

    async def _embed_batch_async(
        self, litellm: ModuleType, batch: list[str]
    ) -> npt.NDArray[np.float32]:
        request = self._request(batch)

        async def sleep(seconds: float) -> None:
            await _sleep_async(seconds)

        loop = async_retrying(self.max_retries, litellm, sleep)
        response: Any = await send_async(loop, litellm.aembedding, self.model, litellm, request)
        return self._parse(response, len(batch))
