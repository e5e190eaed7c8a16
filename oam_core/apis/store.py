"""Store interface marker (docs/store.md; Oracle's SDK ``IMemoryStore``)."""

from __future__ import annotations

import abc


class IMemoryStore(abc.ABC):  # noqa: B024 - an interface marker with no abstract methods
    """Base of every memory store.

    The full contract (``add``, ``add_batches``, ``update``, ``get``, ``list``,
    ``list_thread_messages``, ``search``, ``delete``, ``delete_thread``, ``add_user``,
    ``add_agent`` and their ``*_async`` twins) is implemented once by
    ``oam_core.OracleMemoryStore``; back ends subclass that, not this.
    """
