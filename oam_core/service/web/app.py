"""``oam serve``: a local web inspector over one store (docs/service.md).

Starlette routes render Jinja2 templates with autoescaping on (stored text is
untrusted and is escaped everywhere); htmx, vendored under ``static/``, only makes the
search box update in place, and every page works without JavaScript. Pages are read
through the public client and store API; the two write actions (delete a memory,
delete a thread) are POST forms behind a confirmation page, with a CSRF token. The
access token, host checks and security headers are in ``security.py``.

Ids travel as query parameters (``/thread?id=...``), so any stored id, slashes
included, has a working URL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import jinja2
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from oam_core import OracleAgentMemory, SchemaPolicy, SearchStrategy
from oam_core.apis.records import MEMORY_TYPES, SEARCHABLE_TYPES, MessageRecord
from oam_core.errors import ConfigurationError, InvalidArgumentError, NotFoundError
from oam_core.service.common import DEFAULT_MAX_QUERY_CHARS, open_memory, score_kind
from oam_core.service.web import views
from oam_core.service.web.security import (
    SECURITY_HEADERS,
    SESSION_COOKIE,
    CsrfSigner,
    TokenMiddleware,
    loopback_hosts,
)
from oam_core.store.strategy import searching_with

__all__ = ["Inspector", "create_app"]

_HERE = Path(__file__).parent
_STRATEGIES = [s.value.lower() for s in SearchStrategy]
_SEARCH_TYPES = sorted(SEARCHABLE_TYPES)
_DEFAULT_TYPES = sorted({*MEMORY_TYPES, "message"})
"""What the search box searches unless told: memories and messages (a store filled by
``oam ingest`` holds messages only)."""


class NotFound(NotFoundError):
    """A page asked for an id the store does not hold (a ``NotFoundError``, so a
    ``LookupError`` as before)."""


class BadParameter(ValueError):
    """A page got a query parameter it cannot use (shown as a 400 page naming the
    parameter and the value)."""


class Inspector:
    """The inspector's state: the client over the store and the CSRF signer.

    Args:
        memory: The client whose store the pages show; the search box ranks each
            search with the strategy it asks for, without changing the store's
            recorded default (store/strategy.py).
    """

    def __init__(self, memory: OracleAgentMemory) -> None:
        self.memory = memory
        self.csrf = CsrfSigner()

    @property
    def strategy(self) -> SearchStrategy:
        """The store's own search strategy."""
        return self.memory.store.search_strategy


def _href(path: str, **params: object) -> str:
    given = {k: v for k, v in params.items() if v is not None and v != ""}
    return path + ("?" + urlencode(given, doseq=True) if given else "")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,  # every template, whatever its name: stored text is untrusted
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["href"] = _href
    env.globals["memory_types"] = sorted(MEMORY_TYPES)
    return env


def _session(request: Request) -> tuple[str, bool]:
    existing = CsrfSigner.session_of(Headers(scope=request.scope))
    return (existing, False) if existing else (CsrfSigner.new_session(), True)


def _safe_next(value: object, default: str) -> str:
    """A same-site relative URL to go back to after a delete, else ``default``."""
    if not isinstance(value, str) or not value.startswith("/") or value.startswith("//"):
        return default
    parts = urlsplit(value)
    return default if parts.scheme or parts.netloc or "\\" in value else value


