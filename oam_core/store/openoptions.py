"""The client's database options as a store's keyword arguments (docs/concepts.md#opening).

Pure functions (no I/O) shared by ``connect.open_store`` and the back ends' openers
(``store/postgres/store.py``, ``store/oracle/opener.py``): an opener imports this
module, never ``connect``, so the dispatcher and the openers do not import each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.embedder import IEmbedder
from oam_core.errors import InvalidArgumentError
from oam_core.store.options import SearchStrategy

__all__ = ["resolve_store_embedder", "sql_store_options", "store_id_option"]


def resolve_store_embedder(embedder: object) -> IEmbedder | None:
    """Turn the client's ``embedder`` option into an ``IEmbedder`` (or ``None``).

    Raises:
        InvalidArgumentError: when ``embedder`` is neither an ``IEmbedder``, a model
            id string nor ``None``, or names an unknown model.
    """
    from oam_core.embedders import resolve_embedder

    if embedder is not None and not isinstance(embedder, (IEmbedder, str)):
        raise InvalidArgumentError(
            "embedder must be an IEmbedder, a model id string or None, "
            f"got {type(embedder).__name__}"
        )
    return resolve_embedder(embedder)


def store_id_option(options: Mapping[str, Any]) -> Any:
    """The ``memory_store_id`` to use, from it or its deprecated alias ``table_name_prefix``.

    Returns ``NOT_SET`` when neither is given.

    Raises:
        InvalidArgumentError: when both are given (docs/oracle.md#options).
    """
    prefix, store_id = options["table_name_prefix"], options["memory_store_id"]
    if prefix is not NOT_SET:
        if store_id is not NOT_SET:
            raise InvalidArgumentError("pass either memory_store_id or table_name_prefix, not both")
        return prefix
    return store_id


def sql_store_options(embedder: object, options: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``SQLiteMemoryStore`` and ``PostgresMemoryStore`` that
    the client's options give (those left ``NOT_SET`` are omitted): ``memory_store_id``
    (or its alias), ``search_strategy``, ``memory_retention_config``,
    ``allow_embedder_change`` and the resolved ``embedder``.

    Raises:
        InvalidArgumentError: for an invalid strategy, both store-id options, or an embedder
            that is neither an ``IEmbedder``, a model id nor None.
    """
    kwargs: dict[str, Any] = {}
    store_id = store_id_option(options)
    if store_id is not NOT_SET:
        kwargs["memory_store_id"] = store_id
    if options["search_strategy"] is not NOT_SET:
        kwargs["search_strategy"] = SearchStrategy.parse(options["search_strategy"])
    if options["memory_retention_config"] is not NOT_SET:
        kwargs["memory_retention_config"] = options["memory_retention_config"]
    if options.get("allow_embedder_change", NOT_SET) is not NOT_SET:
        kwargs["allow_embedder_change"] = options["allow_embedder_change"]
    if embedder is not NOT_SET:
        kwargs["embedder"] = resolve_store_embedder(embedder)
    return kwargs
