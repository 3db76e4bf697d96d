"""What answers the HTTP listener's requests: the web console (``/``), Jolokia (``/api/jolokia/``) and ActiveMQ's REST
message API (``/api/message/``).

Every request logs in with its HTTP basic credentials (none: anonymous, when the broker allows it) and acts through
that one broker connection, closed when the answer is written: the connection authorizes everything, as for any
other edge (a refused login is 401, a refused operation 403). Mutations are guarded against cross-site requests:

* the console's (``POST /console/api/...``) need the page's per-process token in an ``X-Minibroker-Csrf`` header
  (a page of another site cannot read it) and, when the browser says where it comes from, the same origin;
* Jolokia's and the REST API's (a POST, a GET ``exec``, and a REST GET, HEAD or DELETE, which consumes a message)
  are refused when the browser says the request is cross-site (``Origin`` or ``Referer`` of another host, or
  ``Sec-Fetch-Site: cross-site``/``same-site``); curl and harnesses send none of them.

And against pages of other sites (issue 41):

* DNS rebinding: a request whose ``Host`` is not one this listener answers to is refused (403) before anything
  else: loopback names (``localhost``, ``*.localhost``), any IP address, this machine's name, the host the listener
  was asked to listen on, and the names given as ``allowed_hosts`` (``"*"``: any). A page of another site that
  rebinds its own name to this address still sends its own name;
* nothing served runs in the console's origin unless it is the console's own page: every answer carries
  ``X-Content-Type-Options: nosniff`` and a Content-Security-Policy, the page's strict ``default-src 'self'`` and
  every other answer's ``sandbox; default-src 'none'`` (a REST message body, whatever it holds, is a sandboxed
  document with an opaque origin: no script runs, no token or cookie can be read). A browser asking for a page
  (``Accept`` with ``text/html``) gets a message body as ``text/plain``;
* ``/`` and ``/static/`` need a login as the data routes do (when the broker has users).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ipaddress
import json
import logging
import secrets
import socket
import time
from collections.abc import Iterable
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

from minibroker.errors import AccessDenied, BrokerClosed, InvalidDestination, MinibrokerError

from .console import ConsoleApi
from .jolokia import Jolokia
from .listener import SAFE_HEADERS, Response
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
#: every answer's headers: no sniffing, no framing by other sites (and a CSP: the page's, or SAFE_HEADERS' sandbox)
_SAFE_HEADERS = [
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
]
_PAGE_POLICY = (
    "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'"
)
#: the policy of every answer but the console's page: a sandboxed document, nothing loads, nothing runs
_SANDBOX_POLICY = dict(SAFE_HEADERS)["Content-Security-Policy"]
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def _text(status: int, text: str, headers: list[tuple[str, str]] | None = None) -> Response:
    return Response(status, [("Content-Type", "text/plain; charset=utf-8"), *(headers or [])], f"{text}\n".encode())


def _json(value: Any, status: int = 200, content_type: str = "application/json") -> Response:
    body = json.dumps(value, separators=(",", ":"), default=str).encode()
    return Response(status, [("Content-Type", f"{content_type}; charset=utf-8"), ("Cache-Control", "no-cache")], body)


def _secured(response: Response) -> Response:
    """Every answer's safety headers; a CSP that sandboxes anything but the console's page (which has its own)."""
    names = {name.lower() for name, _ in response.headers}
    response.headers.extend(h for h in _SAFE_HEADERS if h[0].lower() not in names)
    if "content-security-policy" not in names:
        response.headers.append(("Content-Security-Policy", _SANDBOX_POLICY))
    return response


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

    def __init__(self, broker: Broker, *, broker_name: str = "localhost", allowed_hosts: Iterable[str] = ()) -> None:
        self.broker = broker
        self.broker_name = broker_name
        self.started = time.monotonic()
        #: the console page's anti-CSRF token, one per process
        self.csrf_token = secrets.token_urlsafe(24)
        self.rest = RestClients(broker)
        #: the names a request's Host may give besides the loopback ones and IP addresses (see the module notes)
        self.allowed_hosts = {h.strip().lower().rstrip(".") for h in allowed_hosts if h.strip()}
        self.allowed_hosts.add(socket.gethostname().lower())

    def serving_on(self, *hosts: str) -> None:
        """The listener's own host names (as asked, and as bound): requests may name them in ``Host``."""
        self.allowed_hosts.update(h.lower().rstrip(".") for h in hosts if h)

    # -- the listener's interface -----------------------------------------------------------------------------------

    def check_head(self, head: RequestHead) -> Response | None:
        refused = self._check_host(head)
        if refused is not None:
            return refused
        if head.header("content-length") in (None, "0") and head.header("transfer-encoding") is None:
            return None
        try:
            self._login(head).close()
        except _Unauthorized as exc:
            return _secured(self._unauthorized(str(exc)))
        except BrokerClosed:
            return _secured(_text(503, "the broker is stopping"))
        return None

    async def handle(self, request: Request, peer: str, gone: asyncio.Event | None = None) -> Response:
        refused = self._check_host(request.head)
        if refused is not None:
            return refused
        return _secured(await self._answer(request, gone, peer))

    def host_allowed(self, host: str | None) -> bool:
        """Whether a request's ``Host`` names this listener (see the module notes); no ``Host`` (HTTP/1.0, never
        a browser) is let through."""
        if host is None:
            return True
        name = host.strip().lower()
        if name.startswith("["):  # an IPv6 literal, [::1]:8161
            name = name[1 : name.find("]")] if "]" in name else name[1:]
        elif name.count(":") == 1:
            name = name.rsplit(":", 1)[0]
        name = name.rstrip(".")
        if "*" in self.allowed_hosts or name in self.allowed_hosts:
            return True
        if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
            return True
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True  # an address: the browser's page is on this address, no other site's name

    def _check_host(self, head: RequestHead) -> Response | None:
        host = head.header("host")
        if self.host_allowed(host):
            return None
        log.warning("refused an HTTP request for Host %r (not one this listener answers to)", (host or "")[:200])
        return _secured(
            _text(
                403,
                f"Host {(host or '')[:200]!r} is not one this broker answers to (a guard against DNS rebinding); "
                "add it to the HTTP listener's allowed hosts",
            )
        )

    async def close(self) -> None:
        self.rest.close()

    # -- routing ----------------------------------------------------------------------------------------------------

    async def _answer(self, request: Request, gone: asyncio.Event | None = None, peer: str = "") -> Response:
        split = urlsplit(request.target)
        path = unquote(split.path)
        params = parse_qs(split.query, keep_blank_values=True)
        method = request.method
        if method not in ("GET", "HEAD", "POST", "DELETE", "OPTIONS"):
            return _text(405, f"{method} is not allowed", [("Allow", "GET, HEAD, POST, DELETE")])
        if path in ("/", "/index.html") or path.startswith("/static/"):
            return await self._with_login(request, peer, lambda conn, user: self._page(path, method))
        if path == "/api/jolokia" or path.startswith("/api/jolokia/"):
            return await self._with_login(
                request, peer, lambda conn, user: self._jolokia(request, conn, split.path, params)
            )
        if path == "/api/message" or path.startswith("/api/message/"):
            return await self._with_login(
                request, peer, lambda conn, user: self._rest(request, conn, user, path, params, gone, peer)
            )
        if path.startswith("/console/api/"):
            return await self._with_login(request, peer, lambda conn, user: self._console(request, conn, path, params))
        return _text(404, "not found")

    async def _with_login(self, request: Request, peer: str, run: Any) -> Response:
        try:
            connection = self._login(request.head, peer)
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

    def _login(self, head: RequestHead, peer: str = "") -> BrokerConnection:
        user, password = credentials(head)
        try:
            connection = self.broker.connect(user=user, password=password, remote=True)
        except AccessDenied as exc:
            raise _Unauthorized(str(exc)) from None
        # what the console's Connections page shows of it (a REST clientId consumer's connection stays open)
        connection.context.protocol = "HTTP"
        connection.context.remote_address = f"tcp://{peer}" if peer else None
        return connection

    def _unauthorized(self, why: str) -> Response:
        return _text(401, f"Unauthorized: {why}", [("WWW-Authenticate", f'Basic realm="{REALM}"')])

    # -- the parts --------------------------------------------------------------------------------------------------

    async def _page(self, path: str, method: str) -> Response:
        return self._static(path, method)

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
        host = (request.header("host") or "").lower()
        origin = request.header("origin")
        if origin is not None and urlsplit(origin.lower()).netloc != host:
            return True  # "null" (a sandboxed or file page) too
        referer = request.header("referer")
        return referer is not None and urlsplit(referer.lower()).netloc != host

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
        value = await jolokia.post_in_turns(request.body) if request.method == "POST" else jolokia.get(unquote(rest))
        mime = flat.get("mimeType", "text/plain")
        return _json(value, content_type=mime if mime in ("text/plain", "application/json") else "text/plain")

    async def _rest(
        self,
        request: Request,
        connection: BrokerConnection,
        user: str | None,
        path: str,
        params: dict[str, list[str]],
        gone: asyncio.Event | None,
        peer: str = "",
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
            if self._cross_site(request):  # a GET consumes: a page of another site must not make one
                return _text(403, "cross-site requests are refused (a REST GET consumes a message)")
            accept = (request.header("accept") or "").lower()
            return await self.rest.consume(
                connection,
                user,
                dest_path,
                params,
                request.header("selector"),
                lambda: self._login(request.head, peer),
                gone=gone,
                as_text="text/html" in accept,
            )
        return _text(405, f"{request.method} is not allowed", [("Allow", "GET, POST, DELETE")])

    async def _console(
        self, request: Request, connection: BrokerConnection, path: str, params: dict[str, list[str]]
    ) -> Response:
        api = ConsoleApi(self.broker, connection, self.broker_name)
        action = path.removeprefix("/console/api/")
        if request.method == "POST":
            token = request.header(CSRF_HEADER) or ""
            if not secrets.compare_digest(token.encode(), self.csrf_token.encode()) or self._cross_site(request):
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
