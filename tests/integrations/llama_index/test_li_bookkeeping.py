"""The chat store's status key is bookkeeping: extracted memories never inherit it
(issue 14, 9; the rule lives in ``oam_core.memory.provenance``)."""

from __future__ import annotations

from llama_index_oam.messages import MESSAGE_KEY, STATUS_KEY

from oam_core.memory.provenance import is_bookkeeping_key


def test_adapter_keys_are_bookkeeping() -> None:
    assert is_bookkeeping_key(STATUS_KEY)
    assert is_bookkeeping_key(MESSAGE_KEY)
    assert not is_bookkeeping_key("source")
