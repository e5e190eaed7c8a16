"""LiteLLMLlm: recorded real traffic (SmolLM2 via llama.cpp) and the I/O-free pieces.

Recorded tests replay ``tests/cassettes/test_llm_litellm/*.yaml``; re-record them with
``python scripts/record_cassettes.py tests/unit/test_llm_litellm.py``.
"""

from __future__ import annotations

import asyncio
import importlib.machinery
import importlib.util
import json
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import oam_core.llms.litellm as llm_mod
import tests.llm as tests_llm
from oam_core import _litellm
from oam_core.apis.llm import ILlm
from oam_core.llms import EmptyReplyError, LiteLLMLlm, resolve_llm
from tests.llm import (
    API_BASE,
    CassetteMissError,
    RecordedLlm,
    json_body_matcher,
    open_cassette,
    record_mode,
)

needs_litellm = pytest.mark.skipif(
    importlib.util.find_spec("litellm") is None, reason="litellm not installed"
)

# Bounded strings and lists: SmolLM2-135M loops until max_tokens without bounds.
TOPICS_SCHEMA: dict[str, Any] = {
    "title": "topics reply",
    "type": "object",
    "properties": {
        "topics": {
            "type": "array",
            "items": {"type": "string", "maxLength": 24},
            "maxItems": 3,
        }
    },
    "required": ["topics"],
    "additionalProperties": False,
}
TOPICS_PROMPT = "List up to three topics of this message as JSON: I love hiking and green tea."
PLAIN_PROMPT = "Name one colour. Answer with one word."

RecordedFactory = Callable[..., RecordedLlm]


# ---------------------------------------------------------------------------------------
# Recorded real traffic.


@needs_litellm
class TestRecorded:
    def test_plain_text(self, recorded_llm: RecordedFactory) -> None:
        llm = recorded_llm("plain_text", max_tokens=16)
        reply = llm.generate(PLAIN_PROMPT)
        assert isinstance(reply, str)
        assert reply.strip()

    def test_sync_call_leaves_no_event_loop_behind(self, recorded_llm: RecordedFactory) -> None:
        """Issue 14 (9): litellm's sync path creates an event loop in the calling
        thread; ``generate`` closes it, so no "unclosed event loop" ResourceWarning
        can follow (the test plugin no longer cleans up after it)."""
        import asyncio
        import gc
        import warnings

        from oam_core._litellm import _thread_loop

        # a fresh policy: no loop, and get_event_loop() may create one (as in a new
        # process's main thread; set_event_loop(None) would forbid that)
        asyncio.set_event_loop_policy(None)
        llm = recorded_llm("sync_async_same", max_tokens=16)  # two recorded replies
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert llm.generate(PLAIN_PROMPT).strip()
            assert _thread_loop() is None
            gc.collect()
        assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
        kept = asyncio.new_event_loop()  # a loop the caller set is left alone
        asyncio.set_event_loop(kept)
        try:
            llm.generate(PLAIN_PROMPT)
            assert _thread_loop() is kept and not kept.is_closed()
        finally:
            asyncio.set_event_loop(None)
            kept.close()

    def test_json_schema(self, recorded_llm: RecordedFactory) -> None:
        llm = recorded_llm("json_schema")
        reply = llm.generate(TOPICS_PROMPT, response_json_schema=TOPICS_SCHEMA)
        value = json.loads(reply)  # the server enforces the schema: strict JSON
        assert set(value) == {"topics"}
        assert 0 < len(value["topics"]) <= 3
        assert all(isinstance(t, str) and len(t) <= 24 for t in value["topics"])

    def test_async_plain_and_schema(self, recorded_llm: RecordedFactory) -> None:
        llm = recorded_llm("async", max_tokens=16)

        async def both() -> tuple[str, str]:
            plain = await llm.generate_async(PLAIN_PROMPT)
            structured = await llm.generate_async(TOPICS_PROMPT, response_json_schema=TOPICS_SCHEMA)
            return plain, structured

        plain, structured = asyncio.run(both())
        assert plain.strip()
        # max_tokens=16 may cut the JSON short; it is still JSON-shaped text.
        assert structured.lstrip().startswith("{")

    def test_sync_and_async_send_the_same_request(self, recorded_llm: RecordedFactory) -> None:
        llm = recorded_llm("sync_async_same", max_tokens=16)
        sync_reply = llm.generate(PLAIN_PROMPT)
        async_reply = asyncio.run(llm.generate_async(PLAIN_PROMPT))
        assert sync_reply == async_reply  # temperature 0, same request body

    def test_prompt_level_json_against_the_server(self, recorded_llm: RecordedFactory) -> None:
        llm = recorded_llm("prompt_json", structured_output=False, max_tokens=64)
        reply = llm.generate(TOPICS_PROMPT, response_json_schema=TOPICS_SCHEMA)
        assert reply.strip()

    def test_fixture_defaults(self, recorded_llm: RecordedFactory) -> None:
        llm = recorded_llm("fixture_defaults", max_tokens=16)
        assert isinstance(llm, ILlm)
        assert llm.cassette.parts[-2:] == ("test_llm_litellm", "fixture_defaults.yaml")
        assert llm.generate("Say yes.").strip()
        inner = llm.inner
        assert (inner.model, inner.api_base, inner.api_key) == ("openai/smollm2", API_BASE, "x")
        assert inner.structured_output is True
        assert inner.max_retries == 0
        assert inner.max_tokens == 16
        with pytest.raises(ValueError, match="plain file stem"):
            recorded_llm("../escape")

    def test_unrecorded_request_fails_loudly(self, recorded_llm: RecordedFactory) -> None:
        if record_mode() != "none":
            pytest.skip("replay-only check")
        llm = recorded_llm("plain_text", max_tokens=16)
        with pytest.raises(CassetteMissError, match="holds no recording"):
            llm.generate("A prompt that was never recorded.")

    def test_missing_cassette_fails_loudly(self, recorded_llm: RecordedFactory) -> None:
        if record_mode() != "none":
            pytest.skip("replay-only check")
        with pytest.raises(CassetteMissError, match="does not exist"):
            recorded_llm("no_such_cassette")


