"""The LLM pipeline of a thread: extraction and running-summary passes
(docs/memory-pipeline.md).

Each pass reads the thread row's persisted watermark (the ``seq_no`` of the last
message it covered), collects the messages after it, calls the LLM once, and then
writes its result *and* the advanced watermark in one transaction
(``ThreadStore.commit_thread_pass``, a compare-and-set on the thread state). An
extraction pass's result is its new memories and the version changes of its update
decisions (``memory/decisions.py``; supersede and invalidate, applied by
``store/versions.apply_changes`` in that transaction). So:

* a crash, an LLM error or a timeout leaves the watermark behind and applies no
  decision: the next pass retries those messages, nothing acknowledged is lost, and
  each decision is applied once;
* two writers racing on one thread cannot both commit a pass over the same messages:
  the loser re-reads the state and only handles what is left, so nothing is
  extracted twice;
* an unusable reply is retried on later passes, and after ``MAX_ATTEMPTS`` the
  messages are skipped with a warning (counted in the state), so one bad input cannot
  block a thread forever.

Written once as ``Steps`` (see ``steps.py``): the same pass runs inline (sync or
async) or on the background worker.
"""

from __future__ import annotations

import enum
import functools
import unicodedata
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.llm import ILlm
from oam_core.apis.records import MEMORY_TYPES, MessageRecord, Record
from oam_core.checks import strategy_of
from oam_core.errors import ConfigurationError, InvalidArgumentError
from oam_core.memory.decisions import Decision, resolve_decisions
from oam_core.memory.diagnostics import pipeline_warning
from oam_core.memory.extraction import (
    DELETE,
    EXTRACTION_PROMPT,
    MAX_TEXT_CHARS_ASKED,
    RELATED_MEMORY_COUNT,
    UPDATE,
    ExtractedMemory,
    PromptMessage,
    extraction_schema,
    items_asked,
    normalize_timestamp,
    parse_extraction_reply,
    render_extraction_prompt,
    render_messages,
)
from oam_core.memory.jsonrepair import UnusableReplyError
from oam_core.memory.progress import PassProgress
from oam_core.memory.provenance import RESERVED_KEY, is_bookkeeping_key
from oam_core.memory.repeats import stored_repeats_steps
from oam_core.memory.runningsummary import (
    parse_summary_reply,
    render_summary_prompt,
    summary_schema,
)
from oam_core.memory.shortening import shorten_messages_steps
from oam_core.memory.summary import RUNNING_SUMMARY_STATE_KEY, running_summary_from_state
from oam_core.memory.threadconfig import ThreadConfig
from oam_core.memory.tokens import estimate_tokens, truncate_head, truncate_tail
from oam_core.steps import Steps, call
from oam_core.store.options import SearchStrategy
from oam_core.store.threads import ThreadStore, thread_store
from oam_core.store.ttl import parse_iso_timestamp
from oam_core.store.versions import VersionChange

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

__all__ = [
    "EXTRACTION_STATE_KEY",
    "MAX_ATTEMPTS",
    "PipelineJob",
    "RunCounters",
    "check_messages_fit",
    "pipeline_steps",
]

EXTRACTION_STATE_KEY = "memory_extraction"
"""Key of the extraction progress in the thread row's ``state`` (``PassProgress``)."""
MAX_ATTEMPTS = 3
"""Passes over the same messages whose replies were unusable before they are skipped."""
MAX_PASSES_PER_RUN = 64
"""Bound on the passes of one run (a run ends earlier when nothing is due)."""
_PAGE = 100
_MAX_QUERY_TOKENS = 2000

T = TypeVar("T")


class _Outcome(enum.Enum):
    IDLE = "idle"  # nothing due
    DONE = "done"  # committed (more may be due)
    RACED = "raced"  # another writer advanced the state first: re-read
    FAILED = "failed"  # LLM error or unusable reply: stop this run


@dataclass
class RunCounters:
    """What one run of the pipeline did.

    Attributes:
        memories: Memories written.
        failed_passes: Passes that failed (LLM error or unusable reply).
    """

    memories: int = 0
    failed_passes: int = 0


