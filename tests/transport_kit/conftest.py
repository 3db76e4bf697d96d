"""Fixtures of the transport conformance kit: a broker on a ManualClock and an ``edges`` factory per edge kind,
each once on an open broker and once behind ActiveMQ's security plugins (every edge logs in with a user's
credentials and every operation passes the connection's authorization, the in-process link's included).

The edges and the STOMP helpers live in ``tests/support``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from support.edges import EDGES, TOPIC_EDGES, EdgeFactory, TopicEdgeFactory
from support.transports import close_servers

from minibroker import Broker, DestinationPolicy, ManualClock
from minibroker.plugins.auth import AuthorizationEntry, AuthPlugin, User

#: the secured broker's users: ``app`` may do anything with queues; ``guest`` may only read ``orders``
USERS = {"app": User("app-pw", {"apps"}), "guest": User("guest-pw", {"guests"})}
ENTRIES = [
    AuthorizationEntry(">", read="apps", write="apps", admin="apps"),
    AuthorizationEntry("orders", read="apps,guests", write="apps", admin="apps"),
    AuthorizationEntry("topic://ActiveMQ.Advisory.>", read="*", write="*", admin="*"),
    AuthorizationEntry("topic://>", read="apps", write="apps", admin="apps"),
    AuthorizationEntry("topic://news.*", read="apps,guests", write="apps", admin="apps"),
]

#: the queues whose memory limit is one byte: one message fills them (then producer flow control)
FLOW_POLICIES = {
    "waiting.>": DestinationPolicy(memory_limit=1),
    "timing.>": DestinationPolicy(memory_limit=1, send_fail_if_no_space_after_timeout=30.0),
    "failing.>": DestinationPolicy(memory_limit=1, send_fail_if_no_space=True),
}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(params=["open", "secured"])
def security(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest_asyncio.fixture
async def broker(clock: ManualClock, security: str) -> AsyncIterator[Broker]:
    plugins = [AuthPlugin(USERS, ENTRIES)] if security == "secured" else []
    async with Broker(clock=clock, policies=FLOW_POLICIES, plugins=plugins) as b:
        yield b


@pytest_asyncio.fixture(params=EDGES)
async def edges(request: pytest.FixtureRequest, broker: Broker, security: str) -> AsyncIterator[EdgeFactory]:
    factory = EdgeFactory(request.param, broker, credentials=("app", "app-pw") if security == "secured" else None)
    try:
        yield factory
    finally:
        await factory.close()
        await close_servers()


@pytest_asyncio.fixture(params=TOPIC_EDGES)
async def topic_edges(request: pytest.FixtureRequest, broker: Broker, security: str) -> AsyncIterator[TopicEdgeFactory]:
    factory = TopicEdgeFactory(request.param, broker, credentials=("app", "app-pw") if security == "secured" else None)
    try:
        yield factory
    finally:
        await factory.close()
        await close_servers()
