"""A thread's runtime options, defined once (docs/concepts.md#the-client-and-threads,
docs/store.md#defaults); the argument checks of the client and threads are in
``oam_core.checks``.

``ThreadConfig`` is the one definition of the eight options: names, types, defaults,
checks and meaning. The public entry points that take them (``OracleThread()``,
``create_thread``/``get_thread`` and their async twins) declare them as
``**options: Unpack[ThreadOptionArgs]`` for the type checker, and
``with_thread_options`` gives them at run time the exact signatures of the reference
pages: each option a named parameter at its place (positional use included).
``tests/unit/test_signatures.py`` pins those signatures and ``ThreadOptionArgs``
against ``ThreadConfig``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, ParamSpec, TypedDict, TypeVar, cast

from oam_core.apis._sentinel import NOT_SET
from oam_core.checks import check_bool, check_int
from oam_core.errors import InvalidArgumentError

P = ParamSpec("P")
T = TypeVar("T")


# -------------------------------------------------------------------------- config

_INT64 = 2**63
"""Options are persisted on the thread row as JSON, whose integers the stores hold in
64 bits."""


def _check_option_int(value: object, name: str) -> int:
    """``value`` if it is an int that fits in 64 bits.

    Raises:
        InvalidArgumentError: naming the option otherwise.
    """
    number = check_int(value, name)
    if not -_INT64 <= number < _INT64:
        raise InvalidArgumentError(
            f"{name} must fit in 64 bits (from -2**63 to 2**63 - 1), got {number!r}"
        )
    return number


@dataclass(frozen=True)
class ThreadConfig:
    """Runtime options of a thread, persisted on its row
    (docs/concepts.md#the-client-and-threads, docs/memory-pipeline.md#extraction-cadence).

    Attributes:
        max_message_token_length: Tokens above which a message's prompt copy is
            shortened (stored text never changes); ``<= 0`` disables shortening.
        message_shortening_input_token_limit: Tokens of message excerpt sent to the
            LLM when shortening; ``<= 0`` disables the bound.
        memory_extraction_window: Recent messages shown as extraction context;
            ``-1`` = the newly added batch.
        context_summary_update_frequency: Messages between running-summary updates;
            ``-1`` = once per ``add_messages`` call.
        memory_extraction_frequency: Messages between extraction passes; ``-1`` =
            once per ``add_messages`` call.
        memory_extraction_token_limit: Token bound of extraction and summary prompts;
            ``<= 0`` disables it.
        context_card_token_limit: Token bound of the whole rendered context card (and
            of the LLM prompt that writes its summary); ``<= 0`` disables it (C06).
        enable_context_summary: Whether a running summary is kept (needs an LLM).

    Raises:
        InvalidArgumentError: naming the option, if a value has the wrong type or
            does not fit in 64 bits, or a window or frequency is neither ``-1`` nor
            positive.
    """

    max_message_token_length: int = 15_000
    message_shortening_input_token_limit: int = 30_000
    memory_extraction_window: int = -1
    context_summary_update_frequency: int = -1
    memory_extraction_frequency: int = -1
    memory_extraction_token_limit: int = 100_000
    context_card_token_limit: int = 100_000
    enable_context_summary: bool = False

    def __post_init__(self) -> None:
        for name in (
            "max_message_token_length",
            "message_shortening_input_token_limit",
            "memory_extraction_token_limit",
            "context_card_token_limit",
        ):
            _check_option_int(getattr(self, name), name)
        for name in (
            "memory_extraction_window",
            "context_summary_update_frequency",
            "memory_extraction_frequency",
        ):
            value = _check_option_int(getattr(self, name), name)
            if value != -1 and value < 1:
                raise InvalidArgumentError(f"{name} must be -1 or a positive int, got {value!r}")
        check_bool(self.enable_context_summary, "enable_context_summary")

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """Names of all options, in declaration order."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def resolve(
        cls, explicit: Mapping[str, Any], persisted: Mapping[str, Any] | None = None
    ) -> ThreadConfig:
        """Build a config: explicit values beat persisted ones, which beat defaults.

        Args:
            explicit: Option values given by the caller; ``NOT_SET`` entries are
                ignored.
            persisted: A thread row's ``config`` object; unknown keys are ignored.

        Raises:
            InvalidArgumentError: if a resulting value is invalid.
        """
        values: dict[str, Any] = {}
        for name in cls.option_names():
            if explicit.get(name, NOT_SET) is not NOT_SET:
                values[name] = explicit[name]
            elif persisted is not None and name in persisted:
                values[name] = persisted[name]
        return cls(**values)

    def as_kwargs(self) -> dict[str, Any]:
        """The options as a JSON object (what ``create_thread`` persists)."""
        return asdict(self)

    def as_options(self) -> ThreadOptionArgs:
        """The options as keyword arguments of ``OracleThread``."""
        return cast(ThreadOptionArgs, asdict(self))