@dataclass(frozen=True)
class PipelineJob:
    """What one run of the pipeline needs to know about a thread.

    Attributes:
        store: The thread's store.
        thread_id, user_id, agent_id: The thread and its scope.
        llm: The model (never None: no LLM, no pipeline).
        extract: Run extraction passes.
        summarize: Keep the running summary.
        config: The thread's runtime options (frequencies, windows, budgets).
        counters: What this run did so far.
    """

    store: OracleMemoryStore
    thread_id: str
    user_id: str | None
    agent_id: str | None
    llm: ILlm
    extract: bool
    summarize: bool
    config: ThreadConfig
    counters: RunCounters = field(default_factory=RunCounters, compare=False)

    @property
    def threads(self) -> ThreadStore:
        """The thread side of the store (thread rows, pass commits)."""
        return thread_store(self.store)


# ---------------------------------------------------------------- pure helpers


def _prompt_copy(record: MessageRecord) -> PromptMessage:
    return PromptMessage(
        id=record.id,
        role=record.role or "unknown",
        timestamp=record.timestamp or record.created_at,
        content=record.content or "",
    )


def _seq(record: MessageRecord) -> int:
    return record.seq_no if record.seq_no is not None else -1


def _fit(
    messages: Sequence[PromptMessage],
    render: Callable[[Sequence[PromptMessage]], T | None],
    token_limit: int,
) -> tuple[int, T, list[PromptMessage]]:
    """The longest prefix of ``messages`` whose prompt fits (binary search).

    When not even the first message fits, its prompt copy is cut to the room left
    (with a warning) so that a pass can always make progress.
    """
    full = render(messages)
    if full is not None:
        return len(messages), full, list(messages)
    lo, hi, best = 1, len(messages) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        result = render(messages[:mid])
        if result is None:
            hi = mid - 1
        else:
            lo, best = mid + 1, (mid, result)
    if best is not None:
        return best[0], best[1], list(messages[: best[0]])
    first = messages[0]
    empty = PromptMessage(first.id, first.role, first.timestamp, "")
    overhead = render([empty])
    room = token_limit - (estimate_tokens(str(overhead)) if overhead is not None else token_limit)
    cut = PromptMessage(first.id, first.role, first.timestamp, truncate_head(first.content, room))
    pipeline_warning(
        f"message {first.id!r} does not fit memory_extraction_token_limit={token_limit} "
        "even alone; its prompt copy is truncated"
    )
    result = render([cut])
    if result is None:
        result = render([empty])
        cut = empty
    if result is None:
        raise ConfigurationError(
            f"memory_extraction_token_limit={token_limit} is too small for the prompt "
            "template itself"
        )
    return 1, result, [cut]


def _prefix_that_fits(records: Sequence[MessageRecord], cap: int, limit: int, overhead: int) -> int:
    """How many of ``records`` (at least 1) a prompt of ``limit`` tokens, ``overhead``
    of them taken by the template, can hold when each message is shown at most
    ``cap`` tokens long: a bound used to avoid shortening messages that a pass would
    not include anyway. Context is not counted, so the real fit (``_fit``) may take
    fewer."""
    if limit <= 0:
        return len(records)
    used = overhead
    for count, record in enumerate(records):
        size = estimate_tokens(record.content or "")
        used += _MESSAGE_MARKUP + (min(size, cap) if cap > 0 else size)
        if used > limit:
            return max(count, 1)
    return len(records)


_EMPTY = PromptMessage("x", "assistant", "2026-01-01T00:00:00.000000+00:00", "")
_MESSAGE_MARKUP = estimate_tokens("".join(render_messages([_EMPTY], "    ")))
"""Estimated tokens of one message's XML around its content (timestamp, role)."""


@functools.cache
def _template_tokens(kind: str) -> int:
    """Estimated tokens of a prompt template holding one empty message (the fixed
    part of every prompt of ``kind``); computed once per process."""
    if kind == "extraction":
        rendered = render_extraction_prompt([_EMPTY])
        return estimate_tokens(rendered[0]) if rendered else 0
    return estimate_tokens(render_summary_prompt([_EMPTY], None) or "")


