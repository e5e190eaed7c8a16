"""Query rewriting (the ``query_rewrite`` option) measured on PrefEval preferences with
a local model; not run in CI (docs/context-card.md#query-rewriting).

Every preference of one user is stored as a ``preference`` record (the ``memories``
task of ``prefeval_recall.py``). For each question, the context card's relevant
search runs as the product runs it (``relevant_steps``) with the question as the
card's query (a thread whose only message is the question); the model rewrites the
question through the product's own code (``rewrite_input``, ``rewrite_query_steps``:
same prompt, schema and parser), and three rankings are scored: the original query,
the rewritten query alone, and the fusion the card uses (``fuse_results``). A
rewrite that fails counts as the original query (the card's fallback).

The model is served by llama.cpp (``xllamacpp``, as ``scripts/record_cassettes.py``
does) from a GGUF file given with ``--gguf``::

    python bench/prefeval_rewrite.py --gguf /path/model.gguf --every 8 \\
        --data ../shared/data/prefeval/explicit_preference --embed-cache /tmp/embcache.sqlite

PrefEval is CC BY-NC 4.0: read it from ``../shared/data``, never copy it here.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

try:
    import oam_core  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from locomo_recall import CachedEmbedder, TimedEmbedder
from prefeval_recall import (
    PREFEVAL_DIR,
    USER,
    Tally,
    fill_memories,
    load_preferences,
    open_store,
)

from oam_core import SearchStrategy
from oam_core.apis.records import MessageRecord
from oam_core.embedders import resolve_embedder
from oam_core.memory.contextcard import relevant_steps
from oam_core.memory.diagnostics import MemoryPipelineWarning
from oam_core.memory.queryrewrite import fuse_results, rewrite_input, rewrite_query_steps
from oam_core.steps import run_sync

PORT = 18574
KS = (1, 5, 10)


def start_server(gguf: Path, port: int) -> object:
    """llama.cpp's OpenAI-compatible server on ``127.0.0.1:port``, alias ``local``."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.model_alias = {"local"}
    params.n_ctx = 4096
    params.cpuparams.n_threads = 2
    params.cpuparams_batch.n_threads = 2
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.offline = True
    return xllamacpp.Server(params)


def _rank(results: list[Any], target: str) -> int | None:
    ids = [record.id for record, _ in results]
    return ids.index(target) + 1 if target in ids else None


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Score original, rewritten and fused rankings; return the report."""
    from oam_core.llms.litellm import LiteLLMLlm

    prefs = load_preferences(args.data)[:: args.every]
    topics = sorted({p.topic for p in load_preferences(args.data)})
    inner = resolve_embedder(args.embedder)
    assert inner is not None, "an embedder is needed"
    if args.embed_cache is not None:
        inner = CachedEmbedder(inner, args.embedder, args.embed_cache)
    store = open_store(TimedEmbedder(inner), SearchStrategy[args.strategy.upper()])
    fill_memories(store, load_preferences(args.data))
    server = start_server(args.gguf, args.port)
    time.sleep(2)
    llm = LiteLLMLlm(
        "openai/local",
        api_base=f"http://127.0.0.1:{args.port}/v1",
        api_key="x",
        max_tokens=60,
        structured_output=True,
        timeout=300.0,
        max_retries=0,
    )
    tallies = {
        name: {"all": Tally(), "a": Tally(), "b": Tally()} for name in ("off", "alone", "on")
    }
    failed, examples, llm_s = 0, [], 0.0
    scope = ("bench-thread", USER, None)
    for n, pref in enumerate(prefs):
        question = MessageRecord(id="q", record_type="message", content=pref.question, role="user")
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", MemoryPipelineWarning)
            rewritten = run_sync(rewrite_query_steps(llm, rewrite_input([question], pref.question)))
        llm_s += time.perf_counter() - t0
        failed += rewritten is None or bool(caught)
        if n < 8:
            examples.append({"question": pref.question, "rewritten": rewritten})
        ranks: dict[str, dict[int, int | None]] = {"off": {}, "alone": {}, "on": {}}
        for kk in KS:  # each k is its own card (max_relevant_results=k)
            original = run_sync(relevant_steps(store, pref.question, kk, {"q"}, scope))
            other = original
            if rewritten is not None:
                other = run_sync(relevant_steps(store, rewritten, kk, {"q"}, scope))
            ranks["off"][kk] = _rank(original, pref.record_id)
            ranks["alone"][kk] = _rank(other, pref.record_id)
            ranks["on"][kk] = _rank(fuse_results(original, other, kk), pref.record_id)
        for name, by_k in ranks.items():
            for tally in (tallies[name]["all"], tallies[name][pref.half(topics)]):
                tally.n += 1
                for kk in KS:
                    tally.hits[kk] += by_k[kk] is not None
                last = by_k[max(KS)]
                tally.rr += 1.0 / last if last is not None else 0.0
        print(f"{n + 1}/{len(prefs)} {rewritten!r}", file=sys.stderr, flush=True)
    del server
    store.close()
    return {
        "config": {
            "gguf": args.gguf.name,
            "strategy": args.strategy,
            "embedder": args.embedder,
            "questions": len(prefs),
            "every": args.every,
        },
        "failed_rewrites": failed,
        "llm_seconds_mean": round(llm_s / max(1, len(prefs)), 2),
        "results": {
            name: {half: t.as_dict() for half, t in by_half.items()}
            for name, by_half in tallies.items()
        },
        "examples": examples,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", type=Path, required=True, help="the model's GGUF file")
    parser.add_argument("--port", type=int, default=PORT)
    parser.add_argument("--every", type=int, default=8, help="every Nth question only")
    parser.add_argument("--strategy", choices=["vector", "keyword", "hybrid"], default="hybrid")
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--embed-cache", type=Path)
    parser.add_argument("--data", type=Path, default=PREFEVAL_DIR)
    args = parser.parse_args(argv)
    print(json.dumps(run(args), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
