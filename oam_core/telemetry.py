"""Optional OpenTelemetry spans around store, embedder and LLM calls (docs/service.md).

oam depends only on ``opentelemetry-api`` (the ``otel`` extra; the ``mcp`` extra
brings it too) and never configures a tracer provider. Without an OpenTelemetry SDK
configured by the application, or without ``opentelemetry-api`` installed, every helper
here is a no-op that costs one global read per call. With one, each public store
method, each embedder call made by the store and each LiteLLM call is a span of the
``"oam"`` tracer with the attributes a user filters on:

* store spans ``oam.store.<method>``: ``oam.store`` (class name), ``db.system.name``
  (``sqlite``, ``postgresql``, ``oracle.db``), ``oam.search.strategy``,
  ``oam.record_type`` / ``oam.record_types``, ``oam.search.k``, ``oam.records``
  (records written), ``oam.result.count`` (records returned or rows changed);
* ``oam.embed``: ``oam.embedder``, ``oam.embed.texts``, ``oam.embed.chars``,
  ``oam.embed.estimated_tokens`` (characters / 3.5), ``oam.embed.is_query``;
* ``oam.llm.generate``: ``gen_ai.request.model``, ``oam.llm.estimated_input_tokens``,
  ``oam.llm.json_schema``, and ``gen_ai.usage.input_tokens`` /
  ``gen_ai.usage.output_tokens`` when the provider reports usage.

Exceptions are recorded on the span and re-raised unchanged. Logging
(``logging.getLogger("oam")``) is not affected.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

import numpy as np
import numpy.typing as npt

from oam_core.store.strategy import strategy_of

try:  # optional: the otel (or mcp) extra
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - exercised by the no-otel test in a subprocess
    _trace = None  # type: ignore[assignment]

__all__ = [
    "SpanHandle",
    "enabled",
    "record_llm_usage",
    "span",
    "traced_embed",
    "traced_llm",
    "traced_store",
    "tracer_provider_check",
]

P = ParamSpec("P")
T = TypeVar("T")

TRACER_NAME = "oam"
"""Name of the OpenTelemetry tracer every oam span comes from."""
CHARS_PER_TOKEN = 3.5
"""Characters per token of the library's token estimate."""

_DB_SYSTEMS = {
    "SQLiteMemoryStore": "sqlite",
    "PostgresMemoryStore": "postgresql",
    "OracleDBMemoryStore": "oracle.db",
}
_ARGUMENT_ATTRIBUTES = {
    "record_type": "oam.record_type",
    "k": "oam.search.k",
    "limit": "oam.list.limit",
}


def enabled() -> bool:
    """Whether spans are recorded: ``opentelemetry-api`` is installed and the
    application set a tracer provider (an SDK); otherwise every helper is a no-op."""
    if _trace is None:
        return False
    return not isinstance(_trace.get_tracer_provider(), _trace.ProxyTracerProvider)


def tracer_provider_check() -> tuple[Callable[[], object] | None, type]:
    """``(get_provider, unset_type)``: tracing is on (``enabled()``) when
    ``get_provider`` is not None and ``get_provider()`` is not an ``unset_type``. For
    a hot path that checks it on every call without entering this module
    (``store/runtime.py``)."""
    if _trace is None:
        return None, type(None)
    return _trace.get_tracer_provider, _trace.ProxyTracerProvider


class SpanHandle:
    """A span being recorded, or nothing: ``set`` is a no-op on the latter.

    Attributes:
        span: The OpenTelemetry span, or None when tracing is off.
    """

    __slots__ = ("span",)

    def __init__(self, span: Any = None) -> None:
        self.span = span

    @property
    def recording(self) -> bool:
        """Whether attributes set now are kept."""
        return self.span is not None and bool(self.span.is_recording())

    def set(self, key: str, value: Any) -> None:
        """Set attribute ``key`` (None values are skipped; other values must be
        str, bool, int, float or a sequence of one of them)."""
        if value is not None and self.span is not None:
            self.span.set_attribute(key, value)


_OFF = SpanHandle()


@contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None) -> Iterator[SpanHandle]:
    """Open span ``name`` of the ``"oam"`` tracer as the current span.

    Args:
        name: The span name, e.g. ``"oam.store.search"``.
        attributes: Initial attributes; None values are skipped.

    Yields:
        A ``SpanHandle`` (a no-op one when tracing is off). An exception raised in
        the block is recorded on the span and propagates unchanged.
    """
    if not enabled():
        yield _OFF
        return
    tracer = _trace.get_tracer(TRACER_NAME)
    initial = {k: v for k, v in (attributes or {}).items() if v is not None}
    with tracer.start_as_current_span(name, attributes=initial) as current:
        yield SpanHandle(current)


def _store_attributes(store: Any) -> dict[str, Any]:
    store = getattr(store, "store", store)  # a ThreadStore (store/threads.py) traces as its store
    name = type(store).__name__
    strategy = strategy_of(store) if hasattr(store, "search_strategy") else None
    return {
        "oam.store": name,
        "db.system.name": _DB_SYSTEMS.get(name),
        "oam.search.strategy": getattr(strategy, "value", None),
    }


