"""Query rewriting: the thread's LLM turns a question and its recent context into a
search query (docs/context-card.md#query-rewriting; the ``query_rewrite`` option, off
by default).

A question such as "what should I order there?" finds little by itself: the place
and the kind of preference are in the messages before it. With ``query_rewrite`` on,
the context card asks the LLM once for a short query naming them
(``prompts/query_rewrite_v1.txt``, a ``{"query": ...}`` reply) and searches with it as
well as with its own query; ``fuse_results`` merges the two result lists so that a
bad rewrite cannot push out the original query's best results.

Everything degrades to the original query: an LLM error, a timeout, an empty or
unusable reply each give one ``MemoryPipelineWarning`` (also logged on the ``"oam"``
logger) and the card is built as without the option. Pure functions apart from
``rewrite_query_steps``, whose one ``Call`` is the LLM's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oam_core.apis.llm import ILlm
from oam_core.apis.records import MessageRecord, Record
from oam_core.errors import ConfigurationError
from oam_core.memory.contextcard import relevant_steps
from oam_core.memory.diagnostics import pipeline_warning
from oam_core.memory.jsonrepair import UnusableReplyError, parse_json_reply
from oam_core.memory.placeholders import placeholder_pattern, placeholders_of
from oam_core.memory.templates import load_prompt
from oam_core.memory.tokens import estimate_tokens, truncate_head, truncate_tail
from oam_core.steps import Steps, call
from oam_core.store.fusion import Distance, DistanceKind, rrf_distance
from oam_core.store.text import WORD

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

__all__ = [
    "QUERY_REWRITE_PROMPT",
    "REWRITE_MESSAGES",
    "RewriteInput",
    "card_relevant_steps",
    "check_rewrite_llm",
    "fuse_results",
    "parse_rewrite_reply",
    "render_rewrite_prompt",
    "rewrite_input",
    "rewrite_query_steps",
    "rewrite_schema",
]

QUERY_REWRITE_PROMPT = "query_rewrite_v1"
"""Template of the rewrite prompt (``prompts/query_rewrite_v1.txt``)."""
REWRITE_MESSAGES = 6
"""Most recent messages read for one rewrite: the question and what came before it."""
CONTEXT_TOKENS = 600
"""Estimated tokens of conversation shown with the question (newest messages kept)."""
MESSAGE_TOKENS = 150
"""Estimated tokens of one context message (its beginning kept)."""
QUESTION_TOKENS = 300
"""Estimated tokens of the question (its end kept: the ask is usually last)."""
MAX_QUERY_CHARS = 300
"""Longest rewritten query kept (characters); a longer one is cut."""
FUSION_K = 60
"""The constant of reciprocal-rank fusion: a result at rank r scores 1 / (60 + r)."""

_SPACES = re.compile(r"\s+")
_SURROGATES = re.compile(r"[\ud800-\udfff\x00]")
_QUOTES = "\"'`“”‘’"


@dataclass(frozen=True)
class RewriteInput:
    """What one rewrite shows the LLM.

    Attributes:
        question: The question (the last user message, else the card's query text),
            at most ``QUESTION_TOKENS`` estimated tokens.
        context: ``(role, text)`` of the recent messages before the question, oldest
            first, within ``CONTEXT_TOKENS`` in all.
    """

    question: str
    context: tuple[tuple[str, str], ...] = ()


def _one_line(text: str) -> str:
    return _SPACES.sub(" ", _SURROGATES.sub("", text)).strip()


def rewrite_input(messages: Sequence[MessageRecord], fallback: str) -> RewriteInput:
    """The question and its context from the thread's last messages.

    Args:
        messages: The most recent messages, oldest first (``REWRITE_MESSAGES`` of
            them is enough).
        fallback: The question when no message has the role ``user`` (the card's
            own query text).

    Returns:
        The last ``user`` message as the question and the messages before it, newest
        kept within ``CONTEXT_TOKENS``, as its context (a reply written after the
        question is not its context); blank messages are skipped.
    """
    texts = [(m.role or "", m.content) for m in messages if m.content and m.content.strip()]
    asked = [i for i, (role, _) in enumerate(texts) if role == "user"]
    if asked:
        question = texts[asked[-1]][1]
        others = texts[: asked[-1]]
    else:
        question, others = fallback, texts
    context: list[tuple[str, str]] = []
    left = CONTEXT_TOKENS
    for role, text in reversed(others):
        shown = truncate_head(_one_line(text), MESSAGE_TOKENS, marker=" …")
        cost = estimate_tokens(f"{role}: {shown}")
        if cost > left:
            break
        context.append((role, shown))
        left -= cost
    context.reverse()
    return RewriteInput(
        truncate_tail(_one_line(question), QUESTION_TOKENS, marker="… "), tuple(context)
    )


def render_rewrite_prompt(source: RewriteInput) -> str:
    """The rewrite prompt: the context as ``role: text`` lines (``(none)`` when there
    is none) and the question, each on one line."""
    lines = [f"{role or 'message'}: {text}" for role, text in source.context]
    return load_prompt(QUERY_REWRITE_PROMPT).render(
        context="\n".join(lines) if lines else "(none)", question=source.question
    )


def rewrite_schema() -> dict[str, Any]:
    """JSON schema of the reply, passed as ``response_json_schema``: one bounded
    ``query`` string (bounds keep small local models from looping)."""
    return {
        "type": "object",
        "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 200}},
        "required": ["query"],
        "additionalProperties": False,
    }


def _reply_schema() -> dict[str, Any]:
    """What a reply must fit to be used: an object with a string ``query`` (no
    length bounds: a long query is cut; extra keys are ignored) that is not only a
    placeholder (``"..."``, as in the prompt's answer form; ``memory/placeholders.py``)."""
    placeholders = placeholders_of(QUERY_REWRITE_PROMPT, ("query",))
    query = {"type": "string", "not": {"pattern": placeholder_pattern(placeholders)}}
    return {"type": "object", "properties": {"query": query}, "required": ["query"]}


def parse_rewrite_reply(text: str) -> str:
    """The query of a ``{"query": ...}`` reply, on one line, without surrounding
    quotes, at most ``MAX_QUERY_CHARS`` characters (repairs as ``parse_json_reply``;
    of several JSON values, the last that fits is used, never the prompt's answer
    form ``{"query": "..."}`` echoed after the answer).

    Raises:
        UnusableReplyError: when the reply holds no such object, or its query has no
            letter or digit (``oam_core.store.text.WORD``: blank, punctuation,
            underscores, the prompt's ``"..."``).
        TypeError: if ``text`` is not a str.
    """
    form = load_prompt(QUERY_REWRITE_PROMPT).answer_form
    data = parse_json_reply(text, schema=_reply_schema(), forms=() if form is None else (form,))
    query = _one_line(data["query"]).strip(_QUOTES).strip()[:MAX_QUERY_CHARS].strip()
    if not WORD.search(query):
        raise UnusableReplyError("its query has no letter or digit", text)
    return query


def check_rewrite_llm(llm: ILlm | None, query_rewrite: bool, where: str) -> None:
    """``query_rewrite`` needs an LLM (docs/context-card.md#query-rewriting).

    Args:
        llm: The LLM the client or thread would use, or None.
        query_rewrite: The option's value.
        where: Where to pass the LLM, for the message (``"OracleAgentMemory"``, ...).

    Raises:
        ConfigurationError: naming the option, when it is on without an LLM.
    """
    if query_rewrite and llm is None:
        raise ConfigurationError(
            f"query_rewrite=True asks the LLM for search queries but there is none: pass "
            f"llm= to {where}, or leave query_rewrite off"
        )


def rewrite_query_steps(llm: ILlm, source: RewriteInput) -> Steps[str | None]:
    """Ask ``llm`` for a search query (one call, ``rewrite_schema``).

    Never raises: an error of the call (timeouts included) or an unusable reply
    warns once (``MemoryPipelineWarning``, logged on ``"oam"``) and returns None, so
    the caller searches with its original query.

    Returns:
        The rewritten query, or None.
    """
    prompt = render_rewrite_prompt(source)
    try:
        reply: str = yield from call(llm.generate, prompt, response_json_schema=rewrite_schema())
        return parse_rewrite_reply(reply)
    except Exception as exc:
        pipeline_warning(
            f"query_rewrite: no usable query from the LLM ({type(exc).__name__}: {exc}); "
            "the context card searches with its own query only"
        )
        return None


def fuse_results(
    original: Sequence[tuple[Record, float]], rewritten: Sequence[tuple[Record, float]], k: int
) -> list[tuple[Record, float]]:
    """The best ``k`` of two result lists (the original query's and the rewritten
    query's, best first), by reciprocal-rank fusion, with a floor for the original.

    Each record (a record type and id: a message and a memory may share an id)
    scores ``1 / (FUSION_K + rank)`` in each list it is in (ranks from 1), so a
    record both queries found comes first. The original list's best ``ceil(k / 2)``
    records are always kept, whatever the rewrite found: a bad rewrite can take at
    most half the places. Ties keep the original's order, then the rewrite's. The
    distances are fused ones (``DistanceKind.FUSED``, ``1 - score / best possible``,
    0 for first in both lists), so they ascend with the order; when one list is
    empty the other comes back as it is (cut to ``k``).

    Args:
        original: ``(record, distance)`` pairs of the original query.
        rewritten: The same for the rewritten query.
        k: Most results (>= 1).
    """
    if not original or not rewritten:
        return list(original or rewritten)[:k]
    score: dict[tuple[str, str], float] = {}
    records: dict[tuple[str, str], Record] = {}
    for results in (original, rewritten):
        for rank, (record, _) in enumerate(results, start=1):
            key = (record.record_type, record.id)
            score[key] = score.get(key, 0.0) + 1.0 / (FUSION_K + rank)
            records.setdefault(key, record)
    order = {key: n for n, key in enumerate(records)}
    ranked = sorted(records, key=lambda key: (-score[key], order[key]))
    kept = {(r.record_type, r.id) for r, _ in original[: math.ceil(k / 2)]}
    for key in ranked:
        if len(kept) >= k:
            break
        kept.add(key)
    return [
        (records[key], Distance.of(rrf_distance(score[key], 2, FUSION_K), DistanceKind.FUSED))
        for key in ranked
        if key in kept
    ]


def card_relevant_steps(
    store: OracleMemoryStore,
    query: str,
    k: int,
    shown: set[str],
    scope: tuple[str, str | None, str | None],
    llm: ILlm | None,
) -> Steps[list[tuple[Record, float]]]:
    """The context card's relevant information (``relevant_steps``), with the
    rewritten query's fused in when ``llm`` is given (docs/context-card.md#query-rewriting).

    With ``llm``: the thread's last ``REWRITE_MESSAGES`` messages are read, the LLM
    writes a query (``rewrite_query_steps``), and unless it failed or repeats
    ``query``, both queries' results are fused (``fuse_results``). A failed rewrite
    warns and gives the original query's results as they are.

    Args:
        store: The thread's store.
        query: The card's own search text.
        k: Most results, >= 1.
        shown: Ids of messages the card already shows.
        scope: ``(thread_id, user_id, agent_id)`` of the thread.
        llm: The (time-bounded) LLM that rewrites, or None: no rewriting.
    """
    rewritten: str | None = None
    if llm is not None:
        last: list[MessageRecord] = yield from call(
            store.list_thread_messages, scope[0], start=-REWRITE_MESSAGES, end=None
        )
        rewritten = yield from rewrite_query_steps(llm, rewrite_input(last, query))
    results: list[tuple[Record, float]] = yield from relevant_steps(store, query, k, shown, scope)
    if rewritten is None or rewritten.casefold() == query.strip().casefold():
        return results
    more: list[tuple[Record, float]] = yield from relevant_steps(store, rewritten, k, shown, scope)
    return fuse_results(results, more, k)
