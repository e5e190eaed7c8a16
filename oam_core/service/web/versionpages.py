"""The inspector's version actions (docs/service.md#oam-serve; docs/versions.md):
correct a memory (a new version with a reason, ``update_memory``) and invalidate it
(``invalidate_memory``). Each is a GET form page and a POST action; the POST is
refused, like a delete, without a valid CSRF token or from another origin
(``_Pages.refused``)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from oam_core.apis.records import Record
from oam_core.errors import NotFoundError
from oam_core.service.web import views

if TYPE_CHECKING:
    from oam_core.service.web.app import _Pages

__all__ = ["content_fingerprint", "version_routes"]


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _id(value: object) -> str:
    """A posted memory id as given: an id may hold spaces at either end, and a
    stripped one could name another memory (the delete action and the pages take it
    as given too)."""
    return value if isinstance(value, str) else ""


def content_fingerprint(text: str | None) -> str:
    """What a correct form was based on: the SHA-256 (64 hex digits) of the stored
    text it showed (``None``: of the empty text)."""
    return hashlib.sha256((text or "").encode("utf-8", "surrogatepass")).hexdigest()


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
            verb = "Correct" if action == "update" else "Invalidate"
            return self._form(request, record, action, f"{verb} memory {memory_id}")

        form_page.__name__ = f"{action}_form"
        return form_page

    def act(self, action: str) -> Callable[[Request], Any]:
        async def version_action(request: Request) -> Response:
            form = await request.form()
            refused = self.pages.refused(request, form)
            if refused is not None:
                return refused
            memory_id = _id(form.get("id"))
            reason = _text(form.get("reason")) or None
            try:
                if action == "update":
                    changed, target = await run_in_threadpool(self._correct, form, reason)
                    if changed is not None:
                        return self._form(
                            request,
                            changed,
                            action,
                            f"Memory {memory_id} changed: nothing saved",
                            status_code=409,
                            draft=target,
                        )
                else:
                    ended = await run_in_threadpool(
                        self.memory.invalidate_memory, memory_id, reason=reason
                    )
                    if not ended:
                        return self._error(
                            request, 409, f"memory {memory_id!r} is not current; nothing changed"
                        )
                    target = memory_id
            except NotFoundError:
                return self._error(request, 404, f"no memory {memory_id!r} in this store")
            except ValueError as exc:
                return self._error(request, 400, str(exc))
            return RedirectResponse("/memory?" + urlencode({"id": target}), status_code=303)

        version_action.__name__ = f"{action}_memory"
        return version_action

    def _form(
        self,
        request: Request,
        record: Record,
        action: str,
        title: str,
        status_code: int = 200,
        draft: str | None = None,
    ) -> Response:
        """The correct or invalidate form of ``record``; ``draft``: the text the
        person wrote, shown again when their save was refused as stale (409)."""
        [view] = views.memory_views(self.memory, [record])
        return self.pages.render(
            request,
            "version.html",
            status_code,
            title=title,
            action=action,
            m=view,
            based_on=content_fingerprint(record.content),
            draft=record.content if draft is None else draft,
            stale=draft is not None,
        )

    def _correct(self, form: Any, reason: str | None) -> tuple[Record | None, str]:
        """Save the correct form: ``(None, new memory id)``, or ``(current record,
        the person's text)`` when the stored text is no longer the one the form
        showed (nothing is written then).

        Raises:
            NotFoundError: no memory has the form's id.
            InvalidArgumentError: from ``update_memory`` (replaced, ended, empty text).
        """
        memory_id = _id(form.get("id"))
        content = form.get("content")
        # A browser sends a textarea's line ends as CRLF: store the text's own LF.
        content = content.replace("\r\n", "\n") if isinstance(content, str) else ""
        record = views.find_memory(self.memory, memory_id)
        if record is None:
            raise NotFoundError(f"no memory {memory_id!r} in this store")
        if form.get("based_on") != content_fingerprint(record.content):
            return record, content
        return None, self.memory.update_memory(memory_id, content, reason=reason)

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
