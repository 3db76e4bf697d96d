"""Who may do what, on every edge alike: one table of operations x destination forms x rights, tried over the
in-process link (with credentials), native TCP, TLS, STOMP and MQTT (issue 29, item 3).

Every operation an edge can express is tried by each of four users (no rights, read, write, admin) on each form of
destination it applies to (plain, composite, composite with a part the user may not touch, wildcard, a wildcard
whose children are granted one by one, the user's own temporary destination, another connection's). What is
expected comes from ActiveMQ 5.17.2's rules (``tests/auth_oracle/`` has the real broker's answers to the composite
and wildcard rows over STOMP and MQTT; ``test_auth_recordings.py`` replays them): a composite needs an entry that
applies to every part, a wildcard subscription is allowed when any entry under it grants it, temporary destinations
are anyone's, and another connection's temporary destination cannot be consumed. Each test runs one operation over
one edge through the whole grid and reports every cell that differs.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from support.mqtt_helpers import Paho  # type: ignore[import-not-found]
from support.stomp_helpers import PeerClosed, RawStompClient  # type: ignore[import-not-found]

from minibroker import Broker, Destination, Message, RealClock
from minibroker.client import Connection, connect
from minibroker.errors import AccessDenied, MinibrokerError
from minibroker.plugins.auth import AuthorizationEntry, AuthPlugin, User
from minibroker.plugins.mqtt import start_mqtt_server
from minibroker.plugins.server.tcp import start_server
from minibroker.plugins.stomp import start_stomp_server

CERTS = Path(__file__).resolve().parent / "certs"
PASSWORD = "pw"
#: the four users, named after the one right each has on the ``mx`` destinations
RIGHTS = ("none", "read", "write", "admin")
USERS = {
    "none": User(PASSWORD, {"nobody"}),
    "read": User(PASSWORD, {"readers"}),
    "write": User(PASSWORD, {"writers"}),
    "admin": User(PASSWORD, {"admins"}),
}
_ALL = {"read": "readers,admins", "write": "writers,admins", "admin": "admins"}
ENTRIES = [
    # the administrators may do anything (a composite is allowed when one entry applies to every part: this one)
    AuthorizationEntry(">", read="admins", write="admins", admin="admins"),
    AuthorizationEntry("topic://>", read="admins", write="admins", admin="admins"),
    AuthorizationEntry("mx.>", **_ALL),
    AuthorizationEntry("topic://mx.>", **_ALL),
    AuthorizationEntry("other.>", read="admins", write="admins", admin="admins"),
    AuthorizationEntry("topic://other.>", read="admins", write="admins", admin="admins"),
    # only the children are granted: a wildcard over them is allowed (ActiveMQ's DestinationMap lookup)
    AuthorizationEntry("topic://wc.a", **_ALL),
    AuthorizationEntry("topic://wc.b", **_ALL),
    AuthorizationEntry("topic://ActiveMQ.Advisory.>", read="readers,admins", write="*", admin="*"),
    AuthorizationEntry("topic://ActiveMQ.Scheduler.>", read="admins", write="admins", admin="admins"),
]

# -- the table -------------------------------------------------------------------------------------------------------

#: destination forms: a queue and a topic spelling of each (None: that form does not apply to that domain)
FORMS: dict[str, tuple[str | None, str | None]] = {
    "plain": ("mx.a", "topic://mx.t"),
    "composite": ("mx.a,mx.b", "topic://mx.t,topic://mx.u"),
    "composite_mixed": ("mx.a,other.a", "topic://mx.t,topic://other.t"),
    "wildcard": ("mx.*", "topic://mx.*"),
    "wildcard_children": (None, "topic://wc.*"),
    "temporary_own": ("temp", "temp"),
    "temporary_other": ("temp-other", "temp-other"),
}


@attrs.frozen
class Operation:
    """One thing a client does: the right it needs, the forms it applies to, the edges that can express it."""

    name: str
    action: str | None  # None: not checked by ActiveMQ (anyone may)
    forms: tuple[str, ...]
    edges: tuple[str, ...]
    #: the destination it acts on, when not the form's (a fixed name)
    fixed: str | None = None


NATIVE = ("memory", "tcp", "tls")
OPERATIONS = [
    Operation(
        "send",
        "write",
        ("plain", "composite", "composite_mixed", "temporary_own", "temporary_other"),
        (*NATIVE, "stomp", "mqtt"),
    ),
    Operation(
        "consume",
        "read",
        ("plain", "composite", "composite_mixed", "wildcard", "wildcard_children", "temporary_own", "temporary_other"),
        (*NATIVE, "stomp", "mqtt"),
    ),
    Operation("browse", "read", ("plain",), (*NATIVE, "stomp")),
    Operation("range_read", "read", ("plain",), NATIVE),
    Operation("cursor_ack", "read", ("plain",), NATIVE),
    Operation("statistics", "read", ("plain",), NATIVE),
    Operation("durable_subscribe", "read", ("plain", "wildcard", "composite_mixed"), (*NATIVE, "stomp")),
    Operation("unsubscribe", None, ("plain",), (*NATIVE, "stomp")),
    Operation("temporary_create", None, ("plain",), NATIVE),
    Operation(  # STOMP: advisories are refused as an UnsupportedFeature (docs/fidelity.md, stomp-advisory)
        "advisory_subscribe",
        "read",
        ("plain",),
        NATIVE,
        fixed="topic://ActiveMQ.Advisory.Consumer.Queue.mx.a",
    ),
    Operation(
        "scheduler_management",
        "write",
        ("plain",),
        (*NATIVE, "stomp"),
        fixed="topic://ActiveMQ.Scheduler.Management",
    ),
    Operation("purge", "admin", ("plain",), NATIVE),
]
#: operations on topics (the others act on queues, or on the fixed destination)
TOPIC_OPERATIONS = {"durable_subscribe", "unsubscribe"}


def expected(operation: Operation, form: str, right: str) -> bool:
    """ActiveMQ's answer: may a user with ``right`` do ``operation`` on ``form``?"""
    if operation.action is None or form == "temporary_own":
        return True
    if form == "temporary_other":  # the broker's own rule: only its connection consumes a temporary destination
        return operation.action != "read"
    if operation.fixed == "topic://ActiveMQ.Advisory.Consumer.Queue.mx.a":
        return right in ("read", "admin")
    if operation.fixed == "topic://ActiveMQ.Scheduler.Management" or form == "composite_mixed":
        return right == "admin"
    return right in ("admin", operation.action)


