"""The virtual clock: exact accumulation of advances, and an autojump that only jumps when the loop is truly idle."""

from __future__ import annotations

import asyncio
import time

import pytest

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, connect
from minibroker.clock import NS_PER_SECOND


class TestExactAccumulation:
    async def test_two_hundred_small_advances_land_on_two_seconds(self) -> None:
        """200 x advance(0.01) is exactly 2 s, and a receive(timeout=2.0) started at 0 returns then (issue 16)."""
        clock = ManualClock()
        async with Broker(clock=clock) as broker, await connect(broker) as conn:
            session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
            consumer = await session.create_consumer("q")
            receiving = asyncio.ensure_future(consumer.receive(timeout=2.0))
            for _ in range(199):
                await clock.advance(0.01)
            assert not receiving.done()
            await clock.advance(0.01)
            assert clock.elapsed == 2.0
            assert clock.elapsed_ns == 2 * NS_PER_SECOND
            assert receiving.done() and receiving.result() is None

    @pytest.mark.parametrize("steps", [[0.1] * 30, [0.3, 0.7, 1.1, 0.9], [1e-9] * 1000 + [3 - 1e-6]])
    async def test_any_split_of_t_lands_on_t(self, steps: list[float]) -> None:
        """However the advances are split, they sum exactly (in nanoseconds) and now() is start + T."""
        clock = ManualClock()
        for step in steps:
            await clock.advance(step)
        expected_ns = sum(round(step * NS_PER_SECOND) for step in steps)
        assert clock.elapsed_ns == expected_ns
        assert clock.now() == clock.start + expected_ns / NS_PER_SECOND

    async def test_a_timer_of_t_fires_at_t_not_before(self) -> None:
        """A timer set 0.2 s ahead on an epoch clock fires at exactly +0.2 s, reached in uneven steps."""
        clock = ManualClock()
        fired: list[float] = []
        deadline = clock.now() + 0.2
        clock.call_at(deadline, lambda: fired.append(clock.now()))
        await clock.advance(0.199999)
        assert fired == []
        await clock.advance(0.000001)
        assert fired == [clock.now()] and fired[0] >= deadline
        assert clock.elapsed == 0.2

    async def test_advance_backwards_is_refused(self) -> None:
        with pytest.raises(ValueError, match="-1"):
            await ManualClock().advance(-1)


class TestAutojumpWaitsForRealWork:
    async def test_receive_waits_for_a_sender_sleeping_on_the_real_clock(self) -> None:
        """receive(timeout=10) gets the message another task sends after a real 0.2 s sleep (issue 16)."""
        clock = ManualClock(autojump=True)
        async with Broker(clock=clock) as broker, await connect(broker) as conn:
            session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
            consumer = await session.create_consumer("q")
            producer = await session.create_producer("q")

            async def send_later() -> None:
                await asyncio.sleep(0.2)  # the latency of a real peer, not the broker's time
                await producer.send("late")

            sender = asyncio.ensure_future(send_later())
            message = await consumer.receive(timeout=10)
            await sender
            assert message is not None and message.body == "late"

    async def test_receive_waits_for_an_executor_job(self) -> None:
        """A job in the default executor (a blocking client in a thread) is work: virtual time flows at real speed
        meanwhile instead of jumping to the 10 s timeout."""
        clock = ManualClock(autojump=True)
        async with Broker(clock=clock) as broker, await connect(broker) as conn:
            session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
            consumer = await session.create_consumer("q")
            producer = await session.create_producer("q")

            async def send_after_job() -> None:
                await asyncio.to_thread(time.sleep, 0.1)
                await producer.send("after job")

            sender = asyncio.ensure_future(send_after_job())
            message = await consumer.receive(timeout=10)
            await sender
            assert message is not None and message.body == "after job"
            assert clock.elapsed < 10

    async def test_idle_loop_jumps_in_milliseconds(self) -> None:
        """With nothing to wait for, an hour of virtual timeout passes at once."""
        clock = ManualClock(autojump=True)
        async with Broker(clock=clock) as broker, await connect(broker) as conn:
            session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
            consumer = await session.create_consumer("q")
            assert await asyncio.wait_for(consumer.receive(timeout=3600), timeout=5) is None
            assert clock.elapsed == 3600

    async def test_a_hold_makes_time_follow_real_time(self) -> None:
        """While a hold names a reason, a 30 s virtual deadline is not jumped to; released, it is."""
        clock = ManualClock(autojump=True)
        fired = asyncio.Event()
        clock.call_at(clock.now() + 30, fired.set)
        release = clock.hold_while(lambda: "a peer is mid-handshake")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(fired.wait(), timeout=0.1)
        async with asyncio.timeout(5):  # time follows real time: on a loaded machine its first step may come late
            while clock.elapsed == 0:
                await asyncio.sleep(0.01)
        assert 0 < clock.elapsed < 30
        release()
        await asyncio.wait_for(fired.wait(), timeout=5)
        assert clock.elapsed == 30
        clock.stop()

    async def test_uninspectable_loop_falls_back_to_real_time(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """On a loop autojump cannot inspect it warns and lets time flow at real speed, never jumping early."""
        monkeypatch.setattr("minibroker.clock.loop_is_introspectable", lambda loop: False)
        clock = ManualClock(autojump=True)
        fired = asyncio.Event()
        with pytest.warns(RuntimeWarning, match="follows real time"):
            clock.call_at(clock.now() + 0.05, fired.set)
            await asyncio.wait_for(fired.wait(), timeout=5)
        assert clock.elapsed == 0.05
        clock.stop()

    def test_thresholds_must_not_be_negative(self) -> None:
        with pytest.raises(ValueError, match=r"-0\.1"):
            ManualClock(autojump_threshold=-0.1)