def check_messages_fit(contents: Sequence[str], config: ThreadConfig) -> None:
    """Refuse messages that no extraction prompt could ever hold (before writing).

    A message fits when its prompt copy (shortened to ``max_message_token_length``
    when that is positive) plus the prompt template stays within
    ``memory_extraction_token_limit``.

    Raises:
        ValueError: naming the message index, its size and the limit.
    """
    limit = config.memory_extraction_token_limit
    if limit <= 0:
        return
    base = _template_tokens("extraction")
    if base >= limit:
        raise ConfigurationError(
            f"memory_extraction_token_limit={limit} is smaller than the extraction prompt "
            f"itself (about {base} tokens before any message); raise it or set it <= 0"
        )
    cap = config.max_message_token_length
    for i, content in enumerate(contents):
        size = estimate_tokens(content)
        if cap > 0:
            size = min(size, cap)
        if base + size > limit:
            raise InvalidArgumentError(
                f"messages[{i}] needs about {base + size} tokens in the extraction prompt, "
                f"more than memory_extraction_token_limit={limit}; raise the limit or set "
                "max_message_token_length so long messages are shortened"
            )


def _inherited_metadata(records: Sequence[MessageRecord]) -> dict[str, Any]:
    """Metadata of the source messages merged in order (later wins), without
    bookkeeping keys (``provenance.is_bookkeeping_key``)."""
    merged: dict[str, Any] = {}
    for record in records:
        for key, value in (record.metadata or {}).items():
            if not is_bookkeeping_key(key):
                merged[key] = value
    return merged


# ------------------------------------------------------------------- the steps


def _messages_after_steps(
    job: PipelineJob, watermark: int, earlier: int, frequency: int, kind: str
) -> Steps[tuple[list[MessageRecord], list[MessageRecord]]]:
    """``(earlier, pending)``: the messages with ``seq_no > watermark`` in order, and
    up to ``earlier`` messages just before them.

    Pages are read by ``seq_no`` (after the last one read), never by position: a
    message deleted by another client between two page reads cannot shift a page and
    make the pass skip one (docs/failure-modes.md#c21). Reading stops once the pass is due and the
    messages read already overflow one prompt of ``kind``; the rest waits for the
    next pass.
    """
    config = job.config
    cap, limit = config.max_message_token_length, config.memory_extraction_token_limit
    overhead = _template_tokens(kind)
    pending: list[MessageRecord] = []
    after = watermark
    while True:
        page: list[MessageRecord] = yield from call(
            job.threads.list_thread_messages_by_seq, job.thread_id, after=after, limit=_PAGE
        )
        pending.extend(page)
        if len(page) < _PAGE:
            break
        after = _seq(page[-1])
        if _due(pending, frequency) and _prefix_that_fits(pending, cap, limit, overhead) < len(
            pending
        ):
            break
    before: list[MessageRecord] = []
    if earlier > 0:
        before = yield from call(
            job.threads.list_thread_messages_by_seq,
            job.thread_id,
            through=watermark,
            limit=earlier,
            newest=True,
        )
    return before, pending


def _related_steps(job: PipelineJob, new: Sequence[PromptMessage]) -> Steps[list[Record]]:
    """Up to ``RELATED_MEMORY_COUNT`` current memories of the thread's user and agent
    (any thread) most related to the new messages (``store.search`` returns current
    memories only, so no superseded one takes a slot)."""
    store = job.store
    strategy = strategy_of(store)
    if store.embedder is None and strategy is not SearchStrategy.KEYWORD:
        return []  # such a store cannot rank text (store.search would refuse)
    query = truncate_tail("\n".join(m.content for m in new), _MAX_QUERY_TOKENS, marker="")
    if _is_blank(query):
        return []
    found: list[tuple[Record, float]] = yield from call(
        store.search,
        query,
        k=RELATED_MEMORY_COUNT,
        user_id=job.user_id,
        agent_id=job.agent_id,
        exact_user_match=True,
        exact_agent_match=True,
        record_types=set(MEMORY_TYPES),
    )
    return [record for record, _ in found]


def _due(pending: Sequence[MessageRecord], frequency: int) -> bool:
    return len(pending) >= (frequency if frequency > 0 else 1)


def _is_blank(text: str) -> bool:
    """True for text a reader sees as empty: only whitespace and invisible format
    characters (Unicode category Cf: zero-width space, BOM, joiners, direction marks)."""
    return all(c.isspace() or unicodedata.category(c) == "Cf" for c in text)


def _all_blank(records: Sequence[MessageRecord]) -> bool:
    return all(_is_blank(r.content or "") for r in records)


