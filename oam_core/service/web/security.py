"""Access control of the HTTP services (docs/service.md): a token checked on every
request, host checks against DNS rebinding, CSRF tokens for write actions, and
headers that keep stored text from ever running as script.

Pure ASGI middleware (Starlette's building blocks), so it also wraps the MCP SDK's
streamable HTTP app.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, quote, urlencode

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from oam_core.errors import ConfigurationError

__all__ = [
    "SECURITY_HEADERS",
    "TOKEN_COOKIE",
    "CsrfSigner",
    "TokenMiddleware",
    "check_bind",
    "is_loopback",
    "loopback_hosts",
]

TOKEN_COOKIE = "oam_token"
"""Cookie that carries the access token after a ``?token=`` visit."""
SESSION_COOKIE = "oam_session"
"""Random per-browser cookie that CSRF tokens are bound to."""

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}
"""Sent with every inspector response: no inline script, no framing, no referrer to
other sites (same-origin keeps the Origin header on our own form posts)."""


def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` keeps the service on this machine
    (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None, env_var: str) -> None:
    """Refuse to bind outside loopback without a token.

    Raises:
        ValueError: when ``host`` is not a loopback address and ``token`` is empty,
            or ``token`` is shorter than 16 characters.
    """
    if token is not None and len(token) < 16:
        raise ConfigurationError("the access token must be at least 16 characters long")
    if not is_loopback(host) and not token:
        raise ConfigurationError(
            f"binding to {host} exposes the store beyond this machine: pass --token "
            f"(or set {env_var}) with a secret of at least 16 characters"
        )


def loopback_hosts() -> list[str]:
    """``Host`` header names accepted when the service is bound to loopback."""
    return ["127.0.0.1", "localhost", "::1", "[::1]"]


def _cookies(headers: Headers) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # a malformed Cookie header carries no token
        return {}
    return {key: morsel.value for key, morsel in jar.items()}


def _host_name(host_header: str) -> str:
    if host_header.startswith("["):
        return host_header.split("]", 1)[0] + "]"
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


def _own_path(scope: Scope) -> str:
    """The request's path as a redirect target that stays on this app: one leading
    slash (``//host/x`` and ``/\\host/x`` would be read by a browser as another
    site), percent-encoded."""
    path = scope.get("root_path", "") + scope["path"]
    return "/" + quote(path.lstrip("/\\"), safe="/:@!$&'()*+,;=-._~")


class TokenMiddleware:
    """Check the ``Host`` header and, when a token is set, the token on every request.

    A request passes with ``Authorization: Bearer <token>``, the ``oam_token``
    cookie, or ``?token=<token>`` (a GET then gets the cookie and a redirect to the
    same URL without the token, so it does not stay in the address bar). With
    ``header_only`` (``oam mcp``, whose clients are programs) only the header counts:
    a token in a URL ends up in logs.

    Args:
        app: The wrapped ASGI app.
        token: The secret, or None when the service is bound to loopback without one.
        allowed_hosts: Accepted ``Host`` names (without port), or None for any (a
            service bound to a public interface behind a name you choose).
        headers: Extra response headers added to every HTTP response.
        header_only: Accept the token only as ``Authorization: Bearer <token>``.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        allowed_hosts: list[str] | None,
        headers: dict[str, str] | None = None,
        header_only: bool = False,
    ) -> None:
        self.app = app
        self.token = token
        self.header_only = header_only
        self.allowed_hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
        self.headers = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if self.allowed_hosts is not None:
            host = _host_name(headers.get("host", "")).lower()
            if host not in self.allowed_hosts:
                await self._reply(
                    PlainTextResponse("invalid Host header", 400), scope, receive, send
                )
                return
        if self.token is not None:
            verdict = self._check_token(scope, headers)
            if verdict is not None:
                await self._reply(verdict, scope, receive, send)
                return
        await self.app(scope, receive, self._with_headers(send))

    def _check_token(self, scope: Scope, headers: Headers) -> Response | None:
        assert self.token is not None
        expected = self.token.encode()
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and hmac.compare_digest(
            auth[7:].strip().encode(), expected
        ):
            return None
        if self.header_only:
            return PlainTextResponse(
                "401 Unauthorized: this oam MCP server needs its access token in the "
                "header 'Authorization: Bearer YOUR_TOKEN' (a token in the URL is not "
                "accepted: URLs end up in logs).",
                status_code=401,
                headers={"www-authenticate": "Bearer"},
            )
        cookie = _cookies(headers).get(TOKEN_COOKIE)
        if cookie is not None and hmac.compare_digest(cookie.encode(), expected):
            return None
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in query if k == "token"]
        if given and hmac.compare_digest(given[-1].encode(), expected):
            if scope.get("method") != "GET":
                return None
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            response = RedirectResponse(_own_path(scope) + (f"?{rest}" if rest else ""), 303)
            response.set_cookie(
                TOKEN_COOKIE, self.token, httponly=True, samesite="strict", path="/"
            )
            return response
        return PlainTextResponse(
            "401 Unauthorized: this oam service needs its access token. Open it as "
            "http://HOST:PORT/?token=YOUR_TOKEN once, or send 'Authorization: Bearer "
            "YOUR_TOKEN'.",
            status_code=401,
            headers={"www-authenticate": "Bearer"},
        )

    async def _reply(self, response: Response, scope: Scope, receive: Receive, send: Send) -> None:
        await response(scope, receive, self._with_headers(send))

    def _with_headers(self, send: Send) -> Send:
        if not self.headers:
            return send

        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                present = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    (k, v) for k, v in self.headers if k not in present
                ]
            await send(message)

        return wrapped


class CsrfSigner:
    """CSRF tokens bound to a random per-browser session cookie and signed with a
    per-process secret: a page on another origin can neither read nor compute them,
    even if it manages to set our cookies.

    Args:
        secret: The signing key; random per process when omitted.
    """

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    @staticmethod
    def new_session() -> str:
        """A new random session id for the ``oam_session`` cookie."""
        return secrets.token_urlsafe(24)

    @staticmethod
    def session_of(headers: Headers) -> str | None:
        """The session id the browser sent, if any."""
        value = _cookies(headers).get(SESSION_COOKIE)
        return value if value else None

    def token_for(self, session: str) -> str:
        """The CSRF token of ``session``, to put into every form as ``csrf_token``."""
        return hmac.new(self._secret, session.encode(), hashlib.sha256).hexdigest()

    def valid(self, session: str | None, token: str | None) -> bool:
        """Whether ``token`` is the CSRF token of ``session``."""
        if not session or not token:
            return False
        return hmac.compare_digest(self.token_for(session).encode(), token.encode())
