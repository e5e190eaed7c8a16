"""Fixtures of the statement-level Oracle tests (no database; see fakedb.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest
from fakedb import FakeConnection
from oracle_helpers import NOW


@pytest.fixture
def conn() -> FakeConnection:
    return FakeConnection()


@pytest.fixture
def clock() -> Callable[[], datetime]:
    return lambda: NOW
