"""Turn an LLM reply into JSON, repairing what models commonly get wrong (docs/llms.md#reading-json-out-of-a-reply).

A pipeline pass repairs a reply it can and, when it cannot, warns and leaves its
messages for the next pass (docs/memory-pipeline.md#failures-never-lose-messages). ``parse_json_reply`` does the
repairing; it raises ``UnusableReplyError`` when nothing trustworthy is left, and the
caller skips its pass.

How a reply is read, in order:

1. Unicode clean-up: a leading BOM is dropped, surrogate pairs written as two code
   points are joined and lone surrogates are dropped (they cannot be stored as UTF-8).
2. A ``<think>...</think>`` reasoning block at the start is removed.
3. JSON is looked for where it plausibly starts: a ``{`` followed by a quoted key, an
   ``identifier:`` key or ``}``; a ``[`` followed by a JSON value or ``]``. So prose
   such as "use {name}" or "the set [a, b]" is never read as JSON. Code fences and
   prose around the JSON are skipped this way.
4. From each such start, the outermost value is delimited by a bracket scanner
   that knows JSON strings and escapes. It is parsed strictly; failing that, after
   escaping invalid backslashes (``\\q`` → a literal backslash and ``q``); failing
   that, by ``json_repair`` (trailing commas, smart or single quotes, unquoted keys,
   comments, Python literals, missing commas, ...). A value that still fails is
   skipped and the search goes on after it, never inside it.
5. Strings in the result get the same surrogate clean-up; NaN and infinities become
   None (they are not JSON).
6. Without a ``schema`` the first value of the expected type is the answer. With one
   (the schema the prompt asked for), every complete value is a candidate and the
   *last* one that validates and holds at least one item wins (``jsonschema``):
   models often show an example (``Example: {"memories": []}``) before the real
   answer, or an empty one after it ("if nothing were worth keeping I would answer
   ``{"memories": []}``"). An empty value that fits (every member an empty array,
   object or string, or null) wins only when no fitting value holds items. A value
   equal to one of ``forms`` (the answer form the prompt showed, echoed by the
   model) is never chosen. A reply whose values all fail the schema is unusable,
   with the validation error in the message.

Why ``json_repair`` behind these guards rather than alone: it is well kept and repairs
much more than this module would, but given prose it invents structure ("I think
{maybe} this" becomes ``["maybe} this"]``), returns ``""`` instead of failing, keeps
lone surrogates and returns ``nan``. The guards above keep its repairs to text that is
really JSON.

Truncated JSON (the model hit its token limit) has no closing bracket. It is refused
by default, because the last value would be cut short and stored as if complete;
``allow_incomplete=True`` lets ``json_repair`` close it instead.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import json_repair
import jsonschema
import jsonschema.validators

from oam_core.errors import LLMError

__all__ = ["UnusableReplyError", "parse_json_reply"]

logger = logging.getLogger("oam")

_THINK = re.compile(r"\A\s*<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_OBJECT_START = re.compile(r"\{\s*(?:[\"'“‘}]|[A-Za-z_$][\w$-]*\s*:)")
_ARRAY_START = re.compile(
    r"\[\s*(?:[\]\[{\"'“‘\d-]|(?:true|false|null|True|False|None)\s*[,\]])", re.ASCII
)
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_VALID_ESCAPES = frozenset('"\\/bfnrt')
_PREVIEW = 200


class UnusableReplyError(LLMError, ValueError):
    """No usable JSON could be recovered from a model reply (an ``LLMError`` and a
    ``ValueError``; docs/errors.md).

    Attributes:
        reply: The reply text as received.
    """

    def __init__(self, message: str, reply: str) -> None:
        super().__init__(message)
        self.reply = reply


def parse_json_reply(
    text: str,
    *,
    expect: type | tuple[type, ...] = dict,
    allow_incomplete: bool = False,
    schema: dict[str, Any] | None = None,
    normalize: Callable[[Any], Any] | None = None,
    forms: Sequence[Any] = (),
) -> Any:
    """Parse the JSON value in a model reply, repairing common defects.

    Args:
        text: The model's reply, as returned by ``ILlm.generate``.
        expect: Type(s) the top-level value must have: ``dict`` for an object reply
            (both JSON replies of the memory pipeline are objects), ``(dict, list)`` to accept an
            array too; values of other types are passed over while searching.
        allow_incomplete: When True, JSON cut off before its closing bracket is
            closed by ``json_repair`` instead of refused.
        schema: A JSON schema the answer must fit; then the last complete value
            that fits and holds items wins, else the last empty one that fits
            (module docstring, step 6).
        normalize: Applied to each candidate before it is validated (e.g. folding
            the case of an enum value); its result is what is returned.
        forms: JSON values never chosen as the answer: the answer form the prompt
            showed, which models echo (compared as parsed, before ``normalize``;
            only with a ``schema``).

    Returns:
        The chosen JSON value (module docstring says how it is found and repaired),
        with lone surrogates removed from strings and non-finite numbers replaced
        by None.

    Raises:
        TypeError: if ``text`` is not a str.
        UnusableReplyError: if the reply holds no such value: empty or prose-only
            replies, JSON of another type, JSON beyond repair, (unless
            ``allow_incomplete``) JSON cut off before its end, or no value that fits
            ``schema``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    candidates, incomplete = _candidates(text, expect, allow_incomplete, every=schema is not None)
    if incomplete:
        raise _unusable("its JSON is cut off before the end (token limit?)", text)
    if schema is None:
        if candidates:
            return candidates[0]
    else:
        validator = _validator(json.dumps(schema, sort_keys=True))
        problem = ""
        fitting: list[Any] = []
        for value in reversed(candidates):
            if any(value == form for form in forms):
                problem = problem or "it repeats the answer form of the prompt"
                continue
            shaped = normalize(value) if normalize is not None else value
            error = jsonschema.exceptions.best_match(validator.iter_errors(shaped))
            if error is not None:
                problem = problem or f"{error.json_path}: {error.message}"
            elif not _is_empty(shaped):
                return shaped
            else:
                fitting.append(shaped)
        if fitting:
            return fitting[0]  # the last fitting value; every fitting value is empty
        if candidates:
            raise _unusable(f"its JSON does not fit the reply schema ({problem})", text)
    names = " or ".join(t.__name__ for t in (expect if isinstance(expect, tuple) else (expect,)))
    raise _unusable(f"it holds no usable JSON {names}", text)


