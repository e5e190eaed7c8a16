"""Pieces shared by the LiteLLM embedder and LLM: lazy import, retry policy, checks.

``litellm`` is an optional dependency (``pip install "oam[litellm]"``). It is imported on
the first request, never when ``oam_core`` is imported, and always with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` so that importing it does not fetch a price map
from the internet.

Retry policy (docs/llms.md#using-a-hosted-or-local-model): up to ``max_retries``
retries after the first attempt, full-jitter exponential backoff starting at
``BACKOFF_BASE`` seconds and capped at ``BACKOFF_MAX`` seconds, on transient errors only
(see ``is_transient``); other errors, and the last transient one, propagate as LiteLLM
raised them. The policy is built here once and driven by a sync or an async tenacity
loop, so both call styles retry the same way.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import logging
import os
import re
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import anyio.to_thread
import tenacity

from oam_core.errors import MissingApiKeyError, UnknownModelError

logger = logging.getLogger("oam")

INSTALL_HINT = 'pip install "oam[litellm]"'
BACKOFF_BASE = 0.5
"""Seconds before the first retry; doubles per retry, with full jitter."""
BACKOFF_MAX = 20.0
"""Upper bound in seconds on one backoff sleep."""

_TRANSIENT_ERRORS = (
    "RateLimitError",
    "Timeout",
    "APIConnectionError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
)
_TRANSIENT_STATUS = frozenset({408, 409, 429})
# LiteLLM reports a missing OpenAI key as an InternalServerError (HTTP 500) whose message
# says so; retrying it cannot help.
_MISSING_CREDENTIALS = re.compile(
    r"missing credentials|api[_ ]?key\b.{0,40}\b(must be set|not set|missing|is required)"
    r"|missing\b.{0,40}\bapi[_ ]?key|no api[_ ]?key",
    re.IGNORECASE,
)


def require_litellm(user: str) -> None:
    """Check, without importing it, that litellm is installed.

    Args:
        user: Class name put in the error message, e.g. ``"LiteLLMLlm"``.

    Raises:
        ImportError: if litellm is not installed, saying how to install it.
    """
    if importlib.util.find_spec("litellm") is None:
        raise ImportError(
            f"{user} needs the litellm package, which is not installed; {INSTALL_HINT}"
        )


def import_litellm(user: str) -> ModuleType:
    """Import litellm with the offline price map.

    Args:
        user: Class name put in the error message.

    Raises:
        ImportError: if litellm is not installed, saying how to install it.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        module = importlib.import_module("litellm")
    except ImportError as exc:
        raise ImportError(
            f"{user} needs the litellm package, which is not installed; {INSTALL_HINT}"
        ) from exc
    if not any(m is module for m in _quieted) and not os.environ.get("OAM_LITELLM_DEBUG"):
        # LiteLLM prints a "Give Feedback / Get Help" banner on stdout before every
        # error it maps; oam reports the error itself (docs/llms.md#errors). Once per
        # process, so an application may switch it back on afterwards.
        setattr(module, "suppress_debug_info", True)  # noqa: B010
        _quieted.append(module)
    return module


_quieted: list[ModuleType] = []
"""The litellm module(s) whose debug banner oam has switched off."""


def check_api_key(model: str, litellm: ModuleType, request: dict[str, Any]) -> None:
    """Raise ``MissingApiKeyError`` before any connection when ``model``'s provider
    needs an API key that is neither in ``request`` nor set.

    Asks LiteLLM which variables the provider needs (``litellm.validate_environment``)
    and refuses only when all of them are API keys (``*_API_KEY``) and none is set,
    neither in the environment nor module-wide (``litellm.api_key``,
    ``litellm.<provider>_key``). Providers with other credentials (AWS, Vertex, Azure
    AD) or no key at all, requests with an ``api_base`` (a server of your own may
    need no key) and LiteLLM's ``mock_response`` are left to LiteLLM; its own report of a missing key is mapped by
    ``missing_key_error``.

    Raises:
        MissingApiKeyError: naming the variable(s) to set.
    """
    if any(request.get(k) for k in ("api_key", "api_base", "mock_response")):
        return
    if getattr(litellm, "api_key", None):
        return
    validate = getattr(litellm, "validate_environment", None)
    if validate is None:
        return
    try:
        found = validate(model=model)
        provider = litellm.get_llm_provider(model=model)[1]
    except Exception:  # a model LiteLLM does not know: it will say so itself
        return
    missing = [str(k) for k in found.get("missing_keys") or []]
    if found.get("keys_in_environment") or not missing:
        return
    if not all(k.endswith("_API_KEY") for k in missing):
        return
    if provider and getattr(litellm, f"{provider}_key", None):
        return
    raise MissingApiKeyError(
        f"LiteLLM model {model!r} has no API key: set {' or '.join(missing)}, or pass api_key=..."
    )


def check_known_model(model: str, litellm: ModuleType, request: dict[str, Any]) -> None:
    """Raise ``UnknownModelError`` when LiteLLM cannot name ``model``'s provider and
    the request does not name one itself (``custom_llm_provider``, ``api_base``,
    LiteLLM's ``mock_response``).

    Raises:
        UnknownModelError: naming ``model``.
    """
    if any(request.get(k) for k in ("custom_llm_provider", "api_base", "mock_response")):
        return
    get_provider = getattr(litellm, "get_llm_provider", None)
    if get_provider is None:
        return
    try:
        get_provider(model=model)
    except Exception:  # LiteLLM's BadRequestError "LLM Provider NOT provided"
        raise UnknownModelError(
            f"model {model!r} names no provider LiteLLM knows: write it as "
            "'<provider>/<model>' (e.g. 'openai/text-embedding-3-small', "
            "'ollama/llama3'); an embedder may also be 'local', 'hashing[/<dim>]' or 'none'"
        ) from None


