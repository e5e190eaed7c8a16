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

from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, TextNode
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

from oam_core import Record
from oam_core.errors import InvalidArgumentError, InvalidFilterError
from oam_core.filters import check_json, is_plain_json

REF_DOC_KEY = "ref_doc_id"
"""Metadata key holding the node's source document id (``"None"`` when it has none)."""
_NODE_CONTENT = "_node_content"


def node_to_row(node: BaseNode) -> tuple[str, str, dict[str, Any]]:
    """Return ``(content, retrieval_text, metadata)`` for storing ``node``.

    Args:
        node: The LlamaIndex node.

    Raises:
        ValueError: if the node's metadata holds a value JSON cannot hold as stored
            (an int outside signed 64 bits, a NaN, an object), naming the
            node's id; NUL and lone surrogates are refused by the store on
            write; or its text is not a string.
    """
    content = node.get_content(metadata_mode=MetadataMode.NONE)
    retrieval = node.get_content(metadata_mode=MetadataMode.EMBED)
    metadata = node_to_metadata_dict(node, remove_text=True, flat_metadata=False)
    if not is_plain_json(metadata):
        try:
            check_json(metadata, f"node {node.node_id!r} metadata")
        except InvalidFilterError as exc:  # a node, not a filter, is refused
            raise InvalidArgumentError(str(exc)) from None
    return content, retrieval, metadata


def record_to_node(record: Record) -> BaseNode:
    """Rebuild the node stored as ``record`` (a fresh object on every call)."""
    metadata = dict(record.metadata or {})
    if isinstance(metadata.get(_NODE_CONTENT), str):
        node = metadata_dict_to_node(metadata, text=record.content or "")
        node.id_ = record.id
        return node
    return TextNode(id_=record.id, text=record.content or "", metadata=metadata)


__all__ = ["REF_DOC_KEY", "node_to_row", "record_to_node"]
