"""LlamaIndex nodes <-> ``oam`` records (used by ``OAMVectorStore``).

A node is stored as one memory-like record: the node's text (``MetadataMode.NONE``)
is the record content, the retrieval text is what LlamaIndex embeds
(``MetadataMode.EMBED``), and the record metadata is LlamaIndex's own storage dict
(``node_to_metadata_dict``): the node's metadata at the top level, so filters see
it, plus ``_node_content`` / ``_node_type`` and the ``ref_doc_id`` keys that restore
the exact node and let ``delete(ref_doc_id)`` find it. Records written by other
means (e.g. memories extracted by ``OracleAgentMemory``) come back as ``TextNode`` s
with the record's id, content and metadata.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, TextNode
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

from oam_core import Record
from oam_core.apis.metadatajson import check_stored_json
from oam_core.checks import check_text, texts_storable

REF_DOC_KEY = "ref_doc_id"
"""Metadata key holding the node's source document id (``"None"`` when it has none)."""
_NODE_CONTENT = "_node_content"


def node_to_row(node: BaseNode) -> tuple[str, str, dict[str, Any]]:
    """Return ``(content, retrieval_text, metadata)`` for storing ``node``; the row is
    checked by ``check_rows``.

    Args:
        node: The LlamaIndex node.

    Raises:
        ValueError: if its text is not a string.
    """
    content = node.get_content(metadata_mode=MetadataMode.NONE)
    retrieval = node.get_content(metadata_mode=MetadataMode.EMBED)
    metadata = node_to_metadata_dict(node, remove_text=True, flat_metadata=False)
    return content, retrieval, metadata


def check_rows(nodes: Sequence[BaseNode], rows: Sequence[tuple[str, str, Any]]) -> None:
    """Refuse what a store cannot hold in ``nodes`` (``rows`` are their
    ``node_to_row``), naming the node, not the store's ``contents[0]``,
    ``index_texts[0]`` or ``metadata[0]``: a NUL or lone surrogate in its id (``node
    id 'a\\x00'``) or text (``node 'n1' text``), or metadata JSON cannot hold as stored
    (an int outside signed 64 bits, a NaN, an object, a NUL: ``node 'n1'
    metadata['m']``). The common case costs one pass over the texts and one over
    each metadata.

    Raises:
        InvalidArgumentError: for the first such node (docs/llama_index.md#vector-store).
    """
    ids = [n.node_id for n in nodes]
    if not texts_storable([*ids, *(content for content, _, _ in rows)]):
        for node_id, (content, _, _) in zip(ids, rows, strict=True):
            check_text(node_id, f"node id {node_id!r}")
            check_text(content, f"node {node_id!r} text")
    for node_id, (_, _, metadata) in zip(ids, rows, strict=True):
        check_stored_json(metadata, f"node {node_id!r} metadata")
    if not texts_storable([retrieval for _, retrieval, _ in rows]):
        for node_id, (_, retrieval, _) in zip(ids, rows, strict=True):
            # the text with its metadata, as embedded: a NUL in a metadata template
            check_text(retrieval, f"node {node_id!r} text with metadata (MetadataMode.EMBED)")


def record_to_node(record: Record) -> BaseNode:
    """Rebuild the node stored as ``record`` (a fresh object on every call)."""
    metadata = dict(record.metadata or {})
    if isinstance(metadata.get(_NODE_CONTENT), str):
        node = metadata_dict_to_node(metadata, text=record.content or "")
        node.id_ = record.id
        return node
    return TextNode(id_=record.id, text=record.content or "", metadata=metadata)


__all__ = ["REF_DOC_KEY", "check_rows", "node_to_row", "record_to_node"]
