"""What ``oam mcp`` and ``oam serve`` share (with ``oam search`` and ``oam card``):
opening the client from a ``--db`` URL, the strategy searches rank with, turning
records into JSON-ready dicts, and reading the library-owned provenance and supersede
keys (docs/service.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oam_core import (
    OracleAgentMemory,
    OracleMemoryStore,
    OracleThread,
    SchemaPolicy,
    SearchStrategy,
)
from oam_core.apis.records import MEMORY_TYPES, MessageRecord, Record, ThreadRow
from oam_core.connection import backend_of, sqlite_holds_store, sqlite_target
from oam_core.errors import ConfigurationError, MissingApiKeyError, SchemaError
from oam_core.memory.provenance import reserved_keys

DEFAULT_MAX_CONTENT_CHARS = 100_000
"""Most characters of one message or memory, and of all messages of one
``add_messages`` call (``oam mcp --max-content-chars``)."""
DEFAULT_MAX_QUERY_CHARS = 4_000
"""Most characters of a search query (``oam mcp`` and ``oam serve``
``--max-query-chars``): a longer one is refused before it is embedded."""

__all__ = [
    "MEMORY_TYPE_NAMES",
    "SCORE_KINDS",
    "check_llm",
    "checked_strategy",
    "hit_score_kind",
    "open_memory",
    "open_thread",
    "provenance",
    "record_json",
    "score_kind",
    "search_strategy_for",
    "thread_json",
    "window_text",
]

MEMORY_TYPE_NAMES = tuple(sorted(MEMORY_TYPES))
"""The memory-like record types: fact, guideline, memory, preference."""


def open_memory(
    db: str,
    *,
    embedder: str | None = "local",
    llm: str | None = None,
    llm_api_base: str | None = None,
    search_strategy: SearchStrategy | str | None = None,
    must_exist: bool = False,
    missing_hint: str | None = None,
    schema_policy: SchemaPolicy | str | None = None,
) -> OracleAgentMemory:
    """Open the client over ``db`` the way both commands do.

    Args:
        db: A SQLite path or ``sqlite:///`` URL, or a ``postgresql://`` URL
            (``oam[postgres]``).
        embedder: ``"local"``, ``"hashing/<dim>"``, a LiteLLM embedding model id, or
            None for no embedder (then only KEYWORD search ranks text).
        llm: A LiteLLM model id; when given, threads extract memories from the
            messages they receive (``oam[litellm]``), else extraction is off.
        llm_api_base: Base URL of the LLM's API (an OpenAI-compatible server).
        search_strategy: ``vector``, ``keyword`` or ``hybrid``; None keeps the
            store's own (the constructor's default for a new SQLite file).
        must_exist: Refuse to create a store: a missing SQLite file or a PostgreSQL
            database without an oam store is an error.
        missing_hint: What the error for a missing store suggests doing; None (``oam
            serve``, which has no ``--create``) names ``oam ingest`` with the SQLite
            path as given (a URL is not repeated: it may hold a password), or
            ``oam import DUMP --db ... --create``.
        schema_policy: ``SchemaPolicy`` or its name (docs/store.md#schema-policies);
            None = ``REQUIRE_EXISTING`` when ``must_exist``, else
            ``CREATE_IF_NECESSARY``. A given policy decides alone (``must_exist``
            is then ignored).

    Returns:
        The client; the caller closes it.

    Raises:
        SchemaError: (a ValueError) for a missing database or store when
            ``must_exist`` (``<db>: no such database; <missing_hint>`` for SQLite).
        ValueError: for a malformed URL, or a store that does not match the options
            (dimension, embedder).
        ImportError: when the embedder, LLM or back end needs an extra that is not
            installed.
        ConfigurationError: for an LLM that cannot answer (``check_llm``), before
            the store is opened or created.
    """
    kwargs: dict[str, Any] = {"embedder": embedder}
    if schema_policy is not None:
        policy = SchemaPolicy.parse(schema_policy)
        must_exist = policy is SchemaPolicy.REQUIRE_EXISTING
    else:
        policy = SchemaPolicy.REQUIRE_EXISTING if must_exist else SchemaPolicy.CREATE_IF_NECESSARY
    if search_strategy is not None:
        kwargs["search_strategy"] = SearchStrategy.parse(search_strategy)
    if missing_hint is None:
        missing_hint = _create_hint(db)
    target = _checked_target(db, must_exist, missing_hint)
    kwargs["schema_policy"] = policy
    if llm is not None:
        from oam_core.llms.litellm import LiteLLMLlm

        kwargs["llm"] = LiteLLMLlm(llm, api_base=llm_api_base)
        check_llm(llm, llm_api_base)
        kwargs["extract_memories"] = True
    else:
        kwargs["extract_memories"] = False
    try:
        return OracleAgentMemory.open(target, **kwargs)
    except SchemaError as exc:
        if must_exist and "has no oam store" in str(exc):  # the URL may hold a password
            raise SchemaError(f"{exc}; {missing_hint}") from exc
        raise


def check_llm(model: str, api_base: str | None) -> None:
    """Refuse, before a command serves, an ``--llm`` that no request could reach:
    a model id whose provider LiteLLM cannot tell, or a provider that needs an API
    key the environment does not hold (docs/llms.md#errors). Found later, at the
    first ``add_messages``, the messages would be stored and the extraction left
    for a restart. With ``api_base`` (a server of your own may need no key and
    names its own models) nothing is refused.

    Args:
        model: A LiteLLM model id, e.g. ``"openai/gpt-4o-mini"``.
        api_base: ``--llm-api-base``, or None.

    Raises:
        MissingApiKeyError: naming the environment variable to set.
        UnknownModelError: naming the model id and the accepted forms.
        ImportError: when litellm is not installed (``oam[litellm]``).
    """
    from oam_core._litellm import check_api_key, check_known_model, import_litellm

    litellm = import_litellm("--llm")
    request = {} if api_base is None else {"api_base": api_base}
    check_known_model(model, litellm, request)
    try:
        check_api_key(model, litellm, request)
    except MissingApiKeyError as exc:  # no api_key= on the command line
        text = str(exc).replace(", or pass api_key=...", " in the environment of this command")
        raise MissingApiKeyError(
            f"{text} (or --llm-api-base for a server that needs none)"
        ) from None


def _checked_target(db: str, must_exist: bool, missing_hint: str) -> str:
    """What to open for ``db``: a SQLite path expanded (refused when ``must_exist``
    and there is no file, or no oam store in it), any other URL as given."""
    if backend_of(db) != "sqlite":
        return db
    target = sqlite_target(db)
    if target == ":memory:":
        return target
    target = str(Path(target).expanduser())
    if must_exist and not Path(target).exists():
        raise SchemaError(f"{db}: no such database; {missing_hint}")
    if must_exist and not sqlite_holds_store(target):
        raise SchemaError(f"{db}: no oam store there; {missing_hint}")
    return target


def _create_hint(db: str) -> str:
    """How to create the store ``db`` names, for a command without ``--create``
    (``oam serve``): the SQLite path as given; a URL is not repeated (it may hold a
    password)."""
    shown = db if backend_of(db) == "sqlite" else "URL"
    return (
        f"create it with `oam ingest FILE --db {shown}` or `oam import DUMP --db {shown} --create`"
    )


SCORE_KINDS = {
    SearchStrategy.VECTOR: "cosine",
    SearchStrategy.KEYWORD: "keyword",
    SearchStrategy.HYBRID: "hybrid",
}
"""The label of ``score = 1 - distance`` for each strategy (docs/cli.md#scores)."""


def hit_score_kind(distance: float, kind: str) -> str:
    """The label of one hit's ``score = 1 - distance`` (docs/cli.md#scores): what the
    distance says it measures (a store's distances carry a ``kind``), else ``kind``,
    the label of the strategy that ranked it (``SCORE_KINDS``). A fused distance is
    ``hybrid`` under HYBRID and ``fused`` under another strategy (memories fused with
    messages, or a long KEYWORD query searched in parts); a re-ranked one is ``reranked``."""
    measured = getattr(distance, "kind", None)
    if measured is None:
        return kind
    value = str(getattr(measured, "value", measured))
    if value == "fused":
        return "hybrid" if kind == "hybrid" else "fused"
    return "hybrid" if value == "hybrid_index" else value


def open_thread(memory: OracleAgentMemory, thread_id: str) -> OracleThread:
    """``memory.get_thread(thread_id)`` for a tool (``oam card``, the inspector,
    ``oam mcp``): without an LLM on ``memory``, a thread created with
    ``query_rewrite=True`` opens with it off for this handle (the stored setting is
    kept), instead of refusing to open (docs/context-card.md#query-rewriting).

    Raises:
        NotFoundError: when the thread does not exist.
    """
    if memory.llm is None:
        return memory.get_thread(thread_id, query_rewrite=False)
    return memory.get_thread(thread_id)


def checked_strategy(
    given: SearchStrategy | str | None, *, has_embedder: bool
) -> SearchStrategy | None:
    """``given`` (``--strategy``) as a ``SearchStrategy`` (None stays None), refused
    when it cannot rank a text: the half of ``search_strategy_for`` a command checks
    before it opens (or creates) the store.

    Args:
        given: ``SearchStrategy``, its name, or None when the user chose none.
        has_embedder: Whether the store is (to be) opened with an embedder.

    Raises:
        InvalidArgumentError: (a ValueError) for an unknown strategy name.
        ConfigurationError: (a ValueError) for VECTOR or HYBRID without an
            embedder, naming the option (``search_strategy=``, which the command
            line shows as ``--strategy``).
    """
    if given is None:
        return None
    chosen = SearchStrategy.parse(given)
    if not has_embedder and chosen is not SearchStrategy.KEYWORD:
        raise ConfigurationError(
            f"search_strategy={chosen.name} ranks text with an embedder, and there is "
            "none (embedder=None): configure one, or use search_strategy=KEYWORD"
        )
    return chosen


def search_strategy_for(
    store: OracleMemoryStore, given: SearchStrategy | str | None
) -> SearchStrategy | None:
    """The strategy a command or server ranks the searches of ``store`` with, for
    ``store.searching_with``: ``given`` (``--strategy``, ``checked_strategy``);
    without it, KEYWORD when the store has no embedder and its own strategy (VECTOR,
    HYBRID) needs one to rank a text; else None, the store's own. The one rule of
    ``oam search``, ``oam card``, ``oam demo``, ``oam mcp`` and ``oam serve``
    (docs/cli.md#embedders: ``--embedder none`` ranks by keywords).

    Args:
        store: The opened store (``OracleAgentMemory.store``).
        given: ``SearchStrategy``, its name, or None when the user chose none.

    Returns:
        The strategy to rank with, or None for the store's own.

    Raises:
        InvalidArgumentError: (a ValueError) for an unknown strategy name.
        ConfigurationError: (a ValueError) for VECTOR or HYBRID given to a store
            without an embedder, which could rank no text.
    """
    chosen = checked_strategy(given, has_embedder=store.embedder is not None)
    if chosen is not None:
        return chosen
    if store.embedder is None and store.search_strategy is not SearchStrategy.KEYWORD:
        return SearchStrategy.KEYWORD
    return None


def score_kind(store: object) -> str:
    """What ``score = 1 - distance`` measures for the searches ``store`` ranks now
    (inside ``searching_with``: the override): ``cosine``, ``keyword`` or ``hybrid``,
    the labels of ``oam search`` (docs/cli.md#scores). A store without an embedder
    ranks by keywords only inside ``searching_with(search_strategy_for(store, None))``;
    outside it, its VECTOR or HYBRID search of a text is refused."""
    from oam_core.store.strategy import strategy_of

    return SCORE_KINDS[strategy_of(store)]


def provenance(record: Record) -> dict[str, Any]:
    """The library-owned keys of a memory (``metadata["$agent_memory"]``), normalized.

    Returns:
        ``{"source_message_ids": [str, ...], "status": str | None,
        "superseded_by": str | None, "reason": str | None}``.
    """
    keys = reserved_keys(record)
    sources = keys.get("source_message_ids")
    return {
        "source_message_ids": [s for s in sources if isinstance(s, str)]
        if isinstance(sources, list)
        else [],
        "status": _text_or_none(keys.get("status")),
        "superseded_by": _text_or_none(keys.get("superseded_by")),
        "reason": _text_or_none(keys.get("reason")),
    }


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def record_json(
    record: Record, distance: float | None = None, kind: str | None = None
) -> dict[str, Any]:
    """A record as a JSON-ready dict (``role`` and ``seq_no`` for messages; the
    validity window ``valid_from``/``valid_until`` and the supersede keys for
    memories (docs/versions.md); for a search hit ``score`` = ``1 - distance``,
    higher is better, ``score_kind`` = what the distance measures
    (``hit_score_kind``; ``kind`` is ``score_kind(store)``) and the raw
    ``distance``, as ``oam search --json``; metadata without the library-owned key)."""
    metadata = {k: v for k, v in (record.metadata or {}).items() if k != "$agent_memory"}
    out: dict[str, Any] = {
        "id": record.id,
        "record_type": record.record_type,
        "content": record.content,
        "timestamp": record.timestamp,
        "created_at": record.created_at,
        "thread_id": record.thread_id,
        "user_id": record.user_id,
        "agent_id": record.agent_id,
        "metadata": metadata or None,
    }
    if isinstance(record, MessageRecord):
        out["role"] = record.role
        out["seq_no"] = record.seq_no
    if record.record_type in MEMORY_TYPES:
        out["valid_from"] = record.valid_from
        out["valid_until"] = record.valid_until
        out.update(provenance(record))
    if distance is not None:
        out["score"] = 1.0 - distance
        out["score_kind"] = kind if kind is None else hit_score_kind(distance, kind)
        out["distance"] = distance
    return out


def thread_json(row: ThreadRow, message_count: int | None = None) -> dict[str, Any]:
    """A thread row as a JSON-ready dict (runtime config and state left out)."""
    out: dict[str, Any] = {
        "thread_id": row.thread_id,
        "user_id": row.user_id,
        "agent_id": row.agent_id,
        "metadata": row.metadata,
        "created_at": row.created_at,
    }
    if message_count is not None:
        out["message_count"] = message_count
    return out


def window_text(record: Record) -> str:
    """``"from 2026-03-01T10:00:00Z until 2026-04-02T09:00:00Z"``, ``"from ... on"``,
    ``"until ..."`` or ``"always"``."""
    start, end = record.valid_from, record.valid_until
    if start is None and end is None:
        return "always"
    if end is None:
        return f"from {start} on"
    return f"until {end}" if start is None else f"from {start} until {end}"