def _advance_steps(
    job: PipelineJob, state: dict[str, Any], key: str, progress: PassProgress
) -> Steps[_Outcome]:
    """Commit a new ``progress`` for ``key`` (compare-and-set, no records)."""
    ids = yield from call(
        job.threads.commit_thread_pass,
        job.thread_id,
        expected_state=state,
        state=progress.into(state, key),
    )
    return _Outcome.RACED if ids is None else _Outcome.DONE


def _ask_steps(
    job: PipelineJob,
    state: dict[str, Any],
    key: str,
    sources: Sequence[MessageRecord],
    prompt: str,
    schema: dict[str, Any],
    parse: Callable[[str], T],
) -> Steps[T | None]:
    """One structured LLM call, parsed; None (after counting the failure) when the
    LLM fails or its reply is unusable."""
    try:
        reply = yield from call(job.llm.generate, prompt, response_json_schema=schema)
    except ConfigurationError:  # e.g. no API key: every pass would fail the same way
        raise
    except Exception as exc:
        yield from _record_failure_steps(
            job, state, key, sources, f"LLM error {exc!r}", unusable=False
        )
        return None
    try:
        return parse(reply if isinstance(reply, str) else "")
    except UnusableReplyError as exc:
        problem = str(exc)
    except Exception as exc:  # whatever a reply does to the parser, it is the reply's fault
        problem = repr(exc)
    yield from _record_failure_steps(
        job, state, key, sources, f"unusable reply ({problem})", unusable=True
    )
    return None


def _record_failure_steps(
    job: PipelineJob,
    state: dict[str, Any],
    key: str,
    pending: Sequence[MessageRecord],
    reason: str,
    *,
    unusable: bool,
) -> Steps[_Outcome]:
    """Count a failed pass in the state; after ``MAX_ATTEMPTS`` unusable replies, skip
    the messages that were in every one of those replies' prompts (advance the
    watermark past them) so the thread moves on.

    Passes always start right after the watermark, so the messages common to the
    failed passes are those up to the smallest last ``seq_no`` among them
    (``attempts_upto``); messages added later have been tried fewer times and stay.
    """
    progress = PassProgress.read(state, key)
    progress = replace(progress, failed_passes=progress.failed_passes + 1)
    what = "extraction" if key == EXTRACTION_STATE_KEY else "summary"
    outcome = "the messages stay pending and the next pass retries them"
    if unusable:
        last = _seq(pending[-1])
        upto = last if progress.attempts_upto is None else min(progress.attempts_upto, last)
        progress = replace(progress, attempts=progress.attempts + 1, attempts_upto=upto)
        if progress.attempts >= MAX_ATTEMPTS:
            skipped = [r for r in pending if _seq(r) <= upto]
            progress = progress.advanced(
                upto, skipped_messages=progress.skipped_messages + len(skipped)
            )
            outcome = f"giving up on {len(skipped)} messages after {MAX_ATTEMPTS} attempts"
    pipeline_warning(f"thread {job.thread_id!r}: {what} pass skipped: {reason}; {outcome}")
    job.counters.failed_passes += 1
    yield from _advance_steps(job, state, key, progress)
    return _Outcome.FAILED


