"""BoundedLlm: every pipeline LLM call returns or fails within its bound (issue 14, 9)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from oam_core.apis.llm import ILlm
from oam_core.llms.bounded import BoundedLlm, check_call_timeout


class Gate(ILlm):
    """Blocks until ``release`` is set (or answers at once when it is)."""

    def __init__(self, release: threading.Event, error: Exception | None = None) -> None:
        self.release = release
        self.error = error

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        assert self.release.wait(30)
        if self.error is not None:
            raise self.error
        return f"reply to {prompt}"


class NativeAsync(Gate):
    async def generate_async(
        self, prompt: str, *, response_json_schema: dict[str, Any] | None = None
    ) -> str:
        await anyio.Event().wait()  # never set: only cancellation ends it
        return "never"


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # let abandoned calls end


def test_answers_in_time_pass_through(release: threading.Event) -> None:
    release.set()
    llm = BoundedLlm(Gate(release), 5)
    assert llm.generate("a") == "reply to a"
    assert anyio.run(lambda: llm.generate_async("b")) == "reply to b"


def test_errors_pass_through(release: threading.Event) -> None:
    release.set()
    llm = BoundedLlm(Gate(release, KeyError("boom")), 5)
    with pytest.raises(KeyError, match="boom"):
        llm.generate("a")
    with pytest.raises(KeyError, match="boom"):
        anyio.run(lambda: llm.generate_async("a"))


@pytest.mark.parametrize("inner", [Gate, NativeAsync])
def test_overruns_raise_timeout_error(release: threading.Event, inner: type[Gate]) -> None:
    llm = BoundedLlm(inner(release), 0.1)
    with pytest.raises(TimeoutError, match=r"did not answer within 0\.1 s"):
        llm.generate("a")
    with pytest.raises(TimeoutError, match=r"did not answer within 0\.1 s"):
        anyio.run(lambda: llm.generate_async("a"))


@pytest.mark.parametrize("bad", [0, -2, float("inf"), float("nan"), "1", False, None])
def test_bad_bounds(bad: Any) -> None:
    with pytest.raises(ValueError, match="timeout"):
        BoundedLlm(Gate(threading.Event()), bad)


def test_check_call_timeout() -> None:
    assert check_call_timeout(None) is None and check_call_timeout(2) == 2.0
    with pytest.raises(ValueError, match="llm_call_timeout"):
        check_call_timeout(0)
    with pytest.raises(ValueError, match="inner"):
        BoundedLlm("gpt", 1)  # type: ignore[arg-type]
