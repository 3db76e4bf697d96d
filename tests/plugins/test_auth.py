"""Users and rights (``minibroker.plugins.auth``): authentication on connect, read/write/admin checks with wildcard
entries, over TCP (every connection checked) and in process (checked when credentials are given)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from minibroker import Broker, ManualClock, RealClock
from minibroker.client import AckMode, Connection, connect
from minibroker.errors import AccessDenied
from minibroker.plugins.auth import AuthorizationEntry, AuthPlugin, Principal, User
from minibroker.plugins.server.tcp import Server, start_server
from minibroker.transport.commands import Browse, GetQueueStatistics, Purge
from minibroker.transport.tcp_link import TcpLink

TIMEOUT = 5.0

USERS = {
    "admin": User("admin-pw", {"admins"}),
    "app": User("app-pw", "apps, readers"),
    "reader": User("reader-pw", {"readers"}),
}
ENTRIES = [
    AuthorizationEntry(">", read="admins", write="admins", admin="admins"),
    AuthorizationEntry("orders.>", read="apps", write="apps", admin="apps"),
    AuthorizationEntry("orders.eu", read="readers"),
    AuthorizationEntry("topic://prices.*", read="*", write="admins", admin="*"),
]


def plugin(**kw: object) -> AuthPlugin:
    return AuthPlugin(USERS, ENTRIES, **kw)  # type: ignore[arg-type]


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    async with Broker(clock=RealClock(), plugins=[plugin()]) as broker:
        s = await start_server(broker, port=0)
        try:
            yield s
        finally:
            await asyncio.wait_for(s.close(), TIMEOUT)


async def send(conn: Connection, destination: str, body: str = "x") -> None:
    producer = await (await conn.create_session()).create_producer(destination)
    await producer.send(body)


def link_of(conn: Connection) -> TcpLink:
    assert isinstance(conn._link, TcpLink)
    return conn._link


class TestPlugin:
    def test_authenticate(self) -> None:
        p = plugin()
        assert p.authenticate("app", "app-pw") == Principal("app", frozenset({"apps", "readers"}))
        for user, password in (("app", "wrong"), ("nobody", "app-pw"), (None, None), ("app", None)):
            with pytest.raises(AccessDenied, match=r"User name \[.*\] or password is invalid"):
                p.authenticate(user, password)
        with pytest.raises(AccessDenied, match=r"^User name \[null\] or password is invalid\.$"):
            p.authenticate(None, "pw")  # ActiveMQ prints Java's null for a missing user name
        anonymous = plugin(anonymous_access_allowed=True).authenticate(None, None)
        assert anonymous == Principal("anonymous", frozenset({"anonymous"}))

    def test_rights_add_up_over_matching_entries(self) -> None:
        from minibroker import Destination

        p = plugin()
        acl = p.acl(Destination.queue("orders.eu"))
        assert acl == {"read": {"admins", "apps", "readers"}, "write": {"admins", "apps"}, "admin": {"admins", "apps"}}
        assert p.acl(Destination.topic("prices.eu"))["read"] == {"*"}
        assert p.acl(Destination.topic("prices.eu.x"))["read"] == set()  # no entry matches topics below that

    def test_users_password_is_not_in_its_repr(self) -> None:
        assert "admin-pw" not in repr(USERS["admin"])


class TestOverTcp:
    async def test_connect_needs_valid_credentials(self, server: Server) -> None:
        for kw in ({}, {"user": "app", "password": "wrong"}, {"user": "ghost", "password": "x"}):
            with pytest.raises(AccessDenied, match="or password is invalid"):
                await connect(server.url, **kw)  # type: ignore[arg-type]
        async with await connect(server.url, user="app", password="app-pw") as conn:
            await send(conn, "orders.us")
        assert server.broker.statistics().connections == 0

    async def test_anonymous_access(self) -> None:
        async with Broker(clock=RealClock(), plugins=[plugin(anonymous_access_allowed=True)]) as broker:
            server = await start_server(broker, port=0)
            try:
                async with await connect(server.url) as conn:
                    consumer = await (await conn.create_session()).create_consumer("topic://prices.eu")
                    with pytest.raises(AccessDenied, match="User anonymous is not authorized to write to"):
                        await send(conn, "orders.us")
                    await consumer.close()
            finally:
                await server.close()

    async def test_write_and_read_rights(self, server: Server) -> None:
        async with await connect(server.url, user="admin", password="admin-pw") as admin:
            await send(admin, "orders.eu", "from admin")  # creates the queue
        async with await connect(server.url, user="reader", password="reader-pw") as reader:
            with pytest.raises(AccessDenied) as info:
                await send(reader, "orders.eu")
            assert str(info.value) == "User reader is not authorized to write to: queue://orders.eu"
            consumer = await (await reader.create_session()).create_consumer("orders.eu")
            msg = await consumer.receive(timeout=TIMEOUT)
            assert msg is not None and msg.body == "from admin"
            with pytest.raises(AccessDenied, match="not authorized to read from: queue://invoices"):
                await (await reader.create_session()).create_consumer("invoices")

    async def test_creating_a_destination_needs_admin(self, server: Server) -> None:
        async with await connect(server.url, user="reader", password="reader-pw") as reader:
            # readers may read orders.eu, but it does not exist yet: a consumer would create it
            with pytest.raises(AccessDenied, match=r"User reader is not authorized to create: queue://orders\.eu"):
                await (await reader.create_session()).create_consumer("orders.eu")
        async with await connect(server.url, user="app", password="app-pw") as app:
            await send(app, "orders.new")  # apps have admin on orders.>

    async def test_transacted_sends_are_checked_when_sent(self, server: Server) -> None:
        async with await connect(server.url, user="reader", password="reader-pw", always_sync_send=True) as conn:
            session = await conn.create_session(AckMode.SESSION_TRANSACTED)
            producer = await session.create_producer("orders.eu")
            with pytest.raises(AccessDenied, match="write to"):
                await producer.send("x")

    async def test_admin_requests(self, server: Server) -> None:
        async with await connect(server.url, user="admin", password="admin-pw") as admin:
            await send(admin, "orders.eu")
            await send(admin, "secret")
        async with await connect(server.url, user="reader", password="reader-pw") as reader:
            link = link_of(reader)
            assert [m.body for m in await link.request(Browse("orders.eu"))] == ["x"]
            with pytest.raises(AccessDenied, match="read from: queue://secret"):
                await link.request(Browse("secret"))
            with pytest.raises(AccessDenied, match="read from: queue://secret"):
                await link.request(GetQueueStatistics("secret"))
            assert [q.name for q in await link.list_queues()] == ["orders.eu"]  # only what it may read
            with pytest.raises(AccessDenied, match=r"User reader is not authorized to administer: queue://orders\.eu"):
                await link.request(Purge("orders.eu"))
        async with await connect(server.url, user="admin", password="admin-pw") as admin:
            assert await link_of(admin).request(Purge("orders.eu")) == 1
            assert [q.name for q in await link_of(admin).list_queues()] == ["orders.eu", "secret"]


class TestInProcess:
    async def test_without_credentials_the_application_is_trusted(self) -> None:
        async with Broker(clock=ManualClock(autojump=True), plugins=[plugin()]) as broker:
            async with await connect(broker) as conn:
                await send(conn, "anything")
            assert broker.queue("anything").size == 1

    async def test_with_credentials_the_same_checks_apply(self) -> None:
        async with Broker(clock=ManualClock(autojump=True), plugins=[plugin()]) as broker:
            with pytest.raises(AccessDenied, match="or password is invalid"):
                await connect(broker, user="app", password="nope")
            async with await connect(broker, user="reader", password="reader-pw") as conn:
                with pytest.raises(AccessDenied, match=r"write to: queue://orders\.eu") as info:
                    await send(conn, "orders.eu")
                assert (info.value.user, info.value.destination, info.value.action) == (  # type: ignore[attr-defined]
                    "reader",
                    "queue://orders.eu",
                    "write",
                )
                assert isinstance(broker.principal(conn._link.connection_id), Principal)  # type: ignore[attr-defined]
            assert broker.queue("orders.eu").size == 0
            with pytest.raises(AccessDenied, match="administer"):
                broker.connect(user="reader", password="reader-pw").purge("orders.eu")

    async def test_without_entries_every_user_may_do_anything(self) -> None:
        async with (
            Broker(clock=ManualClock(autojump=True), plugins=[AuthPlugin(USERS)]) as broker,
            await connect(broker, user="reader", password="reader-pw") as conn,
        ):
            await send(conn, "anything")


class TestStomp:
    async def test_stomp_connect_is_authenticated(self) -> None:
        from minibroker.plugins.stomp import start_stomp_server

        async with Broker(clock=RealClock(), plugins=[plugin()]) as broker:
            stomp = await start_stomp_server(broker, "127.0.0.1", 0)
            try:
                host, port = stomp.url.removeprefix("stomp://").rsplit(":", 1)
                for login, expected in (
                    (b"login:app\npasscode:bad\n", b"ERROR"),
                    (b"login:app\npasscode:app-pw\n", b"CONNECTED"),
                ):
                    reader, writer = await asyncio.open_connection(host, int(port))
                    writer.write(b"CONNECT\naccept-version:1.2\nhost:localhost\n" + login + b"\n\x00")
                    await writer.drain()
                    reply = await asyncio.wait_for(reader.readuntil(b"\x00"), TIMEOUT)
                    assert reply.startswith(expected), reply
                    writer.close()
            finally:
                await stomp.close()
