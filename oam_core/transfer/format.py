"""The oam dump format, version 1 (docs/transfer.md#the-dump-format).

JSON Lines in UTF-8 (gzip when the name ends in ``.gz``): one header object, one
object per stored row in insertion order (a thread before its messages), one end
object. This module turns lines into ``DumpRow`` objects and back; it does no I/O.
"""

from __future__ import annotations

import binascii
import json
import re
from binascii import a2b_base64, b2a_base64
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

import numpy as np
import orjson

from oam_core.apis.metadatajson import check_stored_json
from oam_core.apis.records import PROFILE_TYPES, RECORD_TYPES, THREAD, family_of
from oam_core.errors import InvalidArgumentError
from oam_core.filters import is_plain_json
from oam_core.store.backend import DumpChunk, DumpRow
from oam_core.store.dumpcolumns import DumpColumns, from_lists, row_of_fields
from oam_core.store.identity import EmbedderIdentity
from oam_core.store.ttl import iso, parse_iso_timestamp

FORMAT = "oam-dump"
"""The header's ``format`` value."""
VERSION = 1
"""The version this module writes and the newest it reads."""

_F4 = np.dtype("<f4")

_b64decode: Callable[..., bytes] | None
_b64encode: Callable[[bytes], bytes]
try:  # C with SIMD: a 384-dimension vector in 0.8 us instead of binascii's 4 us
    import pybase64

    _b64decode = pybase64.b64decode
    _b64encode = pybase64.b64encode
except ImportError:  # pragma: no cover - pybase64 is a dependency; binascii stands in
    _b64decode = None

    def _b64encode(raw: bytes) -> bytes:
        return b2a_base64(raw, newline=False)


class LineError(ValueError):
    """A line that is not a valid dump line; the reader adds the line number."""


def header(
    identity: EmbedderIdentity | None,
    dimension: int | None,
    record_counts: Mapping[str, int],
    created_at: datetime,
    user_ids: list[str] | None,
) -> bytes:
    """The header line (with its newline). ``identity``: the embedder of the
    vectors; without one, ``dimension`` alone (id null) when the store has vectors."""
    embedder: dict[str, Any] | None = None
    if identity is not None:
        embedder = {"id": identity.embedder_id, "dimension": identity.dimension}
        if identity.fingerprint is not None:
            embedder["fingerprint"] = list(identity.fingerprint)
    elif dimension is not None:
        embedder = {"id": None, "dimension": dimension}
    return _line(
        {
            "format": FORMAT,
            "version": VERSION,
            "created_at": iso(created_at),
            "embedder": embedder,
            "record_counts": dict(sorted(record_counts.items())),
            "user_ids": user_ids,
        }
    )


def end(record_counts: Mapping[str, int], search_rows: int) -> bytes:
    """The end line: what the dump holds, so that a truncated dump is told apart."""
    return _line(
        {
            "kind": "end",
            "record_counts": dict(sorted(record_counts.items())),
            "search_rows": search_rows,
        }
    )


def _line(value: Any) -> bytes:
    return orjson.dumps(value) + b"\n"


def encode(row: DumpRow) -> bytes:
    """One row's line (with its newline)."""
    meta = None if row.metadata is None else orjson.loads(row.metadata)
    if row.family == THREAD:
        return _line(
            {
                "kind": "thread",
                "id": row.id,
                "user_id": row.user_id,
                "agent_id": row.agent_id,
                "metadata": meta,
                "created_at": row.created_at,
                "config": orjson.loads(row.config or "{}"),
                "state": orjson.loads(row.state or "{}"),
                "seq_no": row.seq_no,
            }
        )
    return _line(
        {
            "kind": "record",
            "id": row.id,
            "record_type": row.record_type,
            "content": row.content,
            "role": row.role,
            "seq_no": row.seq_no,
            "thread_id": row.thread_id,
            "user_id": row.user_id,
            "agent_id": row.agent_id,
            "timestamp": row.timestamp,
            "metadata": meta,
            "created_at": row.created_at,
            "expires_at": None if row.expires_at is None else iso(row.expires_at),
            **_window(row),
            "search_rows": [
                {
                    "text": c.text,
                    "vector": None
                    if c.vector is None
                    else _b64encode(np.asarray(c.vector, dtype=_F4).tobytes()).decode(),
                    "expires_at": None if c.expires_at is None else iso(c.expires_at),
                    "sources": list(c.sources),
                }
                for c in row.chunks
            ],
        }
    )


