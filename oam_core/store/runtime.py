"""``StoreRuntime``: the state every part of one store object shares
(docs/store.md#embedder-identity, docs/store.md#schema).

A store object (``OracleMemoryStore`` and its back-end subclasses) validates calls and
hands them to the modules of ``store/`` (``writes.py``, ``updates.py``,
``threads.py``, ``search.py``, ``dumprows.py``, ``embedding.py``). What those
modules need of the store lives here, as one typed object they receive:

* the ``Backend`` (``store/backend.py``) that runs every read and transaction;
* the embedder, every call to it (``embed``, ``embed_plans``) and the bookkeeping of
  its recorded identity (``EmbedderCheck``; the identity values are in
  ``store/identity.py``);
* the vector dimension: given, read at open, or learned from the first vector
  written, and forgotten again when the write that learned it fails;
* the clock (the "now" of every TTL decision), the retention config and
  ``chunk_chars``;
* ``writing()``: the one transaction every write runs in, which records the
  embedder's identity with the rows it wrote and forgets a dimension learned by a
  write that failed.

Nothing here is public API: ``OracleMemoryStore``'s attributes (``embedder``,
``vector_dim``, ``chunk_chars``, ``embedder_identity``) read and set this object.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import ParamSpec, TypeVar

import numpy as np

from oam_core.apis.embedder import IEmbedder
from oam_core.checks import lengthen_short_rows
from oam_core.errors import EmbedderMismatchError, InvalidArgumentError, UnusableEmbeddingsError
from oam_core.store.backend import Backend, Tx
from oam_core.store.identity import (
    META_KEY,
    EmbedderIdentity,
    identity_of,
    mismatch_message,
    pick_probe,
    same_fingerprint,
)
from oam_core.store.options import MemoryRetentionConfig
from oam_core.store.planning import ChunkPlan, PlanContext
from oam_core.store.ttl import Clock
from oam_core.telemetry import traced_embed, traced_store, tracer_provider_check

__all__ = [
    "DEFAULT_CHUNK_CHARS",
    "QUERY_MEMO_MAX_CHARS",
    "QUERY_MEMO_SIZE",
    "EmbedderCheck",
    "ProbeStep",
    "QueryMemo",
    "StoreRuntime",
    "traced",
]

DEFAULT_CHUNK_CHARS = 4000
"""Longest search row of a store without an embedder, in characters."""

P = ParamSpec("P")
T = TypeVar("T")

_TRACER_PROVIDER, _NO_TRACER_PROVIDER = tracer_provider_check()


def checked_vectors(embedder: IEmbedder, out: object, n: int, dim: int | None) -> np.ndarray:
    """What ``embedder.embed`` returned for ``n`` texts, as a float32 array of shape
    ``(n, dim)`` (``dim``: the store's vector dimension, None while not known yet).

    Raises:
        UnusableEmbeddingsError: (a ValueError) naming the embedder when ``out`` is
            not numbers, not ``n`` rows of one length (``dim`` when given), or holds
            NaN or infinity: a model's fault, caught before anything is written or
            ranked (docs/errors.md).
    """
    name = getattr(embedder, "embedder_id", type(embedder).__qualname__)
    try:
        vectors = np.asarray(out, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise UnusableEmbeddingsError(
            f"embedder {name!r} returned no array of numbers for {n} texts ({exc})"
        ) from None
    want = f"({n}, {dim})" if dim is not None else f"({n}, <dimension>)"
    if vectors.ndim != 2 or vectors.shape[0] != n or (dim is not None and vectors.shape[1] != dim):
        raise UnusableEmbeddingsError(
            f"embedder {name!r} returned vectors of shape {vectors.shape} for {n} texts, "
            f"expected {want}"
        )
    if n and not vectors.shape[1]:
        raise UnusableEmbeddingsError(f"embedder {name!r} returned empty vectors")
    if not np.isfinite(vectors).all():
        bad = int(np.flatnonzero(~np.isfinite(vectors).all(axis=1))[0])
        raise UnusableEmbeddingsError(
            f"embedder {name!r} returned a vector holding NaN or infinity (text {bad} of {n})"
        )
    return vectors


def _tracing() -> bool:
    """``telemetry.enabled()``, without entering telemetry.py: the store's own calls
    check it on every call, and an untraced call runs no telemetry code."""
    return _TRACER_PROVIDER is not None and not isinstance(_TRACER_PROVIDER(), _NO_TRACER_PROVIDER)


def traced(method: Callable[P, T]) -> Callable[P, T]:
    """Decorate a public store method with ``telemetry.traced_store``, entered only
    while tracing is on (docs/service.md): the same spans, and no telemetry code in
    an untraced call.

    Args:
        method: A method of ``OracleMemoryStore`` or ``ThreadStore``.

    Returns:
        The wrapped method, same signature, result and exceptions.
    """
    with_span = traced_store(method)

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        if not _tracing():
            return method(*args, **kwargs)
        return with_span(*args, **kwargs)

    return wrapper


@dataclass(frozen=True)
class ProbeStep:
    """What the next embedder call of a store object does for the identity
    (``EmbedderCheck.step``).

    Attributes:
        record: Index of the text of this write to record as the probe (its vector
            gives the fingerprint); None when none is recorded by this call.
        verify: The recorded probe text to embed (as a document) and compare with
            the fingerprint; None when nothing is verified by this call.
        bare: Record the id and dimension without a fingerprint (a first write
            holding no text short enough to be the probe).
    """

    record: int | None = None
    verify: str | None = None
    bare: bool = False


class EmbedderCheck:
    """The identity bookkeeping of one store object (store/identity.py explains what
    is recorded and checked).

    Args:
        where: Names the store in error messages.

    Attributes:
        where: As given (the store sets it at open).
        stored: The identity the storage records (None: none yet).
        allow_change: ``allow_embedder_change``.
        verified: The embedder was checked against (or recorded as) ``stored``:
            no further call does anything for the identity.
    """

    def __init__(self, where: str = "the store") -> None:
        self.where = where
        self.stored: EmbedderIdentity | None = None
        self.allow_change = False
        self.verified = False
        self._pending: EmbedderIdentity | None = None

    def adopt(
        self, meta_value: str | None, embedder: IEmbedder | None, *, allow_change: bool
    ) -> None:
        """Take the recorded identity from the schema metadata at open and check the
        store's embedder against its id and dimension.

        Raises:
            EmbedderMismatchError: (a ValueError) naming both embedders when they
                differ (unless ``allow_change``).
            SchemaError: (a ValueError) when the recorded value is unreadable.
        """
        self.allow_change = allow_change
        self.stored = EmbedderIdentity.from_json(meta_value, self.where)
        self.verified = False
        if self.stored is None or embedder is None or allow_change:
            return
        current = identity_of(embedder)
        if current.dimension != self.stored.dimension:
            raise EmbedderMismatchError(
                mismatch_message(self.where, self.stored, current, ", of another dimension")
            )
        if current.embedder_id != self.stored.embedder_id:
            raise EmbedderMismatchError(mismatch_message(self.where, self.stored, current, ""))

    def step(self, texts: Sequence[str], writing: bool) -> ProbeStep | None:
        """What the next embedder call, of ``texts``, does for the identity: verify a
        recorded fingerprint once per store object (any call), or record the
        identity with a write (the first one, one after ``allow_embedder_change``, or
        one of a store whose fingerprint cannot be checked). None: nothing."""
        if self.verified:
            return None
        stored = self.stored
        if stored is not None and stored.checkable and not self.allow_change:
            return ProbeStep(verify=stored.probe)
        if not writing:
            return None
        index = pick_probe(texts)
        if index is None:
            return ProbeStep(bare=stored is None or self.allow_change)
        return ProbeStep(record=index)

    def record(
        self, embedder: IEmbedder, probe: str | None, vector: Sequence[float] | None
    ) -> None:
        """Prepare to record the embedder's identity with the current write: with the
        fingerprint of ``probe`` (a text of the write, embedded as ``vector``), or
        only the id and dimension when both are None."""
        current = identity_of(embedder, probe, vector)
        if current != self.stored:
            self._pending = current
        self.verified = current.checkable

    def verify(self, embedder: IEmbedder, vector: Sequence[float]) -> None:
        """Compare the embedder's embedding of the recorded probe with the recorded
        fingerprint.

        Raises:
            EmbedderMismatchError: (a ValueError) naming both embedders when the
                fingerprints differ.
        """
        stored = self.stored
        assert stored is not None and stored.fingerprint is not None
        current = identity_of(embedder, stored.probe, vector)
        assert current.fingerprint is not None
        if not same_fingerprint(stored.fingerprint, current.fingerprint):
            raise EmbedderMismatchError(
                mismatch_message(
                    self.where, stored, current, ", whose vectors differ (fingerprint)"
                )
            )
        self.verified = True

    def pending(self) -> str | None:
        """The metadata value to write with the vectors of the current write, if any."""
        return None if self._pending is None else self._pending.to_json()

    def recorded(self) -> None:
        """The pending identity was committed."""
        if self._pending is not None:
            self.stored, self._pending = self._pending, None


QUERY_MEMO_SIZE = 64
"""Queries kept per store object (the least recently used goes first)."""

QUERY_MEMO_MAX_CHARS = 65536
"""Longest query (all its texts together, in characters) that is kept: the memo holds
at most ``QUERY_MEMO_SIZE * QUERY_MEMO_MAX_CHARS`` characters of keys (4 Mi)."""


class QueryMemo:
    """A store object's last ``QUERY_MEMO_SIZE`` query embeddings, by embedder object
    and texts; thread-safe (docs/store.md#searching). One user action often searches
    the same words twice (memories and messages ranked by two searches, a context
    card, a repeated question); only query embeddings are kept, never a write's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[int, tuple[str, ...]], tuple[IEmbedder, np.ndarray]] = (
            OrderedDict()
        )

    def embed(
        self,
        embedder: IEmbedder,
        texts: Sequence[str],
        make: Callable[[Sequence[str]], np.ndarray],
    ) -> np.ndarray:
        """The query vectors of ``texts`` by ``embedder``: a copy of the kept ones,
        else ``make(texts)`` (float32 array of shape ``(len(texts), dim)``), kept
        when the texts hold at most ``QUERY_MEMO_MAX_CHARS`` characters."""
        key = (id(embedder), tuple(texts))
        with self._lock:
            hit = self._kept.get(key)
            if hit is not None and hit[0] is embedder:
                self._kept.move_to_end(key)
                kept: np.ndarray = hit[1].copy()
                return kept
        vectors = make(texts)
        if sum(map(len, texts)) <= QUERY_MEMO_MAX_CHARS:
            with self._lock:
                self._kept[key] = (embedder, vectors.copy())
                while len(self._kept) > QUERY_MEMO_SIZE:
                    self._kept.popitem(last=False)
        return vectors


class StoreRuntime:
    """The shared state of one store object (see the module docstring).

    Args:
        embedder: The store's embedder, or None.
        vector_dim: The vector dimension, or None until learned; defaults to the
            embedder's.
        clock: The store clock, or None for the current UTC time.
        retention: The store-wide TTL defaults and cap (None: the defaults).
        allow_embedder_change: Open a store recorded with another embedder of the
            same dimension (docs/store.md#embedder-identity).

    Raises:
        InvalidArgumentError: (a ValueError) naming the store's constructor argument:
            a non-bool ``allow_embedder_change``, an embedder that is not an
            ``IEmbedder``, a non-positive ``vector_dim`` or one other than the
            embedder's dimension, a retention config of another type.

    Attributes:
        backend: The store's ``Backend``; set by the store once it has opened one.
        vector_dim: The vector dimension (None: not known yet).
        adopted_dim: A dimension adopted from the storage inside a write
            (``check_recorded_dim``): it stays when that write fails.
        retention: As given (the store replaces it with the stored config at open).
        identity: The embedder-identity bookkeeping.
        unembedded_checked: The one-time warning about search rows without a
            vector was looked for (store/search.py).
    """

    backend: Backend

    def __init__(
        self,
        *,
        embedder: IEmbedder | None,
        vector_dim: int | None,
        clock: Clock | None,
        retention: MemoryRetentionConfig | None,
        allow_embedder_change: bool,
    ) -> None:
        if not isinstance(allow_embedder_change, bool):
            raise InvalidArgumentError(
                f"allow_embedder_change must be a bool, got {allow_embedder_change!r}"
            )
        if embedder is not None and not isinstance(embedder, IEmbedder):
            raise InvalidArgumentError(f"embedder must be an IEmbedder or None, got {embedder!r}")
        if vector_dim is not None and (
            isinstance(vector_dim, bool) or not isinstance(vector_dim, int) or vector_dim < 1
        ):
            raise InvalidArgumentError(
                f"vector_dim must be a positive int or None, got {vector_dim!r}"
            )
        if embedder is not None:
            dim = embedder.embedding_dimension
            if vector_dim is not None and vector_dim != dim:
                raise InvalidArgumentError(
                    f"vector_dim {vector_dim} does not match the embedder's dimension {dim}"
                )
            vector_dim = dim
        if retention is not None and not isinstance(retention, MemoryRetentionConfig):
            raise InvalidArgumentError(
                f"memory_retention_config must be a MemoryRetentionConfig, got {retention!r}"
            )
        self.embedder = embedder
        self.vector_dim = vector_dim
        self.adopted_dim: int | None = None
        self.clock = clock
        self.retention = retention or MemoryRetentionConfig()
        self.identity = EmbedderCheck()
        self.identity.allow_change = allow_embedder_change
        self.unembedded_checked = False

    # -- embedder and clock ----------------------------------------------------------

    @property
    def embedder(self) -> IEmbedder | None:
        """The store's embedder, or None."""
        return self._embedder

    @embedder.setter
    def embedder(self, embedder: IEmbedder | None) -> None:
        self._embedder = embedder
        self.queries = QueryMemo()
        """The last query embeddings (``QueryMemo``)."""
        # Read once: a search must not call into the embedder's class for it.
        self.chunk_chars = embedder.chunk_chars if embedder is not None else DEFAULT_CHUNK_CHARS
        """Longest search row the store writes, in characters (the embedder's
        ``chunk_chars``, or ``DEFAULT_CHUNK_CHARS``)."""

    def now(self) -> datetime:
        """The store clock's current time, aware UTC.

        Raises:
            InvalidArgumentError: (a ValueError) when the clock returns something
                else than an aware datetime.
        """
        clock = self.clock
        if clock is None:
            return datetime.now(timezone.utc)
        now = clock()
        if not isinstance(now, datetime) or now.tzinfo is None:
            raise InvalidArgumentError(f"clock must return an aware datetime, got {now!r}")
        return now.astimezone(timezone.utc)

    def plan_context(self) -> PlanContext:
        """What ``planning.plan_records`` needs of the store, as of now."""
        return PlanContext(
            chunk_chars=self.chunk_chars,
            vector_dim=self.vector_dim,
            has_embedder=self._embedder is not None,
            retention=self.retention,
            now=self.now(),
        )

    def embed(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        """Every embedder call of the store: float32 array of shape
        ``(len(texts), dim)``, rows of tiny components lengthened
        (``planning.lengthen_short_rows``).

        The embedder sees only ``texts`` (what the caller wrote or searched) and, once
        per store object when a fingerprint is recorded, the recorded probe: a text
        the caller wrote to this store, sent with a write's texts (not at all when
        the write holds it) or, before a search, on its own as a document
        (docs/store.md#embedder-identity). A first write records the identity from
        its own texts.

        Raises:
            EmbedderMismatchError: (a ValueError) when the embedder's embedding of the
                recorded probe differs from the recorded fingerprint.
        """
        embedder = self._embedder
        assert embedder is not None
        check = self.identity
        step = check.step(texts, writing=not is_query)
        if step is None and is_query:
            return self.queries.embed(embedder, texts, self._embed_query)
        if step is None:
            vectors = self._call(embedder, texts, is_query)
        elif step.verify is not None:
            probe = step.verify
            if is_query:  # the fingerprint is a document embedding: its own call
                own = self._call(embedder, [probe], False)[0]
                vectors = self._call(embedder, texts, True)
            elif probe in texts:
                vectors = self._call(embedder, texts, False)
                own = vectors[list(texts).index(probe)]
            else:
                both = self._call(embedder, [*texts, probe], False)
                vectors, own = both[:-1], both[-1]
            check.verify(embedder, own)
        else:
            vectors = self._call(embedder, texts, is_query)
            if step.record is not None:
                check.record(embedder, texts[step.record], vectors[step.record])
            elif step.bare:
                check.record(embedder, None, None)
        if vectors.ndim == 2:
            vectors = lengthen_short_rows(vectors)
        return vectors

    def verify_embedder(self) -> None:
        """Compare the embedder's embedding of the recorded probe with the recorded
        fingerprint now, as the first ``embed`` call of this store object would (once
        per store object; nothing when no checkable fingerprint is recorded, with
        ``allow_embedder_change``, or without an embedder). For callers that embed
        texts themselves before writing them (a re-embedding import).

        Raises:
            EmbedderMismatchError: (a ValueError) when the embeddings differ.
        """
        embedder = self._embedder
        if embedder is None:
            return
        step = self.identity.step((), writing=False)
        if step is not None and step.verify is not None:
            own = self._call(embedder, [step.verify], False)[0]
            self.identity.verify(embedder, own)

    def _embed_query(self, texts: Sequence[str]) -> np.ndarray:
        embedder = self._embedder
        assert embedder is not None
        vectors = self._call(embedder, texts, True)
        return lengthen_short_rows(vectors) if vectors.ndim == 2 else vectors

    def _call(self, embedder: IEmbedder, texts: Sequence[str], is_query: bool) -> np.ndarray:
        """``embedder.embed`` as float32, checked (``checked_vectors``); a span
        (``telemetry.traced_embed``) only when tracing is on, so an untraced search
        never enters the telemetry code."""
        if not _tracing():
            out = embedder.embed(texts, is_query=is_query)
        else:
            out = traced_embed(embedder, texts, is_query=is_query)
        return checked_vectors(embedder, out, len(texts), self.vector_dim)

    def embed_plans(self, plans: Iterable[ChunkPlan]) -> None:
        """Give every chunk plan that needs one a vector from the embedder (one call
        for all of them); a store without an embedder leaves them as they are, and
        one whose back end keeps no vectors (``Backend.local_vectors``) marks them as
        needing none.

        Raises:
            UnusableEmbeddingsError: when the embedder returns another shape than
                ``(n, dim)`` or a vector that is not finite (``checked_vectors``).
        """
        if not self.backend.local_vectors:  # the database embeds: text-only search rows
            for c in plans:
                c.needs_embedding = False
            return
        todo = [c for c in plans if c.needs_embedding and c.text]
        if not todo or self._embedder is None:
            return
        vectors = self.embed([c.text or "" for c in todo], is_query=False)
        for c, v in zip(todo, vectors, strict=True):
            c.vector = v
            c.needs_embedding = False

    # -- identity ----------------------------------------------------------------------

    def adopt_identity(self, meta_value: str | None, where: str) -> None:
        """Take the recorded embedder identity (the schema metadata's ``embedder``
        value) at open, naming the store ``where`` in errors.

        Raises:
            EmbedderMismatchError: (a ValueError) naming both embedders when the
                store's embedder is not the recorded one (unless
                ``allow_embedder_change``).
            SchemaError: (a ValueError) when the recorded value is unreadable.
        """
        self.identity.where = where
        self.identity.adopt(meta_value, self._embedder, allow_change=self.identity.allow_change)

    # -- writes ------------------------------------------------------------------------

    @contextmanager
    def writing(self) -> Iterator[Tx]:
        """The transaction of one write (``Backend.transaction``): commits when the
        block ends, rolls back when it raises.

        A write that stores search rows calls ``storing_rows`` inside the block; its
        transaction then also records the embedder identity taken from the write's
        texts (``EmbedderCheck``), which counts as recorded once it commits. When the
        transaction fails, anywhere up to its commit, a dimension learned inside it
        is forgotten again, as the rollback drops the recorded one, so the next
        write learns its own.
        """
        known = self.vector_dim
        try:
            with self.backend.transaction() as tx:
                yield tx
                if tx.stores_rows:
                    self.record_identity(tx)
        except BaseException:
            # One adopted from the storage (``check_recorded_dim``) was committed by
            # another store object: it stays.
            if known is None and self.vector_dim != self.adopted_dim:
                self.vector_dim = None
            raise
        if tx.stores_rows:
            self.identity.recorded()

    def storing_rows(self, tx: Tx, chunks: Iterable[ChunkPlan], dim: int | None = None) -> None:
        """Called inside ``writing()`` before a write's search rows: learn the vector
        dimension (``learn_dim``) and have the transaction record the embedder
        identity.

        Raises:
            InvalidArgumentError: when another store object recorded another
                dimension since this one opened.
        """
        tx.stores_rows = True
        self.learn_dim(chunks, dim)

    def record_identity(self, tx: Tx) -> None:
        """Write the embedder identity taken from this write's texts, if any, in
        ``tx`` (``writing`` calls it at the end of a write that stores rows)."""
        pending = self.identity.pending()
        if pending is not None:
            tx.write_meta({META_KEY: pending})

    # -- vector dimension --------------------------------------------------------------

    def learn_dim(self, chunks: Iterable[ChunkPlan], dim: int | None = None) -> None:
        """Adopt the dimension of the first vector written by a store that has none
        yet: ``dim`` (that of vectors given as columns, ``planning.BulkPlan``) or that
        of the first chunk plan holding a vector. The back end records it in the open
        write transaction (``Backend.remember_vector_dim``); a back end that keeps no
        vectors ignores it.

        Raises:
            InvalidArgumentError: when another store object recorded another
                dimension since this one opened.
        """
        if self.vector_dim is not None or not self.backend.local_vectors:
            return
        if dim is None:
            dim = next((int(c.vector.shape[0]) for c in chunks if c.vector is not None), None)
            if dim is None:
                return
        self.backend.remember_vector_dim(dim, self.check_recorded_dim)
        self.vector_dim = dim

    def check_recorded_dim(self, recorded: str | None, dim: int) -> None:
        """Back ends call this inside the write that learns ``dim`` with the dimension
        the storage records now (None for none). A store opened before any vector was
        written may find that another store object on the same storage recorded one
        since: it adopts it and refuses ``dim`` if it differs (docs/store.md#schema).

        Raises:
            InvalidArgumentError: naming both dimensions when they differ.
        """
        if recorded is not None and int(recorded) != dim:
            self.vector_dim = self.adopted_dim = int(recorded)
            raise InvalidArgumentError(
                f"vector dimension {dim} does not match the store's dimension {recorded} "
                "(recorded by another store object after this one was opened)"
            )
