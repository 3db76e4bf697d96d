"""VirtualTimeLoop without pytest: an asyncio loop whose time is a ManualClock's (issue 43, item 1)."""

from __future__ import annotations

import asyncio

from minibroker import Broker, ManualClock
from minibroker.virtual_time import VirtualTimeLoop, VirtualTimePolicy, clock_of


def run(coroutine_function, **loop_options):  # type: ignore[no-untyped-def]
    with asyncio.Runner(loop_factory=lambda: VirtualTimeLoop(**loop_options)) as runner:
        return runner.run(coroutine_function())


def test_the_loop_s_time_is_the_clock_s() -> None:
    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(1800)
        clock = clock_of(loop)
        assert clock is not None
        return loop.time(), clock.elapsed

    assert run(main) == (1800.0, 1800.0)


def test_without_autojump_time_moves_only_by_advance() -> None:
    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        clock = clock_of(loop)
        assert clock is not None and not clock.autojump
        woke: list[str] = []
        sleeper = asyncio.create_task(asyncio.sleep(10))
        sleeper.add_done_callback(lambda _: woke.append(f"woke at {loop.time():g}"))
        await clock.advance(9)
        assert not sleeper.done()
        await clock.advance(1)
        await sleeper
        return woke

    assert run(main, autojump=False) == ["woke at 10"]


def test_a_real_socket_answers_while_a_virtual_timer_waits() -> None:
    """Readiness comes first: an echo over a real TCP socket completes without time jumping to the 60 s timer."""

    async def main() -> tuple[bytes, float]:
        loop = asyncio.get_running_loop()
        late = loop.call_later(60, lambda: None)

        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(await reader.readline())
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"ping\n")
        answer = await reader.readline()
        writer.close()
        server.close()
        await server.wait_closed()
        late.cancel()
        return answer, loop.time()

    answer, at = run(main)
    assert answer == b"ping\n" and at < 60


def test_a_broker_on_the_loop_s_clock_shares_its_time() -> None:
    async def main() -> float:
        clock = clock_of(asyncio.get_running_loop())
        assert isinstance(clock, ManualClock)
        async with Broker(clock=clock) as broker:
            await asyncio.sleep(5)
            return broker.clock.now() - clock.start

    assert run(main) == 5.0


def test_the_policy_makes_virtual_loops_each_with_its_clock() -> None:
    policy = VirtualTimePolicy(autojump_threshold=0.02)
    first, second = policy.new_event_loop(), policy.new_event_loop()
    try:
        assert isinstance(first, VirtualTimeLoop) and first.clock is not second.clock
        assert first.clock.autojump_threshold == 0.02
    finally:
        first.close()
        second.close()
