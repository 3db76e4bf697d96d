"""Scheduled delivery with a period and repeats (the rules are replayed from the ``scheduler_*`` recordings; these
test what recordings cannot: the exact virtual times, restarts, and the testing helper)."""

from __future__ import annotations

import pytest

from minibroker import Broker, ManualClock
from minibroker.client import connect
from minibroker.store import MemoryStore
from minibroker.testing import advance_to_next_scheduled

EVERY_MINUTE_TWICE_MORE = {"AMQ_SCHEDULED_DELAY": 1000, "AMQ_SCHEDULED_PERIOD": 60_000, "AMQ_SCHEDULED_REPEAT": 2}


async def test_a_repeating_job_fires_at_its_times_each_a_new_message() -> None:
    clock = ManualClock()
    async with Broker(clock=clock, scheduler_support=True) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        consumer = await session.create_consumer("jobs")
        job_id = await (await session.create_producer("jobs")).send("tick", properties=EVERY_MINUTE_TWICE_MORE)
        assert broker.scheduled_count == 1
        times, ids = [], []
        while broker.next_scheduled_time() is not None:
            times.append(await advance_to_next_scheduled(broker))
            msg = await consumer.receive(timeout=0)
            assert msg is not None and msg.get_property("scheduledJobId") == job_id
            assert msg.get_property("AMQ_SCHEDULED_PERIOD") is None and msg.get_property("AMQ_SCHEDULED_REPEAT") is None
            ids.append(msg.message_id)
        # the job starts at the next half second, then the delay, then a period per repeat
        assert times == [1.5, 61.5, 121.5]
        assert len(set(ids)) == 3 and job_id not in ids  # a repeating job's deliveries are new messages
        assert broker.scheduled_count == 0


async def test_the_remaining_repeats_survive_a_restart() -> None:
    clock = ManualClock()
    async with Broker(clock=clock, scheduler_support=True, store=MemoryStore()) as broker:
        async with await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer("jobs")
            await producer.send("tick", properties=EVERY_MINUTE_TWICE_MORE)
        await advance_to_next_scheduled(broker)
        assert broker.queue("jobs").size == 1
        await broker.restart()
        assert broker.scheduled_count == 1
        await advance_to_next_scheduled(broker)
        await advance_to_next_scheduled(broker)
        assert broker.queue("jobs").size == 3 and broker.scheduled_count == 0


async def test_without_scheduler_support_the_properties_are_ignored() -> None:
    async with Broker(clock=ManualClock()) as broker, await connect(broker) as conn:
        producer = await (await conn.create_session()).create_producer("jobs")
        await producer.send("tick", properties=EVERY_MINUTE_TWICE_MORE)
        assert broker.queue("jobs").size == 1 and broker.scheduled_count == 0
        with pytest.raises(AssertionError, match="nothing is scheduled"):
            await advance_to_next_scheduled(broker)


async def test_a_nightly_cron_job_on_virtual_time() -> None:
    """``AMQ_SCHEDULED_CRON="0 2 * * *"`` with ``AMQ_SCHEDULED_REPEAT=2`` (issue 19): every night at 02:00 the cron
    firing starts a job of its own that delivers three messages (ActiveMQ's job scheduler: half a second after the
    firing, no period between them); three nights take milliseconds of wall time."""
    import datetime as dt

    clock = ManualClock()
    async with Broker(clock=clock, scheduler_support=True) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        consumer = await session.create_consumer("nightly")
        job_id = await (await session.create_producer("nightly")).send(
            "report", properties={"AMQ_SCHEDULED_CRON": "0 2 * * *", "AMQ_SCHEDULED_REPEAT": 2}
        )
        nights = []
        for _ in range(3):
            await advance_to_next_scheduled(broker)  # the cron firing at 02:00
            await advance_to_next_scheduled(broker)  # its three deliveries, half a second later
            got = [await consumer.receive(timeout=0) for _ in range(4)]
            delivered = [m for m in got if m is not None]
            assert len(delivered) == 3 and all(m.get_property("scheduledJobId") for m in delivered)
            nights.append(dt.datetime.fromtimestamp(clock.now(), dt.UTC).strftime("%m-%d %H:%M:%S.%f")[:-3])
        assert nights == ["01-01 02:00:00.500", "01-02 02:00:00.500", "01-03 02:00:00.500"]
        assert broker.scheduled_count == 1  # the cron job, waiting for the fourth night
        assert job_id