def cells(operation: Operation, edge: str) -> list[tuple[str, str]]:
    topics = edge == "mqtt" or operation.name in TOPIC_OPERATIONS
    return [
        (form, right)
        for form in operation.forms
        if FORMS[form][1 if topics else 0] is not None
        for right in RIGHTS
        if not (edge == "mqtt" and form.startswith("temporary"))
    ]


def destination_of(operation: Operation, form: str, edge: str) -> str:
    if operation.fixed is not None:
        return operation.fixed
    topics = edge == "mqtt" or operation.name in TOPIC_OPERATIONS
    text = FORMS[form][1 if topics else 0]
    assert text is not None
    return text


# -- the world: one broker with every listener -------------------------------------------------------------------------


@attrs.define
class World:
    broker: Broker
    tcp: str
    tls: str
    stomp_port: int
    mqtt_port: int
    #: an operator connection (in process, no credentials: trusted) that owns the "other" temporary destinations
    operator: Connection
    other_temporary: Destination


def _server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CERTS / "server.crt", CERTS / "server.key")
    return context


@pytest.fixture
async def world() -> AsyncIterator[World]:
    plugin = AuthPlugin(USERS, ENTRIES)
    async with Broker(clock=RealClock(), plugins=[plugin], scheduler_support=True) as broker:
        tcp = await start_server(broker, port=0)
        tls = await start_server(broker, port=0, ssl=_server_context())
        stomp = await start_stomp_server(broker, "127.0.0.1", 0)
        mqtt = await start_mqtt_server(broker, "127.0.0.1", 0)
        operator = await connect(broker)
        # every concrete destination exists, so a refusal is about rights, never about creating one
        session = await operator.create_session()
        for name in ("mx.a", "mx.b", "other.a"):
            await (await session.create_producer(name)).send("seed")
        for name in ("mx.t", "mx.u", "other.t", "wc.a", "wc.b"):  # a topic exists while it has a subscriber
            await session.create_consumer(f"topic://{name}")
        other_temporary = (await session.create_temporary_queue()).destination
        try:
            yield World(broker, tcp.url, tls.url, stomp.port, mqtt.port, operator, other_temporary)
        finally:
            await operator.close()
            for server in (mqtt, stomp, tls, tcp):
                await asyncio.wait_for(server.close(), 5.0)


# -- trying an operation over each edge ------------------------------------------------------------------------------


