"""What a message is retrieved by (docs/retrieval.md#what-a-message-is-indexed-by; docs/store.md#what-is-stored-and-what-is-searched).

A message is stored as written. It gets two kinds of search rows:

* its own text, prefixed with the speaker's name when the message carries one
  (``metadata["$message"]["name"]``, the chat frameworks' participant ``name``), so
  "What did Caroline paint?" finds the turn Caroline wrote even when the turn never
  says her name, and with the day of its timestamp when it has one
  (``"[8 May 2023] Caroline: ..."``), so a question naming the day or month finds
  it by keyword as well; long messages are cut into chunks as the store would;
* one context row: the ``CONTEXT_MESSAGES`` messages of the thread before it (the
  previous exchange) followed by this one, so a short reply ("Yes, twice last
  year!") is found by the question it answers, and a follow-up ("I've been playing
  for a month now") by the topic raised two turns earlier. The row is added only
  when the message fits one chunk; earlier messages that do not fit beside it are
  left out, oldest first (the nearest one is cut from its start). The row is a
  ``store.quotes.QuotingChunk`` naming the messages it quotes, so deleting, changing
  or expiring one of them deletes (or expires) the row too (docs/store.md).

On LoCoMo (bench/locomo_recall.py) a context row of the previous message lifted
HYBRID recall_all@10 from 0.59 to 0.63 and KEYWORD from 0.55 to 0.62; the previous
two messages lift HYBRID from 0.674 to 0.701. Each message so costs two embeddings
(its own row and its context row). ``DERIVE_CONTEXT_VECTORS`` measures the other
choice: the context row's vector as the length-weighted mean of the own-row vectors
of the messages it quotes (one embedding a message, ``add_messages`` about 2x faster
with the ``local`` embedder), for recall_all@10 0.712 -> 0.705 on the LoCoMo dev set,
more than it may cost; it is off (bench/README.md#context-row-vectors-from-the-own-rows).
With an embedder that reads runs of texts (``LocalEmbedder.embed_runs``), context rows
are pooled from runs of consecutive messages instead (``LATE_CHUNK``,
``memory.latechunk``): about two model passes a message instead of four.
The day prefix lifts HYBRID from 0.633 to 0.658 at no embedding cost
(bench/README.md has the table of steps).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from oam_core.apis.embedder import IEmbedder
from oam_core.apis.thread import MESSAGE_KEY, Message, participant_name
from oam_core.errors import InvalidArgumentError
from oam_core.memory.latechunk import RunEmbedder, plan_runs, run_row_vectors
from oam_core.store.quotes import QuotingChunk
from oam_core.store.temporal import day_label
from oam_core.store.text import chunk_text

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

__all__ = [
    "CONTEXT_MESSAGES",
    "DERIVE_CONTEXT_VECTORS",
    "EMBED_STEP",
    "MESSAGE_KEY",
    "MessageRows",
    "embeds_in_python",
    "labelled_text",
    "message_index_texts",
    "message_rows",
    "own_row_text",
    "speaker_name",
    "store_row_vectors",
]

CONTEXT_MESSAGES = 2
"""How many earlier messages of the thread a message's context row holds: the
previous exchange (in a two-party chat, the other side's turn and the speaker's own
turn before it). One measured 0.674, two 0.701, three 0.683 recall_all@10 on LoCoMo
(bench/README.md): further turns dilute the row."""

EMBED_STEP = 4
"""Messages embedded per embedder call by ``write_thread`` (``MessageRows.vectors``), so
``oam ingest`` and ``oam demo`` move their progress bar between calls: under a second
per step at the 8-40 messages/s measured with the ``local`` embedder under load
(bench/README.md); a step of 8 left one 3 s gap in 33 on the demo conversation."""

LATE_CHUNK = True
"""Whether ``add_messages`` and ``write_thread`` pool message row vectors from runs of
consecutive messages read once (``memory.latechunk``) when the embedder can
(``LocalEmbedder.embed_runs``): about two model passes per message instead of four
(own rows still embedded as text, ``latechunk.POOL_OWN_ROWS``). On the LoCoMo dev set
HYBRID recall_all@10 stays 0.712, the ingest ratio 0.22-0.27 -> 0.46-0.57 (runs of 256
word pieces, alternated rounds); a
context row's vector then depends on how the messages were split into calls
(bench/README.md#late-chunked-message-rows)."""

DERIVE_CONTEXT_VECTORS = False
"""Whether ``add_messages`` and ``write_thread`` vector context rows from the own rows
(one model pass per message) instead of embedding their text (two). Off: on the LoCoMo
dev set it took the ingest ratio from 0.31 to 0.67 but HYBRID recall_all@10 from 0.712
to 0.705 (single-hop 0.913 -> 0.902), more than the 0.005 a speed-up may cost
(bench/README.md#context-row-vectors-from-the-own-rows)."""


def speaker_name(message: Message) -> str | None:
    """The participant name of ``message``, or None."""
    return participant_name(message.metadata)


def labelled_text(message: Message) -> str:
    """``"<name>: <content>"`` when the message names its speaker, else the content;
    ``""`` for a message with blank content."""
    if not message.content.strip():
        return ""
    name = speaker_name(message)
    return f"{name}: {message.content}" if name else message.content


def own_row_text(message: Message) -> str:
    """The text of a message's own search row before chunking: ``labelled_text``,
    prefixed with the day of its timestamp when it has one (``"[8 May 2023] Caroline:
    ..."``); ``""`` for a message with blank content.

    ``add_messages(..., embeddings=...)`` gives it as the message's one retrieval text
    (a string, cut as the store cuts strings), without a context row: the caller's
    vectors are the message's only search rows (docs/retrieval.md#what-a-message-is-indexed-by).
    """
    own = labelled_text(message)
    day = day_label(message.timestamp) if own else None
    return f"[{day}] {own}" if day else own


def message_index_texts(
    messages: Sequence[Message],
    previous: Message | Sequence[Message] | None,
    chunk_chars: int,
) -> list[list[str]]:
    """The search-row texts of each message (caller-owned chunks for ``store.add``).

    Args:
        messages: The new messages, in thread order.
        previous: The messages stored just before ``messages[0]`` in the thread,
            oldest first (only the last ``CONTEXT_MESSAGES`` are read), a single
            message, or None for none.
        chunk_chars: The store's chunk size in characters; no row is longer.

    Returns:
        One list of row texts per message (empty for a blank message).
    """
    return message_rows(messages, previous, chunk_chars).texts


@dataclass(frozen=True)
class MessageRows:
    """The search rows of a run of messages: their texts, and how to vector them.

    Attributes:
        texts: One list of row texts per message, as ``message_index_texts`` returns:
            the own chunks, then the context row when there is one.
        pieces: Per message, the parts of its context row in order (empty when it
            has none): ``(text, index)`` with ``index`` the position in ``messages``
            of the message whose own one-chunk row holds exactly ``text`` (without
            the day prefix), or None for a part that is cut or from ``previous``.
    """

    texts: list[list[str]]
    pieces: list[list[tuple[str, int | None]]]
    labels: list[str] = field(default_factory=list)

    def vectors(
        self,
        embed: Callable[[list[str]], npt.NDArray[np.float32]],
        *,
        on_progress: Callable[[int], None] | None = None,
        step: int = EMBED_STEP,
        derive_context: bool = True,
    ) -> list[npt.NDArray[np.float32]]:
        """The vector of every row, with one model pass per own row only
        (docs/store.md#search-rows-that-quote-other-messages).

        Own rows are embedded; a context row's vector is the mean of the unit vectors
        of its parts weighted by the square root of their length in characters,
        L2-normalised (on LoCoMo, square-root weights kept recall where plain length
        or equal weights lost some; bench/README.md): the own row's vector for each
        message of this run it quotes whole, and one embedding of the quoted text for
        a part from ``previous`` or cut to fit.

        Args:
            embed: Embeds a list of texts into a float32 ``(n, dim)`` array of unit rows.
            on_progress: Called with the number of messages done after each call of
                ``embed`` (``step`` messages at a time).
            step: Messages per ``embed`` call (positive).
            derive_context: False to embed each context row's text instead (two
                model passes per message, as before; recall_all@10 0.712 against
                0.705 on the LoCoMo dev set, bench/README.md).

        Raises:
            InvalidArgumentError: if ``step`` is not a positive int.

        Returns:
            Per message a float32 array ``(len(texts[i]), dim)``, rows in the order of
            ``texts[i]``.
        """
        if isinstance(step, bool) or not isinstance(step, int) or step < 1:
            raise InvalidArgumentError(f"step must be a positive int, got {step!r}")
        n = len(self.texts)
        own: dict[int, npt.NDArray[np.float32]] = {}
        out: list[npt.NDArray[np.float32]] = []
        for start in range(0, n, step):
            batch = range(start, min(n, start + step))
            todo: dict[str, int] = {}
            for i in batch:
                for text in self._own_texts(i) if derive_context else self.texts[i]:
                    todo.setdefault(text, len(todo))
                for text, index in self.pieces[i] if derive_context else ():
                    if index is None:
                        todo.setdefault(text, len(todo))
            vectors = embed(list(todo)) if todo else np.zeros((0, 0), dtype=np.float32)
            for i in batch:
                rows = [vectors[todo[t]] for t in self._own_texts(i)]
                if len(rows) == 1:
                    own[i] = rows[0]
                if self.pieces[i] and not derive_context:
                    rows.append(vectors[todo[self.texts[i][-1]]])
                elif self.pieces[i]:
                    total = sum(
                        len(t) ** 0.5 * (own[k] if k is not None else vectors[todo[t]])
                        for t, k in self.pieces[i]
                    )
                    norm = max(float(np.linalg.norm(total)), 1e-12)
                    rows.append(np.asarray(total / norm, dtype=np.float32))
                out.append(
                    np.stack(rows).astype(np.float32)
                    if rows
                    else np.zeros((0, vectors.shape[1] if vectors.size else 0), np.float32)
                )
            if on_progress is not None:
                on_progress(len(batch))
        return out

    def _own_texts(self, i: int) -> list[str]:
        """The own (embedded) rows of message ``i``: all but its context row."""
        texts = self.texts[i]
        return texts[:-1] if self.pieces[i] else texts


def message_rows(
    messages: Sequence[Message],
    previous: Message | Sequence[Message] | None,
    chunk_chars: int,
) -> MessageRows:
    """The search rows of ``messages`` (arguments as ``message_index_texts``), with
    what ``MessageRows.vectors`` needs to vector the context rows without embedding
    them."""
    if previous is None:
        earlier: list[Message] = []
    elif isinstance(previous, Message):
        earlier = [previous]
    else:
        earlier = list(previous)
    # (text, message id, position in ``messages`` or None)
    history: list[tuple[str, str | None, int | None]] = [
        (labelled_text(m), m.id, None) for m in earlier[-CONTEXT_MESSAGES:]
    ]
    rows: list[list[str]] = []
    pieces: list[list[tuple[str, int | None]]] = []
    labels: list[str] = []
    for position, message in enumerate(messages):
        own = labelled_text(message)
        labels.append(own)
        chunks: list[str] = chunk_text(own_row_text(message), chunk_chars)
        parts: list[tuple[str, int | None]] = []
        if own and len(chunks) == 1:
            context = _context(history[-CONTEXT_MESSAGES:], chunk_chars - len(own))
            if context:
                text = "\n".join([*(t for t, _, _ in context), own])
                chunks.append(QuotingChunk(text, [i for _, i, _ in context if i is not None]))
                parts = [(t, k) for t, _, k in context] + [(own, position)]
        rows.append(chunks)
        pieces.append(parts)
        whole = own and len(chunks) - (1 if parts else 0) == 1
        history.append((own, message.id, position if whole else None))
    return MessageRows(rows, pieces, labels)


def _context(
    texts: Sequence[tuple[str, str | None, int | None]], room: int
) -> list[tuple[str, str | None, int | None]]:
    """The ``(text, message id, position)`` triples of non-blank ``texts`` that fit in
    ``room`` characters, each costing its length plus a newline, newest kept first;
    when not even the newest fits whole, its last chunk of ``room - 1`` characters
    (with position None: the text is no longer the message's own)."""
    kept: list[tuple[str, str | None, int | None]] = []
    for text, message_id, position in reversed([t for t in texts if t[0]]):
        if len(text) + 1 <= room:
            kept.insert(0, (text, message_id, position))
            room -= len(text) + 1
        else:
            if not kept and room > 1:
                kept = [(chunk_text(text, room - 1)[-1], message_id, None)]
            break
    return kept


def embeds_in_python(store: OracleMemoryStore) -> bool:
    """Whether ``store`` vectors its rows with its own ``embedder`` here (not in the
    database, and not text-only), so ``MessageRows.vectors`` can vector them."""
    return store.embedder is not None and store.runtime.backend.local_vectors


def store_row_vectors(
    store: OracleMemoryStore,
    rows: MessageRows,
    on_progress: Callable[[int], None] | None = None,
) -> list[npt.NDArray[np.float32]]:
    """``rows.vectors`` with the store's embedder (``embeds_in_python`` must hold):
    the calls the store itself would make, identity probe included. Without
    ``on_progress``, one embedder call for all the rows; with it, one per
    ``EMBED_STEP`` messages."""

    def embed(texts: list[str]) -> npt.NDArray[np.float32]:
        return np.asarray(store.runtime.embed(texts, is_query=False), dtype=np.float32)

    if LATE_CHUNK and isinstance(store.embedder, RunEmbedder) and rows.labels:
        return late_row_vectors(store, rows, on_progress)
    derive = DERIVE_CONTEXT_VECTORS
    if on_progress is None:
        return rows.vectors(embed, step=max(1, len(rows.texts)), derive_context=derive)
    return rows.vectors(embed, on_progress=on_progress, derive_context=derive)


def late_row_vectors(
    store: OracleMemoryStore,
    rows: MessageRows,
    on_progress: Callable[[int], None] | None = None,
) -> list[npt.NDArray[np.float32]]:
    """The row vectors of ``rows`` pooled from runs of messages
    (``latechunk.plan_runs``); the identity probe goes through the store's embedder
    call once per store object."""
    embedder = store.embedder
    assert isinstance(embedder, IEmbedder) and isinstance(embedder, RunEmbedder)

    def embed(texts: list[str]) -> npt.NDArray[np.float32]:
        return np.asarray(store.runtime.embed(texts, is_query=False), dtype=np.float32)

    if not store.runtime.identity.verified:
        probe = next((t[0] for t in rows.texts if t), None)
        if probe is not None:
            embed([probe])
    plan = plan_runs(rows.texts, rows.pieces, rows.labels, embedder.count_tokens)
    dim = store.runtime.vector_dim or embedder.embedding_dimension
    return run_row_vectors(
        rows.texts, plan, embedder, embed, dim, on_progress=on_progress, step=EMBED_STEP
    )
