"""Event times and window ends are strict ISO-8601 (docs/store.md#timestamps): a date
with an offset but no time is refused instead of being read as a time of day."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from oam_core.apis.timestamps import normalize_timestamp, parse_timestamp
from oam_core.errors import InvalidArgumentError
from oam_core.store.ttl import parse_iso_timestamp


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2024-01-01", datetime(2024, 1, 1, tzinfo=timezone.utc)),
        ("2024-01-01T00:00+02:00", datetime(2023, 12, 31, 22, tzinfo=timezone.utc)),
        ("2024-01-01T09:30:00Z", datetime(2024, 1, 1, 9, 30, tzinfo=timezone.utc)),
        ("20240101T0930-0100", datetime(2024, 1, 1, 10, 30, tzinfo=timezone.utc)),
    ],
)
def test_iso_forms_parse_to_utc(text: str, utc: datetime) -> None:
    assert parse_timestamp(text) == utc
    assert parse_iso_timestamp(text) == utc


@pytest.mark.parametrize("text", ["2024-01-01+02:00", "2024-01-01-05:00", "20240101+0200"])
def test_a_date_with_an_offset_but_no_time_is_refused(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match=r"valid_from must be an ISO-8601.*got '"):
        parse_timestamp(text, "valid_from")
    with pytest.raises(InvalidArgumentError, match="created_at must be an ISO-8601 string"):
        parse_iso_timestamp(text, what="created_at")
    with pytest.raises(InvalidArgumentError, match="timestamps"):
        normalize_timestamp(text, "timestamps[0]")


def test_an_expiry_in_the_last_second_of_year_9999_is_refused() -> None:
    """Expiries are stored as float Unix seconds: one a few microseconds before year
    10000 would round up to it, and no read could turn it back into a date."""
    from oam_core.errors import InvalidArgumentError
    from oam_core.store.ttl import LAST_EXPIRY, expiry

    assert expiry(LAST_EXPIRY - timedelta(days=1), 1) == LAST_EXPIRY
    with pytest.raises(InvalidArgumentError, match="past the last representable date"):
        expiry(LAST_EXPIRY - timedelta(days=1) + timedelta(microseconds=5), 1)
    with pytest.raises(InvalidArgumentError, match="ttl_days=10000000"):
        expiry(LAST_EXPIRY, 10**7)


@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
def test_a_blank_string_is_named_as_one(blank: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        parse_timestamp(blank, "as_of")
    message = str(caught.value)
    assert message.startswith("as_of must be an ISO-8601 date or date-time")
    assert f"got a blank string {blank!r}" in message