def _window(row: DumpRow) -> dict[str, str]:
    """A record's validity window as dump keys, only the ends that are set (a dump of
    a store without windows reads as before)."""
    ends = (("valid_from", row.valid_from), ("valid_until", row.valid_until))
    return {key: iso(value) for key, value in ends if value is not None}


def parse_header(line: bytes) -> dict[str, Any]:
    """The header object of a dump's first line.

    Raises:
        LineError: when it is not an oam dump header, or is of a newer version.
    """
    value = _object(line)
    if value.get("format") != FORMAT:
        raise LineError(f"not an oam dump header (format {value.get('format')!r})")
    version = value.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise LineError(f"bad dump version {version!r}")
    if version > VERSION:
        raise LineError(
            f"dump format version {version} is newer than this oam reads ({VERSION}); "
            "upgrade oam to import it"
        )
    embedder = value.get("embedder")
    if embedder is not None and not (
        isinstance(embedder, dict)
        and (embedder.get("id") is None or isinstance(embedder.get("id"), str))
        and isinstance(embedder.get("dimension"), int)
        and embedder["dimension"] > 0
    ):
        raise LineError(f"bad embedder in the header: {embedder!r}")
    counts = value.get("record_counts")
    if not isinstance(counts, dict):
        raise LineError(f"bad record_counts in the header: {counts!r}")
    return value


def header_dimension(head: Mapping[str, Any]) -> int | None:
    """The vector dimension a parsed header names, or None."""
    e = head.get("embedder")
    return None if e is None else int(e["dimension"])


def header_identity(head: Mapping[str, Any]) -> EmbedderIdentity | None:
    """The embedder a parsed header names (None: none, or its id is unknown)."""
    e = head.get("embedder")
    if e is None or e.get("id") is None:
        return None
    fp = e.get("fingerprint")
    return EmbedderIdentity(
        str(e["id"]), int(e["dimension"]), None if fp is None else tuple(float(x) for x in fp)
    )


