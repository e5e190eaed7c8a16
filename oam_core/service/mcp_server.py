"""``oam mcp``: a Model Context Protocol server over one store, fixed to one scope
(docs/service.md).

Built on the official MCP Python SDK (``mcp``, the ``mcp`` extra). Tools are plain
functions with typed, described arguments; the SDK validates arguments against their
JSON schema and runs each call in a worker thread, so the client's synchronous API
is used as is. The scope (``--user``/``--agent``) is fixed when the server starts:
every query is filtered by it in the store, every id a client names is checked
against it, and nothing a client passes can widen it.

Errors a client can cause (bad arguments, unknown or foreign ids, invalid filters)
come back as MCP tool errors carrying the library's message; failures of the
server's side carry their class and a safe message, the details go to the log
(``oam.service.mcp``). The server keeps serving.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import Field

from oam_core import OracleAgentMemory, OracleMemoryStore, OracleThread, SearchStrategy
from oam_core import __version__ as oam_version
from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.records import Record, ThreadRow
from oam_core.apis.thread import Message
from oam_core.errors import InvalidArgumentError
from oam_core.memory.messages import check_memory_content, prepare_messages
from oam_core.memory.newest import newest_first
from oam_core.service.common import (
    DEFAULT_MAX_CONTENT_CHARS,
    DEFAULT_MAX_QUERY_CHARS,
    MEMORY_TYPE_NAMES,
    open_thread,
    record_json,
    score_kind,
    search_strategy_for,
    thread_json,
)
from oam_core.service.mcp_errors import client_errors, error_text, pipeline_warnings
from oam_core.service.mcp_models import (
    PREVIEW_CHARS,
    AddMessagesOut,
    DeleteOut,
    InvalidateOut,
    MemoryType,
    MessageIn,
    RecordOut,
    SavedMemoryOut,
    SearchType,
    ThreadOut,
    UpdateOut,
)
from oam_core.service.scope import Scope, ScopeError

__all__ = [
    "DEFAULT_MAX_CONTENT_CHARS",
    "DEFAULT_MAX_QUERY_CHARS",
    "TOOL_NAMES",
    "Limits",
    "MessageIn",
    "build_server",
]

TOOL_NAMES = (
    "add_messages",
    "add_memory",
    "search_memories",
    "get_context_card",
    "get_messages",
    "list_memories",
    "list_threads",
    "delete_memory",
    "memory_history",
    "update_memory",
    "invalidate_memory",
)
"""The tools every ``oam mcp`` server offers, in the order they are listed."""


@dataclass(frozen=True)
class Limits:
    """What one call may carry: checked before anything is embedded or written, so
    a huge argument costs neither CPU nor memory in the store (docs/service.md).

    Attributes:
        max_content_chars: Most characters of one message or memory, of all the
            messages of one ``add_messages`` call, and of a metadata object or filter
            as JSON.
        max_query_chars: Most characters of a ``search_memories`` query.

    Raises:
        InvalidArgumentError: when a limit is not a whole number >= 1.
    """

    max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS
    max_query_chars: int = DEFAULT_MAX_QUERY_CHARS

    def __post_init__(self) -> None:
        for name in ("max_content_chars", "max_query_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"{name} must be a whole number >= 1, got {value!r}")

    def check(self, name: str, size: int, limit: int, flag: str) -> None:
        """Refuse ``size`` characters of argument ``name`` over ``limit``.

        Raises:
            InvalidArgumentError: naming the argument, its size, the limit and the
                ``oam mcp`` flag that sets it.
        """
        if size > limit:
            raise InvalidArgumentError(
                f"{name} is {size:,} characters; this server takes at most {limit:,} "
                f"(oam mcp {flag}); split it or shorten it"
            )

    def content(self, name: str, text: str) -> None:
        """Refuse a message or memory text over ``max_content_chars``."""
        self.check(name, len(text), self.max_content_chars, "--max-content-chars")

    def json(self, name: str, value: object) -> None:
        """Refuse a metadata object or filter whose JSON is over ``max_content_chars``."""
        if value is not None:
            size = len(json.dumps(value, ensure_ascii=False, default=str))
            self.check(name, size, self.max_content_chars, "--max-content-chars")

    def query(self, text: str) -> None:
        """Refuse a query over ``max_query_chars``."""
        self.check("query", len(text), self.max_query_chars, "--max-query-chars")


def _record_out(
    record: Record, distance: float | None = None, kind: str | None = None
) -> RecordOut:
    return RecordOut.model_validate(record_json(record, distance, kind))


class _Service:
    """The operations behind the tools and resources, over one client and scope."""

    def __init__(
        self, memory: OracleAgentMemory, scope: Scope, strategy: SearchStrategy | None
    ) -> None:
        self.memory = memory
        self.store = memory.store
        self.scope = scope
        # Without an embedder (and a strategy given) the tools rank by keywords, and
        # VECTOR or HYBRID is refused here rather than at every search.
        self.strategy = search_strategy_for(self.store, strategy)
        with self.store.searching_with(self.strategy):  # refuse one it cannot serve now
            pass

    @contextmanager
    def calling(self, kind: type[Exception]) -> Iterator[None]:
        """One tool or resource call: the library's errors as ``kind``, searches
        ranked with the server's ``--strategy`` (the store's default is not changed)."""
        with client_errors(kind), self.store.searching_with(self.strategy):
            yield

    # -- threads ------------------------------------------------------------------

    def thread_row(self, thread_id: str) -> ThreadRow:
        return self.scope.thread(self.memory.get_thread_row(thread_id), thread_id)

    def thread(self, thread_id: str | None) -> OracleThread:
        """The thread to write to: an existing one in scope, or (``thread_id`` None) a
        new one with a server-generated id. A client never picks the id of a new
        thread: creating an unknown id but refusing another user's would tell the
        two apart, so both get the same ``ScopeError`` (docs/service.md#the-scope)."""
        if thread_id is None:
            scope_ids: dict[str, Any] = {
                "user_id": NOT_SET if self.scope.user_id is None else self.scope.user_id,
                "agent_id": NOT_SET if self.scope.agent_id is None else self.scope.agent_id,
            }
            return self.memory.create_thread(**scope_ids)
        try:
            self.thread_row(thread_id)
        except ScopeError as exc:
            raise ScopeError(f"{exc}; omit thread_id to start a new thread") from None
        return open_thread(self.memory, thread_id)

    def add_messages(
        self, thread: OracleThread, given: list[Message], extraction: bool
    ) -> AddMessagesOut:
        """Store ``given`` (ids already set) in ``thread``, extracting when the server
        has an LLM. When the messages were stored but the call failed after that (the
        LLM's key or credentials were refused), the result still names the thread and
        the stored ids, ``extraction: "failed"`` with the error: a client that saw a
        bare tool error would retry and store them again (in a new thread when it
        gave none). A pass that warned (``pipeline_warnings``: the LLM was down, its
        reply unusable) and extracted nothing is ``"failed"`` too, with the warnings.
        The watermark stays, so the thread's next pass extracts them."""
        try:
            with pipeline_warnings() as warned:
                ids = thread.add_messages(given)
        except Exception as exc:
            wanted = [m.id for m in given if m.id is not None]
            try:
                stored = [i for i in wanted if self.store.get("message", i) is not None]
            except Exception:  # the store itself fails: report the first error
                stored = []
            if not stored or len(stored) != len(given):
                raise
            return AddMessagesOut(
                thread_id=thread.thread_id,
                message_ids=stored,
                extraction="failed",
                extraction_error=error_text(exc),
                memories=[],
            )
        memories = self.extracted_from(thread.thread_id, ids) if extraction else []
        failed = extraction and bool(warned) and not memories  # warned, extracted nothing
        return AddMessagesOut(
            thread_id=thread.thread_id,
            message_ids=ids,
            extraction="failed" if failed else "ran" if extraction else "off",
            extraction_error="; ".join(warned) if failed else None,
            extraction_warnings=warned,
            memories=[_record_out(r) for r in memories],
        )

    def threads(self, limit: int) -> list[ThreadOut]:
        rows = self.memory.list_threads(**self.scope.filters())[-limit:]
        return [
            ThreadOut.model_validate(
                thread_json(row, self.store.count_thread_messages(row.thread_id))
            )
            for row in rows
        ]

    # -- memories -----------------------------------------------------------------

    def memory_record(self, memory_id: str) -> Record:
        found = None
        for record_type in MEMORY_TYPE_NAMES:
            found = self.store.get(record_type, memory_id)
            if found is not None:
                break
        return self.scope.record(found, "memory", memory_id)

    def memories(
        self, thread_id: str | None, record_types: Sequence[str] | None, limit: int
    ) -> list[Record]:
        filters: dict[str, Any] = self.scope.filters()
        if thread_id is not None:
            self.thread_row(thread_id)
            filters["thread_id"] = thread_id
        found, _ = newest_first(self.store, record_types or MEMORY_TYPE_NAMES, limit, **filters)
        return found[::-1]  # the newest ``limit``, oldest first

    def extracted_from(self, thread_id: str, message_ids: list[str]) -> list[Record]:
        """The memories whose provenance names one of ``message_ids``."""
        wanted = set(message_ids)
        out = []
        for record in self.memories(thread_id, None, 10000):
            sources = record_json(record).get("source_message_ids") or []
            if wanted.intersection(sources):
                out.append(record)
        return out


@dataclass(frozen=True)
class _Tools:
    """What the tools and resources of ``build_server`` work on."""

    service: _Service
    store: OracleMemoryStore
    memory: OracleAgentMemory
    scope: Scope
    limit: Limits
    extraction: bool


def _instructions(scope: Scope, extraction: bool) -> str:
    mode = (
        "An LLM extracts typed memories (facts, preferences, guidelines) from the messages you add."
        if extraction
        else "No LLM is configured: messages are stored and searched as they are; add "
        "memories yourself with add_memory."
    )
    return (
        f"Long-term memory for {scope.describe()}. Store conversation turns with "
        "add_messages, save a durable fact or preference with add_memory, and before "
        "answering recall what is known with search_memories or get_context_card. When "
        "a memory changes, correct it with update_memory (or end it with "
        "invalidate_memory): the old version stays in memory_history. "
        f"{mode} Everything you read or write stays inside this scope."
    )


def build_server(
    memory: OracleAgentMemory,
    scope: Scope,
    *,
    name: str = "oam",
    search_strategy: SearchStrategy | str | None = None,
    limits: Limits | None = None,
) -> MCPServer:
    """Build the MCP server: its tools and resources over ``memory``, fixed to ``scope``.

    Args:
        memory: An open client; the caller closes it after the server stops.
        scope: The user and/or agent every call is confined to.
        name: The server name announced to clients.
        search_strategy: How the tools' searches rank (``SearchStrategy`` or its
            name); None = the store's default, or KEYWORD for a store without an
            embedder (``service.common.search_strategy_for``). The store's recorded
            default is not changed (docs/service.md).
        limits: The size limits of content and queries; None = ``Limits()``
            (100,000 characters of content, 4,000 of a query). A call over them is a
            tool error, before anything is embedded or written.

    Returns:
        An ``mcp.server.mcpserver.MCPServer``; run it with ``.run("stdio")`` or
        serve ``.streamable_http_app()``.

    Raises:
        ValueError: for an unknown strategy or one the store cannot serve: VECTOR or
            HYBRID without an embedder is a ``ConfigurationError`` naming
            ``search_strategy``.
    """
    strategy = None if search_strategy is None else SearchStrategy.parse(search_strategy)
    limit = Limits() if limits is None else limits
    service = _Service(memory, scope, strategy)
    extraction = memory.extract_memories and memory.llm is not None
    server: MCPServer = MCPServer(
        name,
        version=oam_version,
        instructions=_instructions(scope, extraction),
        log_level="WARNING",
    )

    tools = _Tools(service, service.store, memory, scope, limit, extraction)
    for register in (
        _add_messages,
        _add_memory,
        _search_memories,
        _get_context_card,
        _get_messages,
        _list_memories,
        _list_threads,
        _delete_memory,
        _memory_history,
        _update_memory,
        _invalidate_memory,
        _threads_resource,
        _thread_resource,
        _memories_resource,
        _memory_resource,
    ):
        register(server, tools)
    return server


# -- the tools and resources, in the order build_server registers them ------------


def _add_messages(server: MCPServer, t: _Tools) -> None:
    """Register the ``add_messages`` tool."""
    service, limit, extraction = t.service, t.limit, t.extraction

    @server.tool(
        description="Store chat messages in a thread, in order. Omit thread_id to start a "
        "new thread (its id is returned); a given thread_id must name a thread of this "
        "scope. When the server has an "
        "LLM, memories are extracted from the messages before this returns and listed in "
        f"the result. One call carries at most {limit.max_content_chars:,} characters of "
        "content in all.",
    )
    def add_messages(
        messages: Annotated[
            list[MessageIn], Field(min_length=1, description="The messages, oldest first.")
        ],
        thread_id: Annotated[
            str | None,
            Field(description="A thread of this scope to add to; omit to start a new thread."),
        ] = None,
    ) -> AddMessagesOut:
        with service.calling(ToolError):
            # Checked before a new thread is created: a bad message writes nothing.
            for i, message in enumerate(messages):
                limit.content(f"messages[{i}].content", message.content)
            total = sum(len(m.content) for m in messages)
            limit.check(
                "the messages' content", total, limit.max_content_chars, "--max-content-chars"
            )
            given = prepare_messages([m.model_dump(exclude_none=True) for m in messages])
            return service.add_messages(service.thread(thread_id), given, extraction)


def _add_memory(server: MCPServer, t: _Tools) -> None:
    """Register the ``add_memory`` tool."""
    service, store, scope, limit = t.service, t.store, t.scope, t.limit

    @server.tool(
        description="Save one durable memory (a fact, preference, guideline or general "
        "memory) in this server's scope, optionally tied to a thread. Returns its id and a "
        f"short preview. The content takes at most {limit.max_content_chars:,} characters.",
    )
    def add_memory(
        content: Annotated[
            str,
            Field(min_length=1, description="The memory, as one self-contained sentence."),
        ],
        record_type: Annotated[
            MemoryType,
            Field(
                description="fact (true about the user/world), preference (likes, "
                "dislikes), guideline (how to behave), or memory (anything else)."
            ),
        ] = "memory",
        thread_id: Annotated[
            str | None, Field(description="Tie it to this thread; omit for none.")
        ] = None,
        metadata: Annotated[
            dict[str, Any] | None,
            Field(description="JSON object of your own keys, usable in search filters."),
        ] = None,
    ) -> SavedMemoryOut:
        with service.calling(ToolError):
            limit.content("content", content)
            limit.json("metadata", metadata)
            check_memory_content(content)
            owner: Scope | ThreadRow = scope
            if thread_id is not None:
                # The thread's own ids (inside the scope): its context card finds the
                # memories of its user and agent, and without --agent the thread's
                # agent id was generated when it was created.
                owner = service.thread_row(thread_id)
            if metadata is not None and "$agent_memory" in metadata:
                raise InvalidArgumentError(
                    "metadata key '$agent_memory' is reserved for the library"
                )
            [memory_id] = store.add(
                [content],
                record_type,
                thread_ids=thread_id,
                user_ids=owner.user_id,
                agent_ids=owner.agent_id,
                metadata=metadata,
            )
            return SavedMemoryOut(
                id=memory_id,
                record_type=record_type,
                thread_id=thread_id,
                user_id=owner.user_id,
                agent_id=owner.agent_id,
                preview=content if len(content) <= PREVIEW_CHARS else content[:PREVIEW_CHARS] + "…",
                content_chars=len(content),
            )


def _search_memories(server: MCPServer, t: _Tools) -> None:
    """Register the ``search_memories`` tool."""
    service, store, memory, scope, limit = t.service, t.store, t.memory, t.scope, t.limit

    @server.tool(
        description="Search the memories (and optionally messages) of this scope for a "
        "natural-language query. Returns up to k hits, best first, each with its score "
        "(higher is better; score_kind says what it measures) and its validity window. "
        "Only memories that hold now are searched unless include_superseded asks for "
        "every version. "
        f"The query takes at most {limit.max_query_chars:,} characters.",
    )
    def search_memories(
        query: Annotated[str, Field(min_length=1, description="What to recall, in words.")],
        k: Annotated[int, Field(ge=1, le=100, description="Most hits to return.")] = 5,
        record_types: Annotated[
            list[SearchType] | None,
            Field(description="Types to search; default: memory, fact, preference, guideline."),
        ] = None,
        metadata_filter: Annotated[
            dict[str, Any] | None,
            Field(
                description='Metadata filter, e.g. {"topic": "travel"} or '
                '{"tags": {"$array_contains": "work"}}; keys are ANDed.'
            ),
        ] = None,
        thread_id: Annotated[
            str | None, Field(description="Only this thread's records; omit for all.")
        ] = None,
        include_superseded: Annotated[
            bool,
            Field(
                description="Also return memories that no longer hold (replaced by a newer "
                "one or invalidated); each hit carries valid_from/valid_until."
            ),
        ] = False,
    ) -> list[RecordOut]:
        with service.calling(ToolError):
            limit.query(query)
            limit.json("metadata_filter", metadata_filter)
            kwargs: dict[str, Any] = scope.filters()
            if thread_id is not None:
                service.thread_row(thread_id)
                kwargs["thread_id"] = thread_id
            if metadata_filter is not None:
                kwargs["metadata_filter"] = metadata_filter
            if include_superseded:
                kwargs["as_of"] = None  # every version; else the store keeps current ones
            types = set(record_types or MEMORY_TYPE_NAMES)
            hits = memory.search(query, k=k, record_types=types, **kwargs)
            kind = score_kind(store)
            return [_record_out(r, d, kind) for r, d in hits]


def _get_context_card(server: MCPServer, t: _Tools) -> None:
    """Register the ``get_context_card`` tool."""
    service, memory = t.service, t.memory

    @server.tool(
        description="The context card of a thread: the XML block (summary or recent "
        "messages, relevant memories) an agent puts into its prompt before answering.",
    )
    def get_context_card(
        thread_id: Annotated[str, Field(min_length=1, description="The thread.")],
        max_relevant_results: Annotated[
            int, Field(ge=0, le=50, description="Most memories/messages found by relevance.")
        ] = 5,
        max_recent_messages: Annotated[
            int, Field(ge=0, le=200, description="Latest messages included verbatim.")
        ] = 0,
    ) -> str:
        with service.calling(ToolError):
            service.thread_row(thread_id)
            card = open_thread(memory, thread_id).get_context_card(
                max_relevant_results=max_relevant_results,
                max_recent_messages=max_recent_messages,
            )
            return card.content


def _get_messages(server: MCPServer, t: _Tools) -> None:
    """Register the ``get_messages`` tool."""
    service, store = t.service, t.store

    @server.tool(description="The latest messages of a thread, oldest first.")
    def get_messages(
        thread_id: Annotated[str, Field(min_length=1, description="The thread.")],
        last_n: Annotated[int, Field(ge=1, le=1000, description="How many to return.")] = 20,
    ) -> list[RecordOut]:
        with service.calling(ToolError):
            service.thread_row(thread_id)
            return [_record_out(m) for m in store.list_thread_messages(thread_id, last_n=last_n)]


def _list_memories(server: MCPServer, t: _Tools) -> None:
    """Register the ``list_memories`` tool."""
    service = t.service

    @server.tool(
        description="List stored memories of this scope, newest last, every version "
        "included, with their type, source messages, validity window and supersede status.",
    )
    def list_memories(
        thread_id: Annotated[
            str | None, Field(description="Only this thread's memories; omit for all.")
        ] = None,
        record_types: Annotated[
            list[MemoryType] | None, Field(description="Types to list; default: all four.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="Most memories to return.")] = 50,
    ) -> list[RecordOut]:
        with service.calling(ToolError):
            return [_record_out(r) for r in service.memories(thread_id, record_types, limit)]


def _list_threads(server: MCPServer, t: _Tools) -> None:
    """Register the ``list_threads`` tool."""
    service = t.service

    @server.tool(description="List the threads of this scope, oldest first, with message counts.")
    def list_threads(
        limit: Annotated[int, Field(ge=1, le=1000, description="Most threads (the newest).")] = 100,
    ) -> list[ThreadOut]:
        with service.calling(ToolError):
            return service.threads(limit)


def _delete_memory(server: MCPServer, t: _Tools) -> None:
    """Register the ``delete_memory`` tool."""
    service, memory = t.service, t.memory

    @server.tool(
        description="Delete one memory by id for good (for example one stored by mistake). "
        "To correct an outdated memory and keep its history, use update_memory or "
        "invalidate_memory. Messages are never deleted by this tool.",
    )
    def delete_memory(
        memory_id: Annotated[str, Field(min_length=1, description="Id of the memory.")],
    ) -> DeleteOut:
        with service.calling(ToolError):
            service.memory_record(memory_id)
            return DeleteOut(deleted=memory.delete_memory(memory_id))


def _memory_history(server: MCPServer, t: _Tools) -> None:
    """Register the ``memory_history`` tool."""
    service, memory, scope = t.service, t.memory, t.scope

    @server.tool(
        description="Every version of a memory, oldest first: the memories it replaced "
        "and the ones that replaced it, each with its validity window (valid_from, "
        "valid_until; valid_until null = the version that holds now) and the reason of "
        "each change.",
    )
    def memory_history(
        memory_id: Annotated[
            str, Field(min_length=1, description="Id of any version of the memory.")
        ],
    ) -> list[RecordOut]:
        with service.calling(ToolError):
            service.memory_record(memory_id)
            return [_record_out(r) for r in memory.get_memory_history(memory_id) if scope.owns(r)]


def _update_memory(server: MCPServer, t: _Tools) -> None:
    """Register the ``update_memory`` tool."""
    service, memory, limit = t.service, t.memory, t.limit

    @server.tool(
        description='Correct a memory that changed ("moved from Lisbon to Berlin"): '
        "stores the new text as a new version of the same type and scope and ends the "
        "old one, which stays in its history. Name the version that holds now. "
        f"The content takes at most {limit.max_content_chars:,} characters.",
    )
    def update_memory(
        memory_id: Annotated[
            str, Field(min_length=1, description="Id of the memory's current version.")
        ],
        content: Annotated[
            str, Field(min_length=1, description="The corrected memory, one sentence.")
        ],
        reason: Annotated[
            str | None, Field(description="Why it changed; kept on the old version.")
        ] = None,
        valid_from: Annotated[
            str | None,
            Field(
                description="When the new version started to hold, ISO-8601 (e.g. "
                "'2026-03-01T00:00:00Z'); omit for now."
            ),
        ] = None,
    ) -> UpdateOut:
        with service.calling(ToolError):
            limit.content("content", content)
            check_memory_content(content)
            service.memory_record(memory_id)
            when: dict[str, Any] = {} if valid_from is None else {"valid_from": valid_from}
            new_id = memory.update_memory(memory_id, content, reason=reason, **when)
            return UpdateOut(id=new_id, replaces=memory_id)


def _invalidate_memory(server: MCPServer, t: _Tools) -> None:
    """Register the ``invalidate_memory`` tool."""
    service, memory = t.service, t.memory

    @server.tool(
        description='Mark a memory as no longer true ("I sold my car") without a '
        "replacement: it stops holding and is left out of searches, but stays in its "
        "history. Use update_memory when there is a new value instead.",
    )
    def invalidate_memory(
        memory_id: Annotated[str, Field(min_length=1, description="Id of the memory.")],
        reason: Annotated[str | None, Field(description="Why it no longer holds.")] = None,
        valid_until: Annotated[
            str | None,
            Field(description="When it stopped holding, ISO-8601; omit for now."),
        ] = None,
    ) -> InvalidateOut:
        with service.calling(ToolError):
            service.memory_record(memory_id)
            when: dict[str, Any] = {} if valid_until is None else {"valid_until": valid_until}
            ended = memory.invalidate_memory(memory_id, reason=reason, **when)
            return InvalidateOut(invalidated=ended)


def _threads_resource(server: MCPServer, t: _Tools) -> None:
    """Register the ``threads_resource`` resource."""
    service = t.service

    @server.resource(
        "oam://threads",
        name="threads",
        description="The threads of this scope (JSON).",
        mime_type="application/json",
    )
    def threads_resource() -> str:
        with service.calling(ResourceError):
            return json.dumps([t.model_dump() for t in service.threads(1000)], ensure_ascii=False)


def _thread_resource(server: MCPServer, t: _Tools) -> None:
    """Register the ``thread_resource`` resource."""
    service, store = t.service, t.store

    @server.resource(
        "oam://threads/{thread_id}",
        name="thread",
        description="One thread and its latest 100 messages (JSON).",
        mime_type="application/json",
    )
    def thread_resource(thread_id: str) -> str:
        with service.calling(ResourceError):
            row = service.thread_row(thread_id)
            messages = store.list_thread_messages(thread_id, last_n=100)
            body = {
                **thread_json(row, store.count_thread_messages(thread_id)),
                "messages": [record_json(m) for m in messages],
            }
            return json.dumps(body, ensure_ascii=False)


def _memories_resource(server: MCPServer, t: _Tools) -> None:
    """Register the ``memories_resource`` resource."""
    service = t.service

    @server.resource(
        "oam://memories",
        name="memories",
        description="The latest 100 memories of this scope (JSON).",
        mime_type="application/json",
    )
    def memories_resource() -> str:
        with service.calling(ResourceError):
            records = service.memories(None, None, 100)
            return json.dumps([record_json(r) for r in records], ensure_ascii=False)


def _memory_resource(server: MCPServer, t: _Tools) -> None:
    """Register the ``memory_resource`` resource."""
    service = t.service

    @server.resource(
        "oam://memories/{memory_id}",
        name="memory",
        description="One memory with its provenance and supersede status (JSON).",
        mime_type="application/json",
    )
    def memory_resource(memory_id: str) -> str:
        with service.calling(ResourceError):
            return json.dumps(record_json(service.memory_record(memory_id)), ensure_ascii=False)
