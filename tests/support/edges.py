"""One small client API over every edge of the broker, so that one scenario runs over each (in the spirit of trio's
stream conformance tests): ``memory`` (the minibroker client, in process), ``tcp`` (the same client over the native
TCP server) and ``stomp`` (raw STOMP 1.2 frames over the STOMP connector).

Each edge says only what STOMP can say too: queues, text bodies, the three ack modes (auto, client, individual),
sends in a transaction, a queue browser, a time to live, and giving up on a message (``reject``: into the DLQ).
Every refusal becomes :class:`Refused` with the broker's text. ``barrier()`` returns once the broker has answered
everything sent before it (a round trip on the same connection), so "nothing arrived" is a deterministic
statement, without sleeping.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Protocol

from minibroker import Broker
from minibroker.client import AckMode, Connection, Consumer, ReceivedMessage, RedeliveryPolicy, Session
from minibroker.errors import MinibrokerError
from minibroker.plugins.stomp import StompServer, start_stomp_server
from minibroker.plugins.stomp.codec import StompFrame

from .stomp_helpers import RawStompClient  # type: ignore[import-not-found]
from .transports import connect_to  # type: ignore[import-not-found]

EDGES = ("memory", "tcp", "stomp")
#: seconds of real time any wait may take before the test fails (the broker runs on a ManualClock)
TIMEOUT = 5.0

_names = itertools.count(1)


class Refused(Exception):
    """The broker refused an operation (an exception in process or over TCP, an ERROR frame over STOMP)."""


class Received:
    """A message as any edge delivers it: its body, whether it was delivered before, and how to ack it."""

    def __init__(self, body: str, redelivered: bool, handle: object) -> None:
        self.body = body
        self.redelivered = redelivered
        self.handle = handle

    def __repr__(self) -> str:
        return f"<Received {self.body!r}{' redelivered' if self.redelivered else ''}>"


class Subscription(Protocol):
    async def receive(self) -> Received: ...

    async def nothing_waiting(self) -> bool: ...

    async def ack(self, message: Received) -> None: ...

    async def reject(self, message: Received) -> None: ...

    async def close(self) -> None: ...


class Edge(Protocol):
    name: str

    async def send(
        self, queue: str, body: str, *, ttl: float | None = None, transaction: str | None = None
    ) -> None: ...

    async def subscribe(
        self, queue: str, ack: str = "auto", selector: str | None = None, transaction: str | None = None
    ) -> Subscription:
        """``transaction``: the subscription's acks belong to it (settled at its commit)."""
        ...

    async def begin(self) -> str: ...

    async def commit(self, transaction: str) -> None: ...

    async def rollback(self, transaction: str) -> None: ...

    async def browse(self, queue: str) -> list[str]: ...

    async def barrier(self) -> None: ...

    async def close(self) -> None: ...


# -- the minibroker client (memory, tcp) -------------------------------------------------------------------------------

_MODES = {
    "auto": AckMode.AUTO_ACKNOWLEDGE,
    "client": AckMode.CLIENT_ACKNOWLEDGE,
    "individual": AckMode.INDIVIDUAL_ACKNOWLEDGE,
}


class _ClientSubscription:
    def __init__(self, edge: ClientEdge, session: Session, consumer: Consumer) -> None:
        self.edge = edge
        self.session = session
        self.consumer = consumer

    async def receive(self) -> Received:
        try:
            message = await asyncio.wait_for(self.consumer.receive(), TIMEOUT)
        except MinibrokerError as exc:
            raise Refused(str(exc)) from exc
        assert message is not None
        return Received(message.text, message.redelivered, message)

    async def nothing_waiting(self) -> bool:
        await self.edge.barrier()
        return (await self.consumer.receive_immediately()) is None

    async def ack(self, message: Received) -> None:
        assert isinstance(message.handle, ReceivedMessage)
        await message.handle.acknowledge()  # in a transacted session: nothing until the commit

    async def reject(self, message: Received) -> None:
        # the client's redelivery policy allows no redelivery: recover() poisons the message into the DLQ
        await self.session.recover()
        await self.edge.barrier()

    async def close(self) -> None:
        await self.consumer.close()


class ClientEdge:
    """The minibroker client, in process (``memory``) or over the native TCP server (``tcp``)."""

    def __init__(self, name: str, broker: Broker, connection: Connection) -> None:
        self.name = name
        self.broker = broker
        self.connection = connection
        self._session: Session | None = None
        self._transactions: dict[str, Session] = {}

    @classmethod
    async def open(cls, name: str, broker: Broker) -> ClientEdge:
        conn = await connect_to(broker, name, redelivery_policy=RedeliveryPolicy(maximum_redeliveries=0))
        return cls(name, broker, conn)

    async def _plain_session(self) -> Session:
        if self._session is None:
            self._session = await self.connection.create_session(AckMode.AUTO_ACKNOWLEDGE)
        return self._session

    async def send(self, queue: str, body: str, *, ttl: float | None = None, transaction: str | None = None) -> None:
        session = self._transactions[transaction] if transaction is not None else await self._plain_session()
        try:
            producer = await session.create_producer(queue)
            await producer.send(body, ttl=ttl, persistent=True)
        except MinibrokerError as exc:
            raise Refused(str(exc)) from exc

    async def subscribe(
        self, queue: str, ack: str = "auto", selector: str | None = None, transaction: str | None = None
    ) -> Subscription:
        # JMS: the consumer of a transacted session; what it receives is acked by the commit
        session = (
            self._transactions[transaction]
            if transaction is not None
            else await self.connection.create_session(_MODES[ack])
        )
        try:
            consumer = await session.create_consumer(queue, selector=selector)
        except MinibrokerError as exc:
            raise Refused(str(exc)) from exc
        return _ClientSubscription(self, session, consumer)

    async def begin(self) -> str:
        name = f"tx-{next(_names)}"
        self._transactions[name] = await self.connection.create_session(AckMode.SESSION_TRANSACTED)
        return name

    async def commit(self, transaction: str) -> None:
        await self._transactions.pop(transaction).commit()

    async def rollback(self, transaction: str) -> None:
        await self._transactions.pop(transaction).rollback()

    async def browse(self, queue: str) -> list[str]:
        browser = await (await self._plain_session()).create_browser(queue)
        return [str(m.body) for m in await browser.messages()]

    async def barrier(self) -> None:
        # a request answered by the broker after everything sent before it (in process: at once)
        await asyncio.wait_for(self.connection.broker_info([]), TIMEOUT)

    async def close(self) -> None:
        await self.connection.close()


