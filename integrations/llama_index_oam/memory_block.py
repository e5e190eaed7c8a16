"""``OAMMemoryBlock``: long-term memory for LlamaIndex's ``Memory`` from ``oam`` threads.

``Memory`` flushes messages out of its short-term queue into its blocks and asks each
block for text to insert into the prompt. This block keeps one ``oam`` thread per
``Memory`` session (the session id is the thread id, docs/llama_index.md#chat-store-and-memory-block): flushed messages are
appended to it with ``add_messages`` (extraction runs there when the client has an
LLM), and the prompt text is the thread's context card (docs/context-card.md), with the memories
most relevant to the latest user input put first.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import escape

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.storage.chat_store.base_db import MessageStatus

from llama_index_oam._util import (
    as_client,
    check_key,
    check_row_owner,
    check_scope_id,
    thread_for,
)
from llama_index_oam.messages import SESSION_KWARG, STATUS_KEY, to_chat_message, to_oam_message
from oam_core import (
    OracleAgentMemory,
    OracleContextCard,
    OracleMemoryStore,
    OracleThread,
    Record,
    SearchStrategy,
)
from oam_core.apis.records import MEMORY_TYPES
from oam_core.steps import in_worker_thread

CHARS_PER_PROMPT_TOKEN = 4.0
"""Characters assumed per token of ``Memory``'s tokenizer when turning its
``tokens_to_truncate`` into characters (a little more than the store's 3.5, docs/store.md#defaults, so a
truncation removes at least what was asked)."""
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
    * ``atruncate``: re-renders the card within a smaller token limit (texts are
      shortened fairly with a ``(truncated)`` marker, docs/context-card.md#what-goes-in) instead of dropping
      the block, keeping the memories longest and whole: the recent messages go
      first, then the summary, then the message hits, then the lowest-ranked
      memories (``Memory`` holds the transcript itself); None only when nothing
      fits. Nothing stored is changed (docs/llama_index.md).

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

    _memory: OracleAgentMemory = PrivateAttr()
    _cards: OrderedDict[str, OracleContextCard] = PrivateAttr(default_factory=OrderedDict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

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
        **kwargs: Any,
    ) -> None:
        client = as_client(memory)
        for option, value in (
            ("fallback_message_count", fallback_message_count),
            ("max_relevant_results", max_relevant_results),
            ("max_recent_messages", max_recent_messages),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{option} must be an int >= 0, got {value!r}")
        fields: dict[str, Any] = {
            "name": name,
            "priority": priority,
            "user_id": check_scope_id("user_id", user_id),
            "agent_id": check_scope_id("agent_id", agent_id),
            "fallback_message_count": fallback_message_count,
            "max_relevant_results": max_relevant_results,
            "max_recent_messages": max_recent_messages,
        }
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
                raise ValueError(
                    "OAMMemoryBlock needs the session of every message: call "
                    f"aput(messages, session_id=...); got {session!r}"
                )
            sessions.setdefault(session, []).append(message)
        for session, batch in sessions.items():
            await in_worker_thread(self._append, session, batch)

    def _append(self, session: str, messages: Sequence[ChatMessage]) -> None:
        thread = thread_for(self._memory, session, self.user_id, self.agent_id)
        if self._already_stored(session, messages):
            return
        thread.add_messages([to_oam_message(m) for m in messages])

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
        check_key("session_id", session)
        latest = _latest_user_text(messages or [])
        return await in_worker_thread(self._card_text, session, latest)

    def _card_text(self, session: str, latest: str | None) -> str:
        if not check_row_owner(self._memory, session, self.user_id, self.agent_id):
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
                self._cards[text] = card
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
        """The card ``content`` re-rendered about ``tokens_to_truncate`` tokens shorter.

        Returns:
            The shorter, still well-formed card; None when nothing fits, or when
            ``content`` is not a card this block rendered recently.
        """
        if tokens_to_truncate <= 0:
            return content
        with self._lock:
            card = self._cards.get(content)
        if card is None:
            return None
        chars = len(content) - math.ceil(tokens_to_truncate * CHARS_PER_PROMPT_TOKEN)
        limit = math.floor(chars / 3.5)
        if limit < 1:
            return None
        return _shorter_card(card, limit) or None


def _shorter_card(card: OracleContextCard, limit: int) -> str:
    """``card`` rendered within ``limit`` tokens, keeping what only this block adds.

    ``Memory`` keeps the transcript in its own chat history, so the parts go in this
    order, each only when the card does not fit without it: the recent messages, the
    summary (without an LLM, the fallback transcript), the message hits from the
    lowest-ranked up, and last the memories (every record that is not a message),
    lowest-ranked first. The first rendering that fits and shows each memory it holds
    in full wins; when not even the best memory fits whole, it is shortened with a
    ``(truncated)`` marker. Returns ``""`` when nothing fits.
    """
    ranked = card.relevant_results
    memories = [pair for pair in ranked if _is_memory(pair[0])]
    hits = [pair for pair in ranked if not _is_memory(pair[0])]

    def render(
        summary: str,
        messages: Sequence[Any],
        kept: Sequence[tuple[Record, float | None]],
    ) -> str:
        chosen = {id(pair) for pair in kept}
        return OracleContextCard(
            summary=summary,
            topics=card.topics,
            relevant_results=_results([pair for pair in ranked if id(pair) in chosen]),
            recent_messages=messages,
            token_limit=limit,
        ).content

    stages: list[tuple[str, Sequence[Any], list[tuple[Record, float | None]]]] = [
        (card.summary, card.recent_messages, [*memories, *hits]),
        (card.summary, [], [*memories, *hits]),
    ]
    stages += [("", [], [*memories, *hits[:n]]) for n in range(len(hits), -1, -1)]
    stages += [("", [], memories[:n]) for n in range(len(memories) - 1, 0, -1)]
    for summary, messages, kept in stages:
        text = render(summary, messages, kept)
        if text and all(_shown_whole(record, text) for record, _ in kept if _is_memory(record)):
            return text
    return render("", [], memories[:1] or hits[:1])


def _is_memory(record: Record) -> bool:
    return record.record_type != "message"


def _shown_whole(record: Record, text: str) -> bool:
    """Whether the card ``text`` shows ``record`` with its whole content."""
    item = f"<record_id>{escape(record.id)}</record_id>"
    return item in text and f"<content>{escape(record.content or '')}</content>" in text


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


__all__ = ["CHARS_PER_PROMPT_TOKEN", "OAMMemoryBlock"]
