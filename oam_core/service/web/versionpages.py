"""The inspector's version actions (docs/service.md#oam-serve; docs/versions.md):
correct a memory (a new version with a reason, ``update_memory``) and invalidate it
(``invalidate_memory``). Each is a GET form page and a POST action; the POST is
refused, like a delete, without a valid CSRF token or from another origin
(``_Pages.refused``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from oam_core.errors import NotFoundError
from oam_core.service.web import views

if TYPE_CHECKING:
    from oam_core.service.web.app import _Pages

__all__ = ["version_routes"]


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


class _VersionPages:
    """The correct and invalidate pages over the inspector's ``_Pages``."""

    def __init__(self, pages: _Pages) -> None:
        self.pages = pages
        self.memory = pages.inspector.memory

    def form(self, action: str) -> Callable[[Request], Response]:
        def form_page(request: Request) -> Response:
            memory_id = self.pages.required(request)
            record = views.find_memory(self.memory, memory_id)
            if record is None:
                raise NotFoundError(f"no memory {memory_id!r} in this store")
            [view] = views.memory_views(self.memory, [record])
            verb = "Correct" if action == "update" else "Invalidate"
            return self.pages.render(
                request,
                "version.html",
                title=f"{verb} memory {memory_id}",
                action=action,
                m=view,
            )

        form_page.__name__ = f"{action}_form"
        return form_page

    def act(self, action: str) -> Callable[[Request], Any]:
        async def version_action(request: Request) -> Response:
            form = await request.form()
            refused = self.pages.refused(request, form)
            if refused is not None:
                return refused
            memory_id = _text(form.get("id"))
            reason = _text(form.get("reason")) or None
            try:
                if action == "update":
                    content = form.get("content")
                    target = await run_in_threadpool(
                        self.memory.update_memory,
                        memory_id,
                        content if isinstance(content, str) else "",
                        reason=reason,
                    )
                else:
                    ended = await run_in_threadpool(
                        self.memory.invalidate_memory, memory_id, reason=reason
                    )
                    if not ended:
                        return self._error(
                            request, 409, f"memory {memory_id!r} no longer holds; nothing changed"
                        )
                    target = memory_id
            except NotFoundError:
                return self._error(request, 404, f"no memory {memory_id!r} in this store")
            except ValueError as exc:
                return self._error(request, 400, str(exc))
            return RedirectResponse("/memory?" + urlencode({"id": target}), status_code=303)

        version_action.__name__ = f"{action}_memory"
        return version_action

    def _error(self, request: Request, code: int, message: str) -> Response:
        titles = {400: "Bad request", 404: "Not found", 409: "Conflict"}
        return self.pages.render(request, "error.html", code, title=titles[code], message=message)


def version_routes(pages: _Pages) -> list[Route]:
    """The routes of the correct (``/memory/update``) and invalidate
    (``/memory/invalidate``) actions: GET the form, POST to act."""
    versions = _VersionPages(pages)
    return [
        Route("/memory/update", pages.page(versions.form("update")), methods=["GET"]),
        Route("/memory/update", versions.act("update"), methods=["POST"]),
        Route("/memory/invalidate", pages.page(versions.form("invalidate")), methods=["GET"]),
        Route("/memory/invalidate", versions.act("invalidate"), methods=["POST"]),
    ]