def create_app(
    db: str | None = None,
    *,
    memory: OracleAgentMemory | None = None,
    embedder: str | None = "local",
    token: str | None = None,
    allowed_hosts: list[str] | None = None,
    schema_policy: SchemaPolicy | str | None = None,
    max_query_chars: int = DEFAULT_MAX_QUERY_CHARS,
) -> Starlette:
    """Build the inspector's ASGI app.

    Args:
        db: The store URL (a SQLite path or URL, or a ``postgresql://`` URL); the
            store must exist. Give ``db`` or ``memory``.
        memory: An open client to show instead (not closed by the app).
        embedder: Embedder id for ``db`` (the one the store was written with).
        token: Access token checked on every request; None = none (loopback only).
        allowed_hosts: Accepted ``Host`` header names; default: the loopback names.
            None-like empty list is not accepted; pass ``["*"]`` to accept any.
        schema_policy: For ``db``: ``SchemaPolicy`` or its name; default
            ``REQUIRE_EXISTING`` (docs/store.md#schema-policies).
        max_query_chars: Most characters of a search query (>= 1); a longer one is
            the 400 page, before anything is embedded (docs/service.md#size-limits).

    Returns:
        The Starlette app; serve it with uvicorn.

    Raises:
        ValueError: when neither ``db`` nor ``memory`` is given, the store
            cannot be opened (missing database, another embedder dimension), or
            ``max_query_chars`` is not a whole number >= 1.
    """
    if (
        isinstance(max_query_chars, bool)
        or not isinstance(max_query_chars, int)
        or max_query_chars < 1
    ):
        raise InvalidArgumentError(
            f"max_query_chars must be a whole number >= 1, got {max_query_chars!r}"
        )
    if memory is None:
        if db is None:
            raise ConfigurationError("create_app needs db (a store URL) or memory (a client)")
        client = open_memory(db, embedder=embedder, must_exist=True, schema_policy=schema_policy)
        owned = True
    else:
        client, owned = memory, False
    inspector = Inspector(client)
    env = _environment()

    def render(
        request: Request, template: str, status_code: int = 200, **context: Any
    ) -> HTMLResponse:
        session, new = _session(request)
        html = env.get_template(template).render(
            request=request,
            csrf_token=inspector.csrf.token_for(session),
            store_name=type(inspector.memory.store).__name__,
            store_strategy=inspector.strategy.value.lower(),
            **context,
        )
        response = HTMLResponse(html, status_code=status_code)
        if new:
            response.set_cookie(SESSION_COOKIE, session, httponly=True, samesite="strict", path="/")
        return response

    def page(builder: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return builder(request)
            except NotFound as exc:
                return render(request, "error.html", 404, title="Not found", message=str(exc))
            except BadParameter as exc:
                return render(request, "error.html", 400, title="Bad request", message=str(exc))

        endpoint.__name__ = builder.__name__
        return endpoint

    def required(request: Request, name: str = "id") -> str:
        value = request.query_params.get(name, "")
        if not value:
            raise NotFound(f"this page needs ?{name}=...")
        return value

    def index(request: Request) -> Response:
        users, agents = views.actors(inspector.memory)
        return render(request, "index.html", title="Users and agents", users=users, agents=agents)

    def actor(kind: str) -> Callable[[Request], Response]:
        column = f"{kind}_id"

        def actor_page(request: Request) -> Response:
            actor_id = required(request)
            rows = inspector.memory.list_threads(**{column: actor_id})
            profile = inspector.memory.store.get(f"{kind}_profile", actor_id)
            memories = views.scoped_memories(inspector.memory, **{column: actor_id})
            if not rows and profile is None and not memories:
                raise NotFound(f"no {kind} {actor_id!r} in this store")
            return render(
                request,
                "actor.html",
                title=f"{kind.capitalize()} {actor_id}",
                kind=kind,
                actor_id=actor_id,
                profile=profile,
                threads=views.thread_rows_with_counts(inspector.memory, rows),
                memories=views.memory_views(inspector.memory, memories),
            )

        actor_page.__name__ = f"{kind}_page"
        return actor_page

    def thread(request: Request) -> Response:
        thread_id = required(request)
        store = inspector.memory.store
        row = inspector.memory.get_thread_row(thread_id)
        if row is None:
            raise NotFound(f"no thread {thread_id!r} in this store")
        total = store.count_thread_messages(thread_id)
        first = max(0, total - views.MESSAGE_PAGE)
        asked = _int_param(request, "from", first, 0, _MAX_WHOLE)
        if "from" in request.query_params:
            first = min(asked, max(0, total - 1))
        messages = store.list_thread_messages(
            thread_id, start=first, end=first + views.MESSAGE_PAGE
        )
        records = views.thread_memories(inspector.memory, thread_id)
        return render(
            request,
            "thread.html",
            title=f"Thread {thread_id}",
            row=row,
            total=total,
            first=first,
            page_size=views.MESSAGE_PAGE,
            messages=messages,
            shown={m.id for m in messages},
            memories=views.memory_views(inspector.memory, records, messages),
        )

    def card(request: Request) -> Response:
        thread_id = required(request)
        if inspector.memory.get_thread_row(thread_id) is None:
            raise NotFound(f"no thread {thread_id!r} in this store")
        relevant = _int_param(request, "relevant", 5, 0, 50)
        recent = _int_param(request, "recent", 0, 0, 200)
        content = (
            inspector.memory.get_thread(thread_id)
            .get_context_card(max_relevant_results=relevant, max_recent_messages=recent)
            .content
        )
        return render(
            request,
            "card.html",
            title=f"Context card of {thread_id}",
            thread_id=thread_id,
            content=content,
            relevant=relevant,
            recent=recent,
        )

    def memory_page(request: Request) -> Response:
        memory_id = required(request)
        record = views.find_memory(inspector.memory, memory_id)
        if record is None:
            raise NotFound(f"no memory {memory_id!r} in this store")
        [view] = views.memory_views(inspector.memory, [record])
        older, newer = views.memory_chain(inspector.memory, record)
        return render(
            request, "memory.html", title=f"Memory {memory_id}", m=view, older=older, newer=newer
        )

    def memories_list(request: Request) -> Response:
        params = request.query_params
        form = {name: params.get(name, "").strip() for name in ("user", "agent", "thread")}
        types = params.getlist("types") or sorted(MEMORY_TYPES)
        unknown = [t for t in types if t not in MEMORY_TYPES]
        if unknown:
            raise BadParameter(
                f"types must be among {', '.join(sorted(MEMORY_TYPES))}, got {unknown[0]!r}"
            )
        page_no = _int_param(request, "page", 1, 1, views.MEMORY_PAGES)
        scope = {f"{k}_id": v for k, v in form.items() if v}
        records, more = views.memory_page(inspector.memory, types, page_no - 1, **scope)
        here = {**form, "types": types if params.getlist("types") else None}
        return render(
            request,
            "memories.html",
            title="Memories",
            form=form,
            types=types,
            page=page_no,
            memories=views.memory_views(inspector.memory, records),
            newer=_href("/memories", **here, page=page_no - 1) if page_no > 1 else None,
            older=_href("/memories", **here, page=page_no + 1)
            if more and page_no < views.MEMORY_PAGES
            else None,
        )

    def message_page(request: Request) -> Response:
        message_id = required(request)
        record = inspector.memory.store.get("message", message_id)
        if not isinstance(record, MessageRecord):
            raise NotFound(f"no message {message_id!r} in this store")
        return render(request, "message.html", title=f"Message {message_id}", msg=record)

    def search(request: Request) -> Response:
        params = request.query_params
        form: dict[str, Any] = {
            "q": params.get("q", ""),
            "strategy": (params.get("strategy", "") or inspector.strategy.value).lower(),
            "user": params.get("user", ""),
            "agent": params.get("agent", ""),
            "thread": params.get("thread", ""),
            "filter": params.get("filter", ""),
            "types": params.getlist("types") or _DEFAULT_TYPES,
            "k": params.get("k", "10"),
        }
        results: list[tuple[Any, float]] | None = None
        kind = ""
        error = _k_error(form["k"])
        if error is None:
            form["k"] = int(form["k"])
        if error is None and len(form["q"]) > max_query_chars:
            error = (
                f"query: {len(form['q']):,} characters, over the limit of "
                f"{max_query_chars:,} (oam serve --max-query-chars)"
            )
        if error is None and form["q"].strip():
            try:
                results, kind = _run_search(inspector, form)
            except (ValueError, TypeError, ImportError) as exc:
                error = str(exc)
        return render(
            request,
            "search.html",
            400 if error else 200,
            title="Search",
            form=form,
            strategies=_STRATEGIES,
            search_types=_SEARCH_TYPES,
            results=results,
            score_kind=kind,
            error=error,
        )

    def confirm(kind: str) -> Callable[[Request], Response]:
        def confirm_page(request: Request) -> Response:
            item_id = required(request)
            if kind == "memory":
                record = views.find_memory(inspector.memory, item_id)
                if record is None:
                    raise NotFound(f"no memory {item_id!r} in this store")
                summary = record.content or ""
                back = _href("/memory", id=item_id)
                after = _href("/thread", id=record.thread_id) if record.thread_id else "/"
            else:
                row = inspector.memory.get_thread_row(item_id)
                if row is None:
                    raise NotFound(f"no thread {item_id!r} in this store")
                count = inspector.memory.store.count_thread_messages(item_id)
                summary = f"{count} messages and every memory extracted in this thread"
                back = _href("/thread", id=item_id)
                after = _href("/user", id=row.user_id) if row.user_id else "/"
            return render(
                request,
                "confirm.html",
                title=f"Delete {kind} {item_id}?",
                kind=kind,
                item_id=item_id,
                summary=summary,
                back=back,
                after=after,
            )

        confirm_page.__name__ = f"confirm_{kind}"
        return confirm_page

    def delete(kind: str) -> Callable[[Request], Any]:
        async def delete_action(request: Request) -> Response:
            form = await request.form()
            session = CsrfSigner.session_of(Headers(scope=request.scope))
            token = form.get("csrf_token")
            origin = request.headers.get("origin")
            if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
                return render(
                    request,
                    "error.html",
                    403,
                    title="Forbidden",
                    message="cross-origin request refused",
                )
            if not inspector.csrf.valid(session, token if isinstance(token, str) else None):
                return render(
                    request,
                    "error.html",
                    403,
                    title="Forbidden",
                    message="the form's CSRF token is missing or wrong; reload the page and try again",
                )
            item_id = form.get("id")
            if not isinstance(item_id, str) or not item_id:
                return render(
                    request, "error.html", 400, title="Bad request", message="no id given"
                )
            from starlette.concurrency import run_in_threadpool

            if kind == "memory":
                deleted = await run_in_threadpool(inspector.memory.delete_memory, item_id)
            else:
                deleted = await run_in_threadpool(inspector.memory.delete_thread, item_id)
            if not deleted:
                return render(
                    request,
                    "error.html",
                    404,
                    title="Not found",
                    message=f"no {kind} {item_id!r} to delete",
                )
            return RedirectResponse(_safe_next(form.get("next"), "/"), status_code=303)

        delete_action.__name__ = f"delete_{kind}"
        return delete_action

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if owned:
                client.close()

    routes = [
        Route("/", page(index)),
        Route("/user", page(actor("user"))),
        Route("/agent", page(actor("agent"))),
        Route("/thread", page(thread)),
        Route("/thread/card", page(card)),
        Route("/thread/delete", page(confirm("thread")), methods=["GET"]),
        Route("/thread/delete", delete("thread"), methods=["POST"]),
        Route("/memory", page(memory_page)),
        Route("/memory/delete", page(confirm("memory")), methods=["GET"]),
        Route("/memory/delete", delete("memory"), methods=["POST"]),
        Route("/message", page(message_page)),
        Route("/memories", page(memories_list)),
        Route("/search", page(search)),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]
    hosts = loopback_hosts() if allowed_hosts is None else allowed_hosts
    middleware = [
        Middleware(
            TokenMiddleware,
            token=token,
            allowed_hosts=None if "*" in hosts else hosts,
            headers=SECURITY_HEADERS,
        )
    ]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.inspector = inspector
    return app


_MAX_WHOLE = 10**15
"""Largest ``?from=`` accepted (it is clamped to the thread's last message)."""


def _whole_number(value: str, low: int, high: int) -> int | None:
    """``value`` as an int when it is ASCII digits from ``low`` to ``high``, else None.

    Checked as text first: ``int()`` also takes other Unicode digits (``"²"`` is
    refused by it only after ``isdigit()`` said yes) and refuses strings longer than
    Python's integer-string limit (4300 digits) with a ValueError."""
    text = value.strip()
    if not (text.isascii() and text.isdigit()) or len(text.lstrip("0")) > len(str(high)):
        return None
    number = int(text)
    return number if low <= number <= high else None


def _describe(value: str) -> str:
    """``repr(value)``, shortened for a message when it is long."""
    return repr(value) if len(value) <= 60 else repr(value[:40]) + f"... ({len(value)} characters)"


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    """The whole number ``?name=`` from ``low`` to ``high``; ``default`` when absent.

    Raises:
        BadParameter: naming the parameter and the value for anything else.
    """
    value = request.query_params.get(name)
    if value is None or not value.strip():
        return default
    number = _whole_number(value, low, high)
    if number is None:
        limit = f"from {low} to {high}" if high < _MAX_WHOLE else f"of at least {low}"
        raise BadParameter(f"{name} must be a whole number {limit}, got {_describe(value)}")
    return number


def _k_error(value: str) -> str | None:
    """Why the search form's ``k`` is not a whole number from 1 to 100, or None."""
    if _whole_number(value, 1, 100) is not None:
        return None
    return f"k must be a whole number from 1 to 100, got {_describe(value)}"


def _run_search(inspector: Inspector, form: dict[str, Any]) -> tuple[list[tuple[Any, float]], str]:
    """The search form's hits with their distances, and what ``1 - distance``
    measures for them (``score_kind``)."""
    client = inspector.memory
    kwargs: dict[str, Any] = {"k": form["k"], "record_types": set(form["types"])}
    for field, name in (("user", "user_id"), ("agent", "agent_id"), ("thread", "thread_id")):
        if form[field].strip():
            kwargs[name] = form[field].strip()
    metadata_filter = views.parse_filter(form["filter"])
    if metadata_filter is not None:
        kwargs["metadata_filter"] = metadata_filter
    with searching_with(client.store, form["strategy"]):
        return client.search(form["q"], **kwargs), score_kind(client.store)
