"""The life of the vector index's ANN index (``vector/ivf.py``) over the mirror
(``vector/mirror.py``): when it is built, adopted, checked, extended, compacted and
written with the mirror to the index file (``vector/file.py``).

Building the ANN index: from ``ANN_MIN_ROWS`` live rows, in the search that first
needs it; from ``BACKGROUND_ROWS`` on, in a background thread, while searches rank
exactly (or with the previous index, when a grown store retrains), so no search or
write waits for a large build. A write starts it with ``WRITE_BUILDS`` (on; off:
the next search does). A grown store's retrain splits the serving index's lists
(``vector/split.py``, ``SPLIT_RETRAINS``). The thread reads the mirror in slices under its lock
(``mirror.LiveRows``), and once its index is filled goes on assigning the rows
written meanwhile to its lists in ``CATCH_UP_ROUNDS`` rounds; then the next search
or write adopts it (the previous index is dropped) and maintains at once (a store
that grew past ``REBUILD_GROWTH`` meanwhile starts its retrain before the adopted
index stores its rows held beside faiss).

Rows written after the serving index took rows in: up to ``tail.INLINE_ROWS`` are
added inline; more are assigned to its lists by a ``tail.TailAssigner`` thread and
held beside faiss by the next search (``drain``; writes leave them, so that a bulk
load keeps its rate), where searches of their lists find them; until then searches
rank them exactly beside the index's proposals (``ranking.approximate``). ``settle``
stores them in faiss once they are a quarter of its entries, or before the index
file is written, but never while a retrain builds: a grown store's old index then
stays at its size while its successor grows, so that a bulk load never holds two
large faiss indexes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from oam_core.errors import InvalidArgumentError
from oam_core.store.sqlite.vector import ivf, split, threads
from oam_core.store.sqlite.vector import tail as tails
from oam_core.store.sqlite.vector.file import IndexFile
from oam_core.store.sqlite.vector.ivf import CALIBRATION_QUERIES, Ann
from oam_core.store.sqlite.vector.mirror import LiveRows, Mirror
from oam_core.store.sqlite.vector.saving import BackgroundWrite
from oam_core.store.sqlite.vector.tail import TailAssigner, extend_inline

__all__ = [
    "ANN_MIN_ROWS",
    "BACKGROUND_ROWS",
    "REBUILD_GROWTH",
    "RECHECK_GROWTH",
    "SPLIT_RETRAINS",
    "WRITE_BUILDS",
    "AnnBuilds",
]

ANN_MIN_ROWS = 20_000
"""Live vector chunks from which an ANN index is built (exact below: ~1 ms)."""
BACKGROUND_ROWS = 120_000
"""Live vector chunks from which the ANN index is built in a background thread
(below, the first search that needs it builds it and waits: about 2 s at 100k on a
2-core machine; 7 s was measured inline at 200k, too long for one search)."""
REBUILD_GROWTH = 4
"""Retrain the ANN index when the live rows grow past this multiple of its training."""
SPLIT_RETRAINS = True
"""A grown store's retrain splits the serving index's lists (``vector/split.py``:
each row compared with its own list's children only) instead of training every
list from scratch; a retrain after a failed recall check, or of an index not yet
coded from its file, builds from scratch."""
RECHECK_GROWTH = 1.25
"""Check the ANN index's recall on the rows added since its training whenever the
live rows grew by this factor since the last check (``AnnBuilds.check_recall``)."""
COMPACT_MIN = 1024
"""Dead rows tolerated before the mirror is compacted (and a quarter of the rows)."""
NEVER = 2**62
"""``ann_min_rows`` once an index cannot be built (no faiss, or faiss failed)."""


SIDE_SHARE = 4
"""The serving index's keys held beside faiss (``ivf.Side``) are stored in faiss
once they are more than a ``1 / SIDE_SHARE`` of its entries (``AnnBuilds.settle``)."""
CATCH_UP_ROUNDS = 2
"""Rounds in which a background build adds the rows written while it ran."""
WRITE_BUILDS = True
"""Whether a write that brings the live rows past ``BACKGROUND_ROWS`` (or a store 4x
past its index's training) starts the build or retrain itself. On: a bulk load
builds its first index at 120,000 rows beside the writer and retrains it by
splitting its lists (``vector/split.py``) at 4x, so that the searches right after a
1M load use an index trained on about half the rows (first-200 p95 6.5-17.9 ms,
median 8.5, against 122-354 ms with it off; 1M rounds on 2 shared cores). The
writer pays for the second core's work: the process spends about 13 s more CPU
during a 1M load and the add rate fell by about a fifth in those rounds (``bench/README.md``, "No
cliff after a bulk load", fourth pass). Off: the first search after the write
starts the build, and ranks exactly while it runs. A load below ``BACKGROUND_ROWS``
starts no build either way."""


Lister = Callable[[ivf.FloatArray, ivf.IntArray], ivf.IntArray]
"""Finds the lists of rows ``(mat, pks)`` in an index (``AnnBuilds._catch_up``)."""
Maker = tuple[Callable[[Callable[[], bool]], Ann | None], Callable[[Ann], Lister]]
"""A build's work (``AnnBuilds._maker``): the build given its stop test, and the
``Lister`` of its catch-up given the built index."""


class UpTo:
    """The live rows of a mirror with keys up to ``upto`` (``ivf.RowSource``): what a
    background build reads, so that it ends although a writer keeps adding rows."""

    def __init__(self, mirror: Mirror, upto: int) -> None:
        self.rows = LiveRows(mirror)
        self.upto = upto

    def live_count(self) -> int:
        return self.rows.live_count()

    def sample(self, size: int, rng: np.random.Generator) -> tuple[ivf.FloatArray, ivf.IntArray]:
        return self.rows.sample(size, rng)

    def rows_after(self, pk: int, limit: int) -> tuple[ivf.FloatArray, ivf.IntArray, int]:
        if pk >= self.upto:
            return np.zeros((0, self.rows.mirror.dim), np.float32), np.zeros(0, np.int64), pk
        mat, pks, last = self.rows.rows_after(pk, limit)
        if last > self.upto:
            keep = pks <= self.upto
            return mat[keep], pks[keep], self.upto
        return mat, pks, last

    def vectors(self, pks: ivf.IntArray) -> tuple[ivf.FloatArray, ivf.BoolArray]:
        return self.rows.vectors(pks)


class AnnBuilds:
    """The ANN index of one mirror and its builds (module docstring).

    Args:
        mirror: The arrays the index covers.
        file: The index file, written after an inline build and on ``save``.
        ann_min_rows: Live rows from which an ANN index is built (default
            ``ANN_MIN_ROWS``, read when the object is made; tests lower it).
        background_rows: Live rows from which it is built in a background thread
            (default ``BACKGROUND_ROWS``).

    Attributes:
        write_builds: A write may start a build (``WRITE_BUILDS``; tests set it).
        compact_min: Dead rows tolerated before compacting (``COMPACT_MIN``).
        ann: The index searches use, or None (they rank exactly).
        pending: An index read from a file whose change log was pruned past it,
            checked against the mirror (``validate``) by the next ``maintain``.
        thread: The background build, or None; once it is no longer alive the next
            search calls ``adopt``.
        tail: The thread assigning the rows above ``ann.hwm`` to its lists, or None.
        unsaved: The serving index was built or adopted after the index file was
            last written (``write_when_covered``).
        writes: The index file's background writes (``saving.BackgroundWrite``):
            a built or adopted index is written by a thread, not by the search.
        recheck_waits: A recall check was due while the matrix was still being
            filled (``check_recall``): the first search after the fill runs it.

    Every method but the build thread's runs with the store's lock held.
    """

    def __init__(
        self,
        mirror: Mirror,
        file: IndexFile,
        *,
        ann_min_rows: int | None = None,
        background_rows: int | None = None,
    ) -> None:
        self.mirror = mirror
        self.file = file
        self.ann_min_rows = ANN_MIN_ROWS if ann_min_rows is None else ann_min_rows
        self.background_rows = BACKGROUND_ROWS if background_rows is None else background_rows
        self.write_builds = WRITE_BUILDS
        self.compact_min = COMPACT_MIN
        self.ann: Ann | None = None
        self.pending: Ann | None = None
        self.thread: threading.Thread | None = None
        self.tail: TailAssigner | None = None
        self.unsaved = False
        self.recheck_waits = False
        self._built: Ann | BaseException | None = None
        self._stop = threading.Event()
        self.writes = BackgroundWrite(mirror, file)

    def maintain(self, *, writing: bool = False) -> None:
        """After a catch-up: compact a mirror with many dead rows, check a pending
        index, build or retrain the index when due, add the new rows to it and
        check its recall when the rows grew. After a write (``writing``): only the
        new rows, and the builds in the background when ``write_builds``."""
        m = self.mirror
        if not writing and m.n_dead > max(self.compact_min, m.n // 4):
            self.compact()
        if not writing and self.pending is not None:
            ann, self.pending = self.pending, None
            try:
                self.validate(ann)
                self.ann = ann
            except ValueError as exc:
                self.file.unusable(str(exc))
        live = m.n - m.n_dead
        grown = self.ann is not None and live > REBUILD_GROWTH * self.ann.trained_on
        due = (self.ann is None or grown) and live >= self.ann_min_rows and self.thread is None
        if (
            due
            and live >= (self.background_rows if writing else 0)
            and (self.write_builds or not writing)
        ):
            self.build(background=writing or live >= self.background_rows)
        if self.ann is not None:
            self.extend(self.ann, writing=writing)
            if not writing:
                self.check_recall(self.ann, live)
                self.settle()

    def check_recall(self, ann: Ann, live: int) -> None:
        """Once the live rows grew by ``RECHECK_GROWTH`` since the index's last
        check, test its recall on rows added since it was trained; when it falls
        short (they come from data its lists do not fit), rank exactly until a
        retrained index is ready. Not while a build, an assigner or the fill of a
        reopened store's matrix runs (the check reads every row): a later search does."""
        if self.mirror.missing is not None:  # the fill runs: the next search after it
            self.recheck_waits = live >= RECHECK_GROWTH * ann.checked_on
            return
        self.recheck_waits = False
        busy = self.thread is not None or self.tail is not None or len(ann.side) > 0
        if not ann.nprobe or busy or live < RECHECK_GROWTH * ann.checked_on:
            return
        ann.checked_on = live
        m = self.mirror
        rows = np.flatnonzero(m.live[: m.n] & (m.pks[: m.n] > ann.trained_hwm))
        if not len(rows):
            return
        rng = np.random.default_rng(live)
        pick = rng.choice(rows, min(CALIBRATION_QUERIES, len(rows)), replace=False)
        if ann.recall_holds(m.mat[pick], m.pks[pick], LiveRows(m)):
            return
        self.ann = None  # the index file keeps its old verdict: a reopened store re-checks
        self.build(background=live >= self.background_rows)

    def extend(self, ann: Ann, *, writing: bool = False) -> None:
        """Add the live rows above the ANN index's high-water mark to it: the ones a
        ``TailAssigner`` assigned (not in a write: a bulk load leaves them to the
        next search); then the rest inline when they are at most ``INLINE_ROWS``,
        else by the assigner (started, or resumed once it ended)."""
        if writing:
            self._forget_other_tail()
        else:
            self.drain()
        tail = self.tail
        if tail is not None:
            tail.resume()
            return
        m = self.mirror
        left = m.n - m.first_row_after(ann.hwm)
        faiss = ivf.load_faiss()
        if left <= tails.INLINE_ROWS or faiss is None:
            extend_inline(ann, m)
            return
        self.tail = TailAssigner(faiss, ann, m)

    def _forget_other_tail(self) -> None:
        """Stop and forget an assigner of an index that no longer serves."""
        tail = self.tail
        if tail is not None and tail.ann is not self.ann:
            tail.stop()
            self.tail = None

    def drain(self) -> None:
        """Add the rows the tail assigner finished to the serving index; forget an
        assigner of another index, or one that ended with nothing left to add
        (then write the index file if an adopted index waited for it)."""
        self._forget_other_tail()
        tail = self.tail
        if tail is None:
            return
        tail.drain()
        m = self.mirror
        if not tail.running and not tail.ready and m.first_row_after(tail.assigned) >= m.n:
            self.tail = None
        self.settle()

    def settle(self) -> None:
        """Unless a retrain builds (the serving index then stays as it is in faiss:
        one large index in memory, not two growing): store the keys the serving
        index holds beside faiss in it once they are more than ``1 / SIDE_SHARE``
        of its entries, or all of them once the assigner ended and the index file
        is due (``write_when_covered``)."""
        ann = self.ann
        if ann is None or self.thread is not None:
            return
        side, done = len(ann.side), self.tail is None
        if side and (side * SIDE_SHARE > int(ann.index.ntotal) or (done and self.unsaved)):
            faiss = ivf.load_faiss()
            if faiss is not None:
                tails.flush(faiss, ann, self.mirror)
        if done:
            self.write_when_covered()

    @property
    def tail_ready(self) -> bool:
        """Whether assigned rows wait for ``drain`` (a cheap test for each search)."""
        tail = self.tail
        return tail is not None and (tail.ready or not tail.running)

    def compact(self) -> None:
        """Drop the mirror's dead rows, and their entries from the index."""
        dead = self.mirror.compact()
        if self.ann is not None:
            self.ann.remove(dead[dead <= self.ann.hwm])
            if self.tail is not None:  # rows it assigned and not yet added are dropped
                self.tail.stop()
                self.tail = None

    def build(self, *, background: bool) -> None:
        """Build an index now (then write the index file), or start a thread that
        builds one (``adopt``)."""
        faiss = ivf.load_faiss()
        if faiss is None:
            ivf.warn_once(
                "faiss",
                "faiss-cpu is not installed: the embedded store ranks vectors exactly "
                "(correct, slower on large stores); pip install faiss-cpu",
            )
            self.ann_min_rows = NEVER
            return
        rng = np.random.default_rng(0)
        make = self._maker(faiss, rng, background=background)
        if background:
            self._stop.clear()
            self.thread = threading.Thread(
                target=self._run, args=(faiss, make), name="oam-vector-index", daemon=True
            )
            self.thread.start()
            return
        try:
            ann = make[0](lambda: False)
        except (MemoryError, RuntimeError) as exc:
            self._cannot_build(exc)
            return
        assert ann is not None
        self.ann = ann
        self.unsaved = True
        self.extend(ann)
        self.settle()

    def _maker(self, faiss: Any, rng: np.random.Generator, *, background: bool) -> Maker:
        """What a build runs: given its stop test, the index (a split of the serving
        index with ``SPLIT_RETRAINS``, for a grown store's retrain of an index in
        use and fully coded: its rows by list are copied here, under the store's
        lock; else ``Ann.build``); and, given the built index, what finds the
        lists of the rows its catch-up assigns (for a split, through the old
        lists the serving index's tail assigner found). A background build reads
        the rows up to the present key."""
        m = self.mirror
        source = UpTo(m, m.hwm) if background else LiveRows(m)
        old, tail = self.ann, self.tail

        def flat(built: Ann) -> Lister:
            return lambda mat, pks: ivf.assign(built.index, ivf.encode(mat, built.scale))

        if SPLIT_RETRAINS and old is not None and old.nprobe and old.unfilled is None:
            own_tail = tail if tail is not None and tail.ann is old else None
            finished = own_tail.finished if own_tail is not None else list
            held = split.members(old, finished())

            def lists(built: Ann) -> Lister:
                if held.children is None:
                    return flat(built)
                return split.catch_up_lists(held, old, finished)

            return (lambda stop: split.split(faiss, old, held, source, rng, stop)), lists
        return (lambda stop: Ann.build(faiss, source, rng, stop=stop)), flat

    def _run(self, faiss: Any, make: Maker) -> None:
        threads.background(faiss)
        try:
            built = make[0](self._stop.is_set)
            if built is not None:
                self._catch_up(built, make[1])
            self._built = built
        except (MemoryError, RuntimeError) as exc:
            self._built = exc

    def _catch_up(self, built: Ann, lists_of: Callable[[Ann], Lister]) -> None:
        """Assign the rows written during the build to the lists of ``built`` (the
        build thread's own index) and hold them beside faiss (``ivf.Side``), up to
        the rows there are when each of ``CATCH_UP_ROUNDS`` rounds starts: a writer
        faster than the thread is not chased (``adopt`` hands what is left to a
        tail assigner), and no faiss list grows by doubling here (``settle``
        stores them in one add per list)."""
        m = self.mirror
        for _ in range(CATCH_UP_ROUNDS):
            with m.lock:
                end = m.hwm
            keys, lists, find = [], [], lists_of(built)
            while not self._stop.is_set() and built.hwm < end:
                mat, pks, last = UpTo(m, end).rows_after(built.hwm, tails.TAIL_SLICE)
                if len(pks):
                    keys.append(pks)
                    lists.append(find(mat, pks))
                del mat
                built.hwm = max(built.hwm, last)
            if keys:
                pks, where = np.concatenate(keys), np.concatenate(lists)
                order = np.argsort(where, kind="stable")
                built.side = built.side.merged(pks[order], where[order])
            if self._stop.is_set():
                return

    def adopt(self, *, writing: bool = False) -> None:
        """Take over the background build's index (the previous one is dropped):
        drop the rows deleted meanwhile, add the rows written meanwhile; its file
        is written once it holds them (``write_when_covered``)."""
        with self.mirror.lock:
            built, self._built, self.thread = self._built, None, None
            if isinstance(built, BaseException):
                self._cannot_build(built)
            elif built is not None:
                if self._holds_dead(built):
                    live = self.mirror.live_keys()
                    built.remove(np.setdiff1d(built.ids(), live, assume_unique=True))
                self.ann = built
                self._forget_other_tail()
                tails.release_freed()  # the lists of the index dropped
                self.unsaved = True
                self.extend(built, writing=writing)  # ``maintain`` settles after a retrain check

    def _holds_dead(self, ann: Ann) -> bool:
        """Whether ``ann`` may hold rows deleted since it read them: it holds more
        entries than the mirror has live rows up to its high-water mark (a build
        adds only live rows, and keys never come back)."""
        m = self.mirror
        upto = m.first_row_after(ann.hwm)
        return ann.count() != int(np.count_nonzero(m.live[:upto]))

    def _cannot_build(self, exc: BaseException) -> None:
        ivf.warn_once("build", f"cannot build the vector index ({exc}); ranking exactly")
        self.ann_min_rows = NEVER

    def stop(self) -> None:
        """Stop a background build (it ends at its next slice) and the tail
        assigner, and wait for them; the rows it assigned and not yet added stay
        above the index's high-water mark."""
        thread = self.thread
        if thread is not None:
            self._stop.set()
            thread.join()
            self.thread, self._built = None, None
        if self.tail is not None:
            self.tail.stop()
            self.tail = None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until a background build and the tail assigner end (their work is
        taken over by the next search); True when neither runs any more."""
        for thread in (self.thread, None if self.tail is None else self.tail.thread):
            if thread is not None:
                thread.join(timeout)
                if thread.is_alive():
                    return False
        return True

    def validate(self, ann: Ann) -> None:
        """InvalidArgumentError unless ``ann`` (read from a file whose snapshot could not be
        caught up with) holds every live chunk up to its high-water mark and finds a
        sample of those chunks' own vectors; then drops its deleted chunks."""
        m = self.mirror
        if ann.hwm > m.hwm:
            raise InvalidArgumentError("it covers chunks this database never held")
        covered = np.flatnonzero(m.live[: m.n] & (m.pks[: m.n] <= ann.hwm))
        if not len(covered):
            return
        held = ann.ids()
        if not bool(np.isin(m.pks[covered], held).all()):
            raise InvalidArgumentError("it lacks chunks the database holds")
        rng = np.random.default_rng(len(covered))
        sample = rng.choice(covered, min(16, len(covered)), replace=False)
        found = 0
        for r in sample:
            labels = ann.search(m.mat[r], 10)
            rows = m.rows_of(labels)
            sims = m.mat[rows[rows >= 0]] @ m.mat[r]
            # its own key, or an equal vector ranked first (duplicates)
            found += int(int(m.pks[r]) in labels.tolist() or bool((sims > 0.99).any()))
        if found < len(sample) - max(1, len(sample) // 8):
            raise InvalidArgumentError("its vectors differ from the database's")
        ann.remove(np.setdiff1d(held, m.live_keys()))  # deleted since it was written

    def write_when_covered(self) -> None:
        """Write the index file of an index adopted or built since the last write
        (``unsaved``) once it holds every row, no retrain builds and no assigner
        works (a write under way holds the mirror's lock while faiss writes the
        index: a bulk load would wait for it at every retrain)."""
        if not self.unsaved or self.thread is not None or self.tail is not None:
            return
        ann, m = self.ann, self.mirror
        if ann is None or len(ann.side) or m.first_row_after(ann.hwm) < m.n:
            return
        self.unsaved = False
        self.write_soon()

    def write_soon(self) -> None:
        """Write the index file in a background thread (``saving.py``); call with
        the mirror's lock held."""
        if self.ann is None or not self.file.path:
            return
        if self.mirror.n_dead:
            self.compact()
        self.writes.start(self.ann)

    def save(self) -> None:
        """Stop a background build, wait for a background write; write the index
        file if the mirror has moved far from it (``file.SAVE_SHARE``) or the ANN
        index was rebuilt since."""
        self.stop()
        self.writes.wait()
        m = self.mirror
        if self.ann is None or not self.file.path or not m.dim:
            return
        faiss = ivf.load_faiss()
        if len(self.ann.side) and faiss is not None:  # the file holds faiss's entries only
            tails.flush(faiss, self.ann, m)
        saved = self.file.saved
        if not self.ann.rebuilt and saved is not None:
            added = m.n - m.first_row_after(saved[0])
            if not self.file.far_behind(added + (m.cursor - saved[1]), m.n):
                return
        self.write()

    def write(self) -> None:
        """Write the mirror (live rows) and the ANN index to the index file."""
        faiss = ivf.load_faiss()
        m = self.mirror
        if self.ann is None or not self.file.path or not m.dim or faiss is None:
            return
        with m.lock:
            if m.n_dead:
                self.compact()
            if self.file.store(m.snapshot(self.ann), faiss):
                self.ann.rebuilt = False
