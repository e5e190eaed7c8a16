"""Reports each conformance back end that is not available here, once, with the reason
(the live Oracle Database suite needs OAM_ORACLE_DSN/USER/PASSWORD; docs/oracle.md)."""

from __future__ import annotations

from typing import Any

import pytest


def test_backend_available(any_backend: Any) -> None:
    reason = any_backend.skip_reason() if any_backend.skip_reason else None
    if reason:
        pytest.skip(reason)
    assert callable(any_backend.open)