async def test_a_cron_job_alone_delivers_at_each_match_in_the_brokers_time_zone() -> None:
    import datetime as dt

    clock = ManualClock()
    async with Broker(clock=clock, scheduler_support=True, scheduler_time_zone="Europe/Paris") as broker:
        async with await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer("q")
            await producer.send("tick", properties={"AMQ_SCHEDULED_CRON": "0 2 * * *"})
        await advance_to_next_scheduled(broker)
        assert broker.queue("q").size == 1
        assert dt.datetime.fromtimestamp(clock.now(), dt.UTC).hour == 1  # 02:00 in Paris is 01:00 UTC in January


async def test_browse_and_remove_through_the_management_topic() -> None:
    """BROWSE answers on the request's reply_to with each waiting message and its scheduledJobId; REMOVE takes one
    by that id, or those due in a time range (ACTION_START_TIME/ACTION_END_TIME, ms)."""
    clock = ManualClock()
    async with Broker(clock=clock, scheduler_support=True) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        producer = await session.create_producer()
        for i, delay in enumerate((60_000, 120_000, 180_000)):
            await producer.send(f"m{i}", destination="jobs", properties={"AMQ_SCHEDULED_DELAY": delay})
        replies = await session.create_temporary_queue()
        answers = await session.create_consumer(replies)

        async def browse() -> list[tuple[str, str]]:
            await producer.send(
                "",
                destination="topic://ActiveMQ.Scheduler.Management",
                reply_to=replies,
                properties={"AMQ_SCHEDULER_ACTION": "BROWSE"},
            )
            out = []
            while (msg := await answers.receive(timeout=0)) is not None:
                out.append((msg.body, str(msg.get_property("scheduledJobId"))))
            return out

        listed = await browse()
        assert [body for body, _ in listed] == ["m0", "m1", "m2"]
        await producer.send(
            "",
            destination="topic://ActiveMQ.Scheduler.Management",
            properties={"AMQ_SCHEDULER_ACTION": "REMOVE", "scheduledJobId": listed[1][1]},
        )
        assert [body for body, _ in await browse()] == ["m0", "m2"]
        now_ms = int(clock.now() * 1000)
        await producer.send(
            "",
            destination="topic://ActiveMQ.Scheduler.Management",
            properties={
                "AMQ_SCHEDULER_ACTION": "REMOVE",
                "ACTION_START_TIME": now_ms + 100_000,
                "ACTION_END_TIME": now_ms + 200_000,
            },
        )
        assert [body for body, _ in await browse()] == ["m0"]
        assert broker.scheduled_count == 1


async def test_a_browse_of_many_jobs_is_replied_a_page_at_a_time() -> None:
    """issue 31: a BROWSE of many jobs replies at most ``BROWSE_PAGE`` at once; the rest follow as the reply queue is
    consumed, all of them, in due order (before, 100,000 jobs held every client for 2 s and filled the queue)."""
    from minibroker._core.scheduling import BROWSE_PAGE

    jobs = 2 * BROWSE_PAGE + 7
    async with Broker(clock=ManualClock(), scheduler_support=True) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        producer = await session.create_producer()
        for i in range(jobs):
            await producer.send(f"m{i}", destination="jobs", properties={"AMQ_SCHEDULED_DELAY": 60_000 + i})
        replies = await session.create_temporary_queue()
        await producer.send(
            "",
            destination="topic://ActiveMQ.Scheduler.Management",
            reply_to=replies,
            properties={"AMQ_SCHEDULER_ACTION": "BROWSE"},
        )
        assert broker.queue(replies.destination.name).size == BROWSE_PAGE  # one page waits, no more
        answers = await session.create_consumer(replies)
        got = []
        while (msg := await answers.receive(timeout=0)) is not None:
            got.append(msg.body)
        assert got == [f"m{i}" for i in range(jobs)]
        assert broker.queue(replies.destination.name).size == 0
