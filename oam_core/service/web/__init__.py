"""The ``oam serve`` web inspector: ``create_app`` builds its ASGI app (docs/service.md)."""