async def try_native(world: World, edge: str, operation: Operation, form: str, right: str) -> bool:
    """True: allowed; False: refused with AccessDenied (anything else fails the test)."""
    target: Any = world.broker if edge == "memory" else world.tcp if edge == "tcp" else world.tls
    extra: dict[str, Any] = {}
    if edge == "tls":
        extra["ssl"] = ssl.create_default_context(cafile=str(CERTS / "server.crt"))
    client_id = f"cid-{right}-{operation.name}-{form}-{edge}"
    if operation.name == "unsubscribe":  # a subscription of this client id, left offline by a trusted connection
        async with await connect(world.broker, client_id=client_id) as owner:
            await (await (await owner.create_session()).create_durable_subscriber("topic://mx.t", "s")).close()
    conn = await connect(target, user=right, password=PASSWORD, client_id=client_id, always_sync_send=True, **extra)
    try:
        session = await conn.create_session()
        dest = destination_of(operation, form, edge)
        if form == "temporary_own":
            dest = (await session.create_temporary_queue()).destination  # type: ignore[assignment]
        elif form == "temporary_other":
            dest = world.other_temporary  # type: ignore[assignment]
        try:
            await _native_operation(conn, session, operation, dest)
        except AccessDenied:
            return False
        except MinibrokerError as exc:
            if form == "temporary_other" and "emporary" in str(exc):
                return False  # the broker's own refusal
            raise
        return True
    finally:
        await conn.close()


async def _native_operation(conn: Connection, session: Any, operation: Operation, dest: Any) -> None:
    name = operation.name
    if name in ("send", "scheduler_management"):
        producer = await session.create_producer(dest)
        properties = {"AMQ_SCHEDULER_ACTION": "REMOVEALL"} if name == "scheduler_management" else {}
        await producer.send("x", properties=properties)
    elif name in ("consume", "advisory_subscribe"):
        await (await session.create_consumer(dest)).close()
    elif name == "browse":
        await (await session.create_browser(dest)).messages()
    elif name == "range_read":
        await conn.read_range(dest, 0, None, 1)
    elif name == "cursor_ack":
        await conn.ack_below(dest, "matrix", 0)
    elif name == "statistics":
        await conn.queue_statistics(dest)
    elif name == "durable_subscribe":
        await (await session.create_durable_subscriber(dest, "d")).close()
    elif name == "unsubscribe":
        await session.unsubscribe("s")
    elif name == "temporary_create":
        await session.create_temporary_queue()
    elif name == "purge":
        await conn.purge(dest)
    else:  # pragma: no cover - the table names only these
        raise AssertionError(name)


def _stomp_name(text: str) -> str:
    return ",".join(
        f"/topic/{part.removeprefix('topic://')}" if part.startswith("topic://") else f"/queue/{part}"
        for part in text.split(",")
    )


async def try_stomp(world: World, operation: Operation, form: str, right: str) -> bool:
    client_id = f"stomp-{right}-{operation.name}-{form}"
    if operation.name == "unsubscribe":
        async with await connect(world.broker, client_id=client_id) as owner:
            await (await (await owner.create_session()).create_durable_subscriber("topic://mx.t", "s")).close()
    client = await RawStompClient.open(world.stomp_port, login=right, passcode=PASSWORD, client_id=client_id)
    try:
        if form == "temporary_own":
            dest = "/temp-queue/mine"
        elif form == "temporary_other":
            dest = f"/queue/{world.other_temporary.name}"
        else:
            dest = _stomp_name(destination_of(operation, form, "stomp"))
        name = operation.name
        if name in ("send", "scheduler_management"):
            headers = {"destination": dest}
            if name == "scheduler_management":
                headers["AMQ_SCHEDULER_ACTION"] = "REMOVEALL"
            reply = await client.request("SEND", headers, "x")
        elif name == "unsubscribe":
            reply = await client.request("UNSUBSCRIBE", {"id": "s", "activemq.subscriptionName": "s"})
        else:
            headers = {"destination": dest, "id": "1", "ack": "auto"}
            if name == "browse":
                headers["browser"] = "true"
            if name == "durable_subscribe":
                headers["activemq.subscriptionName"] = "d"
            reply = await client.request("SUBSCRIBE", headers)
        if reply.command == "RECEIPT":
            return True
        message = reply.headers.get("message", "")
        if "not authorized" in message or (form == "temporary_other" and "emporary" in message):
            return False
        raise AssertionError(f"unexpected ERROR: {message}")
    finally:
        try:
            await client.disconnect()
        except PeerClosed:
            pass


def _mqtt_name(text: str) -> str:
    return ",".join(part.removeprefix("topic://").replace(".", "/").replace("*", "+") for part in text.split(","))


async def try_mqtt(world: World, operation: Operation, form: str, right: str) -> bool:
    client = await Paho.connect(
        world.mqtt_port, f"mqtt-{right}-{operation.name}-{form}", username=right, password=PASSWORD
    )
    try:
        assert client.return_code == 0
        topic = _mqtt_name(destination_of(operation, form, "mqtt"))
        if operation.name == "consume":
            return (await client.subscribe(topic, 1)) != [128]
        # ActiveMQ answers a refused PUBLISH (PUBACK) and drops it: watch the first part's topic for it
        got: list[Message] = []
        watcher = world.broker.connect()
        from minibroker import ConsumerInfo

        first = Destination.topic(topic.split(",")[0].replace("/", "."))
        watcher.add_consumer(ConsumerInfo(first, prefetch=100), lambda d: got.append(d.message) if d.message else None)
        try:
            await client.publish(topic, b"x", 1)
            barrier = await Paho.connect(
                world.mqtt_port, f"barrier-{right}-{form}", username="admin", password=PASSWORD
            )
            await barrier.disconnect()  # a round trip of another client: the broker has handled the PUBLISH
            return bool(got)
        finally:
            watcher.close()
    finally:
        await client.disconnect()


