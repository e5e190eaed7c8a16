"""Client interface marker (docs/concepts.md#opening; Oracle's SDK ``IAgentMemory``)."""

from __future__ import annotations

import abc


class IAgentMemory(abc.ABC):  # noqa: B024 - an interface marker with no abstract methods
    """Base of agent-memory clients; ``oam_core.OracleAgentMemory`` implements it."""