class ThreadOptionArgs(TypedDict, total=False):
    """The ``ThreadConfig`` options as keyword arguments (for ``Unpack``); the field
    list must equal ``ThreadConfig``'s (a test pins it)."""

    max_message_token_length: int
    message_shortening_input_token_limit: int
    memory_extraction_window: int
    context_summary_update_frequency: int
    memory_extraction_frequency: int
    memory_extraction_token_limit: int
    context_card_token_limit: int
    enable_context_summary: bool


class OpenThreadArgs(ThreadOptionArgs, total=False):
    """``create_thread``/``get_thread`` keyword arguments beyond the named ones: the
    thread options and ``persist_messages_in_config`` (accepted and ignored)."""

    persist_messages_in_config: bool


OPTION_NAMES: tuple[str, ...] = ThreadConfig.option_names()
"""The option names, in the order of the client's methods (as in Oracle's SDK; docs/concepts.md#the-client-and-threads)."""
THREAD_INIT_ORDER: tuple[str, ...] = (
    "memory_extraction_window",
    "context_summary_update_frequency",
    "memory_extraction_frequency",
    "memory_extraction_token_limit",
    "context_card_token_limit",
    "max_message_token_length",
    "message_shortening_input_token_limit",
    "enable_context_summary",
)
"""The same names in the order ``OracleThread()`` takes them (as in Oracle's SDK)."""
assert sorted(THREAD_INIT_ORDER) == sorted(OPTION_NAMES)

_DEFAULTS = ThreadConfig()


def split_options(kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(options, rest)``: the ``ThreadConfig`` options among ``kwargs`` and the others."""
    options = {k: v for k, v in kwargs.items() if k in OPTION_NAMES}
    return options, {k: v for k, v in kwargs.items() if k not in OPTION_NAMES}


def with_thread_options(
    *,
    after: str,
    positional: Sequence[str] = (),
    order: Sequence[str] = OPTION_NAMES,
    defaults: bool = False,
    var_keyword: str | None = None,
) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Give a function declared with ``**options: Unpack[ThreadOptionArgs]`` the
    signature of the reference pages: the options as named parameters right after
    ``after``, in ``order``.

    Args:
        after: The parameter the options follow.
        positional: Keyword-only parameters of the function that follow the options
            as positional-or-keyword ones (in this order).
        order: The options' order.
        defaults: Each option defaults to ``ThreadConfig``'s value (else ``NOT_SET``:
            omitted).
        var_keyword: Keep a ``**<var_keyword>`` parameter at the end (the function's
            own catch-all receives the extra keywords).

    Returns:
        A decorator; the decorated function binds its arguments to the new signature
        and calls the function with keywords, so positional options work too.
    """

    def decorate(fn: Callable[P, T]) -> Callable[P, T]:
        old = list(inspect.signature(fn).parameters.values())
        cut = next(i for i, p in enumerate(old) if p.name == after) + 1
        kinds = inspect.Parameter
        head = old[:cut]
        rest = [p for p in old[cut:] if p.kind is not kinds.VAR_KEYWORD]
        moved = [next(p for p in rest if p.name == name) for name in positional]
        options = [
            kinds(
                name,
                kinds.POSITIONAL_OR_KEYWORD,
                default=getattr(_DEFAULTS, name) if defaults else NOT_SET,
                annotation=_OPTION_ANNOTATIONS[name]
                if defaults
                else f"Maybe[{_OPTION_ANNOTATIONS[name]}]",
            )
            for name in order
        ]
        tail = [p.replace(kind=kinds.POSITIONAL_OR_KEYWORD) for p in moved]
        tail += [p for p in rest if p.name not in positional]
        if var_keyword is not None:
            tail.append(kinds(var_keyword, kinds.VAR_KEYWORD, annotation="Any"))
        signature = inspect.signature(fn).replace(parameters=[*head, *options, *tail])

        only = [p.name for p in head if p.kind is kinds.POSITIONAL_ONLY]

        @functools.wraps(fn)
        def bound(*args: P.args, **kwargs: P.kwargs) -> T:
            arguments = signature.bind(*args, **kwargs).arguments
            leading = [arguments.pop(name) for name in only if name in arguments]
            flat: dict[str, Any] = {}
            for name, value in arguments.items():
                if name == var_keyword:
                    flat.update(value)
                else:
                    flat[name] = value
            return fn(*leading, **flat)

        bound.__signature__ = signature  # type: ignore[attr-defined]
        del bound.__wrapped__
        return bound

    return decorate


_OPTION_ANNOTATIONS: dict[str, str] = {f.name: str(f.type) for f in fields(ThreadConfig)}
"""Each option's annotation, as ``ThreadConfig`` writes it (``"int"``, ``"bool"``)."""
