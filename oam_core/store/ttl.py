"""Time-to-live resolution (docs/store.md#ttl-and-retention); the store clock is read
by ``StoreRuntime.now`` (store/runtime.py)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.timestamps import isoparse_strict
from oam_core.errors import InvalidArgumentError
from oam_core.store.options import MemoryRetentionConfig

Clock = Callable[[], datetime]
"""A zero-argument callable returning the current time as an aware ``datetime``."""


def parse_iso_timestamp(value: object, *, what: str = "timestamp") -> datetime:
    """Parse an ISO-8601 string to an aware UTC datetime (naive values are UTC).

    Raises:
        InvalidArgumentError: (a ValueError) if ``value`` is not a string in ISO-8601 form.
    """
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(f"{what} must be an ISO-8601 string, got {value!r}")
    try:
        parsed = isoparse_strict(value.strip())
    except (ValueError, OverflowError) as exc:
        raise InvalidArgumentError(f"{what} must be an ISO-8601 string, got {value!r}") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    try:
        return parsed.astimezone(timezone.utc)
    except OverflowError:
        raise InvalidArgumentError(
            f"{what} is outside the representable dates: {value!r}"
        ) from None


def resolve_ttl_days(
    ttl_days: Maybe[int | None], retention: MemoryRetentionConfig, name: str = "ttl_days"
) -> int | None:
    """Turn a caller's ``ttl_days`` into the days to apply (None = never expires);
    ``name`` names it in errors (``ttl_days[3]``).

    Omitted → ``default_ttl_days``; ``None`` → ``max_ttl_days`` if set, else never;
    above ``max_ttl_days`` → clamped with a ``UserWarning``.

    Raises:
        InvalidArgumentError: (a ValueError) if ``ttl_days`` is negative or not an int.
    """
    max_days = retention.max_ttl_days
    if ttl_days is NOT_SET:
        days = retention.default_ttl_days
    elif ttl_days is None:
        return max_days if isinstance(max_days, int) else None
    elif isinstance(ttl_days, bool) or not isinstance(ttl_days, int):
        raise InvalidArgumentError(f"{name} must be a non-negative int or None, got {ttl_days!r}")
    elif ttl_days < 0:
        raise InvalidArgumentError(f"{name} must not be negative, got {ttl_days!r}")
    else:
        days = ttl_days
    if not isinstance(days, int):
        return None
    if isinstance(max_days, int) and days > max_days:
        warnings.warn(
            f"ttl_days={days} exceeds max_ttl_days={max_days}; clamped to {max_days}",
            UserWarning,
            stacklevel=4,
        )
        return max_days
    return days


def expiry(anchor: datetime, days: int | None) -> datetime | None:
    """Return ``anchor + days`` or None when ``days`` is None.

    Raises:
        InvalidArgumentError: (a ValueError) when the expiry falls outside the representable dates (years
            1-9999), e.g. ``ttl_days=10**9``.
    """
    if days is None:
        return None
    try:
        end = anchor + timedelta(days=days)
    except OverflowError:
        end = None
    if end is None or end > LAST_EXPIRY:
        raise InvalidArgumentError(
            f"ttl_days={days} from {anchor.isoformat()} is past the last representable date"
        )
    return end


LAST_EXPIRY = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc)
"""The latest expiry a store keeps: a whole second, as expiries are stored as float
Unix seconds and one in the last microseconds of year 9999 would round to year 10000
(which no read could turn back into a date)."""


def iso(dt: datetime) -> str:
    """Format an aware datetime as ISO-8601 UTC with microseconds."""
    return dt.astimezone(timezone.utc).isoformat(timespec="microseconds")
