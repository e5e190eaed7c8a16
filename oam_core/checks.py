"""The argument checks of the store, the client and the adapters, in one place
(docs/errors.md).

Every helper takes the value first and its name second, and raises
``InvalidArgumentError`` (a ``ValueError``, so code written for the reference SDK
keeps catching it) with a message that names the argument and the value. Checks run
before anything is written, so a refused call writes nothing.

The helpers come in four kinds, in this order: scalars (counts, ints, bools, seconds),
ids and texts (ids, scope ids, text a back end can store, record types, roles of the
adapters), vectors (one vector, rows of them, their dimension) and search arguments
(scope, filter, record types, the strategy of this call). Everything one search calls
is here, in this one module.
"""

from __future__ import annotations

import math
import reprlib
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np
import numpy.typing as npt

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.records import MEMORY_TYPES, RECORD_TYPES, SEARCHABLE_TYPES, THREAD
from oam_core.apis.storable import check_json_text as check_json_text
from oam_core.apis.storable import check_text as check_text
from oam_core.apis.storable import storable as storable
from oam_core.apis.timestamps import parse_timestamp
from oam_core.apis.ttl import TimeToLiveAnchor
from oam_core.errors import InvalidArgumentError
from oam_core.filters import parse_filter
from oam_core.store.options import SearchStrategy

if TYPE_CHECKING:
    from oam_core.store.backend import Predicate

__all__ = [
    "MAX_ROWS",
    "SHORT_COMPONENT",
    "STRATEGY_OVERRIDE",
    "Vector",
    "anchors_on_timestamp",
    "broadcast",
    "check_bool",
    "check_dims",
    "check_given_id",
    "check_id",
    "check_int",
    "check_json_text",
    "check_list",
    "check_nonblank",
    "check_optional_int",
    "check_optional_seconds",
    "check_record_id",
    "check_record_type",
    "check_required_id",
    "check_scope",
    "check_scope_id",
    "check_seconds",
    "check_store_kwargs",
    "check_text",
    "check_texts",
    "check_thread_owner",
    "check_vector_rows",
    "clamp_count",
    "filter_arg",
    "findable",
    "lengthen_short_rows",
    "lookup_id",
    "reject_kwargs",
    "scope_arg",
    "scope_ok",
    "split_vectors",
    "storable",
    "strategy_of",
    "texts_storable",
    "to_vector",
    "types_arg",
]

Vector = npt.NDArray[np.float32]

# ----------------------------------------------------------------------- scalars

MAX_ROWS = 2**31 - 1
"""Bound that counts and positions (``k``, ``limit``, ``start``/``end``) are clamped
to: far above any result a store can return, small enough that sums of a few of them
stay within every database's 64-bit integers (docs/store.md, "Limits")."""


def clamp_count(value: int) -> int:
    """``value`` bounded to ``[-MAX_ROWS, MAX_ROWS]`` (huge ``k``/``limit``/positions
    behave as "everything")."""
    return max(-MAX_ROWS, min(MAX_ROWS, value))


