"""Checks of dumped rows that ``add`` makes of the same fields: a validity window
only where ``add`` takes one, profiles without scope ids (``check_values`` in
``store/dumpcheck.py`` runs them on every imported or copied row;
docs/transfer.md#import).
"""

from __future__ import annotations

from collections.abc import Sequence

from oam_core.apis.records import PROFILE_TYPES
from oam_core.checks import check_window, check_windowed
from oam_core.errors import InvalidArgumentError
from oam_core.store.backend import DumpRow

__all__ = ["check_profiles", "check_windows"]


def check_profiles(rows: Sequence[DumpRow]) -> None:
    """Refuse a profile with a scope id, as ``add`` does: a profile is unscoped (its
    id is the user or agent id), and a scoped one would travel with that user's
    filtered export.

    Raises:
        InvalidArgumentError: naming the record and the first scope field set.
    """
    for r in rows:
        if r.record_type in PROFILE_TYPES:
            for name, value in (
                ("thread_id", r.thread_id),
                ("user_id", r.user_id),
                ("agent_id", r.agent_id),
            ):
                if value is not None:
                    raise InvalidArgumentError(
                        f"record {r.id!r}: {name} is {value!r}, but {r.record_type} "
                        "records are unscoped (their id is the user or agent id); "
                        "drop the scope ids"
                    )


def check_windows(rows: Sequence[DumpRow]) -> None:
    """Refuse a validity window on a message or profile, or one ending before it starts.

    Raises:
        InvalidArgumentError: naming the record and the field.
    """
    for r in rows:
        if r.valid_from is not None or r.valid_until is not None:
            where = f"record {r.id!r}: "
            try:
                check_windowed(r.record_type, [(where + "valid_from", r.valid_from)])
                check_windowed(r.record_type, [(where + "valid_until", r.valid_until)])
                check_window(r.valid_from, r.valid_until, where + "valid_until", allow_empty=True)
            except ValueError as exc:
                raise InvalidArgumentError(str(exc)) from None
