"""OpenTelemetry spans (oam_core/telemetry.py; docs/service.md): recorded with an SDK
configured, on SQLite and PostgreSQL; a no-op without one, and without
``opentelemetry-api`` installed at all. Each scenario runs in a fresh interpreter,
since a tracer provider can be set only once per process."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from _fake_openai import fake_openai

from oam_core import telemetry
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.sqlite import SQLiteMemoryStore
from tests.otel_globals import fresh_tracer_globals

TRACED = textwrap.dedent(
    """
    import json, sys
    import anyio
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    from oam_core import OracleAgentMemory
    from oam_core.llms.litellm import LiteLLMLlm

    url, api_base = sys.argv[1], sys.argv[2]
    memory = OracleAgentMemory.open(url, embedder="hashing/16", extract_memories=False,
                                    schema_policy="CREATE_IF_NECESSARY", search_strategy="HYBRID")
    store = memory.store
    store.add(["a cat on a mat", "a dog in fog"], "memory", user_ids="u1")
    store.search("cat", 3, user_id="u1", exact_user_match=True)
    try:
        store.search("cat", 0)
    except ValueError:
        pass
    anyio.run(lambda: store.list_async("memory"))
    memory.close()
    llm = LiteLLMLlm("openai/fake-model", api_base=api_base, api_key="k", max_retries=0)
    llm.generate("Say hello.")
    anyio.run(lambda: llm.generate_async("Say hello again."))
    spans = [
        {
            "name": s.name,
            "id": s.context.span_id,
            "parent": s.parent.span_id if s.parent else None,
            "attributes": dict(s.attributes),
            "status": s.status.status_code.name,
            "events": [e.name for e in s.events],
        }
        for s in exporter.get_finished_spans()
    ]
    print(json.dumps(spans))
    """
)


def _spans(url: str, api_base: str, tmp_path: Path) -> list[dict[str, Any]]:
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", TRACED, url, api_base],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_spans_around_store_embedder_and_llm_calls(
    db_url: str, backend: str, tmp_path: Path
) -> None:
    with fake_openai(lambda prompt: "hello") as (api_base, _):
        spans = _spans(db_url, api_base, tmp_path)
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    system = {"sqlite": "sqlite", "postgres": "postgresql"}[backend]

    [add] = by_name["oam.store.add"]
    assert add["attributes"]["oam.records"] == 2
    assert add["attributes"]["oam.record_type"] == "memory"
    assert add["attributes"]["oam.result.count"] == 2
    assert add["attributes"]["db.system.name"] == system
    assert add["attributes"]["oam.search.strategy"] == "HYBRID"
    embeds = by_name["oam.embed"]
    [batches] = by_name["oam.store.add_batches"]
    assert batches["parent"] == add["id"] and batches["attributes"]["oam.records"] == 2
    write_embed = next(e for e in embeds if e["parent"] == batches["id"])
    # The embedder sees only the caller's texts: the identity is taken from them
    # (docs/store.md#embedder-identity).
    assert write_embed["attributes"]["oam.embed.texts"] == 2
    assert write_embed["attributes"]["oam.embed.chars"] == len("a cat on a mat") + len(
        "a dog in fog"
    )
    assert write_embed["attributes"]["oam.embed.is_query"] is False
    assert write_embed["attributes"]["oam.embedder"] == "HashingEmbedder"

    ok, failed = by_name["oam.store.search"]
    assert ok["attributes"]["oam.search.k"] == 3 and ok["status"] == "UNSET"
    assert ok["attributes"]["oam.result.count"] == 2  # both records rank (hybrid, k=3)
    assert any(e["parent"] == ok["id"] and e["attributes"]["oam.embed.is_query"] for e in embeds)
    assert failed["status"] == "ERROR" and failed["events"] == ["exception"]
    assert "oam.result.count" not in failed["attributes"]
    [listed] = by_name["oam.store.list"]
    assert listed["attributes"]["oam.result.count"] == 2

    sync_llm, async_llm = by_name["oam.llm.generate"]
    for llm in (sync_llm, async_llm):
        assert llm["attributes"]["gen_ai.request.model"] == "openai/fake-model"
        assert llm["attributes"]["gen_ai.usage.input_tokens"] == 120
        assert llm["attributes"]["gen_ai.usage.output_tokens"] == 30
        assert llm["attributes"]["oam.llm.estimated_input_tokens"] >= 3


def test_without_an_sdk_every_helper_is_a_no_op(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh_tracer_globals(monkeypatch)  # no SDK, whatever ran before in this process
    assert not telemetry.enabled()
    with telemetry.span("oam.test", {"k": 1}) as handle:
        handle.set("x", 1)
        assert not handle.recording
    library = logging.getLogger("oam")
    handlers = list(library.handlers)
    store = SQLiteMemoryStore(str(tmp_path / "plain.db"), embedder=HashingEmbedder(16))
    try:
        assert len(store.add(["a cat"], "memory")) == 1
        assert store.search("cat", 1)[0][0].content == "a cat"
    finally:
        store.close()
    assert not telemetry.enabled()
    # oam's own NullHandler is there and tracing adds none; the exact list of a fresh
    # interpreter is checked by the next test (pytest's capture handlers may join an
    # in-process logger's list during a test).
    assert library.handlers == handlers
    assert any(type(h) is logging.NullHandler for h in handlers), handlers


def test_works_without_opentelemetry_installed(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import logging, sys
        sys.modules["opentelemetry"] = None  # as if opentelemetry-api were not installed
        from oam_core import telemetry
        from oam_core.store.sqlite import SQLiteMemoryStore
        from oam_core.embedders.hashing import HashingEmbedder
        store = SQLiteMemoryStore(sys.argv[1], embedder=HashingEmbedder(16))
        store.add(["a cat"], "memory")
        print(telemetry.enabled(), store.search("cat", 1)[0][0].content, logging.getLogger("oam").handlers)
        store.close()
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "x.db")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    # The library logger carries only the NullHandler of a well-behaved library.
    assert result.stdout.strip() == "False a cat [<NullHandler (NOTSET)>]"
