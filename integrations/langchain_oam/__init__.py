"""langchain_oam: placeholder package; the adapters land with their issue."""
