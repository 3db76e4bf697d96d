"""One small client API over every edge of the broker, so that one scenario runs over each (in the spirit of trio's
stream conformance tests): ``memory`` (the minibroker client, in process), ``tcp`` (the same client over the native
TCP server) and ``stomp`` (raw STOMP 1.2 frames over the STOMP connector); for topics, ``mqtt`` too (paho-mqtt over
the MQTT connector: :class:`TopicEdgeFactory`).

Each edge says only what STOMP can say too: queues, text bodies, the three ack modes (auto, client, individual),
sends in a transaction, a queue browser, a time to live, and giving up on a message (``reject``: into the DLQ).
Every refusal becomes :class:`Refused` with the broker's text. ``barrier()`` returns once the broker has answered
everything sent before it (a round trip on the same connection), so "nothing arrived" is a deterministic
statement, without sleeping.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, Protocol

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
    async def open(cls, name: str, broker: Broker, credentials: tuple[str, str] | None = None) -> ClientEdge:
        login = {} if credentials is None else {"user": credentials[0], "password": credentials[1]}
        try:
            conn = await connect_to(broker, name, redelivery_policy=RedeliveryPolicy(maximum_redeliveries=0), **login)
        except MinibrokerError as exc:
            raise Refused(str(exc)) from exc
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
        try:
            browser = await (await self._plain_session()).create_browser(queue)
            return [str(m.body) for m in await browser.messages()]
        except MinibrokerError as exc:
            raise Refused(str(exc)) from exc

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
    async def open(cls, broker: Broker, server: StompServer, credentials: tuple[str, str] | None = None) -> StompEdge:
        login = {} if credentials is None else {"login": credentials[0], "passcode": credentials[1]}
        client = await RawStompClient.open(server.port, connect=False)
        answer = await client.connect(**login)
        if answer.command != "CONNECTED":
            await client.close()
            raise Refused(answer.headers.get("message", ""))
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

    def __init__(self, name: str, broker: Broker, credentials: tuple[str, str] | None = None) -> None:
        self.name = name
        self.broker = broker
        #: (user, password) every connection logs in with (None: none, on a broker without security)
        self.credentials = credentials
        self._stomp: StompServer | None = None
        self._opened: list[Edge] = []

    async def open(self, credentials: tuple[str, str] | None = None) -> Edge:
        """A new connection, with the factory's credentials unless others are given."""
        login = credentials or self.credentials
        edge: Edge
        if self.name == "stomp":
            if self._stomp is None:
                self._stomp = await start_stomp_server(self.broker)
            edge = await StompEdge.open(self.broker, self._stomp, login)
        else:
            edge = await ClientEdge.open(self.name, self.broker, login)
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


# -- topics: every edge, MQTT included ---------------------------------------------------------------------------------

#: the edges that can speak of topics (MQTT speaks of nothing else)
TOPIC_EDGES = (*EDGES, "mqtt")


class TopicSubscriber(Protocol):
    async def receive(self) -> str: ...

    async def nothing_waiting(self) -> bool: ...


class TopicEdge(Protocol):
    """Topics as every edge can say them: publish a text, subscribe (``*`` wildcards allowed), receive texts."""

    name: str

    async def publish(self, topic: str, body: str) -> None: ...

    async def subscribe_topic(self, topic: str) -> TopicSubscriber: ...

    async def close(self) -> None: ...


class _ClientTopics:
    def __init__(self, edge: ClientEdge, consumer: Consumer) -> None:
        self.edge = edge
        self.consumer = consumer

    async def receive(self) -> str:
        message = await asyncio.wait_for(self.consumer.receive(), TIMEOUT)
        assert message is not None
        return str(message.body)

    async def nothing_waiting(self) -> bool:
        await self.edge.barrier()
        return (await self.consumer.receive_immediately()) is None


class _StompTopics:
    def __init__(self, edge: StompEdge, sub_id: str) -> None:
        self.edge = edge
        self.sub_id = sub_id

    async def receive(self) -> str:
        frame = await self.edge.client.expect(
            lambda f: f.command == "MESSAGE" and f.headers.get("subscription") == self.sub_id, TIMEOUT
        )
        return frame.body.decode()

    async def nothing_waiting(self) -> bool:
        await self.edge.barrier()
        return not [f for f in self.edge.client.inbox if f.headers.get("subscription") == self.sub_id]


async def client_publish(edge: ClientEdge, topic: str, body: str) -> None:
    try:
        producer = await (await edge._plain_session()).create_producer(f"topic://{topic}")
        await producer.send(body)
    except MinibrokerError as exc:
        raise Refused(str(exc)) from exc


