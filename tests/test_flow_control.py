"""Per-queue memory limits and producer flow control (ActiveMQ ``memoryLimit``, ``sendFailIfNoSpace``,
``sendFailIfNoSpaceAfterTimeout``): in process on virtual time, and over TCP.

The core counts the bytes of unacked messages per queue (``Message.size_estimate()``); a send to a queue at or over
its limit either fails at once or waits (at the edge) until acks free room, up to a timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from support.waiting import until

from minibroker import Broker, DestinationPolicy, ManualClock, Message, RealClock
from minibroker.client import AckMode, Connection, connect
from minibroker.errors import LimitExceeded, TransactionRolledBack
from minibroker.plugins.server.tcp import Server, start_server
from minibroker.transport.commands import GetQueueStatistics
from minibroker.transport.tcp_link import TcpLink

TIMEOUT = 5.0
BODY = "x" * 436  # size_estimate: 436 + 64 = 500 bytes
LIMIT = 2_000  # four messages fill the queue


def policies(**kw: object) -> dict[str, DestinationPolicy]:
    return {"limited.>": DestinationPolicy(memory_limit=LIMIT, **kw)}  # type: ignore[arg-type]


async def fill(conn: Connection, queue: str, count: int) -> None:
    producer = await (await conn.create_session()).create_producer(queue)
    for _ in range(count):
        await producer.send(BODY)


class TestAccounting:
    async def test_bytes_follow_sends_and_acks(self) -> None:
        async with Broker(clock=ManualClock(autojump=True), policies=policies()) as broker:
            conn = await connect(broker)
            await fill(conn, "limited.q", 3)
            assert broker.queue("limited.q").memory_usage == 1_500
            session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
            consumer = await session.create_consumer("limited.q")
            got = [await consumer.receive(timeout=1) for _ in range(3)]
            assert broker.queue("limited.q").memory_usage == 1_500  # in flight still counts
            assert got[-1] is not None
            await got[-1].acknowledge()  # CLIENT: acks all three delivered
            assert broker.queue("limited.q").memory_usage == 0
            await fill(conn, "limited.q", 2)
            assert broker.queue("limited.q").purge() == 2 and broker.queue("limited.q").memory_usage == 0
            await conn.close()

    def test_size_estimate(self) -> None:
        from minibroker import Destination

        assert Message("ID:1", Destination.queue("q"), BODY).size_estimate() == 500


class TestFailIfNoSpace:
    async def test_a_full_queue_refuses_at_once_then_accepts_after_acks(self) -> None:
        async with Broker(clock=ManualClock(autojump=True), policies=policies(send_fail_if_no_space=True)) as broker:
            conn = await connect(broker)
            await fill(conn, "limited.q", 4)
            with pytest.raises(LimitExceeded, match=r"Memory Limit reached on queue://limited\.q") as info:
                await fill(conn, "limited.q", 1)
            assert info.value.destination == "queue://limited.q" and info.value.limit == LIMIT  # type: ignore[attr-defined]
            await fill(conn, "unlimited", 10)  # other queues are not limited
            consumer = await (await conn.create_session()).create_consumer("limited.q", prefetch=1)
            assert await consumer.receive(timeout=1) is not None  # AUTO: acked, 500 bytes freed
            await fill(conn, "limited.q", 1)
            assert broker.queue("limited.q").size == 4
            await conn.close()


class TestWaiting:
    async def test_a_producer_waits_until_a_consumer_acks(self) -> None:
        clock = ManualClock()
        async with Broker(clock=clock, policies=policies()) as broker:
            conn = await connect(broker)
            await fill(conn, "limited.q", 4)
            blocked = asyncio.create_task(fill(conn, "limited.q", 1))
            await broker.run_ready()
            assert not blocked.done() and broker.waiting_producers == 1
            consumer = await (await conn.create_session()).create_consumer("limited.q", prefetch=1)
            assert await consumer.receive(timeout=0) is not None
            await asyncio.wait_for(blocked, TIMEOUT)
            assert broker.waiting_producers == 0 and broker.queue("limited.q").size == 4
            await conn.close()

    async def test_the_wait_times_out_on_the_broker_clock(self) -> None:
        clock = ManualClock()
        async with Broker(clock=clock, policies=policies(send_fail_if_no_space_after_timeout=30.0)) as broker:
            conn = await connect(broker)
            await fill(conn, "limited.q", 4)
            blocked = asyncio.create_task(fill(conn, "limited.q", 1))
            await broker.run_ready()
            await clock.advance(29.0)
            assert not blocked.done()
            await clock.advance(1.0)
            with pytest.raises(LimitExceeded, match=r"no space freed within 30\.0 s"):
                await asyncio.wait_for(blocked, TIMEOUT)
            assert broker.queue("limited.q").size == 4
            await conn.close()

    async def test_stopping_the_broker_releases_waiting_producers(self) -> None:
        broker = Broker(clock=ManualClock(), policies=policies())
        async with broker:
            conn = await connect(broker)
            await fill(conn, "limited.q", 4)
            blocked = asyncio.create_task(fill(conn, "limited.q", 1))
            await broker.run_ready()
        with pytest.raises(Exception, match="stopped"):
            await asyncio.wait_for(blocked, TIMEOUT)

    async def test_a_consumer_that_never_acks_cannot_exhaust_memory(self) -> None:
        clock = ManualClock()
        async with Broker(clock=clock, policies=policies(send_fail_if_no_space_after_timeout=1.0)) as broker:
            conn = await connect(broker)
            session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
            await session.create_consumer("limited.q", prefetch=1000)  # takes everything, acks nothing
            refused = 0
            for _ in range(20):
                task = asyncio.create_task(fill(conn, "limited.q", 1))
                await broker.run_ready()
                if not task.done():
                    await clock.advance(1.0)
                try:
                    await asyncio.wait_for(task, TIMEOUT)
                except LimitExceeded:
                    refused += 1
            assert broker.queue("limited.q").size == 4 and refused == 16
            assert broker.queue("limited.q").memory_usage <= LIMIT
            await conn.close()


class TestTransactedSends:
    """A transaction's sends hold their bytes until it ends (the core's ``txn_memory``), so flow control must not
    hold a transacted send for ever: it times out as a plain send does, and fails at once when only its own
    transaction's end could make room."""

    async def test_a_held_transacted_send_times_out_on_the_broker_clock(self) -> None:
        clock = ManualClock()
        async with Broker(clock=clock, policies=policies(send_fail_if_no_space_after_timeout=30.0)) as broker:
            conn = await connect(broker)
            await fill(conn, "limited.q", 4)
            session = await conn.create_session(AckMode.SESSION_TRANSACTED)
            producer = await session.create_producer("limited.q")
            blocked = asyncio.create_task(producer.send(BODY))
            await broker.run_ready()
            assert not blocked.done() and broker.waiting_producers == 1
            await clock.advance(30.0)
            with pytest.raises(LimitExceeded, match=r"no space freed within 30\.0 s"):
                await asyncio.wait_for(blocked, TIMEOUT)
            await session.commit()
            assert broker.queue("limited.q").size == 4
            await conn.close()

    async def test_a_transaction_alone_over_the_limit_fails_at_once(self) -> None:
        clock = ManualClock()  # no timeout in the policy: a plain send would wait for ever
        async with Broker(clock=clock, policies=policies()) as broker:
            conn = await connect(broker)
            session = await conn.create_session(AckMode.SESSION_TRANSACTED)
            producer = await session.create_producer("limited.q")
            for _ in range(4):
                await producer.send(BODY)
            with pytest.raises(LimitExceeded, match=r"transaction \d+ alone holds 2000 bytes") as info:
                await asyncio.wait_for(producer.send(BODY), TIMEOUT)  # the clock never moves: no wait
            assert info.value.limit == LIMIT and broker.waiting_producers == 0  # type: ignore[attr-defined]
            await session.rollback()  # frees the transaction's bytes: room again
            await asyncio.wait_for(fill(conn, "limited.q", 1), TIMEOUT)
            assert broker.queue("limited.q").size == 1
            await conn.close()

    async def test_a_transaction_that_shares_the_queue_waits_for_the_others(self) -> None:
        clock = ManualClock()
        async with Broker(clock=clock, policies=policies()) as broker:
            conn = await connect(broker)
            await fill(conn, "limited.q", 2)
            session = await conn.create_session(AckMode.SESSION_TRANSACTED)
            producer = await session.create_producer("limited.q")
            for _ in range(2):
                await producer.send(BODY)
            blocked = asyncio.create_task(producer.send(BODY))  # a consumer's acks can make room: it waits
            await broker.run_ready()
            assert not blocked.done() and broker.waiting_producers == 1
            consumer = await (await conn.create_session()).create_consumer("limited.q", prefetch=1)
            assert await consumer.receive(timeout=0) is not None
            await asyncio.wait_for(blocked, TIMEOUT)
            await session.commit()
            assert broker.queue("limited.q").size == 4
            await conn.close()

    async def test_over_stomp_a_transaction_alone_over_the_limit_is_an_error_at_once(self) -> None:
        from support.stomp_helpers import RawStompClient

        from minibroker.plugins.stomp import start_stomp_server

        async with Broker(clock=ManualClock(), policies=policies()) as broker:
            server = await start_stomp_server(broker)
            client = await RawStompClient.open(server.port)
            try:
                assert (await client.request("BEGIN", {"transaction": "t"})).command == "RECEIPT"
                for _ in range(4):
                    await client.send("/queue/limited.q", BODY, transaction="t")
                answer = await client.request(
                    "SEND", {"destination": "/queue/limited.q", "transaction": "t"}, BODY, timeout=TIMEOUT
                )
                assert answer.command == "ERROR" and "alone holds 2000 bytes" in answer.headers["message"]
                assert broker.waiting_producers == 0
            finally:
                await client.close()
                await server.close()


