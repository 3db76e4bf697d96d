"""The sockets ``minibroker serve`` binds before it imports the broker (so a port in use is one line, at once), and
the settings its listeners share. Imports nothing heavy: the launch path of ``serve`` reads it."""

from __future__ import annotations

import socket

TYPE_CHECKING = False  # not typing's: the command line imports nothing it need not
if TYPE_CHECKING:
    from collections.abc import Sequence
    from ssl import SSLContext

__all__ = ["Listeners", "close_all", "listen", "url_of"]


class Listeners:
    """The bound sockets ``serve`` starts its listeners on, and the settings they share."""

    __slots__ = ("extra", "max_connections", "max_frame_size", "socks", "tls_context")

    def __init__(
        self,
        socks: list[socket.socket],
        extra: dict[str, list[socket.socket]],
        tls_context: SSLContext | None,
        max_frame_size: int,
        max_connections: int,
    ) -> None:
        self.socks = socks
        self.extra = extra
        self.tls_context = tls_context
        self.max_frame_size = max_frame_size
        self.max_connections = max_connections

    def all(self) -> list[socket.socket]:
        return self.socks + [s for group in self.extra.values() for s in group]


def listen(host: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address of ``host``:``port``, bound as asyncio's ``create_server`` binds them
    (SO_REUSEADDR, IPv6 sockets IPv6-only, a backlog of 100), with its error message when one cannot be bound."""
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be 0-65535, not {port}")
    # an ASCII name goes as bytes: a str is passed through Python's IDNA codec, whose import costs more than the
    # lookup of a numeric address (issue 45); the codec leaves ASCII labels as they are
    name = (host.encode() if host.isascii() else host) if host else None
    try:
        infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:  # its text alone ("Name or service not known") does not say which name
        raise OSError(exc.errno, f"cannot resolve host {host!r}: {exc.strerror}") from None
    socks: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):  # without duplicates, in order
            sock = socket.socket(family, kind, proto)
            socks.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                raise OSError(
                    exc.errno,
                    f"error while attempting to bind on address {address!r}: {(exc.strerror or str(exc)).lower()}",
                ) from None
            sock.listen(100)
    except BaseException:
        close_all(socks)
        raise
    return socks


def close_all(socks: Sequence[socket.socket]) -> None:
    for sock in socks:
        sock.close()


def url_of(scheme: str, sock: socket.socket) -> str:
    """The URL a listener on ``sock`` answers at (IPv6 hosts in brackets, as ``Server.url`` gives them)."""
    host, port = sock.getsockname()[:2]
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"
