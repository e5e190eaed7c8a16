"""The fast decoding of a record line with one vector (``format._record_cut``): it
must read every line exactly as the whole-line decoding does, or leave it to it."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import orjson
import pytest

from oam_core.store.backend import DumpRow
from oam_core.transfer import format as fmt

VECTOR = np.arange(8, dtype="<f4") / 7


def _line(**changes: Any) -> bytes:
    value: dict[str, Any] = {
        "kind": "record",
        "id": "f1",
        "record_type": "fact",
        "content": "Ana's dog is called Moose",
        "role": None,
        "seq_no": None,
        "thread_id": None,
        "user_id": "ana",
        "agent_id": None,
        "timestamp": None,
        "metadata": {"topic": "pets"},
        "created_at": "2026-03-01T12:00:00.000000+00:00",
        "expires_at": None,
        "search_rows": [
            {
                "text": "Ana's dog is called Moose",
                "vector": base64.b64encode(VECTOR.tobytes()).decode(),
                "expires_at": None,
                "sources": [],
            }
        ],
    }
    value.update(changes)
    return orjson.dumps(value) + b"\n"


def _whole(line: bytes) -> DumpRow:
    """The whole-line decoding, without the cut."""
    return fmt._record(orjson.loads(line), line)


def _same(a: DumpRow, b: DumpRow) -> None:
    assert [c.vector is None for c in a.chunks] == [c.vector is None for c in b.chunks]
    for x, y in zip(a.chunks, b.chunks, strict=True):
        if x.vector is not None:
            assert y.vector is not None
            assert x.vector.tolist() == y.vector.tolist()
    strip = {"chunks": ()}
    assert DumpRow(**{**_fields(a), **strip}) == DumpRow(**{**_fields(b), **strip})
    assert [(c.text, c.expires_at, c.sources) for c in a.chunks] == [
        (c.text, c.expires_at, c.sources) for c in b.chunks
    ]


def _fields(r: DumpRow) -> dict[str, Any]:
    return {name: getattr(r, name) for name in DumpRow.__dataclass_fields__}


def test_a_dump_line_is_cut_and_reads_as_whole() -> None:
    line = _line()
    at = line.find(fmt._VECTOR_KEY)
    cut = fmt._record_cut(line, at)
    assert cut is not None
    assert cut.chunks[0].vector is not None
    assert cut.chunks[0].vector.tolist() == VECTOR.tolist()
    _same(cut, _whole(line))
    decoded = fmt.decode(line)
    assert isinstance(decoded, DumpRow)
    _same(decoded, _whole(line))


@pytest.mark.parametrize(
    "line",
    [
        # a metadata key named "vector" beside the real vector: two keys, no cut
        _line(metadata={"vector": "AAAA"}),
        # ... with the search row's vector null: the cut lands in the metadata
        _line(
            metadata={"vector": "AAAA"},
            search_rows=[{"text": "t", "vector": None, "expires_at": None, "sources": []}],
        ),
        # the cut's mark in the line's own text
        _line(content=f"pi is {fmt._CUT_VALUE}"),
        # JSON's escaped slash in the base64 (valid JSON, not strict base64 text)
        _line().replace(b"/", b"\\/"),
        # two search rows
        _line(search_rows=[orjson.loads(_line())["search_rows"][0]] * 2),
    ],
)
def test_other_shapes_read_as_whole(line: bytes) -> None:
    at = line.find(fmt._VECTOR_KEY)
    if at >= 0:
        assert fmt._record_cut(line, at) is None
    decoded = fmt.decode(line)
    assert isinstance(decoded, DumpRow)
    _same(decoded, _whole(line))


def test_a_cut_metadata_key_does_not_hide_a_bad_vector() -> None:
    line = _line(
        metadata={"vector": "AAAA"},
        search_rows=[{"text": "t", "vector": 5, "expires_at": None, "sources": []}],
    )
    with pytest.raises(fmt.LineError, match=r"search_rows\[0\]\.vector must be base64 text"):
        fmt.decode(line)


@pytest.mark.parametrize(
    ("vector", "message"),
    [
        ("", "holds 0 bytes"),
        ("AAA", "is not base64"),
        ("AAAA", "holds 3 bytes"),
    ],
)
def test_bad_vectors_name_the_same_error(vector: str, message: str) -> None:
    row = orjson.loads(_line())["search_rows"][0]
    line = _line(search_rows=[{**row, "vector": vector}])
    with pytest.raises(fmt.LineError, match=message):
        fmt.decode(line)


def test_a_vector_outside_the_alphabet_reads_as_before() -> None:
    # binascii skips characters outside the alphabet; the strict decoder refuses them
    text = base64.b64encode(VECTOR.tobytes()).decode()
    row = orjson.loads(_line())["search_rows"][0]
    line = _line(search_rows=[{**row, "vector": text[:4] + "\n" + text[4:]}])
    decoded = fmt.decode(line)
    assert isinstance(decoded, DumpRow)
    assert decoded.chunks[0].vector is not None
    assert decoded.chunks[0].vector.tolist() == VECTOR.tolist()
