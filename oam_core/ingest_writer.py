"""Write loaded conversations through a client: one thread per conversation, each in
one transaction (``OracleAgentMemory.write_thread``, which gives the messages the
search rows a thread would: speaker names, context rows). ``oam ingest`` and
``oam demo`` use it (docs/cli.md#input-files).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from oam_core import OracleAgentMemory
from oam_core.apis.records import check_metadata
from oam_core.apis.thread import to_message
from oam_core.ingest import Conversation, IngestError

__all__ = ["WriteMode", "plural", "validate_conversations", "write_conversations"]

WriteMode = Literal["new", "replace", "resume"]
"""What happens to a thread that is in the store already (see ``write_conversations``)."""


def plural(n: int, word: str) -> str:
    """``"1 message"``, ``"2 messages"``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _where(conversation: Conversation, index: int, source: Path | None) -> str:
    if index < len(conversation.locations):
        return conversation.locations[index]
    prefix = f"{source}: " if source is not None else ""
    return f"{prefix}thread {conversation.thread_id!r} message [{index}]"


def validate_conversations(conversations: Sequence[Conversation], source: Path | None) -> None:
    """Check every message the way the store will, before anything is written (the
    CLI calls it before it opens or creates the store; ``write_conversations`` calls
    it again for other callers).

    Args:
        conversations: From ``load_conversations``.
        source: The file they came from, named in errors (None: none).

    Raises:
        IngestError: naming the line (or thread and index) and the rule broken: a bad
            role, timestamp, metadata or text (docs/cli.md#input-files).
    """
    for conversation in conversations:
        for index, message in enumerate(conversation.messages):
            try:
                checked = to_message(message)
                check_metadata(checked.metadata)
                for text in (checked.role, checked.content, checked.timestamp, checked.id):
                    if text is not None:
                        text.encode("utf-8")
            except (ValueError, TypeError) as exc:
                raise IngestError(f"{_where(conversation, index, source)}: {exc}") from None


def write_conversations(
    memory: OracleAgentMemory,
    conversations: Sequence[Conversation],
    *,
    mode: WriteMode = "new",
    source: Path | None = None,
    on_progress: Callable[[str, int], None] | None = None,
) -> tuple[int, int]:
    """Write each conversation as one thread, each in one transaction.

    Args:
        memory: The client whose store is written.
        conversations: From ``load_conversations``, with their user and agent ids.
        mode: ``"new"`` (an existing thread is an error), ``"replace"`` (replaced,
            old and new in one transaction) or ``"resume"`` (threads already stored
            whole are skipped).
        source: The file, named in error messages.
        on_progress: Called with ``(thread id, message count)`` as messages are done:
            while a thread's messages are embedded (every ``indexing.EMBED_STEP``
            messages), and for the rest of the thread once it is written or skipped;
            the counts of one thread add up to its message count.

    Returns:
        ``(messages written, threads skipped)``.

    Raises:
        IngestError: for an invalid message (nothing is written), a thread that exists
            (``new``), exists with other messages (``resume``) or belongs to another
            user (``replace``, ``resume``; nothing is written), or a failed write
            (the threads before it are stored; ``resume`` continues).
    """
    validate_conversations(conversations, source)
    stored = _check_clashes(memory, conversations, mode)
    written = skipped = 0
    for done, conversation in enumerate(conversations):
        count = len(conversation.messages)
        reported = 0
        if mode == "resume" and conversation.thread_id in stored:
            skipped += 1
        else:
            reported = _write_thread(memory, conversation, mode, done, source, on_progress)
            written += count
        if on_progress is not None and count > reported:
            on_progress(conversation.thread_id, count - reported)
    return written, skipped


def _check_clashes(
    memory: OracleAgentMemory, conversations: Sequence[Conversation], mode: WriteMode
) -> set[str]:
    """The ids of the threads already stored, once ``mode`` allows each clash: none
    for ``new``, only the same user's threads for ``replace`` and ``resume``, and for
    ``resume`` only threads stored whole.

    Raises:
        IngestError: naming the thread and the option that would write it.
    """
    existing = {row.thread_id: row for row in memory.list_threads()}
    clashes = [c for c in conversations if c.thread_id in existing]
    for conversation in clashes if mode != "new" else ():
        owner = existing[conversation.thread_id].user_id
        if owner != conversation.user_id:
            flag = "--replace" if mode == "replace" else "--resume"
            raise IngestError(
                f"thread {conversation.thread_id!r} belongs to user {owner!r}, not "
                f"{conversation.user_id!r}; {flag} does not take over another user's "
                "thread (pass --user with its owner, or use another thread id)"
            )
    if clashes and mode == "new":
        ids = [c.thread_id for c in clashes]
        shown = ", ".join(ids[:3]) + (" ..." if len(ids) > 3 else "")
        raise IngestError(
            f"thread(s) already in the database: {shown}; use --resume to skip them or "
            "--replace to overwrite them"
        )
    if mode == "resume":
        for conversation in clashes:
            stored = memory.store.count_thread_messages(conversation.thread_id)
            if stored != len(conversation.messages):
                raise IngestError(
                    f"thread {conversation.thread_id!r} is in the database with "
                    f"{plural(stored, 'message')}, the file has "
                    f"{len(conversation.messages)}; use --replace to overwrite it"
                )
    return set(existing)


def _write_thread(
    memory: OracleAgentMemory,
    conversation: Conversation,
    mode: WriteMode,
    done: int,
    source: Path | None,
    on_progress: Callable[[str, int], None] | None,
) -> int:
    """Write one conversation as a thread in one transaction (``done`` threads are
    written before it); returns how many messages ``on_progress`` was told of.

    Raises:
        IngestError: wrapping the failure, naming the thread and, after the first
            thread, that ``--resume`` continues.
    """
    reported = 0

    def embedded(messages: int) -> None:
        nonlocal reported
        reported += messages
        if on_progress is not None:
            on_progress(conversation.thread_id, messages)

    try:
        memory.write_thread(
            conversation.thread_id,
            conversation.messages,
            user_id=conversation.user_id,
            agent_id=conversation.agent_id,
            replace=mode == "replace",
            on_progress=embedded,
        )
    except Exception as exc:
        before = (
            ""
            if done == 0
            else f"; the {plural(done, 'thread')} before it are stored (--resume continues)"
        )
        where = f"{source}: " if source is not None else ""
        raise IngestError(
            f"{where}thread {conversation.thread_id!r} was not written: "
            f"{exc or type(exc).__name__}{before}"
        ) from exc
    return reported
