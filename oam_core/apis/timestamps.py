"""Event timestamps of records and messages: parsed once, stored in one form
(docs/store.md#timestamps).

A record's ``timestamp`` is the caller's event time. The store accepts an ISO-8601
string (``"2026-03-01"``, ``"2026-03-01T09:30:00Z"``, ``"2026-03-01T09:30:00+02:00"``)
or a ``datetime``; a value without a UTC offset means UTC. It is stored as the UTC
time in ISO-8601, e.g. ``"2026-03-01T07:30:00+00:00"``; fractional seconds are kept
(to the microsecond, ``"...07:30:00.250000+00:00"``) when the value has them. A value
already in that form is stored unchanged. Parsing is ``dateutil.parser.isoparse``: strict ISO-8601, no guessing of
free-form dates such as ``"yesterday"``.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from dateutil.parser import isoparse

from oam_core.errors import InvalidArgumentError

__all__ = ["isoparse_strict", "normalize_timestamp", "parse_timestamp"]

_FRACTION = re.compile(r"\d:?\d\d[.,]\d")
"""Seconds with a fraction (``09:30:00.5``, ``093000,5``) in an ISO-8601 string."""


_DATE_THEN_OFFSET = re.compile(r"\d{4}-?\d\d-?\d\d[+-]")
"""A date with a UTC offset but no time (``2024-01-01+02:00``): not ISO-8601, and
``isoparse`` would read the offset as a time of day (02:00)."""


def isoparse_strict(text: str) -> datetime:
    """``dateutil.parser.isoparse`` of ``text`` (already stripped), except that a date
    followed by an offset without a time is refused.

    Raises:
        ValueError: when ``text`` is not ISO-8601 (``InvalidArgumentError`` for the
            offset case; callers turn either into
            ``InvalidArgumentError`` naming their argument).
    """
    if _DATE_THEN_OFFSET.match(text):
        raise InvalidArgumentError(f"a UTC offset needs a time of day: {text!r}")
    return isoparse(text)


def parse_timestamp(value: object, name: str = "timestamp") -> datetime:
    """Parse an event time to an aware UTC ``datetime``.

    Args:
        value: An ISO-8601 string or a ``datetime``; naive values are UTC.
        name: The argument name used in error messages (``"timestamps[2]"``).

    Returns:
        The time as an aware ``datetime`` in UTC.

    Raises:
        InvalidArgumentError: naming ``name`` and the value, when ``value`` is neither a
            ``datetime`` nor an ISO-8601 string, or lies outside the dates Python can
            represent once converted to UTC.
    """
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str) and value.strip():
        try:
            parsed = isoparse_strict(value.strip())
        except (ValueError, OverflowError) as exc:
            raise InvalidArgumentError(
                f"{name} must be an ISO-8601 date or date-time (e.g. 2026-03-01T09:30:00Z) "
                f"or a datetime, got {value!r}"
            ) from exc
    elif isinstance(value, str):
        raise InvalidArgumentError(
            f"{name} must be an ISO-8601 date or date-time (e.g. 2026-03-01T09:30:00Z) "
            f"or a datetime, got a blank string {value!r}"
        )
    else:
        raise InvalidArgumentError(
            f"{name} must be an ISO-8601 string or a datetime, got {type(value).__name__} {value!r}"
        )
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    try:
        return parsed.astimezone(timezone.utc)
    except (OverflowError, ValueError):
        raise InvalidArgumentError(
            f"{name} is outside the representable dates: {value!r}"
        ) from None


def normalize_timestamp(value: object, name: str = "timestamp") -> str | None:
    """The stored form of an event time: ``None`` stays None, anything else is parsed.

    Args:
        value: None, an ISO-8601 string or a ``datetime`` (naive = UTC).
        name: The argument name used in error messages.

    Returns:
        None, or the UTC time in ISO-8601 (``"2026-03-01T07:30:00+00:00"``), with
        microseconds when ``value`` has fractional seconds.

    Raises:
        InvalidArgumentError: as ``parse_timestamp``.
    """
    if value is None:
        return None
    parsed = parse_timestamp(value, name)
    fraction = parsed.microsecond or (isinstance(value, str) and _FRACTION.search(value))
    return parsed.isoformat(timespec="microseconds" if fraction else "seconds")
