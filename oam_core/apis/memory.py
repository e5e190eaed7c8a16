"""Client interface marker (SPEC §5; seed 003 ``IAgentMemory``)."""

from __future__ import annotations

import abc


class IAgentMemory(abc.ABC):  # noqa: B024 - an interface marker with no abstract methods
    """Base of agent-memory clients; ``oam_core.OracleAgentMemory`` implements it."""
