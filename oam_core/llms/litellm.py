"""LLM for any chat model that LiteLLM can reach (docs/llms.md).

``litellm`` is an optional dependency (``pip install "oam[litellm]"``), imported on the
first request (see ``oam_core._litellm``). Every request is one user message sent
through ``litellm.completion`` / ``litellm.acompletion``; the request and the reply
parsing are built once, and only the I/O call differs between sync and async.

Retries: this module retries each request itself (``oam_core._litellm`` policy:
transient errors only, full-jitter exponential backoff) and passes ``max_retries=0``
down so that LiteLLM's OpenAI client does not retry as well.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import anyio

from oam_core._litellm import (
    async_retrying,
    closing_new_event_loop,
    import_litellm,
    import_litellm_async,
    require_litellm,
    retrying,
    send,
    send_async,
)
from oam_core.apis.llm import ILlm
from oam_core.checks import check_int, check_optional_int, check_seconds
from oam_core.errors import InvalidArgumentError, LLMError
from oam_core.telemetry import record_llm_usage, traced_llm, traced_llm_async

__all__ = ["EmptyReplyError", "LiteLLMLlm"]

_USER = "LiteLLMLlm"
_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]+")
_JSON_INSTRUCTIONS = (
    "\n\nAnswer with one JSON value only: no prose, no explanations, no code fences. "
    "It must follow this JSON Schema:\n{schema}"
)

# Indirections so tests can skip the backoff sleeps.
_sleep = time.sleep
_sleep_async = anyio.sleep


class EmptyReplyError(LLMError, ValueError):
    """The model answered without any text (no choices, or empty / None content); an
    ``LLMError`` and a ``ValueError`` (docs/errors.md)."""


class LiteLLMLlm(ILlm):
    """Generates text through ``litellm.completion`` (``"openai/gpt-4o-mini"`` style ids).

    Structured output: when ``generate`` gets a JSON schema and structured output is on,
    the request carries ``response_format={"type": "json_schema", "json_schema":
    {"name": ..., "schema": ..., "strict": True}}`` (providers that enforce ``strict``,
    such as OpenAI, require ``additionalProperties: false`` and every property listed in
    ``required``); otherwise the schema is appended to the prompt as plain instructions
    to answer with JSON only. Either way the reply is returned as text, unparsed:
    callers parse and repair it (``oam_core.memory.jsonrepair``).

    Args:
        model: LiteLLM model id, e.g. ``"openai/gpt-4o-mini"`` or, for a local
            OpenAI-compatible server, ``"openai/<alias>"`` with ``api_base``.
        api_base: Endpoint URL, or None for LiteLLM's default for the provider.
        api_key: API key, or None for the provider's environment variable.
        timeout: Seconds allowed per request attempt (passed to LiteLLM).
        max_retries: Retries per request after the first attempt (0 disables them),
            on transient errors only: rate limit, timeout, connection, HTTP 408, 409,
            429 and 5xx, but never a missing API key.
        temperature: Sampling temperature sent with every request.
        max_tokens: Most tokens the model may generate per reply, or None for the
            provider's default.
        structured_output: True sends ``response_format`` whenever a schema is given;
            False never does (prompt instructions instead); None asks
            ``litellm.supports_response_schema(model)`` once, on the first request
            with a schema (unknown models, e.g. most local servers, answer False).
        **completion_kwargs: Passed to every ``litellm.completion`` call (e.g.
            ``api_version``, ``top_p``, ``seed``, ``drop_params``); they cannot
            replace ``model``, ``messages`` or the arguments above.

    Raises:
        ValueError: if ``model`` is empty or a numeric argument is out of range, or
            ``completion_kwargs`` holds a name this class sets itself.
        ImportError: if litellm is not installed (install ``oam[litellm]``).
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        structured_output: bool | None = None,
        **completion_kwargs: Any,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidArgumentError(f"model must be a non-empty LiteLLM model id, got {model!r}")
        check_int(max_retries, "max_retries", minimum=0)
        check_optional_int(max_tokens, "max_tokens", minimum=1)
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
            raise InvalidArgumentError(f"temperature must be a number, got {temperature!r}")
        if structured_output is not None and not isinstance(structured_output, bool):
            raise InvalidArgumentError(
                f"structured_output must be True, False or None, got {structured_output!r}"
            )
        reserved = sorted(set(completion_kwargs) & _RESERVED)
        if reserved:
            raise InvalidArgumentError(
                f"completion_kwargs cannot set {', '.join(reserved)}: "
                "LiteLLMLlm sets them itself (use its own arguments)"
            )
        self.timeout = check_seconds(timeout, "timeout")
        require_litellm(_USER)
        self.model = model
        self.api_base = api_base
        self.api_key = api_key
        self.max_retries = max_retries
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        self.structured_output = structured_output
        self.completion_kwargs: dict[str, Any] = dict(completion_kwargs)

    def __repr__(self) -> str:
        return f"LiteLLMLlm(model={self.model!r}, api_base={self.api_base!r})"

    @traced_llm
    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        """Send ``prompt`` as one user message and return the reply text.

        Args:
            prompt: The full prompt text.
            response_json_schema: When given, the reply is asked to be JSON following
                this schema (natively or by prompt instructions, see the class).

        Returns:
            The reply's text content, as the model wrote it (not parsed).

        Raises:
            TypeError: if ``prompt`` is not a str or the schema is not a dict.
            EmptyReplyError: if the reply holds no text.
            MissingApiKeyError: (a ``ValueError``) when the provider's API key is not
                set; the message names the environment variable to set.
            ImportError: if litellm is not installed.
            Exception: LiteLLM's error when the request fails (after retries if
                transient), e.g. ``litellm.AuthenticationError``, ``litellm.Timeout``.
        """
        litellm = import_litellm(_USER)
        request = self._request(litellm, prompt, response_json_schema)
        loop = retrying(self.max_retries, litellm, lambda s: _sleep(s))
        with closing_new_event_loop():
            response = send(loop, litellm.completion, self.model, litellm, request)
        return self._content(response)

    @traced_llm_async
    async def generate_async(
        self, prompt: str, *, response_json_schema: dict[str, Any] | None = None
    ) -> str:
        """Async twin of ``generate``: awaits ``litellm.acompletion``.

        Args, returns and raises as ``generate``.
        """
        litellm = await import_litellm_async(_USER)
        request = self._request(litellm, prompt, response_json_schema)

        async def sleep(seconds: float) -> None:
            await _sleep_async(seconds)

        loop = async_retrying(self.max_retries, litellm, sleep)
        response: Any = await send_async(loop, litellm.acompletion, self.model, litellm, request)
        return self._content(response)

    # Shared, I/O-free pieces of one request.

    def uses_response_format(self, litellm: ModuleType) -> bool:
        """Whether a schema goes into ``response_format`` (True) or the prompt (False)."""
        if self.structured_output is None:
            try:
                supported = bool(litellm.supports_response_schema(model=self.model))
            except Exception:  # unknown model or provider: fall back to the prompt
                supported = False
            self.structured_output = supported
        return self.structured_output

    def _request(
        self, litellm: ModuleType, prompt: str, schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        if schema is not None and not isinstance(schema, dict):
            raise TypeError(
                f"response_json_schema must be a dict or None, got {type(schema).__name__}"
            )
        request: dict[str, Any] = {
            **self.completion_kwargs,
            "model": self.model,
            "temperature": self.temperature,
            "timeout": self.timeout,
            "max_retries": 0,
        }
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        if self.api_base is not None:
            request["api_base"] = self.api_base
        if self.api_key is not None:
            request["api_key"] = self.api_key
        if schema is not None:
            if self.uses_response_format(litellm):
                request["response_format"] = response_format(schema)
            else:
                prompt += json_instructions(schema)
        request["messages"] = [{"role": "user", "content": prompt}]
        return request

    def _content(self, response: Any) -> str:
        record_llm_usage(response)
        choices = _field(response, "choices") or []
        if not choices:
            raise EmptyReplyError(f"{self.model} returned no choices")
        choice = choices[0]
        message = _field(choice, "message")
        content = _field(message, "content") if message is not None else None
        if not isinstance(content, str) or not content.strip():
            reason = _field(choice, "finish_reason")
            refusal = _field(message, "refusal") if message is not None else None
            detail = f"finish_reason={reason!r}" + (f", refusal={refusal!r}" if refusal else "")
            raise EmptyReplyError(f"{self.model} returned an empty reply ({detail})")
        return content


_RESERVED = frozenset(
    {
        "model",
        "messages",
        "temperature",
        "timeout",
        "max_retries",
        "max_tokens",
        "api_base",
        "api_key",
        "response_format",
    }
)


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI-style ``response_format`` asking for JSON that follows ``schema``.

    The name is the schema's ``title`` reduced to ``[A-Za-z0-9_-]`` (64 characters at
    most), or ``"reply"``.
    """
    title = schema.get("title")
    name = _SCHEMA_NAME.sub("_", title).strip("_")[:64] if isinstance(title, str) else ""
    return {
        "type": "json_schema",
        "json_schema": {"name": name or "reply", "schema": schema, "strict": True},
    }


def json_instructions(schema: dict[str, Any]) -> str:
    """Text appended to a prompt when the provider cannot enforce the schema itself."""
    return _JSON_INSTRUCTIONS.format(schema=json.dumps(schema, ensure_ascii=False))


def _field(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)
