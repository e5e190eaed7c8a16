"""A thread's runtime options and their argument checks (SPEC §5-§6, §10)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from oam_core.apis._sentinel import NOT_SET


def check_id(name: str, value: object) -> str:
    """Return ``value`` as an id, generating a uuid4 when it is ``NOT_SET`` (SPEC §5).

    Raises:
        ValueError: if ``value`` is ``None`` or not a non-empty str.
    """
    if value is NOT_SET:
        return str(uuid.uuid4())
    if value is None:
        raise ValueError(f"{name} must be a non-empty str (omit it to generate one), got None")
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty str, got {value!r}")
    return value


def check_scope(name: str, value: object, default: str | None) -> str | None:
    """Resolve a scope id: omitted -> ``default``, ``None`` -> unscoped (SPEC §1).

    Raises:
        ValueError: if ``value`` is neither omitted, None nor a non-empty str.
    """
    if value is NOT_SET:
        return default
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty str or None, got {value!r}")
    return value


def _check_int(name: str, value: object, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return value


def _check_record_id(name: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty str, got {value!r}")
    return value


def _reject_kwargs(method: str, kwargs: Mapping[str, Any]) -> None:
    if kwargs:
        raise TypeError(f"{method}() got unexpected keyword arguments: {sorted(kwargs)}")


def _check_store_kwargs(method: str, kwargs: Mapping[str, Any], reserved: frozenset[str]) -> None:
    clash = sorted(reserved & set(kwargs))
    if clash:
        raise ValueError(f"{method}() sets {clash} itself; they cannot be passed as store_kwargs")


# -------------------------------------------------------------------------- config


@dataclass(frozen=True)
class ThreadConfig:
    """Runtime options of a thread, persisted on its row (SPEC §5-§6, §10).

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
        ValueError: naming the option, if a value has the wrong type, or a window or
            frequency is neither ``-1`` nor positive.
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
            _check_int(name, getattr(self, name))
        for name in (
            "memory_extraction_window",
            "context_summary_update_frequency",
            "memory_extraction_frequency",
        ):
            value = _check_int(name, getattr(self, name))
            if value != -1 and value < 1:
                raise ValueError(f"{name} must be -1 or a positive int, got {value!r}")
        if not isinstance(self.enable_context_summary, bool):
            raise ValueError(
                f"enable_context_summary must be a bool, got {self.enable_context_summary!r}"
            )

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
            ValueError: if a resulting value is invalid.
        """
        values: dict[str, Any] = {}
        for name in cls.option_names():
            if explicit.get(name, NOT_SET) is not NOT_SET:
                values[name] = explicit[name]
            elif persisted is not None and name in persisted:
                values[name] = persisted[name]
        return cls(**values)

    def as_kwargs(self) -> dict[str, Any]:
        """The options as keyword arguments of ``OracleThread``."""
        return asdict(self)