# -- over TCP -------------------------------------------------------------------------------------------------------


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    async with Broker(
        clock=RealClock(),
        policies={
            "limited.>": DestinationPolicy(memory_limit=LIMIT, send_fail_if_no_space_after_timeout=0.2),
            "failing.>": DestinationPolicy(memory_limit=LIMIT, send_fail_if_no_space=True),
            "forever.>": DestinationPolicy(memory_limit=LIMIT),
        },
    ) as broker:
        s = await start_server(broker, port=0)
        try:
            yield s
        finally:
            await asyncio.wait_for(s.close(), TIMEOUT)


class TestOverTcp:
    async def test_fail_at_once(self, server: Server) -> None:
        async with await connect(server.url) as conn:
            await fill(conn, "failing.q", 4)
            with pytest.raises(LimitExceeded, match="Memory Limit reached"):
                await fill(conn, "failing.q", 1)

    async def test_a_held_send_goes_through_when_another_connection_acks(self, server: Server) -> None:
        async with await connect(server.url) as producer_conn, await connect(server.url) as consumer_conn:
            await fill(producer_conn, "limited.q", 4)
            blocked = asyncio.create_task(fill(producer_conn, "limited.q", 1))
            # the server holds the send: wait until it says so (no sleep: the broker is in this process)
            await asyncio.wait_for(until(lambda: server.broker.waiting_producers == 1), TIMEOUT)
            assert not blocked.done()
            consumer = await (await consumer_conn.create_session()).create_consumer("limited.q", prefetch=1)
            assert await consumer.receive(timeout=TIMEOUT) is not None
            await asyncio.wait_for(blocked, TIMEOUT)
            link = producer_conn._link
            assert isinstance(link, TcpLink)
            stats = await link.request(GetQueueStatistics("limited.q"))
            assert stats is not None and stats.size == 4

    async def test_a_held_send_times_out(self, server: Server) -> None:
        async with await connect(server.url) as conn:
            await fill(conn, "limited.q", 4)
            with pytest.raises(LimitExceeded, match=r"no space freed within 0\.2 s"):
                await asyncio.wait_for(fill(conn, "limited.q", 1), TIMEOUT)
            # the connection still works afterwards
            await fill(conn, "other", 1)

    async def test_a_transacted_send_that_timed_out_rolls_its_transaction_back(self, server: Server) -> None:
        """The client does not wait for a transacted send, so it hears of the failure as an async error; its commit
        then fails and rolls back (ActiveMQ: "COMMIT FAILED: Transaction marked rollback only"), never committing
        the transaction without the message."""
        async with await connect(server.url) as conn:
            await fill(conn, "limited.q", 3)
            session = await conn.create_session(AckMode.SESSION_TRANSACTED)
            producer = await session.create_producer("limited.q")
            await producer.send(BODY)  # the fourth message: the queue is full
            await producer.send(BODY)  # held, then refused after 0.2 s
            await asyncio.wait_for(until(lambda: bool(conn.async_errors)), TIMEOUT)
            assert isinstance(conn.async_errors[0], LimitExceeded)
            with pytest.raises(TransactionRolledBack, match=r"rollback only: .*no space freed within 0\.2 s"):
                await session.commit()
            assert server.broker.queue("limited.q").size == 3
            await producer.send(BODY)  # the next transaction starts clean
            await session.commit()
            assert server.broker.queue("limited.q").size == 4

    async def test_a_transaction_alone_over_the_limit_fails_at_once(self, server: Server) -> None:
        async with await connect(server.url) as conn:
            session = await conn.create_session(AckMode.SESSION_TRANSACTED)
            producer = await session.create_producer("forever.q")  # no timeout: a plain send would wait for ever
            for _ in range(5):
                await producer.send(BODY)
            await asyncio.wait_for(until(lambda: bool(conn.async_errors)), TIMEOUT)
            assert "alone holds 2000 bytes" in str(conn.async_errors[0])
            assert server.broker.waiting_producers == 0
            with pytest.raises(TransactionRolledBack):
                await asyncio.wait_for(session.commit(), TIMEOUT)
            assert server.broker.queue("forever.q").memory_usage == 0
            await asyncio.wait_for(fill(conn, "forever.q", 1), TIMEOUT)  # its bytes were freed