def _candidates(
    text: str, expect: type | tuple[type, ...], allow_incomplete: bool, *, every: bool
) -> tuple[list[Any], bool]:
    """The complete JSON values of an ``expect`` type in ``text``, in order (only the
    first unless ``every``), and whether the reply ends in a value cut off before its
    end (refused unless ``allow_incomplete``: the answer may be the cut one)."""
    cleaned = _THINK.sub("", _clean_str(text).lstrip("\ufeff"))
    found: list[Any] = []
    for start, end in _spans(cleaned):
        if end is None and not allow_incomplete:
            return found, True
        value = _parse(cleaned[start:end] if end is not None else cleaned[start:])
        if value is not _FAILED and isinstance(value, expect):
            found.append(_clean_value(value))
            if not every:
                break
    return found, False


def _is_empty(value: Any) -> bool:
    """True for a value that holds no items: an empty array or object, or an object
    whose every member is an empty array, object or string, or null (``{"memories": []}``)."""
    if isinstance(value, dict):
        return all(
            v is None or (isinstance(v, (list, dict, str)) and not v) for v in value.values()
        )
    return isinstance(value, list) and not value


def _unusable(problem: str, text: str) -> UnusableReplyError:
    return UnusableReplyError(
        f"unusable model reply: {problem}: {text[:_PREVIEW]!r}"
        + ("..." if len(text) > _PREVIEW else ""),
        text,
    )


@functools.lru_cache(maxsize=16)
def _validator(schema_json: str) -> Any:
    """A checked ``jsonschema`` validator for a schema given as JSON text (cached)."""
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


_FAILED: Any = object()


def _parse(span: str) -> Any:
    """Strict parse, then with escaped stray backslashes, then ``json_repair``."""
    try:
        return json.loads(span)
    except ValueError:
        pass
    escaped = _ESCAPE.sub(_fix_escape, span)
    if escaped != span:
        try:
            value = json.loads(escaped)
        except ValueError:
            pass
        else:
            logger.debug("model reply repaired: invalid escapes")
            return value
    try:
        value = json_repair.repair_json(escaped, return_objects=True, skip_json_loads=True)
    except Exception:  # json_repair is heuristic: any failure means "beyond repair"
        return _FAILED
    if value == "" or value is None:
        return _FAILED
    logger.debug("model reply repaired by json_repair")
    return value


def _fix_escape(match: re.Match[str]) -> str:
    """Keep a valid JSON escape; make any other backslash a literal one."""
    escape = match.group(1)
    if len(escape) == 5 or escape in _VALID_ESCAPES:
        return match.group(0)
    return "\\\\" + escape


def _spans(text: str) -> Iterator[tuple[int, int | None]]:
    """Plausible JSON starts with their balanced end (None if never closed), in order.

    After a span the search resumes at its end: values nested inside a span are not
    offered on their own.
    """
    position = 0
    while True:
        start = _next_start(text, position)
        if start is None:
            return
        end = _balanced_end(text, start)
        yield start, end
        if end is None:
            return
        position = end


def _next_start(text: str, position: int) -> int | None:
    while True:
        brace = text.find("{", position)
        bracket = text.find("[", position)
        candidates = [i for i in (brace, bracket) if i >= 0]
        if not candidates:
            return None
        start = min(candidates)
        pattern = _OBJECT_START if text[start] == "{" else _ARRAY_START
        if pattern.match(text, start):
            return start
        position = start + 1


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the bracket closing ``text[start]``, or None if it never closes."""
    depth = 0
    in_string = False
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def _clean_str(text: str) -> str:
    """Join surrogate pairs written as two code points and drop lone surrogates."""
    if not any("\ud800" <= char <= "\udfff" for char in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "ignore")


def _clean_value(value: Any) -> Any:
    if isinstance(value, str):
        return _clean_str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {_clean_str(str(k)): _clean_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean_value(v) for v in value]
    return value