def _extraction_pass_steps(job: PipelineJob, state: dict[str, Any]) -> Steps[_Outcome]:
    config = job.config
    progress = PassProgress.read(state, EXTRACTION_STATE_KEY)
    window = config.memory_extraction_window
    earlier_records, pending = yield from _messages_after_steps(
        job, progress.watermark, max(window, 0), config.memory_extraction_frequency, "extraction"
    )
    if not _due(pending, config.memory_extraction_frequency):
        return _Outcome.IDLE
    if _all_blank(pending):
        done = progress.advanced(_seq(pending[-1]))
        return (yield from _advance_steps(job, state, EXTRACTION_STATE_KEY, done))
    # Only the messages a pass can hold are shortened (one LLM call each), so a long
    # backlog does not cost a call per message on every pass.
    cap = config.max_message_token_length
    overhead = _template_tokens("extraction")
    likely = _prefix_that_fits(pending, cap, config.memory_extraction_token_limit, overhead)
    copies = yield from shorten_messages_steps(
        [_prompt_copy(r) for r in pending[:likely] + earlier_records],
        job.llm,
        cap,
        config.message_shortening_input_token_limit,
    )
    new_all, earlier_all = copies[:likely], copies[likely:]
    summary = running_summary_from_state(state)
    related = yield from _related_steps(job, new_all)

    def render(new: Sequence[PromptMessage]) -> tuple[str, int] | None:
        context = max(window - len(new), 0) if window > 0 else 0
        earlier = earlier_all[max(len(earlier_all) - context, 0) :] if context else []
        return render_extraction_prompt(
            new,
            earlier=earlier,
            related=related,
            summary=summary,
            token_limit=config.memory_extraction_token_limit,
        )

    count, (prompt, shown), _ = _fit(new_all, render, config.memory_extraction_token_limit)
    sources = pending[:count]
    memories = yield from _ask_steps(
        job,
        state,
        EXTRACTION_STATE_KEY,
        sources,
        prompt,
        extraction_schema([r.id for r in related[:shown]], new_messages=len(sources)),
        functools.partial(
            parse_extraction_reply,
            max_items=items_asked(len(sources)),
            max_text_chars=MAX_TEXT_CHARS_ASKED,
        ),
    )
    if memories is None:
        return _Outcome.FAILED
    repeats = yield from stored_repeats_steps(
        job.store, job.user_id, job.agent_id, memories, related[:shown]
    )
    decisions = resolve_decisions(memories, related[:shown], repeats)
    batches, changes = _memory_rows(job, decisions, sources)
    done = progress.advanced(
        _seq(sources[-1]),
        passes=progress.passes + 1,
        memories=progress.memories + sum(d.stores for d in decisions),
    )
    ids = yield from call(
        job.threads.commit_thread_pass,
        job.thread_id,
        expected_state=state,
        state=done.into(state, EXTRACTION_STATE_KEY),
        batches=batches,
        version_changes=changes,
    )
    if ids is None:
        return _Outcome.RACED
    job.counters.memories += len(ids)
    return _Outcome.DONE


def _said_at(sources: Sequence[MessageRecord]) -> str | None:
    """When the last source message was said: its timestamp, else when it was stored."""
    last = sources[-1]
    return normalize_timestamp(last.timestamp) or normalize_timestamp(last.created_at)


def _stated_start(memory: ExtractedMemory, said_at: str | None) -> str | None:
    """From when the item itself says its memory holds: its ``valid_from``, else its
    event ``timestamp`` when that is not later than ``said_at`` (a past event, "Ana
    moved to Lisbon in 2020"); None for a future event ("Ana flies to Lisbon in
    May") or no date (docs/memory-pipeline.md#update-decisions)."""
    if memory.valid_from is not None:
        return memory.valid_from
    if memory.timestamp is None:
        return None
    if said_at is None or parse_iso_timestamp(memory.timestamp) <= parse_iso_timestamp(said_at):
        return memory.timestamp
    return None


def _successor_start(given: str | None, target: Record, said_at: str | None) -> str | None:
    """When an ``UPDATE``'s new memory starts holding, or when a ``DELETE`` ends its
    target: the item's ``valid_from``, unless that is not later than the start of the
    target (a model's wrong or too early date, which would erase the target's whole
    history), then when the last source message was said, as for an item without a
    date (docs/memory-pipeline.md#update-decisions)."""
    start = given or said_at
    if given is None or target.valid_from is None:
        return start
    if parse_iso_timestamp(given) <= parse_iso_timestamp(target.valid_from):
        return said_at
    return start