# ---------------------------------------------------------------------------------------
# The I/O-free pieces and the retry policy, against a fake litellm (no network).


class FakeError(Exception):
    """Base of the fake litellm error classes; carries an HTTP status like litellm's."""

    status_code: int | None = None


def _error_class(name: str, status: int | None) -> type[FakeError]:
    return type(name, (FakeError,), {"status_code": status})


RateLimitError = _error_class("RateLimitError", 429)
Timeout = _error_class("Timeout", 408)
APIConnectionError = _error_class("APIConnectionError", 500)
InternalServerError = _error_class("InternalServerError", 500)
ServiceUnavailableError = _error_class("ServiceUnavailableError", 503)
AuthenticationError = _error_class("AuthenticationError", 401)
BadRequestError = _error_class("BadRequestError", 400)


def _reply(content: Any, finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "choices": [{"index": 0, "finish_reason": finish_reason, "message": {"content": content}}]
    }


class FakeLiteLLM:
    """Stands in for the litellm module: scripted failures, then a scripted reply."""

    def __init__(self) -> None:
        self.module = types.ModuleType("litellm")
        self.calls: list[dict[str, Any]] = []
        self.async_calls: list[dict[str, Any]] = []
        self.failures: list[BaseException] = []
        self.reply: Any = _reply("hello")
        self.sleeps: list[float] = []
        self.schema_support = False
        for cls in (
            RateLimitError,
            Timeout,
            APIConnectionError,
            InternalServerError,
            ServiceUnavailableError,
            AuthenticationError,
            BadRequestError,
        ):
            setattr(self.module, cls.__name__, cls)
        self.module.completion = self.completion  # type: ignore[attr-defined]
        self.module.acompletion = self.acompletion  # type: ignore[attr-defined]
        self.module.supports_response_schema = self.supports  # type: ignore[attr-defined]
        self.supports_calls: list[dict[str, Any]] = []

    def supports(self, **kwargs: Any) -> bool:
        self.supports_calls.append(kwargs)
        return self.schema_support

    def _respond(self) -> Any:
        if self.failures:
            raise self.failures.pop(0)
        return self.reply

    def completion(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return self._respond()

    async def acompletion(self, **kwargs: Any) -> Any:
        self.async_calls.append(kwargs)
        await asyncio.sleep(0)
        return self._respond()


_real_find_spec = importlib.util.find_spec


def _find_spec_with_litellm(name: str, package: str | None = None) -> Any:
    if name == "litellm":
        return importlib.machinery.ModuleSpec("litellm", None)
    return _real_find_spec(name, package)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLiteLLM]:
    fake = FakeLiteLLM()
    monkeypatch.setitem(sys.modules, "litellm", fake.module)
    monkeypatch.setattr(importlib.util, "find_spec", _find_spec_with_litellm)
    monkeypatch.setattr(llm_mod, "_sleep", fake.sleeps.append)

    async def asleep(seconds: float) -> None:
        fake.sleeps.append(seconds)

    monkeypatch.setattr(llm_mod, "_sleep_async", asleep)
    yield fake