def _object(line: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise LineError(f"not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise LineError(f"not a JSON object but {type(value).__name__}")
    return value


def decode(line: bytes) -> DumpRow | dict[str, Any]:
    """The ``DumpRow`` of a row line, or the end object (a dict).

    Raises:
        LineError: for a line that is not JSON, of an unknown kind or record type,
            or with a field of the wrong type.
    """
    at = line.find(_VECTOR_KEY)
    if at >= 0:
        row = _record_cut(line, at)
        if row is not None:
            return row
    v = _object(line)
    kind = v.get("kind")
    if kind == "end":
        return v
    if kind == "thread":
        return DumpRow(
            family=THREAD,
            id=_id(v, "id"),
            record_type=THREAD,
            content=None,
            role=None,
            seq_no=_int(v, "seq_no"),
            thread_id=None,
            user_id=_str(v, "user_id"),
            agent_id=_str(v, "agent_id"),
            timestamp=None,
            metadata=_json_object(v, "metadata", line),
            created_at=_created(v),
            expires_at=None,
            config=_json_object(v, "config", line) or "{}",
            state=_json_object(v, "state", line) or "{}",
        )
    if kind != "record":
        raise LineError(f"unknown kind {kind!r} (expected 'record', 'thread' or 'end')")
    return _record(v, line)


_ROW_TYPES = frozenset(t for t in RECORD_TYPES if t != THREAD)
_FAMILY = {t: family_of(t) for t in _ROW_TYPES}
_STR_OR_NONE = frozenset({str, type(None)})
_TEXT_KEYS = ("content", "role", "thread_id", "user_id", "agent_id", "timestamp")


_VECTOR_KEY = b'"vector":"'
_CUT_VALUE = 3141592653589793238
_CUT_MARK = str(_CUT_VALUE).encode()


def _record_cut(line: bytes, at: int) -> DumpRow | None:
    """The ``DumpRow`` of a record line holding one vector (the key ``_VECTOR_KEY`` at
    ``at``, once), with the vector's base64 cut out of the line before the JSON is
    parsed: its 2,048 characters at 384 dimensions were most of the parsing, and
    are decoded from the line's bytes instead. None when the line is not of that
    shape (the cut did not land on a search row's vector, the base64 is not strict
    RFC 4648, any field is bad): ``decode`` then reads it whole, as before, and
    names what is wrong."""
    start = at + len(_VECTOR_KEY)
    stop = line.find(b'"', start)
    if (
        stop < 0
        or _b64decode is None
        or line.find(_VECTOR_KEY, stop) >= 0
        or line.find(_CUT_MARK) >= 0
    ):
        return None
    try:
        v = orjson.loads(b"".join((line[: start - 1], _CUT_MARK, line[stop + 1 :])))
        rows = v["search_rows"]
        # The mark (a number the line did not hold) is where the one search row's
        # vector is: the cut was that vector, not a metadata key named "vector".
        if (
            v.get("kind") != "record"
            or type(rows) is not list
            or len(rows) != 1
            or type(rows[0]) is not dict
            or type(rows[0].get("vector")) is not int
            or rows[0]["vector"] != _CUT_VALUE
        ):
            return None
        raw = _b64decode(line[start:stop], validate=True)
        return _record(v, line, raw)
    except (orjson.JSONDecodeError, LineError, ValueError, TypeError, KeyError):
        return None


def _record(v: dict[str, Any], line: bytes, raw: bytes | None = None) -> DumpRow:
    """The ``DumpRow`` of a record object (parsed from ``line``). The checks run on
    the whole object at once, and only a failing one looks for the field to name:
    an import decodes every line, and per-field calls were most of its parsing
    time."""
    g = v.get
    rtype = g("record_type")
    if type(rtype) is not str or rtype not in _ROW_TYPES:
        raise LineError(f"unknown record_type {rtype!r}")
    rid = g("id")
    if type(rid) is not str or not rid:
        rid = _id(v, "id")
    content = g("content")
    role = g("role")
    tid = g("thread_id")
    uid = g("user_id")
    aid = g("agent_id")
    ts = g("timestamp")
    if not {type(content), type(role), type(tid), type(uid), type(aid), type(ts)} <= _STR_OR_NONE:
        for key in _TEXT_KEYS:
            _str(v, key)
    if rtype in PROFILE_TYPES:
        _unscoped(rtype, tid, uid, aid)
    seq_no = g("seq_no")
    if seq_no is not None and (type(seq_no) is not int or seq_no < 0):
        _int(v, "seq_no")
    meta = g("metadata")
    metadata = None if meta is None else _json_object(v, "metadata", line)
    created = g("created_at")
    if type(created) is not str or not created:
        created = _id(v, "created_at")
    _parse(created, "created_at")
    expires = g("expires_at")
    valid_from = g("valid_from")
    valid_until = g("valid_until")
    rows = g("search_rows", [])
    if type(rows) is not list:
        raise LineError(f"search_rows must be a list, got {type(rows).__name__}")
    return DumpRow(  # positional: the fields in their order
        _FAMILY[rtype],
        rid,
        rtype,
        content,
        role,
        seq_no,
        tid,
        uid,
        aid,
        ts,
        metadata,
        created,
        None if expires is None else _parse(expires, "expires_at"),
        None,
        None,
        tuple([_chunk(c, i) for i, c in enumerate(rows)])
        if raw is None
        else (_chunk(rows[0], 0, raw),),
        None if valid_from is None else _parse(valid_from, "valid_from"),
        None if valid_until is None else _parse(valid_until, "valid_until"),
    )


def _chunk(c: Any, i: int, raw: bytes | None = None) -> DumpChunk:
    """The ``DumpChunk`` of search row ``i``; ``raw``: its vector's bytes, decoded
    already (``_record_cut``)."""
    if type(c) is not dict:
        raise LineError(f"search_rows[{i}] must be an object")
    g = c.get
    vector = g("vector") if raw is None else ""
    vec = None
    if vector is not None:
        if raw is None:
            if type(vector) is not str:
                raise LineError(f"search_rows[{i}].vector must be base64 text")
            raw = _vector_bytes(vector, i)
        if not raw or len(raw) % 4:
            raise LineError(f"search_rows[{i}].vector holds {len(raw)} bytes, not float32s")
        vec = np.frombuffer(raw, dtype=_F4)
    sources = g("sources") or ()
    if sources and (type(sources) is not list or not all(type(s) is str for s in sources)):
        raise LineError(f"search_rows[{i}].sources must be a list of ids")
    text = g("text")
    if text is not None and type(text) is not str:
        raise LineError(f"search_rows[{i}].text must be a string or null, got {text!r}")
    expires = g("expires_at")
    return DumpChunk(
        text,
        vec,
        None if expires is None else _parse(expires, "expires_at"),
        tuple(sources),
    )


def _vector_bytes(text: str, i: int) -> bytes:
    """The bytes of search row ``i``'s base64 ``text``. Strict RFC 4648 (what a dump
    holds) goes through the fast decoder; anything else through ``a2b_base64`` as
    before, which skips characters outside the alphabet."""
    if _b64decode is not None:
        try:
            return _b64decode(text, validate=True)
        except ValueError:
            pass
    try:
        return a2b_base64(text)
    except binascii.Error:
        raise LineError(f"search_rows[{i}].vector is not base64") from None


def _str(v: Mapping[str, Any], key: str) -> str | None:
    value = v.get(key)
    if value is not None and not isinstance(value, str):
        raise LineError(f"{key} must be a string or null, got {value!r}")
    return value


def _id(v: Mapping[str, Any], key: str) -> str:
    value = v.get(key)
    if not isinstance(value, str) or not value:
        raise LineError(f"{key} must be a non-empty string, got {value!r}")
    return value


def _int(v: Mapping[str, Any], key: str) -> int | None:
    value = v.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise LineError(f"{key} must be a non-negative integer or null, got {value!r}")
    return value


def _json_object(v: Mapping[str, Any], key: str, line: bytes) -> str | None:
    """The stored text of the object ``v[key]`` (a record's ``metadata``, a thread's
    ``metadata``, ``config`` or ``state``; None for null), refused as ``add``
    refuses it (``check_stored_json``: nested deeper than 64 levels, an integer
    outside signed 64 bits), ``line`` read again for integers beyond 64 bits.

    Raises:
        LineError: for a value that is not an object, or one ``add`` refuses,
            naming the record and the field.
    """
    value = v.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise LineError(f"{key} must be an object or null, got {type(value).__name__}")
    if not is_plain_json(value):
        _refuse_stored(value, v, key)
    text = orjson.dumps(value).decode()
    if _wide_float(text):
        _refuse_stored(_exact(line).get(key), v, key)
    return text


_WIDE = re.compile(r"[0-9]e\+(?:1[89]|[2-9][0-9]|[1-9][0-9]{2})(?![0-9])")
"""A float of magnitude 1e18 or more as orjson writes it (``1.8446744073709552e+19``):
orjson reads an integer beyond 64 bits (``2**64``, ``-2**63 - 1``) as a float, so
a line whose object text holds one is read again by the standard parser, which
keeps the integer to be refused (a float that large is taken, as ``add`` takes it)."""


def _wide_float(text: str) -> bool:
    """Whether ``text`` (an object's JSON as orjson writes it) may hold an integer
    that orjson read as a float (``_WIDE``)."""
    return "e+" in text and _WIDE.search(text) is not None


def _exact(line: bytes) -> dict[str, Any]:
    """``line`` parsed by the standard parser: integers of any size stay integers
    (orjson has parsed it already, so it is a JSON object)."""
    value = json.loads(line)
    return value if isinstance(value, dict) else {}


def _refuse_stored(value: object, v: Mapping[str, Any], key: str) -> None:
    """``check_stored_json`` of ``value``, the field ``key`` of the line object ``v``.

    Raises:
        LineError: naming the record (or thread) id and the field.
    """
    what = "thread" if v.get("kind") == "thread" else "record"
    try:
        check_stored_json(value, f"{what} {v.get('id')!r}: {key}")
    except InvalidArgumentError as exc:
        raise LineError(str(exc)) from None


def _created(v: Mapping[str, Any]) -> str:
    value = _id(v, "created_at")
    _parse(value, "created_at")
    return value


def _time(v: Mapping[str, Any], key: str) -> datetime | None:
    value = v.get(key)
    return None if value is None else _parse(value, key)


def _parse(value: Any, key: str) -> datetime:
    """An ISO-8601 time as an aware UTC datetime; the form the dump writes is read
    by ``datetime.fromisoformat`` (fast), any other form by the store's parser."""
    if not isinstance(value, str):
        raise LineError(f"{key} must be an ISO-8601 string or null, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value)
        if parsed.tzinfo is not None:
            return parsed.astimezone(timezone.utc)
    except ValueError:
        pass
    try:
        return parse_iso_timestamp(value, what=key)
    except ValueError as exc:
        raise LineError(str(exc)) from None


# -- the fast path of a record line (docs/transfer.md#import) ---------------------------

Fields = tuple[Any, ...]
"""A record line of the common shape as ``record_fields`` decodes it: the first
twelve ``DumpRow`` fields (``family`` to ``created_at``), ``expires_at``,
``valid_from``, ``valid_until``, then its one search row's ``text``, ``expires_at``
and vector bytes."""

_TZ_UTC = timezone.utc


def _unscoped(rtype: str, tid: object, uid: object, aid: object) -> None:
    """Refuse a profile with a scope id, as ``add`` does (a profile's id is the user
    or agent id; a scoped one would travel with another user's export).

    Raises:
        LineError: naming the first scope field set.
    """
    for key, value in (("thread_id", tid), ("user_id", uid), ("agent_id", aid)):
        if value is not None:
            raise LineError(
                f"{key} is {value!r}, but {rtype} records are unscoped (their id is "
                "the user or agent id); drop the scope ids"
            )


def record_fields(line: bytes) -> Fields | None:
    """The ``Fields`` of a record line with exactly one search row, holding a vector
    and quoting nothing, every field as ``decode`` reads it and every time in the
    form a dump writes; None for any other line (``decode`` then reads it, and names
    what is wrong). Nothing is built per record but a tuple: the importer turns a
    batch of them into columns (``columns``)."""
    at = line.find(_VECTOR_KEY)
    if at < 0 or _b64decode is None:
        return None
    start = at + len(_VECTOR_KEY)
    stop = line.find(b'"', start)
    # (The mark is looked for outside the vector's text only: that text is cut out.)
    if (
        stop < 0
        or line.find(_VECTOR_KEY, stop) >= 0
        or line.find(_CUT_MARK, 0, start) >= 0
        or line.find(_CUT_MARK, stop) >= 0
    ):
        return None
    try:
        v = orjson.loads(b"".join((line[: start - 1], _CUT_MARK, line[stop + 1 :])))
        g = v.get
        rows = g("search_rows")
        if (
            g("kind") != "record"
            or type(rows) is not list
            or len(rows) != 1
            or type(rows[0]) is not dict
            or rows[0].get("vector") != _CUT_VALUE
            or type(rows[0]["vector"]) is not int
        ):
            return None
        raw = _b64decode(line[start:stop], validate=True)
    except (orjson.JSONDecodeError, ValueError, TypeError):
        return None
    if not raw or len(raw) % 4:
        return None
    return _fields(g, rows[0], raw)


def _fields(g: Callable[[str], Any], c: dict[str, Any], raw: bytes) -> Fields | None:
    """``record_fields`` of the parsed object (``g``: its ``get``) and search row
    ``c``; None when a field needs ``decode``'s closer look."""
    rtype = g("record_type")
    rid = g("id")
    content = g("content")
    role = g("role")
    tid = g("thread_id")
    uid = g("user_id")
    aid = g("agent_id")
    ts = g("timestamp")
    seq_no = g("seq_no")
    meta = g("metadata")
    created = g("created_at")
    text = c.get("text")
    if (
        type(rtype) is not str
        or rtype not in _ROW_TYPES
        or type(rid) is not str
        or not rid
        or not {type(content), type(role), type(tid), type(uid), type(aid), type(ts), type(text)}
        <= _STR_OR_NONE
        or (seq_no is not None and (type(seq_no) is not int or seq_no < 0))
        or (meta is not None and (type(meta) is not dict or not is_plain_json(meta)))
        or type(created) is not str
        or not created
        or c.get("sources")
        or (rtype in PROFILE_TYPES and (tid is not None or uid is not None or aid is not None))
    ):
        return None
    meta_text = None if meta is None else orjson.dumps(meta).decode()
    if meta_text is not None and _wide_float(meta_text):
        return None
    try:
        if datetime.fromisoformat(created).tzinfo is None:
            return None
        return (
            _FAMILY[rtype],
            rid,
            rtype,
            content,
            role,
            seq_no,
            tid,
            uid,
            aid,
            ts,
            meta_text,
            created,
            _fast_time(g("expires_at")),
            _fast_time(g("valid_from")),
            _fast_time(g("valid_until")),
            text,
            _fast_time(c.get("expires_at")),
            raw,
        )
    except (ValueError, TypeError):
        return None


def _fast_time(value: Any) -> datetime | None:
    """``_parse`` of a time in the form ``datetime.fromisoformat`` reads with its
    offset; ValueError for any other (``decode`` reads those)."""
    if value is None:
        return None
    parsed = datetime.fromisoformat(value)  # TypeError for a value not a string
    if parsed.tzinfo is None:
        raise InvalidArgumentError("no offset")
    return parsed.astimezone(_TZ_UTC)


def fields_row(f: Fields) -> DumpRow:
    """The ``DumpRow`` of ``Fields`` (what ``decode`` gives for the line)."""
    return row_of_fields(f, np.frombuffer(f[17], dtype=_F4))


def columns(batch: list[Fields]) -> DumpColumns | None:
    """The ``DumpColumns`` of a batch of ``Fields``; None when their vectors are not
    all of one length (the rows then go one by one)."""
    cols = list(zip(*batch, strict=True))
    raws = cols[17]
    size = len(raws[0])
    if any(len(r) != size for r in raws):
        return None
    matrix = np.frombuffer(b"".join(raws), dtype=_F4).reshape(len(raws), size // 4)
    return from_lists([list(c) for c in cols[:17]], matrix)
