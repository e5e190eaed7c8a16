"""The typed arguments and results of the ``oam mcp`` tools (docs/service.md): what
the MCP SDK turns into each tool's JSON schema, with the descriptions a model reads."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "PREVIEW_CHARS",
    "AddMessagesOut",
    "DeleteOut",
    "InvalidateOut",
    "MemoryType",
    "MessageIn",
    "RecordOut",
    "SavedMemoryOut",
    "SearchType",
    "ThreadOut",
    "UpdateOut",
]

PREVIEW_CHARS = 200
"""Characters of a saved memory that ``add_memory`` returns as its preview."""


MemoryType = Literal["memory", "fact", "preference", "guideline"]
SearchType = Literal["memory", "fact", "preference", "guideline", "message", "user_profile"]


class MessageIn(BaseModel):
    """One chat message to store (any other key is refused, not dropped: ids are the
    server's, a speaker's name goes in the text)."""

    model_config = ConfigDict(extra="forbid")

    role: Annotated[
        Literal["user", "assistant", "system", "tool"],
        Field(description="Who wrote it (a speaker's name goes in the text or metadata)."),
    ]
    content: Annotated[str, Field(description="The message text, verbatim.")]
    timestamp: Annotated[
        str | None,
        Field(description="When it was written, ISO-8601 (e.g. '2026-03-01T12:00:00Z'); optional."),
    ] = None


class RecordOut(BaseModel):
    """A stored record: a message, a memory or a profile."""

    id: str
    record_type: str = Field(
        description="message, memory, fact, preference, guideline or user_profile."
    )
    content: str | None
    timestamp: str | None = Field(None, description="Event time given by the writer.")
    created_at: str | None = Field(None, description="When the store wrote it (UTC).")
    thread_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    role: str | None = Field(None, description="Messages only: who wrote it.")
    metadata: dict[str, Any] | None = None
    source_message_ids: list[str] | None = Field(
        None, description="Memories only: the messages it was extracted from."
    )
    valid_from: str | None = Field(
        None,
        description="Memories only: when it started to hold (ISO-8601 UTC); null = always.",
    )
    valid_until: str | None = Field(
        None,
        description="Memories only: when it stopped holding (ISO-8601 UTC); null = it still holds.",
    )
    status: str | None = Field(
        None,
        description="Memories only: 'invalid' once a newer memory superseded it or it "
        "was invalidated.",
    )
    superseded_by: str | None = Field(None, description="Id of the memory that replaced it.")
    reason: str | None = Field(None, description="Why it was superseded or invalidated.")
    score: float | None = Field(
        None,
        description="Search hits only: higher is better, 1 - distance (what it measures: "
        "score_kind); it ranks the hits of one query, not across queries.",
    )
    score_kind: str | None = Field(
        None,
        description="Search hits only: 'cosine' (vector search: cosine similarity), "
        "'keyword' (BM25 relative to the best match) or 'hybrid' (fused rank, 1 = first "
        "in both rankings).",
    )
    distance: float | None = Field(
        None, description="Search hits only: the raw distance, 1 - score (lower is closer)."
    )


class ThreadOut(BaseModel):
    """A conversation thread."""

    thread_id: str
    user_id: str | None
    agent_id: str | None
    created_at: str
    message_count: int
    metadata: dict[str, Any] | None = None


class AddMessagesOut(BaseModel):
    """What ``add_messages`` stored."""

    thread_id: str = Field(description="The thread the messages went to (new if none was given).")
    message_ids: list[str] = Field(description="Ids of the stored messages, in order.")
    extraction: Literal["ran", "off", "failed"] = Field(
        description="'ran' when an LLM extracted memories from the messages, 'off' when the "
        "server has no LLM (messages are stored and searchable as they are), 'failed' when "
        "the messages were stored but extraction could not run (extraction_error says why; "
        "do not send them again: a later pass extracts them once the cause is fixed)."
    )
    extraction_error: str | None = Field(
        default=None, description="Why extraction failed (only with extraction 'failed')."
    )
    extraction_warnings: list[str] = Field(
        default_factory=list,
        description="What the extraction pass warned about (a skipped pass, a dropped "
        "item of the LLM's reply); the messages are stored either way.",
    )
    memories: list[RecordOut] = Field(description="Memories extracted from these messages.")


class SavedMemoryOut(BaseModel):
    """What ``add_memory`` saved: its id and a preview, not the whole text back."""

    id: str = Field(description="The memory's id (for delete_memory and oam://memories/{id}).")
    record_type: str
    thread_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    preview: str = Field(description=f"The first {PREVIEW_CHARS} characters of the content.")
    content_chars: int = Field(description="Length of the saved content, in characters.")


class DeleteOut(BaseModel):
    """What ``delete_memory`` removed."""

    deleted: int = Field(description="1 when the memory was deleted.")


class UpdateOut(BaseModel):
    """What ``update_memory`` wrote: the new version's id (the old one stays stored,
    ended)."""

    id: str = Field(description="Id of the new, current version.")
    replaces: str = Field(description="Id of the version it superseded.")


class InvalidateOut(BaseModel):
    """What ``invalidate_memory`` did."""

    invalidated: bool = Field(
        description="true when the memory held until now and is ended; false if it was "
        "not current (it had already stopped holding, or starts later)."
    )