def _both(llm: LiteLLMLlm, prompt: str, **kwargs: Any) -> list[str]:
    """Run generate and generate_async with the same arguments."""
    return [llm.generate(prompt, **kwargs), asyncio.run(llm.generate_async(prompt, **kwargs))]


class TestRequest:
    def test_one_user_message_and_options(self, fake: FakeLiteLLM) -> None:
        llm = LiteLLMLlm(
            "openai/x",
            api_base="http://127.0.0.1:1/v1",
            api_key="sk-test",
            timeout=7,
            temperature=0.3,
            max_tokens=50,
            seed=4,
        )
        assert _both(llm, "hi") == ["hello", "hello"]
        assert fake.calls == fake.async_calls
        call = fake.calls[0]
        assert call == {
            "model": "openai/x",
            "messages": [{"role": "user", "content": "hi"}],
            "temperature": 0.3,
            "timeout": 7.0,
            "max_retries": 0,
            "max_tokens": 50,
            "api_base": "http://127.0.0.1:1/v1",
            "api_key": "sk-test",
            "seed": 4,
        }

    def test_defaults_leave_out_unset_options(self, fake: FakeLiteLLM) -> None:
        LiteLLMLlm("openai/x").generate("hi")
        call = fake.calls[0]
        assert call["timeout"] == 60.0
        assert call["temperature"] == 0.0
        assert not {"max_tokens", "api_base", "api_key", "response_format"} & set(call)

    def test_forced_structured_output_sends_response_format(self, fake: FakeLiteLLM) -> None:
        llm = LiteLLMLlm("openai/x", structured_output=True)
        _both(llm, "topics?", response_json_schema=TOPICS_SCHEMA)
        for call in (fake.calls[0], fake.async_calls[0]):
            assert call["messages"] == [{"role": "user", "content": "topics?"}]
            assert call["response_format"] == {
                "type": "json_schema",
                "json_schema": {"name": "topics_reply", "schema": TOPICS_SCHEMA, "strict": True},
            }
        assert fake.supports_calls == []

    def test_schema_without_title_is_named_reply(self) -> None:
        assert llm_mod.response_format({"type": "object"})["json_schema"]["name"] == "reply"
        long = llm_mod.response_format({"title": "é" + "a" * 100})["json_schema"]["name"]
        assert long == "a" * 64

    def test_prompt_level_fallback_when_disabled(self, fake: FakeLiteLLM) -> None:
        llm = LiteLLMLlm("openai/x", structured_output=False)
        _both(llm, "topics?", response_json_schema=TOPICS_SCHEMA)
        for call in (fake.calls[0], fake.async_calls[0]):
            assert "response_format" not in call
            content = call["messages"][0]["content"]
            assert content.startswith("topics?\n\n")
            assert "JSON only" in content or "one JSON value only" in content
            assert json.dumps(TOPICS_SCHEMA) in content

    def test_auto_detection_asks_litellm_once(self, fake: FakeLiteLLM) -> None:
        llm = LiteLLMLlm("openai/x")
        llm.generate("plain")
        assert fake.supports_calls == []  # no schema, no question
        fake.schema_support = True
        llm.generate("a", response_json_schema=TOPICS_SCHEMA)
        llm.generate("b", response_json_schema=TOPICS_SCHEMA)
        assert fake.supports_calls == [{"model": "openai/x"}]
        assert "response_format" in fake.calls[1] and "response_format" in fake.calls[2]

    def test_auto_detection_falls_back_to_prompt(self, fake: FakeLiteLLM) -> None:
        def broken(**kwargs: Any) -> bool:
            raise ValueError("unknown model")

        fake.module.supports_response_schema = broken  # type: ignore[attr-defined]
        LiteLLMLlm("custom/x").generate("a", response_json_schema=TOPICS_SCHEMA)
        assert "response_format" not in fake.calls[0]
        assert json.dumps(TOPICS_SCHEMA) in fake.calls[0]["messages"][0]["content"]

    def test_no_schema_leaves_prompt_alone(self, fake: FakeLiteLLM) -> None:
        LiteLLMLlm("openai/x", structured_output=False).generate("exact prompt")
        assert fake.calls[0]["messages"][0]["content"] == "exact prompt"

    def test_object_style_response(self, fake: FakeLiteLLM) -> None:
        message = types.SimpleNamespace(content="from objects", refusal=None)
        choice = types.SimpleNamespace(message=message, finish_reason="stop")
        fake.reply = types.SimpleNamespace(choices=[choice])
        assert _both(LiteLLMLlm("openai/x"), "hi") == ["from objects", "from objects"]

    @pytest.mark.parametrize(
        ("reply", "match"),
        [
            ({"choices": []}, "no choices"),
            (_reply(None, "length"), "empty reply.*'length'"),
            (_reply("   \n"), "empty reply"),
            ({"choices": [{"finish_reason": "stop", "message": None}]}, "empty reply"),
        ],
    )
    def test_empty_reply_is_an_error(self, fake: FakeLiteLLM, reply: Any, match: str) -> None:
        fake.reply = reply
        llm = LiteLLMLlm("openai/x")
        with pytest.raises(EmptyReplyError, match=match):
            llm.generate("hi")
        with pytest.raises(EmptyReplyError, match=match):
            asyncio.run(llm.generate_async("hi"))
        assert len(fake.calls) == 1  # not retried

    def test_refusal_is_reported(self, fake: FakeLiteLLM) -> None:
        fake.reply = {
            "choices": [{"finish_reason": "stop", "message": {"content": None, "refusal": "no"}}]
        }
        with pytest.raises(EmptyReplyError, match="refusal='no'"):
            LiteLLMLlm("openai/x").generate("hi")

    @pytest.mark.parametrize(
        ("prompt", "schema"), [(b"bytes", None), (None, None), ("ok", "not a dict")]
    )
    def test_bad_arguments_to_generate(self, fake: FakeLiteLLM, prompt: Any, schema: Any) -> None:
        with pytest.raises(TypeError):
            LiteLLMLlm("openai/x").generate(prompt, response_json_schema=schema)
        assert fake.calls == []


