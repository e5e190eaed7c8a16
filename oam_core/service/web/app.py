"""``oam serve``: a local web inspector over one store (docs/service.md).

Starlette routes render Jinja2 templates with autoescaping on (stored text is
untrusted and is escaped everywhere); htmx, vendored under ``static/``, only makes the
search box update in place, and every page works without JavaScript. Pages are read
through the public client and store API; the write actions (delete a memory,
delete a thread) and the version actions of ``versionpages.py`` (correct or
invalidate a memory) are POST forms behind a form page, with a CSRF token. The
access token, host checks and security headers are in ``security.py``.

Ids travel as query parameters (``/thread?id=...``), so any stored id, slashes
included, has a working URL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from oam_core import OracleAgentMemory, SchemaPolicy, SearchStrategy
from oam_core.apis.records import MEMORY_TYPES, SEARCHABLE_TYPES, MessageRecord
from oam_core.errors import (
    DatabaseLockedError,
    InvalidArgumentError,
    NotFoundError,
    StoreConnectionError,
)
from oam_core.service.common import (
    DEFAULT_MAX_QUERY_CHARS,
    hit_score_kind,
    open_memory,
    open_thread,
    score_kind,
    search_strategy_for,
)
from oam_core.service.web import views
from oam_core.service.web.security import (
    SECURITY_HEADERS,
    SESSION_COOKIE,
    CsrfSigner,
    TokenMiddleware,
    loopback_hosts,
)
from oam_core.service.web.versionpages import version_routes

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
            recorded default (store/strategy.py), and context cards rank with
            ``strategy``.
    """

    def __init__(self, memory: OracleAgentMemory) -> None:
        self.memory = memory
        self.csrf = CsrfSigner()

    @property
    def strategy(self) -> SearchStrategy:
        """The strategy the pages search with unless asked otherwise: the store's
        own, KEYWORD for a store without an embedder (``search_strategy_for``)."""
        store = self.memory.store
        return search_strategy_for(store, None) or store.search_strategy


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


def _with_param(url: str, name: str, value: str) -> str:
    """``url`` (a same-site path with an optional query) with ``name=value`` added."""
    return url + ("&" if "?" in url else "?") + urlencode({name: value})


def _safe_next(value: object, default: str) -> str:
    """A same-site relative URL to go back to after a delete, else ``default``."""
    if not isinstance(value, str) or not value.startswith("/") or value.startswith("//"):
        return default
    parts = urlsplit(value)
    return default if parts.scheme or parts.netloc or "\\" in value else value


