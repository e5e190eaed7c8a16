"""Embedders: a local offline model, LiteLLM-hosted models and a hashing fake (docs/concepts.md#embedders).

``LocalEmbedder`` and ``LiteLLMEmbedder`` are imported on first access, so importing
this package imports neither their modules nor their optional dependencies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oam_core._lazy import lazy_attributes
from oam_core.apis.embedder import IEmbedder
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import InvalidArgumentError

if TYPE_CHECKING:
    from oam_core.embedders.litellm import LiteLLMEmbedder
    from oam_core.embedders.local import LocalEmbedder

__all__ = [
    "HashingEmbedder",
    "LiteLLMEmbedder",
    "LocalEmbedder",
    "resolve_embedder",
    "resolves_recorded_id",
]

_LAZY = {
    "LocalEmbedder": "oam_core.embedders.local",
    "LiteLLMEmbedder": "oam_core.embedders.litellm",
}
_LOCAL_IDS = frozenset({"local", "local/all-MiniLM-L6-v2"})


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)


def resolve_embedder(embedder: IEmbedder | str | None) -> IEmbedder | None:
    """Turn the ``embedder=`` argument of the client and stores into an embedder.

    Accepted values (docs/concepts.md#embedders):

    * an ``IEmbedder``: returned as is;
    * None or ``"none"`` (any case): None (no embedder; vector search then needs
      ``query_vector``), as the CLI's ``--embedder none``;
    * ``"local"`` or ``"local/all-MiniLM-L6-v2"``: ``LocalEmbedder()``, offline (an oam addition);
    * ``"hashing"`` or ``"hashing/<dim>"``: ``HashingEmbedder(dim)``, the test fake;
    * any other string: a LiteLLM model id, e.g. ``"openai/text-embedding-3-small"``,
      giving ``LiteLLMEmbedder(embedder)``.

    Args:
        embedder: The value to resolve.

    Returns:
        The embedder, or None when ``embedder`` is None or ``"none"``.

    Raises:
        TypeError: if ``embedder`` is not an ``IEmbedder``, a str or None.
        ValueError: if the string is empty, names another ``local/`` model, or has a
            ``hashing/`` dimension that is not a positive int.
        ImportError: if the chosen embedder's optional dependencies are missing
            (``oam[local]`` or ``oam[litellm]``).
    """
    if embedder is None or isinstance(embedder, IEmbedder):
        return embedder
    if not isinstance(embedder, str):
        raise TypeError(
            "embedder must be an IEmbedder, a model id string or None, "
            f"got {type(embedder).__name__}: {embedder!r}"
        )
    name = embedder.strip()
    if not name:
        raise InvalidArgumentError("embedder id must not be empty")
    if name.lower() == "none":
        return None
    if name in _LOCAL_IDS:
        from oam_core.embedders.local import LocalEmbedder

        return LocalEmbedder()
    if name.startswith("local/"):
        raise InvalidArgumentError(
            f"unknown local embedder {embedder!r}; the local model is 'local/all-MiniLM-L6-v2'"
        )
    if name == "hashing":
        return HashingEmbedder()
    if name.startswith("hashing/"):
        dim_text = name.removeprefix("hashing/")
        if not (dim_text.isascii() and dim_text.isdigit()) or int(dim_text) < 1:
            raise InvalidArgumentError(
                f"{embedder!r}: 'hashing/<dim>' needs a positive int dimension"
            )
        return HashingEmbedder(int(dim_text))
    from oam_core.embedders.litellm import LiteLLMEmbedder

    return LiteLLMEmbedder(name)


def resolves_recorded_id(embedder_id: str) -> bool:
    """Whether ``resolve_embedder(embedder_id)`` (the CLI's ``--embedder``) builds the
    embedder a store recorded as ``embedder_id`` (docs/store.md#embedder-identity):
    the local model (``local/...``), ``hashing/<dim>`` and a LiteLLM model id
    (``<provider>/<model>``), but not an Oracle in-database model (``oracledb/...``), a
    LangChain model (``langchain:...``) or an embedder class of your own (its class
    name), which only Python code holding that model opens.

    Args:
        embedder_id: A recorded ``EmbedderIdentity.embedder_id``.
    """
    if embedder_id.startswith(("local/", "hashing/")):
        return True
    return "/" in embedder_id and not embedder_id.startswith(("oracledb/", "langchain:"))