class TestRetries:
    @pytest.mark.parametrize(
        "error",
        [
            RateLimitError("slow down"),
            Timeout("timed out"),
            APIConnectionError("Connection error."),
            InternalServerError("boom"),
            ServiceUnavailableError("later"),
            TimeoutError(),
            ConnectionResetError(),
        ],
    )
    def test_transient_errors_are_retried(self, fake: FakeLiteLLM, error: Exception) -> None:
        fake.failures = [error, error]
        assert LiteLLMLlm("openai/x", max_retries=3).generate("hi") == "hello"
        assert len(fake.calls) == 3
        assert len(fake.sleeps) == 2
        assert all(0.0 <= s <= _litellm.BACKOFF_MAX for s in fake.sleeps)

    @pytest.mark.parametrize(
        "error",
        [
            AuthenticationError("bad key"),
            BadRequestError("bad schema"),
            InternalServerError("OpenAIException - Missing credentials. Please pass an `api_key`"),
            InternalServerError("The api_key client option must be set"),
            ValueError("not an API error"),
        ],
    )
    def test_permanent_errors_are_not_retried(self, fake: FakeLiteLLM, error: Exception) -> None:
        # A missing key becomes a MissingApiKeyError saying what to set (docs/llms.md).
        expected = (
            _litellm.MissingApiKeyError
            if _litellm.missing_key_error(error, "openai/x", fake) is not None
            else type(error)
        )
        fake.failures = [error]
        llm = LiteLLMLlm("openai/x", max_retries=3)
        with pytest.raises(expected) as raised:
            llm.generate("hi")
        assert raised.value is error or raised.value.__cause__ is error
        fake.failures = [error]
        with pytest.raises(expected):
            asyncio.run(llm.generate_async("hi"))
        assert len(fake.calls) == 1
        assert len(fake.async_calls) == 1
        assert fake.sleeps == []

    def test_retries_are_bounded(self, fake: FakeLiteLLM) -> None:
        fake.failures = [RateLimitError("x") for _ in range(10)]
        with pytest.raises(RateLimitError):
            LiteLLMLlm("openai/x", max_retries=2).generate("hi")
        assert len(fake.calls) == 3
        assert len(fake.sleeps) == 2

    def test_zero_retries(self, fake: FakeLiteLLM) -> None:
        fake.failures = [RateLimitError("x")]
        with pytest.raises(RateLimitError):
            LiteLLMLlm("openai/x", max_retries=0).generate("hi")
        assert len(fake.calls) == 1

    def test_async_retries_with_the_same_policy(self, fake: FakeLiteLLM) -> None:
        fake.failures = [Timeout("t"), RateLimitError("r")]
        reply = asyncio.run(LiteLLMLlm("openai/x", max_retries=2).generate_async("hi"))
        assert reply == "hello"
        assert len(fake.async_calls) == 3
        assert fake.calls == []
        assert len(fake.sleeps) == 2

    def test_backoff_grows(self) -> None:
        """Full jitter: the n-th wait is drawn from [0, BACKOFF_BASE * 2**n] (capped)."""
        litellm = types.ModuleType("litellm")
        loop = _litellm.retrying(5, litellm, lambda s: None)
        wait = loop.wait
        caps = []
        for attempt in range(1, 6):
            state = types.SimpleNamespace(attempt_number=attempt)
            samples = [wait(state) for _ in range(200)]  # type: ignore[arg-type]
            assert all(0 <= s <= _litellm.BACKOFF_MAX for s in samples)
            caps.append(max(samples))
        assert caps[0] <= _litellm.BACKOFF_BASE * 2 + 1e-9
        assert caps[-1] > caps[0]