class _Pages:
    """The inspector's pages over one ``Inspector``: each method answers one route of
    ``create_app``'s table (``page`` turns ``NotFound``/``BadParameter`` into the 404
    and 400 pages)."""

    def __init__(self, inspector: Inspector, env: jinja2.Environment, max_query_chars: int):
        self.inspector = inspector
        self.env = env
        self.max_query_chars = max_query_chars

    def render(
        self, request: Request, template: str, status_code: int = 200, **context: Any
    ) -> HTMLResponse:
        session, new = _session(request)
        html = self.env.get_template(template).render(
            request=request,
            csrf_token=self.inspector.csrf.token_for(session),
            store_name=type(self.inspector.memory.store).__name__,
            store_strategy=self.inspector.strategy.value.lower(),
            notice=self.notice(request),
            **context,
        )
        response = HTMLResponse(html, status_code=status_code)
        if new:
            response.set_cookie(SESSION_COOKIE, session, httponly=True, samesite="strict", path="/")
        return response

    def notice(self, request: Request) -> str | None:
        """What the page confirms after a delete landed on it (``?deleted_thread=``
        or ``?deleted_memory=``, added by ``delete``): shown only when the store
        indeed no longer holds that thread or memory, so a link cannot fake it."""
        for kind in ("thread", "memory"):
            item_id = request.query_params.get(f"deleted_{kind}")
            if not item_id:
                continue
            memory = self.inspector.memory
            try:
                if kind == "thread":
                    gone = memory.get_thread_row(item_id) is None
                else:
                    gone = views.find_memory(memory, item_id) is None
            except (DatabaseLockedError, StoreConnectionError):
                return None  # the 503 page is being shown
            return f"Deleted {kind} {item_id!r}." if gone else None
        return None

    def page(self, builder: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return builder(request)
            except NotFoundError as exc:  # NotFound, or a memory the version pages miss
                return self.render(request, "error.html", 404, title="Not found", message=str(exc))
            except BadParameter as exc:
                return self.render(
                    request, "error.html", 400, title="Bad request", message=str(exc)
                )

        endpoint.__name__ = builder.__name__
        return endpoint

    async def unavailable(self, request: Request, exc: Exception) -> Response:
        """The 503 page for a store that cannot answer now, for every route: another
        writer holds the SQLite write lock past the store's wait
        (``DatabaseLockedError``) or the PostgreSQL server cannot be reached
        (``StoreConnectionError``). It shows the library's message and says to try
        again; the server logs no traceback."""
        busy = isinstance(exc, DatabaseLockedError)
        advice = (
            "The store is busy: another process is writing to it. Try again when it is done."
            if busy
            else "The store cannot be reached now. Try again when it is back."
        )
        response = self.render(
            request,
            "error.html",
            503,
            title="Store busy" if busy else "Store unavailable",
            message=str(exc),
            advice=advice,
        )
        response.headers["Retry-After"] = "5"
        return response

    def required(self, request: Request, name: str = "id") -> str:
        value = request.query_params.get(name, "")
        if not value:
            raise NotFound(f"this page needs ?{name}=...")
        return value

    def index(self, request: Request) -> Response:
        users, agents = views.actors(self.inspector.memory)
        return self.render(
            request, "index.html", title="Users and agents", users=users, agents=agents
        )

    def actor(self, kind: str) -> Callable[[Request], Response]:
        column = f"{kind}_id"

        def actor_page(request: Request) -> Response:
            actor_id = self.required(request)
            rows = self.inspector.memory.list_threads(**{column: actor_id})
            profile = self.inspector.memory.store.get(f"{kind}_profile", actor_id)
            memories = views.scoped_memories(self.inspector.memory, **{column: actor_id})
            if not rows and profile is None and not memories:
                raise NotFound(f"no {kind} {actor_id!r} in this store")
            return self.render(
                request,
                "actor.html",
                title=f"{kind.capitalize()} {actor_id}",
                kind=kind,
                actor_id=actor_id,
                profile=profile,
                threads=views.thread_rows_with_counts(self.inspector.memory, rows),
                memories=views.memory_views(self.inspector.memory, memories),
            )

        actor_page.__name__ = f"{kind}_page"
        return actor_page

    def thread(self, request: Request) -> Response:
        thread_id = self.required(request)
        store = self.inspector.memory.store
        row = self.inspector.memory.get_thread_row(thread_id)
        if row is None:
            raise NotFound(f"no thread {thread_id!r} in this store")
        total = store.count_thread_messages(thread_id)
        first, end = _message_window(request, total)
        messages = store.list_thread_messages(thread_id, start=first, end=end)
        records = views.thread_memories(self.inspector.memory, thread_id)
        return self.render(
            request,
            "thread.html",
            title=f"Thread {thread_id}",
            row=row,
            total=total,
            first=first,
            messages=messages,
            shown={m.id for m in messages},
            memories=views.memory_views(self.inspector.memory, records, messages),
        )

    def card(self, request: Request) -> Response:
        thread_id = self.required(request)
        if self.inspector.memory.get_thread_row(thread_id) is None:
            raise NotFound(f"no thread {thread_id!r} in this store")
        relevant = _int_param(request, "relevant", 5, 0, 50)
        recent = _int_param(request, "recent", 0, 0, 200)
        with self.inspector.memory.store.searching_with(self.inspector.strategy):
            content = (
                open_thread(self.inspector.memory, thread_id)
                .get_context_card(max_relevant_results=relevant, max_recent_messages=recent)
                .content
            )
        return self.render(
            request,
            "card.html",
            title=f"Context card of {thread_id}",
            thread_id=thread_id,
            content=content,
            relevant=relevant,
            recent=recent,
        )

    def memory_page(self, request: Request) -> Response:
        memory_id = self.required(request)
        record = views.find_memory(self.inspector.memory, memory_id)
        if record is None:
            raise NotFound(f"no memory {memory_id!r} in this store")
        [view] = views.memory_views(self.inspector.memory, [record])
        history = views.memory_history(self.inspector.memory, record)
        return self.render(
            request, "memory.html", title=f"Memory {memory_id}", m=view, history=history
        )

    def memories_list(self, request: Request) -> Response:
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
        records, more = views.memory_page(self.inspector.memory, types, page_no - 1, **scope)
        here = {**form, "types": types if params.getlist("types") else None}
        return self.render(
            request,
            "memories.html",
            title="Memories",
            form=form,
            types=types,
            page=page_no,
            memories=views.memory_views(self.inspector.memory, records),
            newer=_href("/memories", **here, page=page_no - 1) if page_no > 1 else None,
            older=_href("/memories", **here, page=page_no + 1)
            if more and page_no < views.MEMORY_PAGES
            else None,
        )

    def message_page(self, request: Request) -> Response:
        message_id = self.required(request)
        record = self.inspector.memory.store.get("message", message_id)
        if not isinstance(record, MessageRecord):
            raise NotFound(f"no message {message_id!r} in this store")
        return self.render(request, "message.html", title=f"Message {message_id}", msg=record)

    def search(self, request: Request) -> Response:
        params = request.query_params
        form: dict[str, Any] = {
            "q": params.get("q", ""),
            "strategy": (params.get("strategy", "") or self.inspector.strategy.value).lower(),
            "user": params.get("user", ""),
            "agent": params.get("agent", ""),
            "thread": params.get("thread", ""),
            "filter": params.get("filter", ""),
            "types": params.getlist("types") or _DEFAULT_TYPES,
            "k": params.get("k", "10"),
            "versions": params.get("versions", "") == "all",
        }
        results: list[tuple[Any, float]] | None = None
        kind = ""
        error = _k_error(form["k"])
        if error is None:
            form["k"] = int(form["k"])
        if error is None and len(form["q"]) > self.max_query_chars:
            error = (
                f"query: {len(form['q']):,} characters, over the limit of "
                f"{self.max_query_chars:,} (oam serve --max-query-chars)"
            )
        if error is None and form["q"].strip():
            try:
                results, kind = _run_search(self.inspector, form)
            except (ValueError, TypeError, ImportError) as exc:
                error = str(exc)
        return self.render(
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
            now=views.store_now(self.inspector.memory),
            holds_at=views.holds_at,
        )

    def confirm(self, kind: str) -> Callable[[Request], Response]:
        def confirm_page(request: Request) -> Response:
            item_id = self.required(request)
            if kind == "memory":
                record = views.find_memory(self.inspector.memory, item_id)
                if record is None:
                    raise NotFound(f"no memory {item_id!r} in this store")
                summary = record.content or ""
                back = _href("/memory", id=item_id)
                after = _href("/thread", id=record.thread_id) if record.thread_id else "/"
            else:
                row = self.inspector.memory.get_thread_row(item_id)
                if row is None:
                    raise NotFound(f"no thread {item_id!r} in this store")
                count = self.inspector.memory.store.count_thread_messages(item_id)
                summary = f"{count} messages and every memory extracted in this thread"
                back = _href("/thread", id=item_id)
                after = _href("/user", id=row.user_id) if row.user_id else "/"
            return self.render(
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

    def refused(self, request: Request, form: FormData) -> Response | None:
        """The error page for a write form that must not run, else None: a
        cross-origin request or a missing or wrong CSRF token (403), or no ``id``
        (400). Every write action (delete, correct, invalidate) checks this first."""
        session = CsrfSigner.session_of(Headers(scope=request.scope))
        token = form.get("csrf_token")
        origin = request.headers.get("origin")
        if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
            return self.render(
                request,
                "error.html",
                403,
                title="Forbidden",
                message="cross-origin request refused",
            )
        if not self.inspector.csrf.valid(session, token if isinstance(token, str) else None):
            return self.render(
                request,
                "error.html",
                403,
                title="Forbidden",
                message="the form's CSRF token is missing or wrong; reload the page and try again",
            )
        item_id = form.get("id")
        if not isinstance(item_id, str) or not item_id:
            return self.render(
                request, "error.html", 400, title="Bad request", message="no id given"
            )
        return None

    def landing(self, next_url: object) -> str:
        """Where a delete goes: the form's same-site ``next`` page, or ``/`` when
        that is a user's or agent's page and the delete left them nothing (no
        thread, profile or memory: the page would be a 404)."""
        target = _safe_next(next_url, "/")
        parts = urlsplit(target)
        kind = {"/user": "user", "/agent": "agent"}.get(parts.path)
        actor_id = dict(parse_qsl(parts.query)).get("id")
        if kind and actor_id and not views.actor_exists(self.inspector.memory, kind, actor_id):
            return "/"
        return target

    def delete(self, kind: str) -> Callable[[Request], Any]:
        async def delete_action(request: Request) -> Response:
            form = await request.form()
            refused = self.refused(request, form)
            if refused is not None:
                return refused
            item_id = form.get("id")
            assert isinstance(item_id, str)
            if kind == "memory":
                deleted = await run_in_threadpool(self.inspector.memory.delete_memory, item_id)
            else:
                deleted = await run_in_threadpool(self.inspector.memory.delete_thread, item_id)
            if not deleted:
                return self.render(
                    request,
                    "error.html",
                    404,
                    title="Not found",
                    message=f"no {kind} {item_id!r} to delete",
                )
            landing = await run_in_threadpool(self.landing, form.get("next"))
            return RedirectResponse(
                _with_param(landing, f"deleted_{kind}", item_id), status_code=303
            )

        delete_action.__name__ = f"delete_{kind}"
        return delete_action


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
    client, owned = _client(db, memory, embedder, schema_policy, max_query_chars)
    inspector = Inspector(client)
    pages = _Pages(inspector, _environment(), max_query_chars)

    page = pages.page
    routes = [
        Route("/", page(pages.index)),
        Route("/user", page(pages.actor("user"))),
        Route("/agent", page(pages.actor("agent"))),
        Route("/thread", page(pages.thread)),
        Route("/thread/card", page(pages.card)),
        Route("/thread/delete", page(pages.confirm("thread")), methods=["GET"]),
        Route("/thread/delete", pages.delete("thread"), methods=["POST"]),
        Route("/memory", page(pages.memory_page)),
        Route("/memory/delete", page(pages.confirm("memory")), methods=["GET"]),
        Route("/memory/delete", pages.delete("memory"), methods=["POST"]),
        *version_routes(pages),
        Route("/message", page(pages.message_page)),
        Route("/memories", page(pages.memories_list)),
        Route("/search", page(pages.search)),
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
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={
            DatabaseLockedError: pages.unavailable,
            StoreConnectionError: pages.unavailable,
        },
        lifespan=_lifespan(client, owned),
    )
    app.state.inspector = inspector
    return app


def _client(
    db: str | None,
    memory: OracleAgentMemory | None,
    embedder: str | None,
    schema_policy: SchemaPolicy | str | None,
    max_query_chars: int,
) -> tuple[OracleAgentMemory, bool]:
    """The client to show (``create_app``'s arguments) and whether the app owns it.

    Raises:
        InvalidArgumentError: for a ``max_query_chars`` that is not a whole number
            >= 1, or neither ``db`` nor ``memory``.
    """
    if (
        isinstance(max_query_chars, bool)
        or not isinstance(max_query_chars, int)
        or max_query_chars < 1
    ):
        raise InvalidArgumentError(
            f"max_query_chars must be a whole number >= 1, got {max_query_chars!r}"
        )
    if memory is not None:
        return memory, False
    if db is None:
        raise InvalidArgumentError("create_app needs db (a store URL) or memory (a client)")
    return open_memory(db, embedder=embedder, must_exist=True, schema_policy=schema_policy), True


def _lifespan(
    client: OracleAgentMemory, owned: bool
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """The app's lifespan: close ``client`` when the server stops, if the app owns it."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if owned:
                client.close()

    return lifespan


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


def _message_window(request: Request, total: int) -> tuple[int, int]:
    """The positions ``[first, end)`` of a thread's messages its page shows, of
    ``total``: ``?from=N`` starts at message N ("Later messages"), ``?before=N``
    ends just before it ("Earlier messages"), neither = the latest; at most
    ``MESSAGE_PAGE``. Walking either way from any page tiles the thread exactly.

    Raises:
        BadParameter: for a ``from`` or ``before`` that is not a whole number
            (``before``: at least 1).
    """
    size = views.MESSAGE_PAGE
    params = request.query_params
    if params.get("before", "").strip():
        end = min(_int_param(request, "before", total, 1, _MAX_WHOLE), total)
        return max(0, end - size), end
    first = max(0, total - size)
    asked = _int_param(request, "from", first, 0, _MAX_WHOLE)
    if "from" in params:
        first = min(asked, max(0, total - 1))
    return first, first + size


def _k_error(value: str) -> str | None:
    """Why the search form's ``k`` is not a whole number from 1 to 100, or None."""
    if _whole_number(value, 1, 100) is not None:
        return None
    return f"k must be a whole number from 1 to 100, got {_describe(value)}"


def _run_search(inspector: Inspector, form: dict[str, Any]) -> tuple[list[tuple[Any, float]], str]:
    """The search form's hits with their distances, and what ``1 - distance``
    measures for them (``score_kind``). The store's own ranking of every asked type
    in one list, as ``oam search`` shows it (not the client's fusion of memories and
    messages, docs/retrieval.md#memories-and-messages-together), so both show the
    same scores."""
    client = inspector.memory
    kwargs: dict[str, Any] = {"k": form["k"], "record_types": set(form["types"])}
    for field, name in (("user", "user_id"), ("agent", "agent_id"), ("thread", "thread_id")):
        if form[field].strip():
            kwargs[name] = form[field].strip()
            kwargs[f"exact_{field}_match"] = True
    if form["versions"]:
        kwargs["as_of"] = None  # every version; the store's default is current ones
    metadata_filter = views.parse_filter(form["filter"])
    if metadata_filter is not None:
        kwargs["metadata_filter"] = metadata_filter
    with client.store.searching_with(search_strategy_for(client.store, form["strategy"])):
        hits = client.store.search(form["q"], **kwargs)
        kind = score_kind(client.store)
    # One ranking: every hit's distance is of one kind (a re-ranked or fused one may
    # differ from the strategy's label).
    return hits, hit_score_kind(hits[0][1], kind) if hits else kind
