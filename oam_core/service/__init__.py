"""``oam mcp`` (an MCP memory server) and ``oam serve`` (a local web inspector).

Both are thin layers over ``OracleAgentMemory`` and the public store API; their
optional dependencies (the ``mcp`` and ``serve`` extras) are imported only when a
command runs. See docs/service.md.
"""
