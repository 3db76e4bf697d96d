"""The console's listings of connections, consumers, producers and scheduled jobs: what the connection door shows
(BrokerConnection's listings, each filtered by the caller's rights) and the JSON the page draws."""

from __future__ import annotations

from support.http_helpers import request

from minibroker import Broker
from minibroker.client import connect
from minibroker.plugins.auth import AuthorizationEntry, AuthPlugin, User
from minibroker.plugins.http import start_http_server

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