def _argument_attributes(signature: inspect.Signature, args: Any, kwargs: Any) -> dict[str, Any]:
    try:
        bound = signature.bind(*args, **kwargs).arguments
    except TypeError:
        return {}  # the call itself raises the TypeError
    out: dict[str, Any] = {}
    for name, key in _ARGUMENT_ATTRIBUTES.items():
        value = bound.get(name)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            out[key] = value
    types = bound.get("record_types")
    if isinstance(types, (set, frozenset, list, tuple)):
        out["oam.record_types"] = sorted(str(t) for t in types)
    contents = bound.get("contents")
    if isinstance(contents, Sequence) and not isinstance(contents, str):
        out["oam.records"] = len(contents)
    batches = bound.get("batches")
    if isinstance(batches, Sequence):
        out["oam.records"] = sum(len(getattr(b, "texts", None) or ()) for b in batches)
    return out


def _result_count(result: Any) -> int | None:
    if isinstance(result, bool):
        return None
    if isinstance(result, int):
        return result
    if isinstance(result, list):
        return len(result)
    if result is None:
        return 0
    return 1


def traced_store(method: Callable[P, T]) -> Callable[P, T]:
    """Decorate a public store method: each call is span ``oam.store.<name>`` with the
    store, back end, strategy, the call's record type / k / limit and the result count.

    Args:
        method: A method of ``OracleMemoryStore`` (first argument ``self``).

    Returns:
        The wrapped method, same signature, result and exceptions.
    """
    name = f"oam.store.{method.__name__}"
    signature = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        if not enabled():
            return method(*args, **kwargs)
        with span(name, _store_attributes(args[0])) as handle:
            if handle.recording:
                for key, value in _argument_attributes(signature, args, kwargs).items():
                    handle.set(key, value)
            result = method(*args, **kwargs)
            handle.set("oam.result.count", _result_count(result))
            return result

    return wrapper


def traced_embed(
    embedder: Any, texts: Sequence[str], *, is_query: bool = False
) -> npt.NDArray[np.float32]:
    """Call ``embedder.embed(texts, is_query=is_query)`` inside span ``oam.embed``.

    Args:
        embedder: An ``IEmbedder``.
        texts: The texts to embed.
        is_query: Passed through (search queries).

    Returns:
        What the embedder returns: float32 array of shape ``(len(texts), dim)``.
    """
    if not enabled():
        return embedder.embed(texts, is_query=is_query)  # type: ignore[no-any-return]
    chars = sum(len(t) for t in texts)
    attributes = {
        "oam.embedder": getattr(embedder, "model", None) or type(embedder).__name__,
        "oam.embed.texts": len(texts),
        "oam.embed.chars": chars,
        "oam.embed.estimated_tokens": round(chars / CHARS_PER_TOKEN),
        "oam.embed.is_query": is_query,
    }
    with span("oam.embed", attributes):
        return embedder.embed(texts, is_query=is_query)  # type: ignore[no-any-return]


_LLM_SPAN = "oam.llm.generate"


def _llm_attributes(args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    llm = args[0]
    prompt = args[1] if len(args) > 1 else kwargs.get("prompt")
    size = len(prompt) if isinstance(prompt, str) else 0
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": getattr(llm, "model", None) or type(llm).__name__,
        "oam.llm.estimated_input_tokens": max(1, round(size / CHARS_PER_TOKEN)),
        "oam.llm.json_schema": kwargs.get("response_json_schema") is not None,
    }


def traced_llm(method: Callable[P, T]) -> Callable[P, T]:
    """Decorate ``ILlm.generate``: each call is span ``oam.llm.generate`` with the
    model and the prompt's estimated tokens; the method may add provider-reported
    usage with ``record_llm_usage``.

    Args:
        method: ``generate(self, prompt, *, response_json_schema=None)``.

    Returns:
        The wrapped method, same signature, result and exceptions.
    """

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        if not enabled():
            return method(*args, **kwargs)
        with span(_LLM_SPAN, _llm_attributes(args, kwargs)):
            return method(*args, **kwargs)

    return wrapper


def traced_llm_async(
    method: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]:
    """Async twin of ``traced_llm``, for ``ILlm.generate_async``."""

    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        if not enabled():
            return await method(*args, **kwargs)
        with span(_LLM_SPAN, _llm_attributes(args, kwargs)):
            return await method(*args, **kwargs)

    return wrapper


def record_llm_usage(response: Any) -> None:
    """Put a provider reply's token usage (``response.usage.prompt_tokens`` /
    ``completion_tokens``, objects or dicts) on the current span as
    ``gen_ai.usage.input_tokens`` / ``gen_ai.usage.output_tokens``; a no-op when
    tracing is off or the reply reports no usage."""
    if not enabled():
        return
    usage = _field(response, "usage")
    if usage is None:
        return
    current = _trace.get_current_span()
    for source, key in (
        ("prompt_tokens", "gen_ai.usage.input_tokens"),
        ("completion_tokens", "gen_ai.usage.output_tokens"),
    ):
        value = _field(usage, source)
        if isinstance(value, int) and not isinstance(value, bool):
            current.set_attribute(key, value)


def _field(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)