def check_int(value: object, name: str, *, minimum: int | None = None) -> int:
    """``value`` if it is an int (not a bool), at least ``minimum`` when given.

    Raises:
        InvalidArgumentError: naming ``name`` and the value otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        kind = "an int" if minimum is None else f"an int >= {minimum}"
        raise InvalidArgumentError(f"{name} must be {kind}, got {value!r}")
    if minimum is not None and value < minimum:
        raise InvalidArgumentError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def check_optional_int(value: object, name: str, *, minimum: int | None = None) -> int | None:
    """``value`` if it is None or an int (not a bool), at least ``minimum`` when given.

    Raises:
        InvalidArgumentError: naming ``name`` and the value otherwise.
    """
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or (minimum is not None and value < minimum)
    ):
        kind = "an int" if minimum is None else f"an int >= {minimum}"
        raise InvalidArgumentError(f"{name} must be {kind} or None, got {value!r}")
    return value


def check_bool(value: object, name: str) -> bool:
    """``value`` if it is a bool.

    Raises:
        InvalidArgumentError: naming ``name`` and the value otherwise.
    """
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be a bool, got {value!r}")
    return value


def check_seconds(value: object, name: str, *, zero: bool = False) -> float:
    """A duration in seconds as a float: a finite number > 0 (>= 0 with ``zero``).

    Raises:
        InvalidArgumentError: naming ``name`` and the value for anything else (bools,
            NaN, infinities, negative numbers, strings).
    """
    if _seconds_ok(value, zero):
        return float(value)
    raise InvalidArgumentError(
        f"{name} must be a finite number of seconds {'>= 0' if zero else '> 0'}, got {value!r}"
    )


def check_optional_seconds(value: object, name: str, *, zero: bool = False) -> float | None:
    """None (no bound), or a duration as ``check_seconds`` takes it.

    Raises:
        InvalidArgumentError: naming ``name`` and the value for anything else.
    """
    if value is None:
        return None
    if _seconds_ok(value, zero):
        return float(value)
    raise InvalidArgumentError(
        f"{name} must be a finite number of seconds {'>= 0' if zero else '> 0'}, or None, "
        f"got {value!r}"
    )


def _seconds_ok(value: object, zero: bool) -> TypeGuard[float]:
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and math.isfinite(value)
        and (value >= 0 if zero else value > 0)
    )


def reject_kwargs(
    kwargs: Mapping[str, Any], method: str, allowed: frozenset[str] = frozenset()
) -> None:
    """Refuse keyword arguments of ``method`` other than ``allowed``, as Python does.

    Raises:
        TypeError: naming ``method`` and the unexpected names.
    """
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise TypeError(f"{method}() got unexpected keyword arguments: {unknown}")


def check_store_kwargs(kwargs: Mapping[str, Any], method: str, reserved: frozenset[str]) -> None:
    """Refuse ``store_kwargs`` of ``method`` that name what ``method`` sets itself.

    Raises:
        InvalidArgumentError: naming ``method`` and the clashing names.
    """
    clash = sorted(reserved & set(kwargs))
    if clash:
        raise InvalidArgumentError(
            f"{method}() sets {clash} itself; they cannot be passed as store_kwargs"
        )


def broadcast(value: Any, name: str, n: int) -> list[Any]:
    """Broadcast a scalar over ``n`` rows, or check a list has ``n`` entries.

    ``NOT_SET`` broadcasts as ``NOT_SET``. A 1-D numpy array (a column of a data
    frame, say) is a list of its values as Python objects.

    Raises:
        InvalidArgumentError: if a list's length is not ``n``.
    """
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise InvalidArgumentError(f"{name} has {len(value)} entries but contents has {n}")
        return list(value)
    return [value] * n


# ---------------------------------------------------------------- validity windows


def window_time(value: object, name: str) -> datetime | None:
    """One end of a validity window (docs/store.md#validity-windows): None stays
    None (open); a ``datetime`` (naive = UTC) or an ISO-8601 string becomes an aware
    UTC ``datetime``.

    Raises:
        InvalidArgumentError: naming ``name`` and the value, for anything else, an
            unparseable string, or one holding a NUL or a lone surrogate.
    """
    if value is None:
        return None
    parsed = _time_arg(value, name)
    try:  # stored as Unix seconds: it must read back as a date
        datetime.fromtimestamp(parsed.timestamp(), parsed.tzinfo)
    except (OverflowError, ValueError, OSError):
        raise InvalidArgumentError(
            f"{name} is outside the dates a store can hold: {value!r}"
        ) from None
    return parsed


def _time_arg(value: object, name: str) -> datetime:
    """``value`` (a datetime, naive = UTC, or an ISO-8601 string) as aware UTC."""
    if isinstance(value, str):
        check_text(value, name)
    return parse_timestamp(value, name)


def check_window(
    valid_from: datetime | None,
    valid_until: datetime | None,
    name: str = "valid_until",
    *,
    allow_empty: bool = False,
) -> None:
    """Refuse a window that ends before it starts.

    Args:
        valid_from: The window's start, or None (open).
        valid_until: The window's end, or None (open).
        name: The argument named in the error.
        allow_empty: Accept ``valid_until == valid_from``: a version ended before
            it started, which never holds (what ``invalidate_memory`` and
            ``update_memory`` store for a memory whose window had not begun,
            docs/store.md#validity-windows); an import reads such rows back.

    Raises:
        InvalidArgumentError: naming ``name``, when both ends are set and
            ``valid_until <= valid_from`` (``<`` with ``allow_empty``).
    """
    if valid_from is None or valid_until is None:
        return
    if valid_until < valid_from or (valid_until == valid_from and not allow_empty):
        what = name if "valid_until" in name else f"{name}: valid_until"
        later = "no earlier than" if allow_empty else "later than"
        raise InvalidArgumentError(
            f"{what} must be {later} valid_from, got "
            f"valid_from={valid_from.isoformat()} and valid_until={valid_until.isoformat()}"
        )


def as_of_arg(value: object, *, default: datetime | None) -> datetime | None:
    """The ``as_of`` of a search or list as ``Predicate.valid_at``: omitted ->
    ``default``; None -> None (no validity filter); a datetime (naive = UTC) or an
    ISO-8601 string -> that time (docs/store.md#validity-windows).

    Raises:
        InvalidArgumentError: naming ``as_of``, for anything else.
    """
    if value is NOT_SET:
        return default
    return None if value is None else _time_arg(value, "as_of")


def check_windowed(
    record_type: str, given: Iterable[tuple[str, object]], *, none_given: bool = False
) -> None:
    """Refuse a validity window on a record type that has none (messages, profiles):
    ``given`` holds ``(argument name, value)`` pairs; ``NOT_SET`` (omitted) passes,
    and None too unless ``none_given`` (an argument of ``add``/``update``, where an
    explicit None is given, docs/store.md#validity-windows; a dump row's None is
    the absence of a window).

    Raises:
        InvalidArgumentError: naming the first argument set to something else.
    """
    if record_type in MEMORY_TYPES:
        return
    for name, value in given:
        if value is not NOT_SET and (none_given or value is not None):
            shown = value.isoformat() if isinstance(value, datetime) else repr(value)
            raise InvalidArgumentError(
                f"{name}: {record_type} records have no validity window; only memory, "
                f"guideline, fact and preference records take one, got {shown}"
            )


def anchors_on_timestamp(ttl_anchor: object) -> bool:
    """Whether a TTL anchor argument (scalar or list) may read row timestamps."""
    if isinstance(ttl_anchor, (list, tuple)):
        return True
    return (
        ttl_anchor is TimeToLiveAnchor.TIMESTAMP or ttl_anchor == TimeToLiveAnchor.TIMESTAMP.value
    )


# ---------------------------------------------------------------- ids and texts


def texts_storable(values: Sequence[str | None]) -> bool:
    """Whether every string of ``values`` (None is skipped) is ``storable`` (no NUL,
    no lone surrogate), in one pass over all of them (ASCII text costs one scan); a
    caller that names its arguments otherwise than ``check_texts`` checks them this
    way, and one by one with ``check_text`` only when this is False."""
    try:
        joined = "".join(values)  # type: ignore[arg-type]
    except TypeError:  # a None among them
        joined = "".join([v for v in values if v is not None])
    if "\x00" in joined:
        return False
    if joined.isascii():
        return True
    try:
        joined.encode("utf-8")  # refuses lone surrogates; ~6x faster than the regex
        return True
    except UnicodeEncodeError:
        return False


def check_texts(values: Sequence[str | None], name: str) -> None:
    """``check_text`` on every string of ``values`` (None is skipped), naming
    ``name[i]``: one pass over all of them, row by row only to name a bad one.

    Raises:
        InvalidArgumentError: as ``check_text``, for the first bad entry.
    """
    if texts_storable(values):
        return
    for i, v in enumerate(values):
        if v is not None:
            check_text(v, f"{name}[{i}]")


def check_list(value: object, name: str, of: str) -> list[Any]:
    """``value`` (any iterable but a string) as a list; its entries are the caller's
    to check. ``of`` words what it holds (``"ids"``, ``"texts"``).

    Raises:
        InvalidArgumentError: naming ``name`` and the value for a bare string or
            bytes (which would be read as one entry per character) or a non-iterable.
    """
    if isinstance(value, (str, bytes)):
        raise InvalidArgumentError(f"{name} must be a list of {of}, got the bare string {value!r}")
    if not isinstance(value, Iterable):
        raise InvalidArgumentError(f"{name} must be a list of {of}, got {shown(value)}")
    return list(value)


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 120
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxset = _SHOWN.maxdict = 5


def shown(value: object) -> str:
    """``value`` as an error message shows it: its ``repr``, a long one cut (a string
    to about 120 characters, a container to its first 5 items), with its type when it
    is not a string, so an error never repeats a megabyte of input."""
    text = _SHOWN.repr(value)
    return text if value is None or isinstance(value, str) else f"{type(value).__name__} {text}"


def check_record_id(value: object, name: str) -> str:
    """``value`` if it is a non-empty str (an id to look a record up by).

    Raises:
        InvalidArgumentError: naming ``name`` and the value otherwise.
    """
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{name} must be a non-empty str, got {shown(value)}")
    return value


def check_id(value: object, name: str) -> str:
    """Return ``value`` if it is a non-empty string a store can hold (an id to write).

    Raises:
        InvalidArgumentError: naming ``name``, for a non-string, an empty string, or
            one with a NUL character or a lone surrogate.
    """
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{name} must be a non-empty string, got {shown(value)}")
    return check_text(value, name)


def lookup_id(value: object, name: str) -> bool:
    """Check an id used to look records up (get, delete, list and search scopes).

    Returns:
        Whether a record could have this id; False for a string with a NUL or lone
        surrogate, which no store holds, so the lookup finds nothing.

    Raises:
        InvalidArgumentError: naming ``name``, for a non-string or an empty string.
    """
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{name} must be a non-empty string, got {shown(value)}")
    return storable(value)


def check_given_id(value: object, name: str) -> str:
    """Return ``value`` as the id of a new object, generating a uuid4 when it is
    ``NOT_SET`` (docs/concepts.md#ids-and-times).

    Raises:
        InvalidArgumentError: if ``value`` is ``None`` or not a non-blank str.
    """
    if value is NOT_SET:
        return str(uuid.uuid4())
    if value is None:
        raise InvalidArgumentError(
            f"{name} must be a non-empty str (omit it to generate one), got None"
        )
    return check_nonblank(value, name, "a non-empty str")


def check_required_id(value: object, name: str) -> str:
    """Return ``value`` as an id of an existing object (``NOT_SET`` is refused like
    ``None``: nothing is generated).

    Raises:
        InvalidArgumentError: if ``value`` is not a non-blank str.
    """
    if value is None or value is NOT_SET:
        raise InvalidArgumentError(f"{name} must be a non-empty str, got None")
    return check_nonblank(value, name, "a non-empty str")


def check_nonblank(value: object, name: str, kind: str = "a non-blank str") -> str:
    """``value`` if it is a str with a non-space character (a key, a thread id of an
    adapter); ``kind`` words the rule in the message.

    Raises:
        InvalidArgumentError: ``"{name} must be {kind}, got {value!r}"`` otherwise.
    """
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(f"{name} must be {kind}, got {value!r}")
    return value


def check_scope(
    value: object, name: str, default: str | None = None, kind: str = "a non-empty str"
) -> str | None:
    """Resolve a scope id of the client, a thread or an adapter: omitted -> ``default``,
    ``None`` -> unscoped, else a str with a non-space character
    (docs/concepts.md#ids-and-times); ``kind`` words the rule in the message.

    Raises:
        InvalidArgumentError: ``"{name} must be {kind} or None, got {value!r}"`` for
            anything else.
    """
    if value is NOT_SET:
        return default
    if value is None:
        return None
    return check_nonblank(value, name, f"{kind} or None")


def check_scope_id(value: object, name: str) -> str | None:
    """A scope id to write (``thread_ids``, ``user_ids``, ``agent_ids`` of ``add``):
    None or a non-empty string a store can hold.

    Raises:
        InvalidArgumentError: naming ``name`` and the value otherwise.
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{name} must be a non-empty string or None, got {value!r}")
    return check_text(value, name)


def scope_ok(value: object) -> bool:
    """Whether ``check_scope_id`` passes ``value`` (without naming anything)."""
    return value is None or (isinstance(value, str) and bool(value) and storable(value))


def check_thread_owner(
    thread_id: str,
    owner_user: str | None,
    owner_agent: str | None,
    user_id: str | None,
    agent_id: str | None,
) -> None:
    """Refuse a thread that belongs to another user or agent than the ones a caller
    (an adapter) is configured with (``user_id``/``agent_id`` None: any).

    Raises:
        InvalidArgumentError: naming the thread and both ids.
    """
    for name, owner, wanted in (
        ("user_id", owner_user, user_id),
        ("agent_id", owner_agent, agent_id),
    ):
        if wanted is not None and owner != wanted:
            raise InvalidArgumentError(
                f"thread {thread_id!r} belongs to {name} {owner!r}, not {wanted!r}"
            )


def check_record_type(
    record_type: object, *, allow_thread: bool = False, method: str = "add"
) -> str:
    """Return ``record_type`` if it is a known record type (``thread`` only with
    ``allow_thread``: threads are created, not written by ``method``).

    Raises:
        InvalidArgumentError: naming the value.
    """
    if not isinstance(record_type, str) or record_type not in RECORD_TYPES:
        raise InvalidArgumentError(
            f"record_type must be one of {sorted(RECORD_TYPES)}, got {record_type!r}"
        )
    if record_type == THREAD and not allow_thread:
        raise InvalidArgumentError(
            f"record_type 'thread' cannot be written with {method}(); create a thread "
            "(OracleAgentMemory.create_thread) and change it through its OracleThread"
        )
    return record_type


# ---------------------------------------------------------------------- vectors

_F32_MAX = float(np.finfo(np.float32).max)

SHORT_COMPONENT = 2.0**-50
"""A vector whose largest component is below this in absolute value (about 8.9e-16)
is scaled to unit length before it is stored or searched (``lengthen_short_rows``)."""


def to_vector(value: object, name: str) -> Vector:
    """Convert one vector to a finite, non-empty float32 array of shape ``(dim,)``.

    Raises:
        InvalidArgumentError: for an empty, non-numeric, non-1-D or non-finite vector.
    """
    try:
        given = value if isinstance(value, np.ndarray) else np.asarray(value)
        if given.dtype.kind not in "fiub":  # text, complex or objects: not read as numbers
            raise TypeError(given.dtype)
        with np.errstate(over="ignore"):  # out of float32's range: refused below
            arr = np.asarray(given, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{name} must be a list of floats, got {value!r}") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidArgumentError(f"{name} must be a non-empty 1-D vector, got shape {arr.shape}")
    check_vector_rows(arr[None, :], lambda _: name)
    row: Vector = lengthen_short_rows(arr[None, :])[0]
    return row


def check_vector_rows(rows: Vector, name: Callable[[int], str]) -> None:
    """Refuse vectors a cosine distance cannot be computed for: NaN or infinite
    values (as float32), or a squared length past float32's range.

    Args:
        rows: float32 array of shape ``(n, dim)``, one vector per row.
        name: ``name(i)`` names row ``i`` in errors (``embeddings[3]``).

    Raises:
        InvalidArgumentError: naming the first such row.
    """
    bound = math.sqrt(_F32_MAX / rows.shape[1])
    if -bound < rows.min() and rows.max() < bound:  # NaN fails both comparisons
        return
    finite = np.isfinite(rows).all(axis=1)
    if not bool(finite.all()):
        bad = int(np.flatnonzero(~finite)[0])
        raise InvalidArgumentError(f"{name(bad)} contains NaN or infinite values (as float32)")
    squared = np.einsum("ij,ij->i", rows, rows, dtype=np.float64)
    over = np.flatnonzero(squared > _F32_MAX)
    if over.size:
        bad = int(over[0])
        raise InvalidArgumentError(
            f"{name(bad)}: its squared length {squared[bad]:.3g} is past float32's range "
            f"({_F32_MAX:.3g}); scale it down (cosine distance does not depend on length)"
        )


def lengthen_short_rows(rows: Vector) -> Vector:
    """``rows`` with every non-zero row whose components are all below
    ``SHORT_COMPONENT`` in absolute value scaled to unit length, in float64.

    The squares of components below about 1e-19 underflow float32, so such a vector
    would otherwise have length 0 when a back end (the embedded vector index,
    pgvector, Oracle) computes its cosine distance in float32, and rank as a zero
    vector. The cosine distance does not depend on length, so the direction is all
    that is kept. ``rows`` itself (possibly the caller's array) is never modified: a
    copy is returned when a row changes (docs/store.md#what-is-stored-and-what-is-searched).

    Args:
        rows: float32 array of shape ``(n, dim)``, finite (``check_vector_rows``).
    """
    if rows.size == 0:
        return rows
    # One cheap float32 pass finds the candidates; the float64 work is theirs only.
    peak = np.maximum(rows.max(axis=1), -rows.min(axis=1))
    short = np.flatnonzero((peak < SHORT_COMPONENT) & (peak > 0))
    if short.size == 0:
        return rows
    out = np.array(rows, dtype=np.float32, copy=True)
    wide = rows[short].astype(np.float64)
    # Scale by the peak first: the squares of the scaled rows cannot underflow.
    wide /= peak[short, None].astype(np.float64)
    wide /= np.linalg.norm(wide, axis=1, keepdims=True)
    out[short] = wide.astype(np.float32)
    return out


def split_vectors(value: object, name: str) -> list[Vector] | Vector:
    """Read an embedding entry: one vector, or a list of chunk vectors.

    Returns:
        A single float32 vector, or a list (possibly empty) of them.

    Raises:
        InvalidArgumentError: for anything else, or a vector ``to_vector`` refuses.
    """
    if isinstance(value, np.ndarray):
        if value.ndim == 2:
            return [to_vector(row, f"{name}[{i}]") for i, row in enumerate(value)]
        if value.ndim == 1 and value.size == 0:
            return []
        return to_vector(value, name)
    if isinstance(value, (list, tuple)):
        if not value:
            return []
        if all(isinstance(v, (list, tuple, np.ndarray)) for v in value):
            return [to_vector(v, f"{name}[{i}]") for i, v in enumerate(value)]
        return to_vector(value, name)
    raise InvalidArgumentError(f"{name} must be a vector or a list of vectors, got {value!r}")


def check_dims(vectors: Sequence[Vector], store_dim: int | None) -> int | None:
    """Check all vectors share one dimension equal to the store's; return it.

    Raises:
        InvalidArgumentError: naming both dimensions on a mismatch.
    """
    dims = {int(v.shape[0]) for v in vectors}
    if len(dims) > 1:
        raise InvalidArgumentError(
            f"all vectors of one call must share a dimension, got {sorted(dims)}"
        )
    if not dims:
        return store_dim
    dim = dims.pop()
    if store_dim is not None and dim != store_dim:
        raise InvalidArgumentError(
            f"vector dimension {dim} does not match the store's dimension {store_dim}"
        )
    return dim


# ------------------------------------------------------------- search arguments


def scope_arg(value: Maybe[str | None], name: str) -> Maybe[str | None]:
    """A scope id of a read, search or delete as given (``NOT_SET``: unconstrained;
    None: only unscoped rows; docs/store.md#scopes).

    Raises:
        InvalidArgumentError: for anything but a str, None or ``NOT_SET``.
    """
    if value is NOT_SET or value is None:
        return value
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a str, None or omitted, got {value!r}")
    return value


def filter_arg(value: Maybe[dict[str, Any] | None]) -> Any:
    """A metadata filter parsed to its tree (``NOT_SET``/None passed through;
    docs/filters.md).

    Raises:
        InvalidFilterError: for a filter outside the language.
        InvalidArgumentError: for an operand holding NUL or a lone surrogate.
    """
    if value is NOT_SET or value is None:
        return value
    tree = parse_filter(value)
    # No stored key or string holds NUL or a lone surrogate (metadatajson.dump_metadata),
    # and SQLite's JSON functions would stop at a NUL: such an operand is an error.
    check_json_text(value, "metadata_filter")
    return tree


def findable(pred: Predicate) -> bool:
    """False when a scope id of ``pred`` cannot be stored (NUL, lone surrogate): then
    no record matches and the back end is not asked."""
    return all(
        value is NOT_SET or value is None or storable(value)
        for value in (pred.thread_id, pred.user_id, pred.agent_id)
    )


def types_arg(record_types: Iterable[str] | None) -> frozenset[str]:
    """The searched record types (None: messages, memory-like records and profiles;
    docs/store.md#scopes).

    Raises:
        InvalidArgumentError: for a bare string, an unknown or empty set.
    """
    if record_types is None:
        return SEARCHABLE_TYPES
    if isinstance(record_types, (str, bytes)):
        raise InvalidArgumentError(
            f"record_types must be a set of type names, got the bare string {record_types!r}; "
            f"write {{{record_types!r}}}"
        )
    try:
        types = frozenset(record_types)
    except TypeError:
        raise InvalidArgumentError(
            f"record_types must be a set of type names, got {record_types!r}"
        ) from None
    unknown = types - SEARCHABLE_TYPES
    if unknown:
        raise InvalidArgumentError(
            f"unknown record_types {sorted(map(str, unknown))}; searchable: {sorted(SEARCHABLE_TYPES)}"
        )
    if not types:
        raise InvalidArgumentError("record_types must not be empty")
    return types


STRATEGY_OVERRIDE: ContextVar[tuple[tuple[object, SearchStrategy], ...]] = ContextVar(
    "oam_search_strategy", default=()
)
"""The strategies of the enclosing ``store.strategy.searching_with`` blocks, each with
its store, innermost last (blocks for several stores nest)."""


def strategy_of(store: object) -> SearchStrategy:
    """The strategy ``store`` ranks this call's searches with: the override of the
    innermost enclosing ``searching_with(store, ...)``, else ``store.search_strategy``
    (docs/store.md#search-strategies)."""
    for owner, chosen in reversed(STRATEGY_OVERRIDE.get()):
        if owner is store:
            return chosen
    strategy = getattr(store, "search_strategy", SearchStrategy.VECTOR)
    return strategy if isinstance(strategy, SearchStrategy) else SearchStrategy.VECTOR