def missing_key_error(exc: BaseException, model: str, litellm: ModuleType) -> Exception | None:
    """A ``MissingApiKeyError`` saying what to set when ``exc`` is LiteLLM's report of
    a missing API key or credentials, else None."""
    if not _MISSING_CREDENTIALS.search(str(exc)):
        return None
    try:
        missing = list(litellm.validate_environment(model).get("missing_keys") or [])
    except Exception:  # an unknown provider: name no variable
        missing = []
    what = " or ".join(missing) if missing else "the provider's API key variable"
    return MissingApiKeyError(
        f"LiteLLM model {model!r} has no API key: set {what}, or pass api_key=... "
        f"(LiteLLM raised {type(exc).__name__})"
    )


async def import_litellm_async(user: str) -> ModuleType:
    """``import_litellm`` that keeps the first (multi-second) import off the event loop."""
    module = sys.modules.get("litellm")
    if module is not None:
        return module
    return await anyio.to_thread.run_sync(lambda: import_litellm(user))


def _thread_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop set (running or not) in this thread, read without creating one
    (``asyncio.get_event_loop`` would create it)."""
    local = getattr(asyncio.get_event_loop_policy(), "_local", None)
    loop = getattr(local, "_loop", None)
    return loop if isinstance(loop, asyncio.AbstractEventLoop) else None


@contextmanager
def closing_new_event_loop() -> Iterator[None]:
    """Close an event loop that appears in this thread during the block.

    The sync ``litellm.completion`` / ``litellm.embedding`` dispatch a logging hook
    through ``asyncio.get_event_loop()``, which in the main thread creates and sets a
    loop nobody closes: a ``ResourceWarning: unclosed event loop`` later (issue 14).
    A loop the caller had before the block is left alone.
    """
    before = _thread_loop()
    try:
        yield
    finally:
        after = _thread_loop()
        if after is not None and after is not before and not after.is_running():
            after.close()
            asyncio.set_event_loop(None)


def is_transient(exc: BaseException, litellm: ModuleType) -> bool:
    """True for errors worth retrying.

    Transient: LiteLLM's rate-limit, timeout, connection, internal-server,
    service-unavailable and bad-gateway errors, Python's ``TimeoutError`` and
    ``ConnectionError``, and any error carrying HTTP status 408, 409, 429 or 5xx.
    Never transient: an error whose message says the API key or credentials are
    missing (LiteLLM reports a missing OpenAI key as HTTP 500), authentication,
    bad-request, not-found and context-window errors, and everything else.
    """
    if _MISSING_CREDENTIALS.search(str(exc)):
        return False
    types = tuple(
        t for t in (getattr(litellm, n, None) for n in _TRANSIENT_ERRORS) if isinstance(t, type)
    )
    if types and isinstance(exc, types):
        return True
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status in _TRANSIENT_STATUS or status >= 500)


def send(
    loop: tenacity.Retrying,
    fn: Callable[..., Any],
    model: str,
    litellm: ModuleType,
    request: dict[str, Any],
) -> Any:
    """``fn(**request)`` under the retry ``loop``; a missing API key is a
    ``MissingApiKeyError`` that says what to set, raised before any request when
    LiteLLM can tell (``check_api_key``); an id LiteLLM knows no provider of is an
    ``UnknownModelError`` (``check_known_model``)."""
    check_known_model(model, litellm, request)
    check_api_key(model, litellm, request)
    try:
        return loop(fn, **request)
    except Exception as exc:
        clear = missing_key_error(exc, model, litellm)
        if clear is None:
            raise
        raise clear from exc


async def send_async(
    loop: tenacity.AsyncRetrying,
    fn: Callable[..., Awaitable[Any]],
    model: str,
    litellm: ModuleType,
    request: dict[str, Any],
) -> Any:
    """Async twin of ``send``."""
    check_known_model(model, litellm, request)
    check_api_key(model, litellm, request)
    try:
        return await loop(fn, **request)
    except Exception as exc:
        clear = missing_key_error(exc, model, litellm)
        if clear is None:
            raise
        raise clear from exc


def _policy(max_retries: int, litellm: ModuleType) -> dict[str, Any]:
    return {
        "stop": tenacity.stop_after_attempt(max_retries + 1),
        "wait": tenacity.wait_random_exponential(multiplier=BACKOFF_BASE, max=BACKOFF_MAX),
        "retry": tenacity.retry_if_exception(lambda exc: is_transient(exc, litellm)),
        "before_sleep": tenacity.before_sleep_log(logger, logging.WARNING),
        "reraise": True,
    }


def retrying(
    max_retries: int, litellm: ModuleType, sleep: Callable[[float], None]
) -> tenacity.Retrying:
    """Sync retry loop with the module's policy; ``sleep(seconds)`` does the backoff."""
    return tenacity.Retrying(sleep=sleep, **_policy(max_retries, litellm))


def async_retrying(
    max_retries: int, litellm: ModuleType, sleep: Callable[[float], Awaitable[None]]
) -> tenacity.AsyncRetrying:
    """Async retry loop with the module's policy; ``await sleep(seconds)`` does the backoff."""
    return tenacity.AsyncRetrying(sleep=sleep, **_policy(max_retries, litellm))