def _memory_rows(
    job: PipelineJob, decisions: Sequence[Decision], sources: Sequence[MessageRecord]
) -> tuple[list[PendingRecordBatch], list[VersionChange]]:
    """Records for the decisions that store a memory (grouped by type) and the
    version changes of ``UPDATE`` (supersede) and ``DELETE`` (invalidate), applied in
    the pass's transaction (docs/memory-pipeline.md#update-decisions).

    A new memory's ``timestamp`` is the item's event time, else the last source
    message's; its ``valid_from`` is the item's, else its event time when that is not
    later than when the last source message was said, else when that message was
    said (``_stated_start``: "Ana flies to Lisbon in May" holds from when it was
    said). A ``DELETE`` ends its target at the item's ``valid_from``, else when the
    message was said;
    an ``UPDATE`` or ``DELETE`` dated no later than its target's start is dated when
    the last source message was said (``_successor_start``).
    """
    source_ids = [r.id for r in sources]
    inherited = _inherited_metadata(sources)
    fallback_time = next(
        (t for r in reversed(sources) if (t := normalize_timestamp(r.timestamp))), None
    )
    said_at = _said_at(sources)
    grouped: dict[str, list[tuple[str, ExtractedMemory, str | None]]] = {}
    changes: list[VersionChange] = []
    for decision in decisions:
        memory, target = decision.memory, decision.target
        if decision.stores:
            memory_id = str(uuid.uuid4())
            start = _stated_start(memory, said_at) or said_at
            if decision.action == UPDATE and target is not None:
                start = _successor_start(_stated_start(memory, said_at), target, said_at)
            grouped.setdefault(memory.record_type, []).append((memory_id, memory, start))
            if decision.action == UPDATE and target is not None:
                reason = memory.reason or f"updated by a newer memory: {memory.text[:200]}"
                changes.append(VersionChange("supersede", target.id, memory_id, reason=reason))
        elif decision.action == DELETE and target is not None:
            when = _successor_start(memory.valid_from, target, said_at)
            changes.append(
                VersionChange(
                    "invalidate",
                    target.id,
                    at=parse_iso_timestamp(when) if when else None,
                    reason=memory.reason or "no longer true",
                    follow_head=True,
                )
            )
    batches = []
    provenance = {"source_message_ids": source_ids, "extraction_prompt": EXTRACTION_PROMPT}
    for record_type, rows in grouped.items():
        batches.append(
            PendingRecordBatch(
                texts=[m.text for _, m, _ in rows],
                record_type=record_type,
                record_ids=[memory_id for memory_id, _, _ in rows],
                thread_ids=job.thread_id,
                user_ids=job.user_id,
                agent_ids=job.agent_id,
                timestamps=[m.timestamp or fallback_time for _, m, _ in rows],
                valid_from=[start for _, _, start in rows],
                metadata=[{**inherited, RESERVED_KEY: dict(provenance)} for _ in rows],
            )
        )
    return batches, changes


def _summary_pass_steps(job: PipelineJob, state: dict[str, Any]) -> Steps[_Outcome]:
    config = job.config
    progress = PassProgress.read(state, RUNNING_SUMMARY_STATE_KEY)
    _, pending = yield from _messages_after_steps(
        job, progress.watermark, 0, config.context_summary_update_frequency, "summary"
    )
    if not _due(pending, config.context_summary_update_frequency):
        return _Outcome.IDLE
    if _all_blank(pending):
        done = progress.advanced(_seq(pending[-1]))
        return (yield from _advance_steps(job, state, RUNNING_SUMMARY_STATE_KEY, done))
    cap = config.max_message_token_length
    overhead = _template_tokens("summary")
    likely = _prefix_that_fits(pending, cap, config.memory_extraction_token_limit, overhead)
    copies = yield from shorten_messages_steps(
        [_prompt_copy(r) for r in pending[:likely]],
        job.llm,
        cap,
        config.message_shortening_input_token_limit,
    )
    previous = running_summary_from_state(state)
    limit = config.memory_extraction_token_limit
    count, prompt, _ = _fit(copies, lambda new: render_summary_prompt(new, previous, limit), limit)
    sources = pending[:count]
    summary = yield from _ask_steps(
        job,
        state,
        RUNNING_SUMMARY_STATE_KEY,
        sources,
        prompt,
        summary_schema(),
        functools.partial(parse_summary_reply, previous=previous),
    )
    if summary is None:
        return _Outcome.FAILED
    done = progress.advanced(
        _seq(sources[-1]),
        summary=summary.summary,
        topics=tuple(summary.topics),
        passes=progress.passes + 1,
    )
    return (yield from _advance_steps(job, state, RUNNING_SUMMARY_STATE_KEY, done))


def pipeline_steps(job: PipelineJob) -> Steps[RunCounters]:
    """Run every due pass of the thread: extraction first (it sees the summary of
    what came before), then the running summary; repeat while work is due.

    Returns:
        What this run did.
    """
    for _ in range(MAX_PASSES_PER_RUN):
        row = yield from call(job.threads.get_thread_row, job.thread_id)
        if row is None:  # the thread was deleted meanwhile
            break
        state = dict(row.state or {})
        outcome = _Outcome.IDLE
        if job.extract:
            outcome = yield from _extraction_pass_steps(job, state)
        if outcome is _Outcome.IDLE and job.summarize:
            outcome = yield from _summary_pass_steps(job, state)
        if outcome in (_Outcome.IDLE, _Outcome.FAILED):
            break
    return job.counters