EDGES = ("memory", "tcp", "tls", "stomp", "mqtt")
CASES = [(edge, op) for op in OPERATIONS for edge in EDGES if edge in op.edges]


@pytest.mark.parametrize(("edge", "operation"), CASES, ids=[f"{e}-{o.name}" for e, o in CASES])
async def test_the_matrix(world: World, edge: str, operation: Operation) -> None:
    attempt: Callable[[str, str], Awaitable[bool]]
    if edge == "stomp":
        attempt = lambda form, right: try_stomp(world, operation, form, right)  # noqa: E731
    elif edge == "mqtt":
        attempt = lambda form, right: try_mqtt(world, operation, form, right)  # noqa: E731
    else:
        attempt = lambda form, right: try_native(world, edge, operation, form, right)  # noqa: E731
    differences = []
    tried = 0
    for form, right in cells(operation, edge):
        want = expected(operation, form, right)
        got = await attempt(form, right)
        tried += 1
        if got != want:
            differences.append(
                f"{right} {operation.name} {form}: {'allowed' if got else 'refused'}, expected "
                f"{'allowed' if want else 'refused'}"
            )
    assert tried > 0
    assert differences == [], "\n".join(differences)


def test_the_grid_covers_every_operation_and_edge() -> None:
    """The table is the spec: every operation the issue names is in it, on every edge that can express it."""
    names = {op.name for op in OPERATIONS}
    assert names == {
        "send",
        "consume",
        "browse",
        "range_read",
        "cursor_ack",
        "statistics",
        "durable_subscribe",
        "unsubscribe",
        "temporary_create",
        "advisory_subscribe",
        "scheduler_management",
        "purge",
    }
    assert {edge for edge, _ in CASES} == set(EDGES)
    assert sum(len(cells(op, edge)) for edge, op in CASES) > 300


# -- what a wildcard subscription receives ----------------------------------------------------------------------------


async def _publish_as_operator(world: World, topics: list[str]) -> None:
    session = await world.operator.create_session()
    for topic in topics:
        await (await session.create_producer(f"topic://{topic}")).send(f"m-{topic}")


@pytest.mark.parametrize("edge", ["memory", "tcp", "stomp", "mqtt"])
async def test_a_wildcard_subscription_leaves_out_what_its_user_may_not_read(world: World, edge: str) -> None:
    """ActiveMQ allows ``*.t`` to a reader of ``mx.>`` (an entry under it grants read), then checks each topic as
    the subscription joins it: ``mx.t`` is delivered, ``other.t`` never is (recorded: ``tests/auth_oracle/``,
    ``/topic/*.x`` gets ``orders.x`` and not ``secret.x``; MQTT ``+/+`` never gets ``secret/t``)."""
    got: list[str] = []
    if edge in ("memory", "tcp"):
        target: Any = world.broker if edge == "memory" else world.tcp
        conn = await connect(target, user="read", password=PASSWORD)
        consumer = await (await conn.create_session()).create_consumer("topic://*.t")
        await _publish_as_operator(world, ["other.t", "mx.t"])
        while (message := await consumer.receive(timeout=0.5)) is not None:
            got.append(str(message.body))
        await conn.close()
    elif edge == "stomp":
        client = await RawStompClient.open(world.stomp_port, login="read", passcode=PASSWORD)
        assert (await client.request("SUBSCRIBE", {"destination": "/topic/*.t", "id": "1"})).command == "RECEIPT"
        await _publish_as_operator(world, ["other.t", "mx.t"])
        got.append((await client.message()).body.decode())
        await client.barrier()
        got.extend(frame.body.decode() for frame in client.pending_messages())
        await client.disconnect()
    else:
        mqtt = await Paho.connect(world.mqtt_port, "wild", username="read", password=PASSWORD)
        assert await mqtt.subscribe("+/t", 1) == [1]
        await _publish_as_operator(world, ["other.t", "mx.t"])
        got.append((await mqtt.next()).payload.decode())
        with pytest.raises(TimeoutError):
            got.append((await mqtt.next(timeout=0.3)).payload.decode())
        await mqtt.disconnect()
    assert got == ["m-mx.t"]
