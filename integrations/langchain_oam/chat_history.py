"""``OAMChatMessageHistory``: LangChain chat history stored in an ``oam`` thread.

Mapping (lossless, docs/langchain.md#chat-history): each LangChain message is one ``oam`` message
record. ``role`` comes from the message type (human -> ``user``, ai -> ``assistant``,
system -> ``system``, tool -> ``tool``, function -> ``function``, chat -> its own
role); ``content`` is the text (for list content, its text parts, so search still
works); everything else LangChain knows about the message (its exact type,
``additional_kwargs``, ``response_metadata``, ``name``, ``id``, ``tool_calls``,
``invalid_tool_calls``, ``usage_metadata``, ``tool_call_id``, ``artifact``, ``status``,
and list content) travels in ``metadata["$message"]["langchain"]`` as
``langchain_core.messages.message_to_dict`` writes it. ``$message`` also holds the
framework-neutral ``name``, ``tool_call_id`` and ``tool_calls`` that other ``oam``
readers use (the speaker name is part of the message's search text). LangChain
never sees ``oam``'s metadata keys: messages are rebuilt from ``$message`` alone;
messages written without it (plain ``oam`` messages) map back by role.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)
from langchain_core.messages.tool import default_tool_parser, invalid_tool_call, tool_call

from langchain_oam import _dropped
from oam_core import NOT_SET, Message, MessageRecord, OracleAgentMemory, OracleThread, SchemaPolicy
from oam_core.apis.metadatajson import check_stored_json, json_storable
from oam_core.checks import check_thread_owner
from oam_core.errors import ConfigurationError, InvalidArgumentError
from oam_core.memory.messages import prepare_messages
from oam_core.steps import Steps, call, run_async, run_sync

__all__ = ["OAMChatMessageHistory", "from_oam_message", "to_oam_message"]

MESSAGE_KEY = "$message"
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def _base_type(message: BaseMessage) -> str:
    """``"ai"`` for ``AIMessage`` and ``AIMessageChunk`` alike, etc."""
    kind = message.type
    return kind[: -len("MessageChunk")].lower() if kind.endswith("MessageChunk") else kind


def to_oam_message(message: BaseMessage, index: int = 0) -> Message:
    """A LangChain message as an ``oam`` ``Message`` (see the module docstring);
    ``index`` is its position in the write, for errors.

    Raises:
        ValueError: for anything that is not a ``BaseMessage``, fields JSON cannot
            hold as stored (an int past 64 bits, a NaN, an object), or a NUL or lone
            surrogate in one, naming the field as the caller wrote it
            (``messages[0].additional_kwargs['a']``, not the stored layout).
    """
    if not isinstance(message, BaseMessage):
        raise InvalidArgumentError(
            f"messages must be LangChain BaseMessage objects, got {message!r}"
        )
    kind = _base_type(message)
    role = message.role if isinstance(message, ChatMessage) else _ROLES.get(kind, kind)
    lc = message_to_dict(message)
    data: dict[str, Any] = dict(lc["data"])
    if isinstance(message.content, str):
        content = message.content
        del data["content"]  # stored once, as the record's content
    else:
        content = message.text
    fields: dict[str, Any] = {"langchain": {"type": lc["type"], "data": data}}
    if message.name:
        fields["name"] = message.name
    if isinstance(message, ToolMessage):
        fields["tool_call_id"] = message.tool_call_id
    if isinstance(message, AIMessage) and message.tool_calls:
        fields["tool_calls"] = data["tool_calls"]
    elif isinstance(message, AIMessage) and "function_call" in message.additional_kwargs:
        fields["function_call"] = message.additional_kwargs["function_call"]  # older form
    try:  # fail before anything (even the thread row) is written
        json.dumps(fields, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(
            f"{type(message).__name__} fields must be JSON-compatible to be stored: {exc}"
        ) from None
    _check_fields(data, f"messages[{index}]")  # e.g. an int past 64 bits, a NUL
    return Message(role=role or "unknown", content=content, metadata={MESSAGE_KEY: fields})


def _check_fields(data: Mapping[str, Any], where: str) -> None:
    """Refuse a message field (``data``: the message's fields, as ``message_to_dict``
    gives them) a store cannot hold as JSON, naming it ``where.field``, or
    ``where.field['key']`` in a dict field (``messages[0].additional_kwargs['a']``);
    the common case costs one fast pass (``json_storable``).

    Raises:
        InvalidArgumentError: as ``metadatajson.check_stored_json``.
    """
    if json_storable(data):
        return
    for field, value in data.items():
        name = f"{where}.{field}"
        if isinstance(value, Mapping):
            for key, item in value.items():
                check_stored_json(item, f"{name}[{key!r}]")
        check_stored_json(value, name)  # its keys, or a field that is not a dict


def _tool_calls(raw: object) -> tuple[list[Any], list[Any]]:
    """``$message.tool_calls`` as LangChain's ``(tool_calls, invalid_tool_calls)``: a
    call in LangChain's shape (``name``, ``args`` a dict, ``id``) as it is, one in
    OpenAI's (``{"id", "function": {"name", "arguments"}}``, what the LlamaIndex
    adapter writes, docs/context-card.md#tool-calls) parsed by LangChain's own
    parser, anything else an invalid tool call, so a thread another framework wrote
    always reads."""
    calls: list[Any] = []
    invalid: list[Any] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            invalid.append(
                invalid_tool_call(name=None, args=str(item), id=None, error="not an object")
            )
        elif isinstance(item.get("function"), dict):
            good, bad = default_tool_parser([item])
            calls += good
            invalid += bad
        elif isinstance(item.get("name"), str) and isinstance(item.get("args"), dict):
            calls.append(
                tool_call(name=item["name"], args=item["args"], id=_str_or_none(item.get("id")))
            )
        else:
            invalid.append(
                invalid_tool_call(
                    name=_str_or_none(item.get("name")),
                    args=None if item.get("args") is None else str(item.get("args")),
                    id=_str_or_none(item.get("id")),
                    error="not a tool call in LangChain's or OpenAI's shape",
                )
            )
    return calls, invalid


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def from_oam_message(record: Message | MessageRecord) -> BaseMessage:
    """An ``oam`` message (or message record) as a LangChain message.

    Messages written by ``to_oam_message`` come back exactly; others map by role
    (``user`` -> human, ``assistant`` -> ai, ``system``, ``tool``, anything else ->
    ``ChatMessage``), with ``name``/``tool_call_id``/``tool_calls`` from ``$message``
    when present. Other metadata is ``oam``'s and is not passed on.
    """
    metadata = record.metadata or {}
    raw = metadata.get(MESSAGE_KEY)
    fields: dict[str, Any] = raw if isinstance(raw, dict) else {}
    content = record.content if record.content is not None else ""
    stored = fields.get("langchain")
    if isinstance(stored, dict) and isinstance(stored.get("data"), dict):
        data = dict(stored["data"])
        data.setdefault("content", content)
        return messages_from_dict([{"type": stored["type"], "data": data}])[0]
    role = record.role or "unknown"
    extra: dict[str, Any] = {"id": record.id}
    if isinstance(fields.get("name"), str):
        extra["name"] = fields["name"]
    if role == "user":
        return HumanMessage(content=content, **extra)
    if role == "assistant":
        calls, invalid = _tool_calls(fields.get("tool_calls"))
        return AIMessage(content=content, tool_calls=calls, invalid_tool_calls=invalid, **extra)
    if role == "system":
        return SystemMessage(content=content, **extra)
    if role == "tool":
        return ToolMessage(
            content=content, tool_call_id=str(fields.get("tool_call_id", "")), **extra
        )
    if role == "function" and "name" in extra:
        return FunctionMessage(content=content, **extra)
    return ChatMessage(content=content, role=role, **extra)


class OAMChatMessageHistory(BaseChatMessageHistory):
    """LangChain chat history over an ``OracleThread`` (docs/langchain.md#chat-history).

    The thread is looked up when the history is made and created on the first write
    when missing (``create_thread`` with ``thread_id`` and the given ``user_id`` and
    ``agent_id``; one left as None is generated by the client, as ``create_thread``
    does). Writes go through the thread, so a client configured with an LLM extracts
    memories from the conversation. Reads return the whole thread, oldest first, and
    never create it.

    Everything that would make a write fail later is checked when the history is
    made, because ``RunnableWithMessageHistory`` writes from a callback whose errors
    LangChain only logs (docs/failure-modes.md#c28): a thread of another user or agent, and a
    client whose extraction is on but has no LLM, raise ``ValueError`` here. Reads
    and ``clear()`` of a thread of another user or agent are refused like writes
    (docs/failure-modes.md#c27). A write that fails inside that callback anyway (a
    NUL in the model's reply) is remembered, and the next use of a history of the
    thread raises ``DroppedHistoryWriteError`` once (docs/langchain.md#chat-history).

    ``clear()`` deletes the thread's messages, in one transaction, and keeps the
    thread row (its scope and options) and the memories already extracted from it,
    like ``OracleThread.delete_message`` (docs/concepts.md#the-client-and-threads). Use
    ``OracleAgentMemory.delete_thread`` to remove everything.

    Example::

        >>> from oam_core import OracleAgentMemory
        >>> memory = OracleAgentMemory(connection=":memory:", extract_memories=False)
        >>> history = OAMChatMessageHistory(memory, "session-1", user_id="alice")
        >>> history.add_user_message("Hi, I'm Alice.")
        >>> OAMChatMessageHistory(memory, session_id="session-1").messages[0].content
        "Hi, I'm Alice."

    Args:
        memory: The ``OracleAgentMemory`` client (or pass ``connection``).
        thread_id: The thread (the LangChain session id).
        session_id: Alias of ``thread_id``, as ``SQLChatMessageHistory`` and
            ``PostgresChatMessageHistory`` name it.
        connection: Instead of ``memory``: a database URL or path (``sqlite:///...``,
            ``postgresql://...``) for a client of its own, without an LLM or
            extraction, closed by ``close``.
        user_id, agent_id: Scope of a thread created here; for an existing thread,
            a given id must equal the thread's (None: any).
        schema_policy: With ``connection``: ``SchemaPolicy`` (or name); the default
            creates the tables on a fresh database.

    Raises:
        ValueError: for both or neither of ``memory``/``connection`` or of
            ``thread_id``/``session_id``, a non-client ``memory``, a blank id, a
            thread of another user or agent, or a client that would need an LLM to
            write (extraction on, no LLM).
        DroppedHistoryWriteError: here, or from ``messages``, ``add_messages`` or
            ``clear`` (and their async twins): once, after a write of this thread
            failed inside a LangChain listener.
    """

    def __init__(
        self,
        memory: OracleAgentMemory | None = None,
        thread_id: str | None = None,
        *,
        session_id: str | None = None,
        connection: Any = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        schema_policy: SchemaPolicy | str = SchemaPolicy.CREATE_IF_NECESSARY,
    ) -> None:
        if (memory is None) == (connection is None):
            raise ConfigurationError("pass exactly one of memory and connection")
        if memory is not None and not isinstance(memory, OracleAgentMemory):
            raise InvalidArgumentError(
                f"memory must be an OracleAgentMemory, got {type(memory).__name__}"
            )
        if thread_id is not None and session_id is not None and thread_id != session_id:
            raise InvalidArgumentError(
                f"thread_id and session_id name the same thread; got {thread_id!r} and "
                f"{session_id!r}"
            )
        thread_id = thread_id if thread_id is not None else session_id
        for name, value in (("thread_id", thread_id), ("user_id", user_id), ("agent_id", agent_id)):
            if (value is not None or name == "thread_id") and (
                not isinstance(value, str) or not value.strip()
            ):
                raise InvalidArgumentError(f"{name} must be a non-blank str, got {value!r}")
        assert thread_id is not None
        self._owned: OracleAgentMemory | None = None
        if memory is None:
            memory = OracleAgentMemory(
                connection=connection, extract_memories=False, schema_policy=schema_policy
            )
            self._owned = memory
        self.memory = memory
        self.thread_id = thread_id
        self.user_id = user_id
        self.agent_id = agent_id
        self._thread: OracleThread | None = None
        # Whose dropped writes this history reports: the client's, or those of the
        # histories opening their own client on the same connection.
        self._owner: Hashable = memory if self._owned is None else ("connection", str(connection))
        try:
            _dropped.take(self._owner, thread_id)
            self._check_writable()
        except BaseException:
            self.close()
            raise

    @property
    def session_id(self) -> str:
        """The thread id (LangChain's name for it)."""
        return self.thread_id

    def __repr__(self) -> str:
        return f"OAMChatMessageHistory(thread_id={self.thread_id!r}, user_id={self.user_id!r})"

    def close(self) -> None:
        """Close the client if this history opened it (``connection=``)."""
        if self._owned is not None:
            self._owned.close()

    def _check_writable(self) -> None:
        """Fail now for what would make every write fail (see the class docstring)."""
        row = self.memory.get_thread_row(self.thread_id)
        if row is None:
            if self.memory.llm is None and self.memory.extract_memories:
                raise ConfigurationError(
                    "this client extracts memories but has no LLM, so writing the "
                    f"history {self.thread_id!r} would fail: pass llm= to "
                    "OracleAgentMemory, or create it with extract_memories=False"
                )
            return
        check_thread_owner(self.thread_id, row.user_id, row.agent_id, self.user_id, self.agent_id)
        self._thread = self.memory.get_thread(self.thread_id)  # ValueError without an LLM

    # ------------------------------------------------------------------ steps

    def _thread_steps(self) -> Steps[OracleThread]:
        if self._thread is not None:
            return self._thread
        thread: OracleThread
        try:
            thread = yield from call(self.memory.get_thread, self.thread_id)
        except KeyError:
            try:
                thread = yield from call(
                    self.memory.create_thread,
                    thread_id=self.thread_id,
                    user_id=NOT_SET if self.user_id is None else self.user_id,
                    agent_id=NOT_SET if self.agent_id is None else self.agent_id,
                )
            except ValueError as refused:
                # Another history may have created it first; then use theirs.
                try:
                    thread = yield from call(self.memory.get_thread, self.thread_id)
                except KeyError:
                    raise refused from None
        check_thread_owner(
            self.thread_id, thread.user_id, thread.agent_id, self.user_id, self.agent_id
        )
        self._thread = thread
        return self._thread

    def _owner_steps(self) -> Steps[bool]:
        """Whether the thread exists; ValueError when it belongs to someone else."""
        row = yield from call(self.memory.get_thread_row, self.thread_id)
        if row is None:
            return False
        check_thread_owner(self.thread_id, row.user_id, row.agent_id, self.user_id, self.agent_id)
        return True

    def _get_steps(self) -> Steps[list[BaseMessage]]:
        _dropped.take(self._owner, self.thread_id)
        if not (yield from self._owner_steps()):
            return []
        records = yield from call(self.memory.store.list_thread_messages, self.thread_id, None)
        return [from_oam_message(r) for r in records]

    def _add_steps(self, messages: Sequence[BaseMessage]) -> Steps[None]:
        _dropped.take(self._owner, self.thread_id)
        try:
            # Every message is checked (text, metadata) before the thread is created,
            # so a refused write leaves nothing, not even a thread row claiming the id.
            converted = prepare_messages([to_oam_message(m, i) for i, m in enumerate(messages)])
            if not converted:
                return
            thread = yield from self._thread_steps()
            yield from call(thread.add_messages, converted)
        except Exception as exc:
            if _dropped.in_langchain_listener():  # LangChain would only log it
                _dropped.remember(self._owner, self.thread_id, len(messages), exc)
            raise

    def _clear_steps(self) -> Steps[None]:
        _dropped.take(self._owner, self.thread_id)
        if not (yield from self._owner_steps()):
            return
        records = yield from call(self.memory.store.list_thread_messages, self.thread_id, None)
        if records:
            yield from call(
                self.memory.store.delete_records,
                "message",
                [r.id for r in records],
                thread_id=self.thread_id,
            )

    # ------------------------------------------------------------- LangChain

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every message of the thread, oldest first (not only the last 100).

        Raises:
            ValueError: when the thread belongs to another user or agent.
        """
        return run_sync(self._get_steps())

    async def aget_messages(self) -> list[BaseMessage]:
        """Async twin of ``messages``."""
        return await run_async(self._get_steps())

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append messages, in order, in one thread write (one transaction).

        Raises:
            ValueError: for a non-message, metadata JSON cannot hold (e.g. a
                non-JSON tool artifact), or a thread of another user/agent;
                nothing is written.
        """
        run_sync(self._add_steps(messages))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async twin of ``add_messages``."""
        await run_async(self._add_steps(messages))

    def clear(self) -> None:
        """Delete the thread's messages in one transaction (the thread row and its
        memories stay; see the class docstring).

        Raises:
            ValueError: when the thread belongs to another user or agent.
        """
        run_sync(self._clear_steps())

    async def aclear(self) -> None:
        """Async twin of ``clear``."""
        await run_async(self._clear_steps())
