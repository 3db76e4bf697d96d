"""The declared plugin chain (``minibroker.filters``): hooks pass through, filters run outermost first, an unknown
hook fails at install, and two plugins that watch the same thing both keep working."""

from __future__ import annotations

import pytest

from minibroker import Broker, ConsumerInfo, Destination, ManualClock, Message
from minibroker.client import AckMode, RedeliveryPolicy, connect
from minibroker.errors import AccessDenied, FilterValidationError, InvalidConfiguration
from minibroker.filters import HOOKS, BrokerFilter, ConnectionContext, DeadLetterRequest
from minibroker.plugins.auth import AuthorizationEntry, AuthPlugin, User
from minibroker.plugins.redelivery import RedeliveryPlugin
from minibroker.redelivery import RedeliveryPolicy as BrokerRedeliveryPolicy


class Recorder(BrokerFilter):
    """Writes down every call it sees, then passes it on."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    def on_connect(self, context: ConnectionContext) -> None:
        self.log.append(f"{self.name}:connect")
        self.next.on_connect(context)

    def on_subscribe(self, context: ConnectionContext, info: ConsumerInfo) -> int:
        self.log.append(f"{self.name}:subscribe {info.destination}")
        return self.next.on_subscribe(context, info)

    def on_send(self, context: ConnectionContext, message: Message, transaction_id: int | None) -> None:
        self.log.append(f"{self.name}:send {message.body!r}")
        self.next.on_send(context, message, transaction_id)

    def on_commit(self, context: ConnectionContext, transaction_id: int) -> None:
        self.log.append(f"{self.name}:commit")
        self.next.on_commit(context, transaction_id)

    def on_dead_letter(self, request: DeadLetterRequest) -> bool:
        self.log.append(f"{self.name}:dead_letter {request.message.body!r} counter={request.redelivery_counter}")
        return self.next.on_dead_letter(request)


class RefuseBody(BrokerFilter):
    """Refuses sends of one body before passing anything on."""

    def on_send(self, context: ConnectionContext, message: Message, transaction_id: int | None) -> None:
        if message.body == "forbidden":
            raise AccessDenied("no forbidden bodies", destination=str(message.destination))
        self.next.on_send(context, message, transaction_id)


class Misspelt(BrokerFilter):
    def on_sned(self, context: ConnectionContext, message: Message, transaction_id: int | None) -> None:
        """A typo: no hook of that name."""


class TestChain:
    async def test_filters_run_outermost_first_and_every_call_reaches_the_broker(self) -> None:
        log: list[str] = []
        async with Broker(
            clock=ManualClock(autojump=True), plugins=[Recorder("outer", log), Recorder("inner", log)]
        ) as broker:
            conn = await connect(broker)
            session = await conn.create_session(AckMode.SESSION_TRANSACTED)
            producer = await session.create_producer("orders")
            await producer.send("m1")
            await session.commit()
            consumer = await session.create_consumer("orders")
            assert (await consumer.receive(timeout=1)) is not None
            await conn.close()
        assert log == [
            "outer:connect",
            "inner:connect",
            "outer:send 'm1'",
            "inner:send 'm1'",
            "outer:commit",
            "inner:commit",
            "outer:subscribe queue://orders",
            "inner:subscribe queue://orders",
        ]

    async def test_a_refusing_filter_leaves_nothing_behind(self) -> None:
        async with Broker(clock=ManualClock(autojump=True), plugins=[RefuseBody()]) as broker:
            conn = await connect(broker)
            producer = await (await conn.create_session()).create_producer("orders")
            with pytest.raises(AccessDenied, match="no forbidden bodies") as info:
                await producer.send("forbidden")
            assert info.value.destination == "queue://orders"
            await producer.send("fine")
            assert [m.body for m in broker.queue("orders").browse()] == ["fine"]
            await conn.close()

    def test_an_unknown_hook_name_fails_at_install(self) -> None:
        with pytest.raises(FilterValidationError, match=r"Misspelt\.on_sned names no broker hook") as info:
            Broker(plugins=[Misspelt()])
        assert info.value.hook == "on_sned" and info.value.plugin == "Misspelt"

    async def test_one_filter_serves_one_running_broker(self) -> None:
        shared = RefuseBody()
        Broker(plugins=[shared])  # never started: holds nothing
        async with Broker(plugins=[shared]):
            with pytest.raises(InvalidConfiguration, match="already installed in a running broker"):
                Broker(plugins=[shared])
        Broker(plugins=[shared])  # the running one stopped: free again

    def test_the_hooks_are_the_base_class_methods(self) -> None:
        assert {name[3:] for name in vars(BrokerFilter) if name.startswith("on_") and name != "on_attach"} == HOOKS

    async def test_a_broker_without_filters_goes_straight_to_the_core(self) -> None:
        async with Broker() as broker:
            assert broker._hooked == frozenset()


class TestComposition:
    async def test_redelivery_and_a_dead_letter_watcher_both_work(self) -> None:
        """Before the chain, a second plugin that set the core's dead-letter hook replaced the redelivery plugin."""
        log: list[str] = []
        policy = BrokerRedeliveryPolicy(maximum_redeliveries=1, initial_redelivery_delay=1.0, redelivery_delay=1.0)
        async with Broker(
            clock=ManualClock(autojump=True),
            scheduler_support=True,
            plugins=[Recorder("watch", log), RedeliveryPlugin(policy)],
        ) as broker:
            conn = await connect(broker, redelivery_policy=RedeliveryPolicy(maximum_redeliveries=0))
            session = await conn.create_session(AckMode.SESSION_TRANSACTED)
            await (await session.create_producer("orders")).send("poison")
            await session.commit()
            consumer = await session.create_consumer("orders")
            for _ in range(2):
                assert (await consumer.receive(timeout=5)) is not None
                await session.rollback()
            await broker.settled()
            await conn.close()
            assert [m.body for m in broker.queue("ActiveMQ.DLQ").browse()] == ["poison"]
        dead = [line for line in log if line.startswith("watch:dead_letter")]
        assert dead == ["watch:dead_letter 'poison' counter=0", "watch:dead_letter 'poison' counter=1"]

    async def test_auth_and_redelivery_in_one_chain(self) -> None:
        auth = AuthPlugin(
            {"app": User("pw", {"apps"})}, [AuthorizationEntry(">", read="apps", write="apps", admin="apps")]
        )
        async with Broker(
            clock=ManualClock(autojump=True), scheduler_support=True, plugins=[auth, RedeliveryPlugin()]
        ) as broker:
            with pytest.raises(AccessDenied):
                await connect(broker, user="app", password="wrong")
            conn = await connect(broker, user="app", password="pw")
            await (await (await conn.create_session()).create_producer("orders")).send("m")
            assert broker.principal(conn._link.connection_id) is not None  # type: ignore[attr-defined]
            assert broker.has_destination(Destination.queue("orders"))
            await conn.close()
