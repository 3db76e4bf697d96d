"""Several protocols on one port, told apart by the first bytes each client sends, as ActiveMQ's ``auto`` transport
does: ``minibroker serve`` serves its native protocol and ActiveMQ's JMS client (OpenWire) on 61616 this way. A
:class:`FirstBytes` per accepted socket reads just enough bytes, within the connect deadline, and hands the socket and
what it read to the :class:`Route` they match (``server/tcp.py`` names the routes)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from minibroker._driver.sockets import SocketSlots

from ._listening import FailureLog

if TYPE_CHECKING:
    from minibroker.clock import TimerHandle

__all__ = ["FirstBytes", "ProtocolSwitch", "Route"]


@attrs.frozen(slots=True)
class Route:
    """A protocol of a shared port: a connection whose first bytes hold ``signature`` at ``offset`` is that
    protocol's (``make_protocol`` makes its handler)."""

    name: str
    offset: int
    signature: bytes
    make_protocol: Callable[[], asyncio.BaseProtocol] = attrs.field(eq=False)

    def verdict(self, head: bytes) -> bool | None:
        """True: ``head`` (a connection's first bytes) is this protocol's; False: it cannot be; None: more needed."""
        seen = head[self.offset : self.offset + len(self.signature)]
        if seen != self.signature[: len(seen)]:
            return False
        return True if len(seen) == len(self.signature) else None


class ProtocolSwitch:
    """Several protocols on one port, told apart by the first bytes each client sends (ActiveMQ's ``auto``
    transport does the same): a :class:`FirstBytes` per accepted socket reads just enough of them, within the
    connect deadline, and hands the socket and those bytes to the protocol they match; anything else is closed with
    a log line. A socket that cannot get a connection slot goes to the first route at once, which refuses it in its
    own words (the native protocol's fatal ERROR frame)."""

    def __init__(
        self,
        routes: Sequence[Route],
        *,
        sockets: SocketSlots,
        max_connections: int,
        clock: Any,
        connect_timeout: float,
        log: logging.Logger,
    ) -> None:
        self.routes = tuple(routes)
        self.sockets = sockets
        self.max_connections = max_connections
        self.clock = clock
        self.connect_timeout = connect_timeout
        self.log = log
        self.failures = FailureLog(log)
        #: sockets whose protocol is not known yet
        self.pending: set[FirstBytes] = set()

    def __call__(self) -> asyncio.BaseProtocol:
        return FirstBytes(self)

    def drop_pending(self) -> None:
        """Close the sockets still undecided (the listener stops)."""
        for gate in list(self.pending):
            gate.close()


class FirstBytes(asyncio.Protocol):
    """One accepted socket of a :class:`ProtocolSwitch` until its first bytes say which protocol it speaks. It holds
    a connection slot meanwhile (a flood of silent sockets counts against ``max_connections``) and writes nothing:
    the clients of the protocols that share a port speak first."""

    def __init__(self, switch: ProtocolSwitch) -> None:
        self._switch = switch
        self._transport: asyncio.Transport | None = None
        self._head = bytearray()
        self._claimed = False
        self._deadline: TimerHandle | None = None
        self._done = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        switch = self._switch
        self._transport = transport
        if not switch.sockets.claim(switch.max_connections):
            self._hand_over(switch.routes[0])
            return
        self._claimed = True
        switch.pending.add(self)
        clock = switch.clock
        self._deadline = clock.call_at(clock.now() + switch.connect_timeout, self._too_slow)

    def data_received(self, data: bytes) -> None:
        if self._done:
            return
        self._head += data
        head = bytes(self._head)
        undecided = False
        for route in self._switch.routes:
            verdict = route.verdict(head)
            if verdict:
                self._hand_over(route)
                return
            undecided = undecided or verdict is None
        if not undecided:
            names = " nor ".join(route.name for route in self._switch.routes)
            self._refuse(f"its first bytes {head[:16]!r} are neither {names}")

    def eof_received(self) -> bool | None:
        if not self._done:
            self._switch.log.debug("%s closed before its protocol was known", self._peer())
            self.close()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._done:
            self._finish()

    def _too_slow(self) -> None:
        if not self._done:
            self._refuse(f"too few bytes to tell its protocol within {self._switch.connect_timeout} s")

    def _refuse(self, why: str) -> None:
        self._switch.failures.note(f"closing {self._peer()}: {why}")
        self.close()

    def close(self) -> None:
        transport = self._transport
        self._finish()
        if transport is not None:
            transport.abort()

    def _peer(self) -> object:
        return None if self._transport is None else self._transport.get_extra_info("peername")

    def _finish(self) -> None:
        """Give the slot back (the protocol taking over claims its own) and stop the deadline."""
        self._done = True
        self._switch.pending.discard(self)
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._claimed:
            self._claimed = False
            self._switch.sockets.release()

    def _hand_over(self, route: Route) -> None:
        transport = self._transport
        assert transport is not None
        self._finish()
        try:
            protocol = route.make_protocol()
        except Exception:  # a protocol that cannot start (a bug, an import that fails) loses this socket only
            self._switch.log.exception("%s: cannot start %s", self._peer(), route.name)
            transport.abort()
            return
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        if self._head and isinstance(protocol, asyncio.Protocol) and not transport.is_closing():
            protocol.data_received(bytes(self._head))
        self._head.clear()