async def client_subscribe_topic(edge: ClientEdge, topic: str) -> TopicSubscriber:
    try:
        consumer = await (await edge._plain_session()).create_consumer(f"topic://{topic}")
    except MinibrokerError as exc:
        raise Refused(str(exc)) from exc
    return _ClientTopics(edge, consumer)


async def stomp_publish(edge: StompEdge, topic: str, body: str) -> None:
    await edge.request("SEND", {"destination": f"/topic/{topic}"}, body)


async def stomp_subscribe_topic(edge: StompEdge, topic: str) -> TopicSubscriber:
    sub_id = f"topic-{next(_names)}"
    await edge.request("SUBSCRIBE", {"destination": f"/topic/{topic}", "id": sub_id})
    return _StompTopics(edge, sub_id)


def _mqtt_name(topic: str) -> str:
    return topic.replace(".", "/").replace("*", "+")


class _MqttTopics:
    def __init__(self, edge: MqttEdge) -> None:
        self.edge = edge

    async def receive(self) -> str:
        return (await self.edge.client.next(TIMEOUT)).payload.decode()

    async def nothing_waiting(self) -> bool:
        await self.edge.barrier()
        return self.edge.client.messages.empty()


class MqttEdge:
    """paho-mqtt over the broker's MQTT connector (QoS 1: every publish and subscribe is answered)."""

    name = "mqtt"

    def __init__(self, client: Any) -> None:
        self.client = client

    @classmethod
    async def open(cls, port: int, credentials: tuple[str, str] | None = None) -> MqttEdge:
        from .mqtt_helpers import Paho  # type: ignore[import-not-found]

        login = {} if credentials is None else {"username": credentials[0], "password": credentials[1]}
        client = await Paho.connect(port, f"kit-{next(_names)}", **login)
        if client.return_code != 0:
            raise Refused(client.reason)
        return cls(client)

    async def publish(self, topic: str, body: str) -> None:
        await self.client.publish(_mqtt_name(topic), body.encode(), 1)

    async def subscribe_topic(self, topic: str) -> TopicSubscriber:
        codes = await self.client.subscribe(_mqtt_name(topic), 1)
        if codes == [128]:  # MQTT's only word for a refusal (ActiveMQ logs the reason)
            raise Refused("SUBACK 0x80")
        return _MqttTopics(self)

    async def barrier(self) -> None:
        # a QoS 1 publish to a topic nobody reads: its PUBACK follows every packet the broker wrote before it
        await self.client.publish("kit/barrier", b"", 1)

    async def close(self) -> None:
        await self.client.disconnect()


class TopicEdgeFactory:
    """Opens topic-speaking connections of one edge kind (MQTT included) to one broker."""

    def __init__(self, name: str, broker: Broker, credentials: tuple[str, str] | None = None) -> None:
        self.edges = EdgeFactory(name if name != "mqtt" else "memory", broker, credentials)
        self.name = name
        self.broker = broker
        self.credentials = credentials
        self._mqtt: Any = None
        self._opened: list[MqttEdge] = []

    async def open(self, credentials: tuple[str, str] | None = None) -> TopicEdge:
        login = credentials or self.credentials
        if self.name == "mqtt":
            from minibroker.plugins.mqtt import start_mqtt_server

            if self._mqtt is None:
                self._mqtt = await start_mqtt_server(self.broker)
            edge = await MqttEdge.open(self._mqtt.port, login)
            self._opened.append(edge)
            return edge
        inner = await self.edges.open(login)
        return _TopicsOver(inner)

    async def close(self) -> None:
        for edge in self._opened:
            try:
                await edge.close()
            except (MinibrokerError, ConnectionError, TimeoutError):
                pass
        await self.edges.close()
        if self._mqtt is not None:
            await self._mqtt.close()


class _TopicsOver:
    """The topic words of a queue edge (the minibroker client or STOMP)."""

    def __init__(self, edge: Edge) -> None:
        self.edge = edge
        self.name = edge.name

    async def publish(self, topic: str, body: str) -> None:
        if isinstance(self.edge, StompEdge):
            await stomp_publish(self.edge, topic, body)
        else:
            assert isinstance(self.edge, ClientEdge)
            await client_publish(self.edge, topic, body)

    async def subscribe_topic(self, topic: str) -> TopicSubscriber:
        if isinstance(self.edge, StompEdge):
            return await stomp_subscribe_topic(self.edge, topic)
        assert isinstance(self.edge, ClientEdge)
        return await client_subscribe_topic(self.edge, topic)

    async def close(self) -> None:
        await self.edge.close()
