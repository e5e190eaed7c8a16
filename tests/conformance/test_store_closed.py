"""A call on a closed store raises ``StoreClosedError`` on every back end (one class,
not the driver's "closed database" on one and "cannot connect" on another), and
nothing is done (docs/errors.md)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest

from oam_core import StoreClosedError, export_store
from oam_core.errors import StoreConnectionError

CALLS: dict[str, Callable[[Any], object]] = {
    "add": lambda s: s.add(["y"], "fact"),
    "get": lambda s: s.get("fact", "x"),
    "list": lambda s: s.list("fact"),
    "search": lambda s: s.search("x", k=3),
    "update": lambda s: s.update("fact", "x", text="z"),
    "delete": lambda s: s.delete("fact", "x"),
    "export": lambda s: export_store(s, io.BytesIO()),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_call_on_a_closed_store_is_a_store_closed_error(make_store: Any, call: str) -> None:
    store = make_store(name="closed.db")
    store.add(["x"], "fact", record_ids=["x"])
    store.close()
    with pytest.raises(StoreClosedError, match="was closed") as raised:
        CALLS[call](store)
    assert not isinstance(raised.value, StoreConnectionError)  # not a retryable failure
    assert isinstance(raised.value, ValueError)
