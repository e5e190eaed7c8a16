"""``OAMMemoryBlock``: long-term memory for LlamaIndex's ``Memory`` from ``oam`` threads.

``Memory`` flushes messages out of its short-term queue into its blocks and asks each
block for text to insert into the prompt. This block keeps one ``oam`` thread per
``Memory`` session (the session id is the thread id, docs/llama_index.md#chat-store-and-memory-block): flushed messages are
appended to it with ``add_messages`` (extraction runs there when the client has an
LLM), and the prompt text is the thread's context card (docs/context-card.md), with the memories
most relevant to the latest user input put first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any
from xml.sax.saxutils import escape

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.storage.chat_store.base_db import MessageStatus
from llama_index.core.utils import get_tokenizer

from llama_index_oam._util import (
    as_client,
    check_row_owner,
    thread_for,
)
from llama_index_oam.messages import SESSION_KWARG, STATUS_KEY, to_chat_message, to_oam_message
from oam_core import (
    Message,
    OracleAgentMemory,
    OracleContextCard,
    OracleMemoryStore,
    OracleThread,
    Record,
    SearchStrategy,
)
from oam_core.apis.records import MEMORY_TYPES
from oam_core.checks import check_int, check_nonblank, check_scope
from oam_core.errors import InvalidArgumentError
from oam_core.memory.messages import prepare_messages
from oam_core.steps import in_worker_thread

_CARD_CACHE = 64


class OAMMemoryBlock(BaseMemoryBlock[str]):
    """A ``Memory`` block backed by ``oam`` threads (one per session).

    * ``aput`` (on flush): appends the messages to the session's thread, creating it
      in the scope ``user_id``/``agent_id`` if needed. Messages that an
      ``OAMDBChatStore`` already stored in that thread (they are its latest archived
      messages) are not appended again.
    * ``aget``: the thread's context card (``""`` before the session has a thread).
      When the messages passed in end with a user message, memories of the thread's
      user and agent that match its text are put first in the card's relevant
      information (at most ``max_relevant_results`` in all).
    * ``atruncate``: re-renders the card ``tokens_to_truncate`` tokens shorter,
      counted with ``tokenizer_fn`` (the tokenizer ``Memory`` counts with), instead
      of dropping the block. Parts are dropped one at a time until the card fits:
      the recent messages, then the summary, then the message hits, then the
      memories, each kind lowest-ranked first (``Memory`` holds the transcript
      itself), so the best memories stay longest and whole; only when not even the
      best memory fits alone is its text shortened with a ``(truncated)`` marker
      (docs/context-card.md#what-goes-in). None only when nothing fits. Nothing
      stored is changed (docs/llama_index.md#chat-store-and-memory-block).

    The block keeps no per-session state: one instance serves any number of sessions.

    Args:
        memory: The ``OracleAgentMemory`` holding the threads (a bare
            ``OracleMemoryStore`` is wrapped in a client without LLM or extraction).
        name: The block's name in ``Memory``'s template.
        priority: ``Memory``'s truncation priority (0: never truncated).
        user_id: User of the threads this block creates.
        agent_id: Agent of the threads this block creates.
        fallback_message_count: ``get_context_card`` option (docs/context-card.md#what-goes-in).
        max_relevant_results: ``get_context_card`` option.
        max_recent_messages: ``get_context_card`` option.
        tokenizer_fn: ``str -> list`` tokenizer whose list length is a text's token
            count, as ``Memory(tokenizer_fn=...)`` takes it; give ``Memory``'s when it
            has a custom one (default: LlamaIndex's global tokenizer,
            ``llama_index.core.utils.get_tokenizer()``, which ``Memory`` also uses
            by default).
        **kwargs: Other ``BaseMemoryBlock`` fields (``description``,
            ``accept_short_term_memory``).

    Raises:
        ValueError: for a ``memory`` that is neither an ``OracleAgentMemory`` nor an
            ``OracleMemoryStore``, a blank scope id, or a negative or non-int card
            option.
    """

    user_id: str | None = None
    agent_id: str | None = None
    fallback_message_count: int = 5
    max_relevant_results: int = 5
    max_recent_messages: int = 0
    tokenizer_fn: Callable[[str], list[Any]] = Field(
        default_factory=get_tokenizer,
        exclude=True,
        description="The tokenizer that counts the card's tokens (Memory's).",
    )

    _memory: OracleAgentMemory = PrivateAttr()
    _cards: OrderedDict[str, tuple[OracleContextCard, int]] = PrivateAttr(
        default_factory=OrderedDict
    )
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _known: set[str] = PrivateAttr(default_factory=set)  # sessions seen (``thread_for``)

    def __init__(
        self,
        memory: OracleAgentMemory | OracleMemoryStore,
        *,
        name: str = "oam_memory",
        priority: int = 0,
        user_id: str | None = None,
        agent_id: str | None = None,
        fallback_message_count: int = 5,
        max_relevant_results: int = 5,
        max_recent_messages: int = 0,
        tokenizer_fn: Callable[[str], list[Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        client = as_client(memory)
        for option, value in (
            ("fallback_message_count", fallback_message_count),
            ("max_relevant_results", max_relevant_results),
            ("max_recent_messages", max_recent_messages),
        ):
            check_int(value, option, minimum=0)
        fields: dict[str, Any] = {
            "name": name,
            "priority": priority,
            "user_id": check_scope(user_id, "user_id", kind="a non-blank str"),
            "agent_id": check_scope(agent_id, "agent_id", kind="a non-blank str"),
            "fallback_message_count": fallback_message_count,
            "max_relevant_results": max_relevant_results,
            "max_recent_messages": max_recent_messages,
        }
        if tokenizer_fn is not None:
            if not callable(tokenizer_fn):
                raise InvalidArgumentError(f"tokenizer_fn must be callable, got {tokenizer_fn!r}")
            fields["tokenizer_fn"] = tokenizer_fn
        super().__init__(**fields, **kwargs)
        self._memory = client

    # -- put ----------------------------------------------------------------------

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Append ``messages`` to their sessions' threads (``Memory`` tags each message
        with its session in ``additional_kwargs["session_id"]``).

        Raises:
            ValueError: for a message without a session id (call ``aput`` with
                ``session_id=``), or as ``create_thread`` (e.g. no LLM while
                extraction is on).
        """
        sessions: dict[str, list[ChatMessage]] = {}
        for message in messages:
            session = message.additional_kwargs.get(SESSION_KWARG)
            if not isinstance(session, str) or not session.strip():
                raise InvalidArgumentError(
                    "OAMMemoryBlock needs the session of every message: call "
                    f"aput(messages, session_id=...); got {session!r}"
                )
            sessions.setdefault(session, []).append(message)
        # Every message of every session is checked before any thread is created.
        prepared = {
            s: prepare_messages(
                [to_oam_message(m, None, i, drop_session=True) for i, m in enumerate(b)]
            )
            for s, b in sessions.items()
        }
        for session, batch in sessions.items():
            await in_worker_thread(self._append, session, batch, prepared[session])

    def _append(
        self, session: str, messages: Sequence[ChatMessage], prepared: Sequence[Message]
    ) -> None:
        thread = thread_for(self._memory, session, self.user_id, self.agent_id, self._known)
        if self._already_stored(session, messages):
            return
        thread.add_messages(list(prepared))

    def _already_stored(self, session: str, messages: Sequence[ChatMessage]) -> bool:
        """True when the session's latest chat-store-archived messages are ``messages``
        (``OAMDBChatStore`` stored them in this thread and ``Memory`` just archived them)."""
        if not messages:
            return True
        tail = self._memory.store.list(
            "message",
            limit=len(messages),
            thread_id=session,
            metadata_filter={STATUS_KEY: MessageStatus.ARCHIVED.value},
        )
        got = [(r.content or "", to_chat_message(r).role) for r in tail]
        return got == [(m.content or "", m.role) for m in messages]

    # -- get ----------------------------------------------------------------------

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The session's context card text (``""`` when there is none yet).

        Args:
            messages: ``Memory``'s chat history, plus the pending input as the last
                user message when ``Memory.get(input=...)`` was called.
            **block_kwargs: ``session_id`` (set by ``Memory``).
        """
        session = block_kwargs.get(SESSION_KWARG)
        if session is None:
            return ""
        check_nonblank(session, "session_id")
        latest = _latest_user_text(messages or [])
        return await in_worker_thread(self._card_text, session, latest)

    def _card_text(self, session: str, latest: str | None) -> str:
        if not check_row_owner(self._memory, session, self.user_id, self.agent_id, self._known):
            return ""
        thread = self._memory.get_thread(session)
        card = thread.get_context_card(
            fallback_message_count=self.fallback_message_count,
            max_relevant_results=self.max_relevant_results,
            max_recent_messages=self.max_recent_messages,
        )
        if latest is not None and self.max_relevant_results > 0 and self._can_search():
            card = self._with_input_memories(thread, card, latest)
        text = card.content
        if text:
            with self._lock:
                self._cards[text] = (card, thread.config.context_card_token_limit)
                self._cards.move_to_end(text)
                while len(self._cards) > _CARD_CACHE:
                    self._cards.popitem(last=False)
        return text

    def _can_search(self) -> bool:
        store = self._memory.store
        return store.search_strategy is SearchStrategy.KEYWORD or store.embedder is not None

    def _with_input_memories(
        self, thread: OracleThread, card: OracleContextCard, latest: str
    ) -> OracleContextCard:
        found = self._memory.store.search(
            latest,
            k=self.max_relevant_results,
            user_id=thread.user_id,
            agent_id=thread.agent_id,
            exact_user_match=True,
            exact_agent_match=True,
            record_types=set(MEMORY_TYPES),
        )
        merged: dict[str, tuple[Record, float | None]] = {}
        for record, distance in [*found, *card.relevant_results]:
            merged.setdefault(record.id, (record, distance))
        return OracleContextCard(
            summary=card.summary,
            topics=card.topics,
            relevant_results=_results(list(merged.values())[: self.max_relevant_results]),
            recent_messages=card.recent_messages,
            token_limit=thread.config.context_card_token_limit,
        )

    # -- truncate -----------------------------------------------------------------

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """The card ``content`` re-rendered at least ``tokens_to_truncate`` tokens
        shorter, counted with ``tokenizer_fn`` as ``Memory`` counts them.

        Args:
            content: A card this block's ``aget`` returned.
            tokens_to_truncate: How many tokens ``Memory`` needs removed.

        Returns:
            The shorter, still well-formed card (see the class docstring for what
            goes first); None when nothing fits, or when ``content`` is not a card
            this block rendered recently.
        """
        if tokens_to_truncate <= 0:
            return content
        with self._lock:
            cached = self._cards.get(content)
        if cached is None:
            return None
        card, token_limit = cached

        def tokens(text: str) -> int:
            return len(self.tokenizer_fn(text))

        budget = tokens(content) - tokens_to_truncate
        if budget < 1:
            return None
        return await in_worker_thread(_shorter_card, card, token_limit, budget, tokens) or None


def _shorter_card(
    card: OracleContextCard, token_limit: int, budget: int, tokens: Callable[[str], int]
) -> str:
    """``card`` rendered within ``budget`` tokens (counted by ``tokens``), keeping what
    only this block adds.

    ``Memory`` keeps the transcript in its own chat history, so parts are dropped one
    at a time, each only when the card does not fit without it: the recent messages,
    the summary (without an LLM, the fallback transcript), the message hits from the
    lowest-ranked up, and last the memories (every record that is not a message),
    lowest-ranked first. Each selection is rendered at the largest card token limit
    (at most the card's own) whose text fits, so long texts are shortened fairly
    (docs/context-card.md#what-goes-in); the first selection that fits and shows each
    memory it holds as the full card showed it wins. When not even the best memory
    fits alone that way, it is kept shortened with a ``(truncated)`` marker. Returns
    ``""`` when nothing fits.
    """
    ranked = card.relevant_results
    memories = [pair for pair in ranked if _is_memory(pair[0])]
    hits = [pair for pair in ranked if not _is_memory(pair[0])]
    full = card.content
    top = token_limit if token_limit > 0 else max(1, len(full))

    def fitted(
        summary: str, messages: Sequence[Any], kept: Sequence[tuple[Record, float | None]]
    ) -> str:
        chosen = {id(pair) for pair in kept}
        results = _results([pair for pair in ranked if id(pair) in chosen])

        def render(limit: int) -> str:
            return OracleContextCard(
                summary=summary,
                topics=card.topics,
                relevant_results=results,
                recent_messages=messages,
                token_limit=limit,
            ).content

        def fits(text: str) -> bool:
            return bool(text) and tokens(text) <= budget

        text = render(top)
        if fits(text):
            return text
        # The largest limit below ``top`` whose rendering fits (renderings grow with it).
        low, high, best = 1, top - 1, ""
        while low <= high:
            middle = (low + high) // 2
            text = render(middle)
            if fits(text):
                best, low = text, middle + 1
            else:
                high = middle - 1
        return best

    stages: list[tuple[str, Sequence[Any], list[tuple[Record, float | None]]]] = [
        (card.summary, card.recent_messages, [*memories, *hits]),
        (card.summary, [], [*memories, *hits]),
    ]
    stages += [("", [], [*memories, *hits[:n]]) for n in range(len(hits), -1, -1)]
    stages += [("", [], memories[:n]) for n in range(len(memories) - 1, 0, -1)]
    for summary, messages, kept in stages:
        text = fitted(summary, messages, kept)
        if text and all(
            _shown_as_in(record, text, full) for record, _ in kept if _is_memory(record)
        ):
            return text
    return fitted("", [], memories[:1] or hits[:1])


def _is_memory(record: Record) -> bool:
    return record.record_type != "message"


def _shown_as_in(record: Record, text: str, full: str) -> bool:
    """Whether the card ``text`` shows ``record``'s content as the card ``full`` did
    (whole, or shortened by the card's own token limit alike)."""
    return _shown_content(record, text) == _shown_content(record, full) is not None


def _shown_content(record: Record, text: str) -> str | None:
    """The ``<content>`` text a card shows for ``record`` (None: not shown)."""
    start = text.find(f"<record_id>{escape(record.id)}</record_id>")
    if start < 0:
        return None
    opened = text.find("<content>", start)
    closed = text.find("</content>", opened)
    return text[opened:closed] if 0 <= opened < closed else None


def _results(
    pairs: Sequence[tuple[Record, float | None]],
) -> list[Record | tuple[Record, float]]:
    """Card results as ``OracleContextCard`` takes them (a bare record: no distance)."""
    return [record if distance is None else (record, distance) for record, distance in pairs]


def _latest_user_text(messages: Sequence[ChatMessage]) -> str | None:
    if not messages:
        return None
    last = messages[-1]
    if str(getattr(last.role, "value", last.role)) != "user":
        return None
    text = last.content or ""
    return text if text.strip() else None


__all__ = ["OAMMemoryBlock"]