class TestConstructor:
    @pytest.mark.parametrize(
        "kwargs",
        [
            {"timeout": 0},
            {"timeout": -1.0},
            {"timeout": float("inf")},
            {"timeout": True},
            {"max_retries": -1},
            {"max_tokens": 0},
            {"temperature": "hot"},
            {"structured_output": "yes"},
            {"messages": []},
            {"response_format": {"type": "json_object"}},
        ],
    )
    def test_bad_arguments(self, fake: FakeLiteLLM, kwargs: dict[str, Any]) -> None:
        with pytest.raises(ValueError):
            LiteLLMLlm("openai/x", **kwargs)

    @pytest.mark.parametrize("model", ["", "   ", None])
    def test_model_is_required(self, fake: FakeLiteLLM, model: Any) -> None:
        with pytest.raises(ValueError, match="model"):
            LiteLLMLlm(model)

    def test_missing_litellm_says_how_to_install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "litellm", None)
        monkeypatch.setattr(importlib.util, "find_spec", lambda name, package=None: None)
        with pytest.raises(ImportError, match=r'pip install "oam\[litellm\]"'):
            LiteLLMLlm("openai/x")

    def test_is_an_illm(self, fake: FakeLiteLLM) -> None:
        llm = LiteLLMLlm("openai/x")
        assert isinstance(llm, ILlm)
        assert "openai/x" in repr(llm)