# -- STOMP ------------------------------------------------------------------------------------------------------------


class _StompSubscription:
    def __init__(self, edge: StompEdge, sub_id: str, ack: str, transaction: str | None) -> None:
        self.edge = edge
        self.sub_id = sub_id
        self.mode = ack
        self.transaction = transaction

    async def receive(self) -> Received:
        frame = await self.edge.client.expect(
            lambda f: f.command == "MESSAGE" and f.headers.get("subscription") == self.sub_id, TIMEOUT
        )
        return Received(frame.body.decode(), frame.headers.get("redelivered") == "true", frame)

    async def nothing_waiting(self) -> bool:
        await self.edge.barrier()
        return not [
            f for f in self.edge.client.inbox if f.command == "MESSAGE" and f.headers.get("subscription") == self.sub_id
        ]

    async def ack(self, message: Received) -> None:
        assert isinstance(message.handle, StompFrame)
        headers = {"id": message.handle.headers["ack"]}
        if self.transaction is not None:
            headers["transaction"] = self.transaction
        await self.edge.request("ACK", headers)

    async def reject(self, message: Received) -> None:
        assert isinstance(message.handle, StompFrame)
        await self.edge.request("NACK", {"id": message.handle.headers["ack"]})

    async def close(self) -> None:
        await self.edge.request("UNSUBSCRIBE", {"id": self.sub_id})


class StompEdge:
    """Raw STOMP 1.2 over the broker's STOMP connector."""

    name = "stomp"

    def __init__(self, broker: Broker, client: RawStompClient) -> None:
        self.broker = broker
        self.client = client

    @classmethod
    async def open(cls, broker: Broker, server: StompServer) -> StompEdge:
        client = await RawStompClient.open(server.port)
        assert client.connected is not None, "the STOMP CONNECT was refused"
        return cls(broker, client)

    async def request(self, command: str, headers: dict[str, str], body: str = "") -> StompFrame:
        reply: StompFrame = await self.client.request(command, headers, body, timeout=TIMEOUT)
        if reply.command == "ERROR":
            raise Refused(reply.headers.get("message", ""))
        return reply

    async def send(self, queue: str, body: str, *, ttl: float | None = None, transaction: str | None = None) -> None:
        headers = {"destination": f"/queue/{queue}", "persistent": "true"}
        if ttl is not None:
            headers["expires"] = str(int((self.broker.clock.now() + ttl) * 1000))
        if transaction is not None:
            headers["transaction"] = transaction
        await self.request("SEND", headers, body)

    async def subscribe(
        self, queue: str, ack: str = "auto", selector: str | None = None, transaction: str | None = None
    ) -> Subscription:
        sub_id = f"sub-{next(_names)}"
        headers = {
            "destination": f"/queue/{queue}",
            "id": sub_id,
            "ack": {"auto": "auto", "client": "client", "individual": "client-individual"}[ack],
        }
        if selector is not None:
            headers["selector"] = selector
        await self.request("SUBSCRIBE", headers)
        return _StompSubscription(self, sub_id, ack, transaction)

    async def begin(self) -> str:
        name = f"tx-{next(_names)}"
        await self.request("BEGIN", {"transaction": name})
        return name

    async def commit(self, transaction: str) -> None:
        await self.request("COMMIT", {"transaction": transaction})

    async def rollback(self, transaction: str) -> None:
        await self.request("ABORT", {"transaction": transaction})

    async def browse(self, queue: str) -> list[str]:
        sub_id = f"browse-{next(_names)}"
        await self.request("SUBSCRIBE", {"destination": f"/queue/{queue}", "id": sub_id, "browser": "true"})
        bodies: list[str] = []
        while True:
            frame = await self.client.expect(
                lambda f: f.command == "MESSAGE" and f.headers.get("subscription") == sub_id, TIMEOUT
            )
            if frame.headers.get("browser") == "end":
                return bodies
            bodies.append(frame.body.decode())

    async def barrier(self) -> None:
        await asyncio.wait_for(self.client.barrier(), TIMEOUT)

    async def close(self) -> None:
        await self.client.close()


class EdgeFactory:
    """Opens connections of one edge kind to one broker; closes them all at the end of the test."""

    def __init__(self, name: str, broker: Broker) -> None:
        self.name = name
        self.broker = broker
        self._stomp: StompServer | None = None
        self._opened: list[Edge] = []

    async def open(self) -> Edge:
        edge: Edge
        if self.name == "stomp":
            if self._stomp is None:
                self._stomp = await start_stomp_server(self.broker)
            edge = await StompEdge.open(self.broker, self._stomp)
        else:
            edge = await ClientEdge.open(self.name, self.broker)
        self._opened.append(edge)
        return edge

    async def close(self) -> None:
        for edge in self._opened:
            try:
                await edge.close()
            except (MinibrokerError, ConnectionError):
                pass
        if self._stomp is not None:
            await self._stomp.close()
