"""Names the reference SDK's pages use are importable where they use them (issue 14, 8)."""

from __future__ import annotations


def test_not_set_marker_is_the_not_set_sentinel() -> None:
    import oam_core
    from oam_core.apis._sentinel import NOT_SET
    from oam_core.core.retention import NOT_SET_MARKER, MemoryRetentionConfig

    assert NOT_SET_MARKER is NOT_SET is oam_core.NOT_SET_MARKER is oam_core.NOT_SET
    config = MemoryRetentionConfig(default_ttl_days=NOT_SET_MARKER, max_ttl_days=NOT_SET_MARKER)
    assert (config.default_ttl_days, config.max_ttl_days) == (None, None)
    assert "NOT_SET_MARKER" in oam_core.__all__