class TestResolveLlm:
    def test_none_and_instances_pass_through(self, fake: FakeLiteLLM) -> None:
        assert resolve_llm(None) is None
        llm = LiteLLMLlm("openai/x")
        assert resolve_llm(llm) is llm

    def test_string_is_a_litellm_id(self, fake: FakeLiteLLM) -> None:
        llm = resolve_llm(" openai/gpt-4o-mini ")
        assert isinstance(llm, LiteLLMLlm)
        assert llm.model == "openai/gpt-4o-mini"

    @pytest.mark.parametrize("value", ["", "  ", 3, b"openai/x", object()])
    def test_other_values_name_the_argument(self, value: Any) -> None:
        with pytest.raises(ValueError, match=r"^my_llm "):
            resolve_llm(value, "my_llm")

    def test_package_is_lazy(self) -> None:
        import subprocess

        code = (
            "import sys, oam_core.llms as m; "
            "assert 'litellm' not in sys.modules and 'oam_core.llms.litellm' not in sys.modules; "
            "assert m.LiteLLMLlm.__name__ == 'LiteLLMLlm'; print('ok')"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == "ok"


class TestJsonBodyMatcher:
    """The cassette matcher: parsed JSON equality, not byte equality."""

    @staticmethod
    def _request(body: bytes) -> Any:
        from vcr.request import Request

        return Request("POST", f"{API_BASE}/chat/completions", body, {})

    def test_key_order_and_spacing_do_not_matter(self) -> None:
        a = self._request(b'{"model": "m", "messages": [{"role": "user", "content": "h\\u00e9"}]}')
        b = self._request('{"messages":[{"content":"hé","role":"user"}],"model":"m"}'.encode())
        json_body_matcher(a, b)

    def test_different_content_does_not_match(self) -> None:
        a = self._request(b'{"model": "m", "temperature": 0.0}')
        b = self._request(b'{"model": "m", "temperature": 0.5}')
        with pytest.raises(AssertionError):
            json_body_matcher(a, b)

    def test_ignored_fields(self) -> None:
        a = self._request(b'{"model": "m", "user": "u1"}')
        b = self._request(b'{"model": "m", "user": "u2"}')
        json_body_matcher(a, b)


@needs_litellm
# litellm builds some pydantic schemas lazily and pydantic warns about them.
@pytest.mark.filterwarnings("ignore::UserWarning:pydantic.*")
class TestRealLiteLLMErrors:
    """The real litellm error classes through LiteLLMLlm (completion patched, no network)."""

    @pytest.fixture
    def real(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, list[float]]]:
        litellm = _litellm.import_litellm("test")
        sleeps: list[float] = []
        monkeypatch.setattr(llm_mod, "_sleep", sleeps.append)
        # LiteLLM's own errors are fed in: no key is set, and the check that would
        # refuse before sending (test_llm_missing_key.py) is switched off.
        monkeypatch.setattr(_litellm, "check_api_key", lambda *args: None)
        yield litellm, sleeps

    @staticmethod
    def _args() -> dict[str, str]:
        return {"message": "x", "llm_provider": "openai", "model": "m"}

    def _run(
        self, monkeypatch: pytest.MonkeyPatch, litellm: Any, errors: list[Exception]
    ) -> tuple[int, Any]:
        calls: list[dict[str, Any]] = []

        def completion(**kwargs: Any) -> Any:
            calls.append(kwargs)
            if errors:
                raise errors.pop(0)
            return litellm.ModelResponse(
                choices=[{"message": {"role": "assistant", "content": "ok"}}]
            )

        monkeypatch.setattr(litellm, "completion", completion)
        result: Any
        try:
            result = LiteLLMLlm("openai/m", max_retries=2).generate("hi")
        except Exception as exc:
            result = exc
        return len(calls), result

    def test_transient(self, real: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        litellm, sleeps = real
        errors = [litellm.RateLimitError(**self._args()), litellm.Timeout(**self._args())]
        calls, result = self._run(monkeypatch, litellm, errors)
        assert (calls, result) == (3, "ok")
        assert len(sleeps) == 2

    @pytest.mark.parametrize(
        "make",
        [
            lambda lt, a: lt.AuthenticationError(**a),
            lambda lt, a: lt.BadRequestError(**a),
            lambda lt, a: lt.NotFoundError(**a),
            lambda lt, a: lt.InternalServerError(
                **{**a, "message": "OpenAIException - Missing credentials. Please pass an api_key"}
            ),
        ],
    )
    def test_permanent(
        self, real: Any, monkeypatch: pytest.MonkeyPatch, make: Callable[[Any, Any], Exception]
    ) -> None:
        litellm, sleeps = real
        error = make(litellm, self._args())
        calls, result = self._run(monkeypatch, litellm, [error])
        assert calls == 1
        if isinstance(result, _litellm.MissingApiKeyError):
            assert result.__cause__ is error and "set OPENAI_API_KEY" in str(result)
        else:
            assert result is error
        assert sleeps == []


class TestCassetteFile:
    """Re-recording keeps a cassette that a test did not use."""

    def test_unused_cassette_is_not_emptied(self, tmp_path: Path) -> None:
        import shutil
        from contextlib import ExitStack

        source = Path(__file__).parent.parent / "cassettes" / "test_llm_litellm" / "plain_text.yaml"
        path = tmp_path / "plain_text.yaml"
        shutil.copy(source, path)
        before = path.read_text()
        with ExitStack() as stack:
            cassette = open_cassette(stack, tests_llm._vcr("new_episodes"), path)
            assert len(cassette) == 1
        assert path.read_text() == before


def test_llm_failures_are_llm_errors_and_keep_their_value_error_base(fake: FakeLiteLLM) -> None:
    """docs/errors.md: a missing key and an empty reply are ``LLMError``s (and, as
    before, ``ValueError``s), raised by ``generate`` and ``generate_async`` alike."""
    from oam_core.errors import LLMError

    llm = LiteLLMLlm("openai/x", max_retries=1)
    fake.failures = [InternalServerError("Missing credentials. Please pass an `api_key`")]
    with pytest.raises(LLMError) as missing:
        llm.generate("hi")
    assert isinstance(missing.value, _litellm.MissingApiKeyError)
    assert isinstance(missing.value, ValueError)
    fake.reply = {"choices": []}
    with pytest.raises(LLMError) as empty:
        asyncio.run(llm.generate_async("hi"))
    assert isinstance(empty.value, EmptyReplyError) and isinstance(empty.value, ValueError)
