"""OpenTelemetry's process-wide tracer provider, made test-local.

``trace.set_tracer_provider`` works once per process and nothing unsets it, so a test
that sets one in-process would turn tracing on for every test after it (and
``telemetry.enabled()`` would then depend on test order). ``fresh_tracer_globals``
puts the globals back to "never set" for one test; ``monkeypatch`` restores the
previous ones when the test ends. These are private names of ``opentelemetry.trace``
(the same ones ``opentelemetry-test-utils`` resets); if they move, this fails loudly.
"""

from __future__ import annotations

import pytest


def fresh_tracer_globals(monkeypatch: pytest.MonkeyPatch) -> None:
    """No tracer provider set and one may be set, until the test ends."""
    trace = pytest.importorskip("opentelemetry.trace")
    from opentelemetry.util._once import Once

    monkeypatch.delenv("OTEL_PYTHON_TRACER_PROVIDER", raising=False)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER_SET_ONCE", Once())
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
