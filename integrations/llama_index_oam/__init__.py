"""llama_index_oam: placeholder package; the adapters land with their issue."""
