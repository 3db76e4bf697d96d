"""What answers the HTTP listener's requests: the web console (``/``), Jolokia (``/api/jolokia/``) and ActiveMQ's REST
message API (``/api/message/``).

Every request logs in with its HTTP basic credentials (none: anonymous, when the broker allows it) and acts through
that one broker connection, closed when the answer is written: the connection authorizes everything, as for any
other edge (a refused login is 401, a refused operation 403). Mutations are guarded against cross-site requests:

* the console's (``POST /console/api/...``) need the page's per-process token in an ``X-Minibroker-Csrf`` header
  (a page of another site cannot read it) and, when the browser says where it comes from, the same origin;
* Jolokia's and the REST API's (a POST, a GET ``exec``) are refused when the browser says the request is
  cross-site (``Origin`` of another host, or ``Sec-Fetch-Site: cross-site``); curl and harnesses send neither.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import secrets
import time
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

from minibroker.errors import AccessDenied, BrokerClosed, InvalidDestination, MinibrokerError

from .console import ConsoleApi
from .jolokia import Jolokia
from .listener import Response
from .mbeans import MBeans
from .parser import Request, RequestHead
from .rest import RestClients, RestProblem

if TYPE_CHECKING:
    from minibroker import Broker, BrokerConnection

__all__ = ["CSRF_HEADER", "HttpApp"]

log = logging.getLogger("minibroker.http")

CSRF_HEADER = "x-minibroker-csrf"
REALM = "ActiveMQRealm"
_STATIC = {
    "console.css": "text/css; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
}
#: every answer's headers: no sniffing, no framing by other sites, no inline script in the console's page
_SAFE_HEADERS = [
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
]
_PAGE_POLICY = "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'"


def _text(status: int, text: str, headers: list[tuple[str, str]] | None = None) -> Response:
    return Response(status, [("Content-Type", "text/plain; charset=utf-8"), *(headers or [])], f"{text}\n".encode())


def _json(value: Any, status: int = 200, content_type: str = "application/json") -> Response:
    body = json.dumps(value, separators=(",", ":"), default=str).encode()
    return Response(status, [("Content-Type", f"{content_type}; charset=utf-8"), ("Cache-Control", "no-cache")], body)


class _Unauthorized(Exception):
    pass


def credentials(head: RequestHead) -> tuple[str | None, str | None]:
    """The user and password of a basic ``Authorization`` header ((None, None) without one)."""
    value = head.header("authorization")
    if value is None:
        return None, None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "basic":
        raise _Unauthorized("only basic authentication is supported")
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise _Unauthorized("a malformed basic authorization") from None
    user, colon, password = decoded.partition(":")
    if not colon:
        raise _Unauthorized("a malformed basic authorization")
    return user, password


class HttpApp:
    """The console, Jolokia and the REST API for one broker (the listener's :class:`~.listener.Handler`).

    ``broker_name``: the ``brokerName`` of the MBeans' object names (ActiveMQ's default, ``localhost``, so that
    harnesses written for a stock ActiveMQ find them)."""

    def __init__(self, broker: Broker, *, broker_name: str = "localhost") -> None:
        self.broker = broker
        self.broker_name = broker_name
        self.started = time.monotonic()
        #: the console page's anti-CSRF token, one per process
        self.csrf_token = secrets.token_urlsafe(24)
        self.rest = RestClients(broker)

    # -- the listener's interface -----------------------------------------------------------------------------------

    def check_head(self, head: RequestHead) -> Response | None:
        if head.header("content-length") in (None, "0") and head.header("transfer-encoding") is None:
            return None
        try:
            self._login(head).close()
        except _Unauthorized as exc:
            return self._unauthorized(str(exc))
        except BrokerClosed:
            return _text(503, "the broker is stopping")
        return None

    async def handle(self, request: Request, peer: str) -> Response:
        response = await self._answer(request)
        response.headers.extend(_SAFE_HEADERS)
        return response

    async def close(self) -> None:
        self.rest.close()

    # -- routing ----------------------------------------------------------------------------------------------------

    async def _answer(self, request: Request) -> Response:
        split = urlsplit(request.target)
        path = unquote(split.path)
        params = parse_qs(split.query, keep_blank_values=True)
        method = request.method
        if method not in ("GET", "HEAD", "POST", "DELETE", "OPTIONS"):
            return _text(405, f"{method} is not allowed", [("Allow", "GET, HEAD, POST, DELETE")])
        if path in ("/", "/index.html") or path.startswith("/static/"):
            return self._static(path, method)
        if path == "/api/jolokia" or path.startswith("/api/jolokia/"):
            return await self._with_login(request, lambda conn, user: self._jolokia(request, conn, split.path, params))
        if path == "/api/message" or path.startswith("/api/message/"):
            return await self._with_login(request, lambda conn, user: self._rest(request, conn, user, path, params))
        if path.startswith("/console/api/"):
            return await self._with_login(request, lambda conn, user: self._console(request, conn, path, params))
        return _text(404, "not found")

    async def _with_login(self, request: Request, run: Any) -> Response:
        try:
            connection = self._login(request.head)
        except _Unauthorized as exc:
            return self._unauthorized(str(exc))
        except BrokerClosed:
            return _text(503, "the broker is stopping")
        user = getattr(connection.principal, "user", None)
        try:
            result: Response = await run(connection, user)
            return result
        except AccessDenied as exc:
            return _text(403, str(exc))
        except RestProblem as exc:
            return _text(exc.status or 500, str(exc))
        except InvalidDestination as exc:
            return _text(400, str(exc))
        except MinibrokerError as exc:
            return _text(500, f"{type(exc).__name__}: {exc}")
        finally:
            if connection.open:
                connection.close()

    def _login(self, head: RequestHead) -> BrokerConnection:
        user, password = credentials(head)
        try:
            return self.broker.connect(user=user, password=password, remote=True)
        except AccessDenied as exc:
            raise _Unauthorized(str(exc)) from None

    def _unauthorized(self, why: str) -> Response:
        return _text(401, f"Unauthorized: {why}", [("WWW-Authenticate", f'Basic realm="{REALM}"')])

    # -- the parts --------------------------------------------------------------------------------------------------

    def _static(self, path: str, method: str) -> Response:
        if method not in ("GET", "HEAD"):
            return _text(405, f"{method} is not allowed", [("Allow", "GET, HEAD")])
        files = resources.files(__package__).joinpath("static")
        if path in ("/", "/index.html"):
            page = files.joinpath("index.html").read_text("utf-8").replace("{{csrf}}", self.csrf_token)
            return Response(
                200,
                [
                    ("Content-Type", "text/html; charset=utf-8"),
                    ("Content-Security-Policy", _PAGE_POLICY),
                    ("Cache-Control", "no-cache"),
                ],
                page.encode(),
            )
        name = path.removeprefix("/static/")
        if name not in _STATIC:
            return _text(404, "not found")
        return Response(200, [("Content-Type", _STATIC[name])], files.joinpath(name).read_bytes())

    def _cross_site(self, request: Request) -> bool:
        """Whether a browser says this request comes from another site (see the module notes)."""
        if (request.header("sec-fetch-site") or "").lower() in ("cross-site", "same-site"):
            return True
        origin = request.header("origin")
        if origin is None:
            return False
        host = request.header("host") or ""
        return urlsplit(origin).netloc != host

    async def _jolokia(
        self, request: Request, connection: BrokerConnection, raw_path: str, params: dict[str, list[str]]
    ) -> Response:
        flat = {k: v[0] for k, v in params.items() if v}
        mbeans = MBeans(self.broker, connection, self.broker_name, self.started)
        jolokia = Jolokia(mbeans, flat)
        rest = raw_path.removeprefix("/api/jolokia")
        mutates = request.method == "POST" or rest.lstrip("/").lower().startswith("exec")
        if mutates and self._cross_site(request):
            return _json(jolokia.refused("Origin is not allowed to call this agent"), content_type="text/plain")
        value = jolokia.post(request.body) if request.method == "POST" else jolokia.get(unquote(rest))
        mime = flat.get("mimeType", "text/plain")
        return _json(value, content_type=mime if mime in ("text/plain", "application/json") else "text/plain")

    async def _rest(
        self,
        request: Request,
        connection: BrokerConnection,
        user: str | None,
        path: str,
        params: dict[str, list[str]],
    ) -> Response:
        dest_path = path.removeprefix("/api/message")
        if request.method == "POST":
            if self._cross_site(request):
                return _text(403, "cross-site requests are refused")
            content_type = request.header("content-type")
            body = request.body
            if content_type is not None and content_type.split(";")[0].strip().lower() == (
                "application/x-www-form-urlencoded"
            ):
                # Jetty reads a form post's body as parameters (and the servlet then finds the body empty)
                for name, values in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items():
                    params.setdefault(name, []).extend(values)
                body = b""
            return await self.rest.send(connection, dest_path, params, body, content_type)
        if request.method in ("GET", "HEAD", "DELETE"):
            if request.method == "DELETE" and self._cross_site(request):
                return _text(403, "cross-site requests are refused")
            return await self.rest.consume(
                connection, user, dest_path, params, request.header("selector"), lambda: self._login(request.head)
            )
        return _text(405, f"{request.method} is not allowed", [("Allow", "GET, POST, DELETE")])

    async def _console(
        self, request: Request, connection: BrokerConnection, path: str, params: dict[str, list[str]]
    ) -> Response:
        api = ConsoleApi(self.broker, connection, self.broker_name)
        action = path.removeprefix("/console/api/")
        if request.method == "POST":
            if request.header(CSRF_HEADER) != self.csrf_token or self._cross_site(request):
                return _text(403, "a console action needs the console's token (X-Minibroker-Csrf) and origin")
            try:
                body = json.loads(request.body.decode("utf-8") or "{}")
            except (UnicodeDecodeError, ValueError):
                return _text(400, "the body is not JSON")
            if not isinstance(body, dict):
                return _text(400, "the body is not a JSON object")
            status, value = api.post(action, body)
            return _json(value, status)
        if request.method not in ("GET", "HEAD"):
            return _text(405, f"{request.method} is not allowed", [("Allow", "GET, POST")])
        status, value = api.get(action, {k: v[0] for k, v in params.items() if v})
        return _json(value, status)
