"""A LlamaIndex retriever over an ``oam`` store (``OAMVectorStore``).

Documents are split, embedded by LlamaIndex (here through ``OAMEmbedding``, so
LlamaIndex and ``oam`` share one embedding model) and stored as ``oam`` memory records
of one user. The retriever ranks them with the store's search and applies
LlamaIndex ``MetadataFilters`` inside the store, before the top-k cut. Memories added
through ``OracleAgentMemory`` are found by the same retriever.

The hashing embedder keeps the example offline and fast; use ``embedder="local"``
(``pip install "oam[local]"``) or a LiteLLM model id for real semantic search.

Run: ``python examples/llama_index/retriever.py [path/to/index.db]``
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters
from llama_index_oam import OAMEmbedding, OAMVectorStore

from oam_core import OracleAgentMemory
from oam_core.embedders.hashing import HashingEmbedder

DOCS = [
    ("Lisbon trams: line 28 climbs through Alfama to the castle.", "travel", "pt"),
    ("Pasteis de nata are custard tarts; the oldest bakery is in Belem.", "food", "pt"),
    ("The Prado museum in Madrid opens every day, Mondays included.", "travel", "es"),
    ("Paella comes from Valencia and is cooked in a wide shallow pan.", "food", "es"),
]


def main(db_path: str | Path) -> list[list[str]]:
    """Index ``DOCS``, then retrieve with and without filters.

    Returns the texts found by each of the three retrievals, best first.
    """
    client = OracleAgentMemory(
        connection=str(db_path), embedder=HashingEmbedder(256), extract_memories=False
    )
    store = OAMVectorStore(client.store, user_id="ada")
    index = VectorStoreIndex.from_vector_store(store, embed_model=OAMEmbedding(client.embedder))
    for text, topic, country in DOCS:
        index.insert(Document(text=text, metadata={"topic": topic, "country": country}))
    client.add_memory("Ada is vegetarian, so paella should be the vegetable kind.", user_id="ada")

    results = []
    plain = index.as_retriever(similarity_top_k=2).retrieve("which museum opens on Mondays")
    results.append([hit.node.get_content() for hit in plain])

    food_in_pt = MetadataFilters(
        filters=[
            MetadataFilter(key="topic", value="food"),
            MetadataFilter(key="country", value=["pt"], operator=FilterOperator.IN),
        ]
    )
    filtered = index.as_retriever(similarity_top_k=3, filters=food_in_pt).retrieve("tarts")
    results.append([hit.node.get_content() for hit in filtered])

    remembered = index.as_retriever(similarity_top_k=1).retrieve("is Ada vegetarian")
    results.append([hit.node.get_content() for hit in remembered])
    client.close()
    for texts in results:
        print(texts)
    return results


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp) / "index.db")
