"""The console's listings of connections, consumers, producers and scheduled jobs: what the connection door shows
(BrokerConnection's listings, each filtered by the caller's rights) and the JSON the page draws."""

from __future__ import annotations

import asyncio
import json

from support.http_helpers import request

from minibroker import Broker
from minibroker.client import connect
from minibroker.plugins.auth import AuthorizationEntry, AuthPlugin, User
from minibroker.plugins.http import HttpApp, start_http_server
from minibroker.plugins.mqtt import start_mqtt_server
from minibroker.plugins.server.tcp import start_server
from minibroker.plugins.stomp import start_stomp_server

ENTRIES = [
    AuthorizationEntry("orders.>", read="shop", write="shop", admin="shop"),
    AuthorizationEntry("secret.>", read="ops", write="ops", admin="ops"),
    AuthorizationEntry("topic://prices.>", read="shop", write="shop", admin="shop"),
    AuthorizationEntry("topic://ActiveMQ.Advisory.>", read="*", write="*", admin="*"),
]
USERS = {"alice": User("a", {"shop"}), "bob": User("b", {"ops"}), "carol": User("c", {"shop"})}


async def test_every_listing_without_a_security_filter() -> None:
    async with Broker(scheduler_support=True) as broker:
        server = await start_http_server(broker)
        async with server, await connect(broker, client_id="app1") as conn:
            session = await conn.create_session()
            producer = await session.create_producer("orders")
            await session.create_producer()  # anonymous
            await session.create_consumer("orders", selector="amount > 10")
            await session.create_durable_subscriber("topic://prices", "ticker")
            await producer.send("later", properties={"AMQ_SCHEDULED_DELAY": 60_000, "AMQ_SCHEDULED_REPEAT": 2})
            await producer.send("now", properties={"amount": 20})

            [connection] = (await request(server, "GET", "/console/api/connections")).json()["connections"]
            assert connection["clientId"] == "app1" and not connection["remote"]
            assert (connection["consumers"], connection["producers"]) == (2, 2)

            consumers = (await request(server, "GET", "/console/api/consumers")).json()["consumers"]
            by_destination = {c["destination"]: c for c in consumers}
            assert by_destination["queue://orders"]["selector"] == "amount > 10"
            assert by_destination["queue://orders"]["inFlight"] == 1 and by_destination["queue://orders"]["dispatched"]
            assert by_destination["topic://prices"]["durable"] == "ticker"
            assert by_destination["topic://prices"]["destinationKind"] == "topic"

            producers = (await request(server, "GET", "/console/api/producers")).json()["producers"]
            assert sorted(str(p["destination"]) for p in producers) == ["None", "queue://orders"]
            assert {p["clientId"] for p in producers} == {"app1"}

            scheduled = (await request(server, "GET", "/console/api/scheduled")).json()
            [job] = scheduled["jobs"]
            assert job["destinationName"] == "orders" and job["delay"] == 60_000 and job["repeat"] == 2
            assert job["preview"] == "later" and job["next"] > scheduled["now"]


async def test_listings_follow_the_callers_rights() -> None:
    """A user sees the consumers, producers and jobs of the destinations she may read or administer, her own
    connections, and those of the destinations she administers; not the rest."""
    plugin = AuthPlugin(USERS, ENTRIES)
    async with (
        Broker(plugins=[plugin], scheduler_support=True) as broker,
        await connect(broker, user="bob", password="b", client_id="ops-app") as ops,
        await connect(broker, user="carol", password="c", client_id="shop-app") as shop,
    ):
        ops_session = await ops.create_session()
        await ops_session.create_consumer("secret.keys")
        await (await ops_session.create_producer("secret.keys")).send("s", properties={"AMQ_SCHEDULED_DELAY": 60_000})
        await ops_session.create_producer()  # anonymous, on a connection alice cannot see
        shop_session = await shop.create_session()
        await shop_session.create_consumer("orders.eu")
        await (await shop_session.create_producer("orders.eu")).send("o", properties={"AMQ_SCHEDULED_DELAY": 60_000})

        alice = broker.connect(user="alice", password="a", remote=True)
        try:
            assert {c.client_id for c in alice.connection_listing()} == {"shop-app", None}  # None: alice's own
            assert [str(c.destination) for c in alice.consumer_listing()] == ["queue://orders.eu"]
            assert [str(p.destination) for p in alice.producer_listing()] == ["queue://orders.eu"]
            assert [str(j.message.destination) for j in alice.scheduled_jobs()] == ["queue://orders.eu"]
        finally:
            alice.close()

        admin = broker.connect()  # the application itself: unchecked
        try:
            assert {c.client_id for c in admin.connection_listing()} >= {"ops-app", "shop-app"}
            assert len(admin.consumer_listing()) == 2 and len(admin.scheduled_jobs()) == 2
            assert len(admin.producer_listing()) == 3
        finally:
            admin.close()


async def test_the_console_leaves_its_own_request_out_and_needs_a_login() -> None:
    plugin = AuthPlugin(USERS, ENTRIES)
    async with Broker(plugins=[plugin]) as broker:
        server = await start_http_server(broker)
        async with server:
            assert (await request(server, "GET", "/console/api/connections")).status == 401
            answer = await request(server, "GET", "/console/api/connections", auth=("alice", "a"))
            assert answer.status == 200 and answer.json() == {"connections": []}
            answer = await request(server, "GET", "/console/api/producers", auth=("alice", "a"))
            assert answer.json() == {"producers": []}


