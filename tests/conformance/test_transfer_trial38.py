"""Imports and copies that must treat the target the way its write API does
(docs/transfer.md#import): a compressed dump handed over as a binary file object,
profiles with scope ids, vectors of an unknown embedder, and ids of expired rows
that are not purged yet. Every test runs on each back end of the suite, on real
SQLite files and the real PostgreSQL server."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _streams import ForwardPipe

from oam_core import (
    EmbedderMismatchError,
    InvalidArgumentError,
    copy_store,
    export_store,
    import_store,
)
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.backend import DumpRow
from oam_core.transfer.summary import TransferError


@pytest.mark.parametrize("on_conflict", ["error", "skip", "replace"])
@pytest.mark.parametrize("kind", ["file", "bytesio", "pipe", "plain-pipe"])
def test_a_compressed_dump_given_as_a_binary_file_object_is_read(
    make_store: Callable[..., Any], tmp_path: Path, on_conflict: str, kind: str
) -> None:
    source = make_store(name="gz-source")
    source.add(["Ana flies to Lisbon"], "fact", record_ids=["a"], user_ids="ana")
    export_store(source, tmp_path / "d.jsonl.gz")
    data = (tmp_path / "d.jsonl.gz").read_bytes()
    assert data[:2] == b"\x1f\x8b"
    target = make_store(name="gz-target")
    if kind == "file":
        with open(tmp_path / "d.jsonl.gz", "rb") as f:
            summary = import_store(target, f, on_conflict=on_conflict)  # type: ignore[arg-type]
    else:
        raw = gzip.decompress(data) if kind == "plain-pipe" else data
        stream: Any = io.BytesIO(raw) if kind == "bytesio" else ForwardPipe(raw)
        summary = import_store(target, stream, on_conflict=on_conflict)  # type: ignore[arg-type]
    assert summary.records == {"fact": 1}
    assert summary.bytes == len(gzip.decompress(data))
    assert [r.content for r in target.list("fact")] == ["Ana flies to Lisbon"]
    assert [r.id for r, _ in target.search("Lisbon", k=3)] == ["a"]


def _dump(tmp_path: Path, lines: list[dict[str, Any]], counts: dict[str, int]) -> Path:
    head = {
        "format": "oam-dump",
        "version": 1,
        "created_at": "2026-01-01T00:00:00.000000+00:00",
        "embedder": {"id": "hashing/64", "dimension": 64},
        "record_counts": counts,
    }
    rows = sum(len(line.get("search_rows", [])) for line in lines)
    end = {"kind": "end", "record_counts": counts, "search_rows": rows}
    path = tmp_path / "hand.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in [head, *lines, end]))
    return path


def _line(rid: str, rtype: str, text: str, vector: bool = True, **scope: str) -> dict[str, Any]:
    row: dict[str, Any] = {"text": text, "expires_at": None, "sources": []}
    if vector:
        vec = HashingEmbedder(64).embed([text])[0].astype("<f4").tobytes()
        row["vector"] = base64.b64encode(vec).decode()
    return {
        "kind": "record",
        "id": rid,
        "record_type": rtype,
        "content": text,
        "role": None,
        "seq_no": None,
        "thread_id": scope.get("thread_id"),
        "user_id": scope.get("user_id"),
        "agent_id": scope.get("agent_id"),
        "timestamp": None,
        "metadata": None,
        "created_at": "2026-01-01T00:00:00.000000+00:00",
        "expires_at": None,
        "search_rows": [row],
    }


@pytest.mark.parametrize("field", ["thread_id", "user_id", "agent_id"])
@pytest.mark.parametrize("rtype", ["user_profile", "agent_profile"])
@pytest.mark.parametrize("vector", [True, False])
def test_a_profile_with_scope_ids_is_refused_as_add_refuses_it(
    make_store: Callable[..., Any], tmp_path: Path, field: str, rtype: str, vector: bool
) -> None:
    target = make_store(name="profiles")
    with pytest.raises(InvalidArgumentError, match="records are unscoped"):
        target.add(["likes tea"], rtype, record_ids=["p1"], **{field + "s": "someone"})
    dump = _dump(
        tmp_path,
        [
            _line("f1", "fact", "Ana likes tea", user_id="ana"),
            _line("p1", rtype, "likes tea", vector=vector, **{field: "someone"}),
        ],
        {"fact": 1, rtype: 1},
    )
    for on_conflict in ("error", "skip", "replace"):
        with pytest.raises(TransferError, match=rf"^source line 3: {field} is 'someone', but "):
            import_store(target, dump, on_conflict=on_conflict, batch_rows=1)  # type: ignore[arg-type]
    # refused by the first pass over the dump: the batch before it is not written either
    assert target.get(rtype, "p1") is None
    assert target.list("fact") == []
    out = io.BytesIO()
    export_store(target, out, user_ids="someone")
    assert b'"p1"' not in out.getvalue()
    # a copy writes through the same checks (a row a store should not hold)
    row = DumpRow("record", "p2", rtype, "x", None, None, None, None, None, None, None,
                  "2026-01-01T00:00:00.000000+00:00", None, **{})  # fmt: skip
    row = dataclasses.replace(row, **{field: "someone"})
    with pytest.raises(InvalidArgumentError, match=f"record 'p2': {field} is 'someone'"):
        target.restore_rows([row])
    assert target.get(rtype, "p2") is None


@pytest.mark.parametrize("how", ["import", "copy"])
def test_vectors_of_an_unknown_embedder_need_reembed_for_a_target_with_an_embedder(
    make_store: Callable[..., Any], tmp_path: Path, how: str
) -> None:
    source = make_store(name="caller-vectors", embedder=None, vector_dim=64)
    vectors = np.random.default_rng(0).standard_normal((1, 64)).astype("float32")
    source.add(["foreign vectors"], "fact", record_ids=["fv"], embeddings=vectors)
    export_store(source, tmp_path / "d.jsonl")
    head = json.loads((tmp_path / "d.jsonl").read_text().splitlines()[0])
    assert head["embedder"]["id"] is None and head["embedder"]["dimension"] == 64

    def move(target: Any, **kw: Any) -> Any:
        if how == "copy":
            return copy_store(source, target, **kw)
        return import_store(target, tmp_path / "d.jsonl", **kw)

    holding = make_store(name="holding")  # HashingEmbedder(64), with vectors
    holding.add(["own text"], "fact", record_ids=["own"])
    fresh = make_store(name="fresh")  # HashingEmbedder(64), nothing written yet
    for target in (holding, fresh):
        before = [r.id for r in target.list("fact")]
        with pytest.raises(EmbedderMismatchError, match=r"unknown embedder.*'hashing/64'.*reembed"):
            move(target)
        assert [r.id for r in target.list("fact")] == before
        assert move(target, reembed=True).records == {"fact": 1}
        assert target.search("foreign vectors", k=5)[0][0].id == "fv"
    # a target without an embedder takes them as they are
    bare = make_store(name="bare", embedder=None, vector_dim=64)
    assert move(bare).records == {"fact": 1}
    hits = bare.search(query_vector=vectors[0], k=1)
    assert [r.id for r, _ in hits] == ["fv"]
