"""The import cuts the dump into lines a block at a time (``transfer/decoder.py``):
the same lines and numbers as reading it line by line, whatever the block size."""

from __future__ import annotations

import io

import pytest

from oam_core.transfer import decoder

CASES = [
    b"",
    b"head",
    b"head\n",
    b"head\nrow 1\nrow 2\n",
    b"head\nrow 1\n\nrow 3",
    b"head\n" + b"x" * 50 + b"\n" + b"y" * 3 + b"\n",
]


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64, 1 << 20])
@pytest.mark.parametrize("data", CASES)
def test_lines_and_numbers_as_readline(
    data: bytes, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decoder, "BLOCK_BYTES", block)
    expected = list(enumerate(io.BytesIO(data), start=1))
    assert list(decoder.numbered(io.BytesIO(data))) == expected
