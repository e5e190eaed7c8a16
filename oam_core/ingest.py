"""Load chat conversations from files, ready for ``OracleThread.add_messages``.

Pure loaders: nothing here touches a store. :func:`load_conversations` reads one file
and auto-detects its layout:

* **JSONL**: one message object per line, ``{"role", "content"[, "timestamp"]
  [, "name"][, "metadata"][, "id"]}``. One conversation; its thread id is the file
  stem. ``role`` is one of ``ROLES``; ``timestamp`` is ISO-8601 (naive = UTC) and
  comes back normalized to UTC; ``name`` is the speaker's name in a chat of several
  people (kept as ``metadata["$message"]["name"]``, as the chat frameworks do).
* **JSON list of messages**: the same objects in one JSON array. One conversation.
* **LoCoMo** (snap-research/LoCoMo): a list of samples, or a single sample, each with
  ``sample_id`` and ``conversation`` (``speaker_a``, ``speaker_b``,
  ``session_<n>_date_time``, ``session_<n>`` = list of ``{speaker, dia_id, text}``
  turns). One conversation per non-empty session, thread id ``<sample_id>-s<n>``,
  user id = the sample id; ``speaker_a`` speaks as ``"user"`` and ``speaker_b`` as
  ``"assistant"``, each with their name in ``metadata["$message"]["name"]``; a turn's
  ``blip_caption`` (an image description) is appended to its text in brackets.
  ``samples=`` picks some samples of a file holding several.

The format is documented in docs/cli.md#input-files.

Every problem with the file (missing, unreadable, invalid JSON, wrong shape) raises
:class:`IngestError` naming the file and the line or element at fault.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dateutil import parser as date_parser

from oam_core.apis.records import check_metadata
from oam_core.apis.thread import COMMON_ROLES, MESSAGE_KEY, check_known_role
from oam_core.apis.timestamps import normalize_timestamp
from oam_core.errors import InvalidArgumentError

__all__ = ["ROLES", "Conversation", "IngestError", "load_conversations"]

ROLES = COMMON_ROLES
"""The message roles a file may use (``check_known_role``)."""
_MESSAGE_KEYS = frozenset({"role", "content", "timestamp", "name", "metadata", "id"})
_SESSION_KEY = re.compile(r"session_(\d+)")


class IngestError(InvalidArgumentError):
    """A conversation file is missing, unreadable, not JSON, or not a known layout.

    The message names the file and, where it applies, the line (JSONL, invalid JSON)
    or the element (``[3]``, ``sample 'conv-26' session_2[5]``) at fault.
    """


@dataclass(frozen=True)
class Conversation:
    """One conversation to store as one thread.

    Attributes:
        thread_id: The thread id to create.
        user_id: The user the thread belongs to, or None.
        agent_id: The agent the thread belongs to, or None.
        messages: Message dicts in chronological order, each with ``role`` and
            ``content`` and optionally ``timestamp`` (ISO-8601 string), ``metadata``
            (dict) and ``id``; accepted as-is by ``OracleThread.add_messages``.
    """

    thread_id: str
    user_id: str | None
    agent_id: str | None
    messages: list[dict[str, Any]] = field(default_factory=list)
    locations: list[str] = field(default_factory=list, compare=False)
    """Where each message comes from (``"<file>: line 71"``), parallel to ``messages``;
    empty when unknown."""
    sample_id: str | None = field(default=None, compare=False)
    """The LoCoMo sample the conversation belongs to, or None."""


def load_conversations(
    path: str | os.PathLike[str],
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    samples: Sequence[str] | None = None,
) -> list[Conversation]:
    """Read a conversation file and return its conversations, in file order.

    The layout is detected from the content (see the module docstring); a ``.jsonl``
    suffix always means JSONL. Blank JSONL lines are skipped.

    Args:
        path: The file to read (UTF-8, with or without a byte-order mark).
        user_id: User id for every conversation; for LoCoMo it replaces the sample id.
            When omitted (None), message files get no user and LoCoMo threads get
            their sample id.
        agent_id: Agent id for every conversation, or None for none.
        samples: LoCoMo sample ids to keep (None: every sample).

    Returns:
        The conversations. Message files give exactly one; LoCoMo gives one per
        non-empty session of every sample.

    Raises:
        IngestError: if the file is missing or unreadable, is not valid JSON / JSONL,
            holds no messages, its objects do not have the expected shape, or
            ``samples`` names a sample the file does not hold (or the file is not
            LoCoMo).
    """
    conversations = _load(Path(path), user_id, agent_id)
    if samples is None:
        return conversations
    return _pick_samples(Path(path), conversations, samples)


def _pick_samples(
    file: Path, conversations: list[Conversation], samples: Sequence[str]
) -> list[Conversation]:
    present = list(dict.fromkeys(c.sample_id for c in conversations if c.sample_id))
    if not present:
        raise IngestError(f"{file}: --sample applies to LoCoMo files; this file has no samples")
    missing = [s for s in samples if s not in present]
    if missing:
        shown = ", ".join(present[:10]) + (" ..." if len(present) > 10 else "")
        raise IngestError(f"{file}: no sample {missing[0]!r}; the file holds {shown}")
    wanted = set(samples)
    return [c for c in conversations if c.sample_id in wanted]


def _load(file: Path, user_id: str | None, agent_id: str | None) -> list[Conversation]:
    text = _read_text(file)
    if not text.strip():
        raise IngestError(f"{file}: the file is empty; expected JSONL or JSON messages")
    if file.suffix.lower() == ".jsonl":
        return [_message_conversation(file, _parse_jsonl(file, text), user_id, agent_id)]
    try:
        document: Any = json.loads(text)
    except RecursionError as exc:
        raise IngestError(f"{file}: the JSON is nested too deeply to read") from exc
    except json.JSONDecodeError as exc:
        if _first_line_is_json(text):
            # Several JSON values, one per line: JSONL without the suffix.
            messages = _parse_jsonl(file, text)
            return [_message_conversation(file, messages, user_id, agent_id)]
        raise IngestError(
            f"{file}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc
    return _from_document(file, document, user_id, agent_id)


def _read_text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise IngestError(f"{file}: no such file") from exc
    except IsADirectoryError as exc:
        raise IngestError(f"{file}: is a directory, expected a .json or .jsonl file") from exc
    except UnicodeDecodeError as exc:
        raise IngestError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise IngestError(f"{file}: cannot read the file ({exc.strerror or exc})") from exc


def _first_line_is_json(text: str) -> bool:
    first = next(line for line in text.splitlines() if line.strip())
    try:
        json.loads(first)
    except json.JSONDecodeError:
        return False
    return True


def _parse_jsonl(file: Path, text: str) -> list[tuple[dict[str, Any], str]]:
    messages: list[tuple[dict[str, Any], str]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{file}: line {lineno}"
        try:
            value = json.loads(line)
        except RecursionError as exc:
            raise IngestError(f"{where}: the JSON is nested too deeply to read") from exc
        except json.JSONDecodeError as exc:
            raise IngestError(f"{where}: invalid JSON at column {exc.colno}: {exc.msg}") from exc
        messages.append((_check_message(value, where), where))
    return messages


def _from_document(
    file: Path, document: Any, user_id: str | None, agent_id: str | None
) -> list[Conversation]:
    if isinstance(document, Mapping):
        if "conversation" in document:
            return _locomo_sample(file, document, 0, user_id, agent_id)
        if "role" in document or "content" in document:
            # A one-line JSONL file without the suffix.
            where = f"{file}: line 1"
            message = _check_message(document, where)
            return [_message_conversation(file, [(message, where)], user_id, agent_id)]
        raise IngestError(
            f"{file}: a JSON object with keys {sorted(document)[:6]!r} is neither a message "
            "(role, content) nor a LoCoMo sample (sample_id, conversation)"
        )
    if not isinstance(document, list):
        raise IngestError(
            f"{file}: expected a JSON list of messages or LoCoMo samples, "
            f"got a JSON {_json_type(document)}"
        )
    if not document:
        raise IngestError(f"{file}: the JSON list is empty; there are no messages to load")
    first = document[0]
    if isinstance(first, Mapping) and "conversation" in first:
        conversations: list[Conversation] = []
        seen: dict[object, int] = {}
        for index, sample in enumerate(document):
            if not isinstance(sample, Mapping) or "conversation" not in sample:
                raise IngestError(
                    f"{file}: [{index}]: expected a LoCoMo sample with a 'conversation' "
                    f"object, like element [0]; got {_describe(sample)}"
                )
            sample_id = sample.get("sample_id")
            if isinstance(sample_id, str) and sample_id in seen:
                raise IngestError(
                    f"{file}: [{index}]: sample_id {sample_id!r} is also the id of element "
                    f"[{seen[sample_id]}]; each sample needs its own (its threads are "
                    f"{sample_id}-s<n>)"
                )
            seen[sample_id] = index
            conversations.extend(_locomo_sample(file, sample, index, user_id, agent_id))
        return conversations
    messages = [
        (_check_message(item, where), where)
        for index, item in enumerate(document)
        for where in (f"{file}: [{index}]",)
    ]
    return [_message_conversation(file, messages, user_id, agent_id)]


def _message_conversation(
    file: Path,
    messages: list[tuple[dict[str, Any], str]],
    user_id: str | None,
    agent_id: str | None,
) -> Conversation:
    if not messages:
        raise IngestError(f"{file}: no messages found")
    seen: dict[str, str] = {}
    for message, where in messages:
        message_id = message.get("id")
        if message_id is None:
            continue
        if message_id in seen:
            raise IngestError(
                f"{where}: duplicate message id {message_id!r} (first used at "
                f"{seen[message_id].removeprefix(f'{file}: ')})"
            )
        seen[message_id] = where
    return Conversation(
        thread_id=file.stem,
        user_id=user_id,
        agent_id=agent_id,
        messages=[message for message, _ in messages],
        locations=[where for _, where in messages],
    )


def _check_message(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise IngestError(
            f"{where}: expected a message object with 'role' and 'content', got {_describe(value)}"
        )
    unknown = sorted(set(value) - _MESSAGE_KEYS)
    if unknown:
        raise IngestError(
            f"{where}: unknown message keys {unknown!r}; allowed: role, content, "
            "name, timestamp, metadata, id (put anything else under 'metadata')"
        )
    for key in ("role", "content"):
        if key not in value:
            raise IngestError(f"{where}: '{key}' is missing")
    role = value["role"]
    try:
        check_known_role(role, "'role'")
    except ValueError:
        raise IngestError(
            f"{where}: 'role' must be one of {', '.join(ROLES)}, got "
            f"{_describe(role)}; put a speaker's name under 'name'"
        ) from None
    content = value["content"]
    if not isinstance(content, str):
        raise IngestError(f"{where}: 'content' must be a string, got {_describe(content)}")
    message: dict[str, Any] = {"role": role, "content": content}
    stamp = value.get("timestamp")
    if stamp is not None:
        message["timestamp"] = _timestamp(stamp, f"{where}: 'timestamp'")
    for key, kind, expected in (
        ("metadata", dict, "an object"),
        ("id", str, "a string"),
    ):
        item = value.get(key)
        if item is None:
            continue
        if not isinstance(item, kind):
            raise IngestError(f"{where}: '{key}' must be {expected}, got {_describe(item)}")
        message[key] = item
    name = value.get("name")
    if name is not None:
        if not isinstance(name, str) or not name.strip():
            raise IngestError(f"{where}: 'name' must be a non-empty string, got {_describe(name)}")
        meta = dict(message.get("metadata") or {})
        fields = meta.get(MESSAGE_KEY)
        meta[MESSAGE_KEY] = {**(fields if isinstance(fields, Mapping) else {}), "name": name}
        message["metadata"] = meta
    _check_storable(message, where)
    return message


def _timestamp(value: Any, where: str) -> str:
    """The normalized UTC form of a message timestamp (docs/store.md#timestamps)."""
    if not isinstance(value, str):
        raise IngestError(f"{where} must be an ISO-8601 string, got {_describe(value)}")
    try:
        normalized = normalize_timestamp(value)
    except ValueError:
        raise IngestError(
            f"{where} is not an ISO-8601 date or date-time (e.g. 2026-03-01T09:30:00Z): {value!r}"
        ) from None
    assert normalized is not None
    return normalized


def _check_storable(message: Mapping[str, Any], where: str) -> None:
    """Reject what the store would refuse mid-write: metadata JSON cannot hold (NaN,
    infinity, non-string keys), text that is not valid Unicode (lone surrogates) and
    text holding a NUL, which no back end stores (docs/errors.md)."""
    try:
        check_metadata(message.get("metadata"))
    except ValueError as exc:
        raise IngestError(f"{where}: bad 'metadata': {exc}") from None
    for key, value in message.items():
        if not isinstance(value, str):
            continue
        if "\x00" in value:
            raise IngestError(
                f"{where}: '{key}' contains a NUL character (U+0000) at index {value.index(chr(0))}"
            )
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise IngestError(
                f"{where}: '{key}' is not valid Unicode text ({exc.reason} at "
                f"character {exc.start})"
            ) from None


def _locomo_sample(
    file: Path,
    sample: Mapping[str, Any],
    index: int,
    user_id: str | None,
    agent_id: str | None,
) -> list[Conversation]:
    sample_id = sample.get("sample_id", f"{file.stem}-{index}")
    if not isinstance(sample_id, str) or not sample_id:
        raise IngestError(f"{file}: [{index}]: 'sample_id' must be a non-empty string")
    where = f"{file}: sample {sample_id!r}"
    conversation = sample["conversation"]
    if not isinstance(conversation, Mapping):
        raise IngestError(f"{where}: 'conversation' must be an object")
    roles: dict[str, str] = {}
    for key, role in (("speaker_a", "user"), ("speaker_b", "assistant")):
        speaker = conversation.get(key)
        if not isinstance(speaker, str) or not speaker:
            raise IngestError(f"{where}: conversation.{key} must be a non-empty string")
        roles[speaker] = role
    numbers = sorted(
        int(match.group(1))
        for key in conversation
        if (match := _SESSION_KEY.fullmatch(key)) is not None
    )
    if not numbers:
        raise IngestError(f"{where}: the conversation has no session_<n> lists")
    conversations: list[Conversation] = []
    for number in numbers:
        name = f"session_{number}"
        turns = conversation[name]
        if not isinstance(turns, list):
            raise IngestError(f"{where}: {name} must be a list of turns")
        if not turns:
            continue
        timestamp = _locomo_time(conversation.get(f"{name}_date_time"), f"{where} {name}")
        locations = [f"{where} {name}[{position}]" for position in range(len(turns))]
        messages = [
            _locomo_turn(turn, roles, timestamp, location)
            for turn, location in zip(turns, locations, strict=True)
        ]
        conversations.append(
            Conversation(
                thread_id=f"{sample_id}-s{number}",
                user_id=user_id if user_id is not None else sample_id,
                agent_id=agent_id,
                messages=messages,
                locations=locations,
                sample_id=sample_id,
            )
        )
    return conversations


def _locomo_time(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise IngestError(f"{where}_date_time must be a string, got {_describe(value)}")
    try:
        # LoCoMo writes "1:56 pm on 8 May, 2023": free-form, so dateutil's parser.
        return normalize_timestamp(date_parser.parse(value)) or ""
    except (ValueError, OverflowError) as exc:
        raise IngestError(f"{where}_date_time: cannot parse date {value!r}") from exc


def _locomo_turn(
    turn: Any, roles: Mapping[str, str], timestamp: str | None, where: str
) -> dict[str, Any]:
    if not isinstance(turn, Mapping):
        raise IngestError(f"{where}: expected a turn object, got {_describe(turn)}")
    speaker, text, dia_id = turn.get("speaker"), turn.get("text"), turn.get("dia_id")
    if not isinstance(speaker, str) or speaker not in roles:
        raise IngestError(
            f"{where}: speaker {speaker!r} is neither speaker_a nor speaker_b "
            f"({', '.join(map(repr, roles))})"
        )
    if isinstance(dia_id, str) and dia_id:
        where = f"{where} (turn {dia_id})"
    if "text" not in turn:
        keys = ", ".join(sorted(map(str, turn))) or "none"
        raise IngestError(f"{where}: the turn has no 'text' (its keys: {keys})")
    if not isinstance(text, str):
        raise IngestError(f"{where}: 'text' must be a string, got {_describe(text)}")
    if not isinstance(dia_id, str) or not dia_id:
        raise IngestError(f"{where}: 'dia_id' must be a non-empty string, got {dia_id!r}")
    caption = turn.get("blip_caption")
    content = f"{text} [{caption}]" if isinstance(caption, str) and caption.strip() else text
    message: dict[str, Any] = {
        "role": roles[speaker],
        "content": content,
        # The speaker's name is the message's participant name: the thread makes it
        # part of the retrieval text (memory/indexing.py).
        "metadata": {"dia_id": dia_id, MESSAGE_KEY: {"name": speaker}},
    }
    if timestamp is not None:
        message["timestamp"] = timestamp
    _check_storable(message, where)
    return message


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "array"
    return "object"


def _describe(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"a JSON {_json_type(value)} ({text})"
