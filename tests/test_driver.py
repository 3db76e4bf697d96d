"""The driver's door for edges, used directly: admission, and the reads every edge makes instead of reading the
core (browse page, statistics, existence, client ids, dead letters, the incarnation)."""

from __future__ import annotations

import asyncio

import pytest

from minibroker import Admission, Broker, Destination, DestinationPolicy, ManualClock, Message
from minibroker.errors import ConnectionClosed, LimitExceeded

TIMEOUT = 5.0


def message(queue: str, body: str = "x") -> Message:
    return Message(f"ID:{body}", Destination.queue(queue), body)


class TestAdmission:
    async def test_no_limit_admits_at_once(self) -> None:
        async with Broker(clock=ManualClock()) as broker:
            assert broker.admit(Destination.queue("q")) is None
            assert broker.admit(Destination.topic("t")) is None

    async def test_a_full_queue_gives_an_admission_to_await(self) -> None:
        async with Broker(clock=ManualClock(), policies={"q": DestinationPolicy(memory_limit=1)}) as broker:
            connection = broker.connect()
            connection.send(message("q", "first"))
            admission = broker.admit(Destination.queue("q"))
            assert isinstance(admission, Admission) and broker.waiting_producers == 0  # not awaited: not waiting
            sending = asyncio.create_task(connection.send_when_admitted(message("q", "second")))
            await broker.run_ready()
            assert broker.waiting_producers == 1 and not sending.done()
            broker.purge("q")
            await asyncio.wait_for(sending, TIMEOUT)
            assert [m.body for m in broker.queue("q").browse()] == ["second"]

    async def test_fail_fast_admits_and_the_send_fails(self) -> None:
        policy = DestinationPolicy(memory_limit=1, send_fail_if_no_space=True)
        async with Broker(clock=ManualClock(), policies={"q": policy}) as broker:
            connection = broker.connect()
            connection.send(message("q", "first"))
            assert broker.admit(Destination.queue("q")) is None
            with pytest.raises(LimitExceeded):
                await connection.send_when_admitted(message("q", "second"))

    async def test_a_connection_closed_while_waiting_sends_nothing(self) -> None:
        async with Broker(clock=ManualClock(), policies={"q": DestinationPolicy(memory_limit=1)}) as broker:
            connection = broker.connect()
            connection.send(message("q", "first"))
            sending = asyncio.create_task(connection.send_when_admitted(message("q", "second")))
            await broker.run_ready()
            connection.close()
            broker.purge("q")
            with pytest.raises(ConnectionClosed, match="closed while its send waited"):
                await asyncio.wait_for(sending, TIMEOUT)
            assert broker.queue("q").size == 0


class TestReads:
    async def test_what_edges_read(self) -> None:
        async with Broker(clock=ManualClock(), policies={"q": DestinationPolicy(max_browse_page_size=2)}) as broker:
            connection = broker.connect("app-1")
            for body in ("m1", "m2", "m3"):
                connection.send(message("q", body))
            assert [m.body for m in broker.browse_page("q")] == ["m1", "m2"]
            assert [m.body for m in broker.browse_all("q")] == ["m1", "m2", "m3"]
            assert broker.browse_page("nowhere") == [] and not broker.has_queue("nowhere")
            stats = broker.queue_statistics("q")
            assert stats is not None and stats.size == 3 and broker.queue_statistics("nowhere") is None
            assert broker.has_destination(Destination.queue("q"))
            assert not broker.has_destination(Destination.topic("q"))
            assert broker.client_connected("app-1") and not broker.client_connected("app-2")
            assert broker.queue_memory("q") == broker.queue("q").memory_usage > 0
            epoch, next_seq, entries = broker.select_range("q", 1)
            assert epoch == broker.epoch and next_seq == 3 and [e.message.body for e in entries] == ["m2", "m3"]
            assert broker.dead_letters() == ()

    async def test_the_incarnation_grows_at_each_restart(self) -> None:
        async with Broker(clock=ManualClock()) as broker:
            before = broker.incarnation
            await broker.restart()
            assert broker.incarnation == before + 1


def test_a_publish_stopped_part_way_says_how_many_it_took() -> None:
    """Issue 15: a batch publish that fails on its third message raises PublishInterrupted naming the two taken."""
    from minibroker import Broker, DestinationPolicy, ManualClock, Message
    from minibroker.errors import PublishInterrupted
    from minibroker.message import Destination

    async def run() -> None:
        policies = {"small": DestinationPolicy(memory_limit=1, send_fail_if_no_space=True)}
        async with Broker(clock=ManualClock(), policies=policies) as broker:
            messages = [
                Message(f"ID:p:{i}", Destination.queue("big" if i < 2 else "small"), "x", producer_id="p")
                for i in range(4)
            ]
            broker.publish(messages[3:], dedupe=False)  # fills "small"
            with pytest.raises(PublishInterrupted, match=r"took 2 message\(s\)") as info:
                broker.publish(messages[:3], dedupe=False)
            assert (info.value.accepted, info.value.cause) == (2, "limit-exceeded")
            assert broker.queue("big").size == 2 and broker.queue("small").size == 1

    import asyncio

    asyncio.run(run())


def test_the_hot_objects_keep_few_instance_attributes() -> None:
    """CPython keeps an instance's attributes in a key-sharing table of at most 30 keys; past it every attribute
    load on that instance is slower (measured: about 4,000 more instructions per in-process message when BrokerCore
    reached 31). Fresh objects leave room for the attributes set later (a cursor book, a dead-letter hook, injected
    faults); new rarely used settings belong on the class as defaults."""
    from minibroker import Broker, ManualClock

    broker = Broker(clock=ManualClock())
    assert len(vars(broker)) <= 28, sorted(vars(broker))
    assert len(vars(broker.core)) <= 27, sorted(vars(broker.core))