def _mqtt_connect(client_id: bytes) -> bytes:
    """An MQTT 3.1.1 CONNECT packet (clean session, 60 s keep-alive)."""
    body = b"\x00\x04MQTT\x04\x02\x00\x3c" + len(client_id).to_bytes(2, "big") + client_id
    return bytes([0x10, len(body)]) + body


async def test_connections_show_their_protocol_and_remote_address() -> None:
    """Each edge says what it is and where its client connects from: native, STOMP, MQTT, HTTP (a REST consumer
    kept between requests), and the application in process (issue 43)."""
    async with Broker() as broker:
        native = await start_server(broker)
        stomp = await start_stomp_server(broker)
        mqtt = await start_mqtt_server(broker)
        server = await start_http_server(broker)
        try:
            async with server, await connect(native.url, client_id="tcp-app"), await connect(broker, client_id="vm"):
                reader, writer = await asyncio.open_connection("127.0.0.1", stomp.port)
                writer.write(b"CONNECT\naccept-version:1.2\nhost:localhost\nclient-id:stomp-app\n\n\x00")
                assert (await asyncio.wait_for(reader.readuntil(b"\x00"), 10)).startswith(b"CONNECTED")
                mqtt_reader, mqtt_writer = await asyncio.open_connection("127.0.0.1", mqtt.port)
                mqtt_writer.write(_mqtt_connect(b"mqtt-app"))
                assert await asyncio.wait_for(mqtt_reader.readexactly(4), 10) == b"\x20\x02\x00\x00"
                rest = await request(server, "GET", "/api/message/orders?type=queue&clientId=rest-app&readTimeout=1")
                assert rest.status == 204

                rows = (await request(server, "GET", "/console/api/connections")).json()["connections"]
                by_client = {c["clientId"]: c for c in rows}
                assert by_client["tcp-app"]["protocol"] == "native"
                assert by_client["stomp-app"]["protocol"] == "STOMP"
                assert by_client["mqtt-app"]["protocol"] == "MQTT"
                assert by_client["vm"]["protocol"] is None and by_client["vm"]["remoteAddress"] is None
                http_rows = [c for c in rows if c["protocol"] == "HTTP"]
                assert len(http_rows) == 1  # the REST consumer's connection; the console's own request is left out
                port = writer.get_extra_info("sockname")[1]
                assert by_client["stomp-app"]["remoteAddress"] == f"tcp://127.0.0.1:{port}"
                port = mqtt_writer.get_extra_info("sockname")[1]
                assert by_client["mqtt-app"]["remoteAddress"] == f"tcp://127.0.0.1:{port}"
                for row in [by_client["tcp-app"], *http_rows]:
                    assert row["remoteAddress"].startswith("tcp://127.0.0.1:"), row
                writer.close()
                mqtt_writer.close()
        finally:
            for listener in (native, stomp, mqtt):
                await listener.close()


async def test_a_scheduled_job_is_removed_through_the_management_topic() -> None:
    """The console's Remove sends the scheduler a REMOVE, as a client would; it needs admin on the job's
    destination and write on topic://ActiveMQ.Scheduler.Management (admin too the first time: the send creates it)."""
    entries = [
        *ENTRIES,
        AuthorizationEntry("topic://ActiveMQ.Scheduler.Management", write="shop,ops", admin="shop,ops"),
    ]
    async with Broker(plugins=[AuthPlugin(USERS, entries)], scheduler_support=True) as broker:
        app = HttpApp(broker)
        server = await start_http_server(broker, handler=app)
        async with server, await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer("orders.eu")
            await producer.send("later", properties={"AMQ_SCHEDULED_DELAY": 60_000})
            await producer.send("also later", properties={"AMQ_SCHEDULED_DELAY": 90_000})
            jobs = (await request(server, "GET", "/console/api/scheduled", auth=("alice", "a"))).json()["jobs"]
            assert len(jobs) == 2
            token = {"X-Minibroker-Csrf": app.csrf_token}

            async def unschedule(job_id: str, user: tuple[str, str]) -> tuple[int, object]:
                body = json.dumps({"jobId": job_id}).encode()
                answer = await request(server, "POST", "/console/api/unschedule", body, token, auth=user)
                return answer.status, (answer.json() if answer.body.startswith(b"{") else answer.body)

            assert await unschedule(jobs[0]["jobId"], ("bob", "b")) == (200, {"done": False})  # not a job bob sees
            listed = await request(server, "GET", "/console/api/scheduled", auth=("alice", "a"))
            assert len(listed.json()["jobs"]) == 2  # none removed
            assert await unschedule(jobs[0]["jobId"], ("alice", "a")) == (200, {"done": True})
            left = (await request(server, "GET", "/console/api/scheduled", auth=("alice", "a"))).json()["jobs"]
            assert [j["preview"] for j in left] == ["also later"]
            assert (await unschedule("", ("alice", "a")))[0] == 400
