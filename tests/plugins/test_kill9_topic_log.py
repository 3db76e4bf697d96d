"""A topic message kept once for the durable subscriptions that are away (issue 31, item 1; topic_log.py), proven as
the queue was in test_kill9.py: ``minibroker serve --data-dir`` killed with SIGKILL in the middle of a stream.

A producer publishes persistent messages to a topic with two durable subscriptions. ``away`` never has a subscriber:
its messages live in the topic's log the whole time. ``flaky`` comes and goes: it subscribes, takes a batch in a
transaction, commits, and goes away again, over and over, so its position in the log is saved, caught up and saved
again while the log is appended to and trimmed. After enough confirmed sends the server gets SIGKILL, whatever is in
flight. After a restart on the same directory:

* ``away`` gets every confirmed send, in order, none twice, nothing invented;
* ``flaky`` gets every confirmed send its commits did not ack, in order, none twice, and nothing a commit that
  returned had acked comes back.

Sends and commits interrupted by the kill may or may not have happened: both outcomes are accepted.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from support.servekit import serve

from minibroker.client import AckMode, connect
from minibroker.errors import MinibrokerError

TIMEOUT = 30.0
TOPIC = "topic://ticks"
KILL_AFTER = 1_500
BATCH = 40


async def drain(url: str, name: str) -> list[str]:
    """Everything durable subscription ``name`` holds now, in order (acked as it comes)."""
    async with await connect(url, client_id=f"c-{name}") as conn:
        session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        subscriber = await session.create_durable_subscriber(TOPIC, name)
        bodies: list[str] = []
        while (msg := await subscriber.receive(timeout=2)) is not None:
            assert isinstance(msg.body, str)
            bodies.append(msg.body)
            await msg.acknowledge()
        return bodies


async def test_sigkill_while_subscriptions_come_and_go_loses_nothing_and_brings_back_nothing_acked(
    tmp_path: Path, processes: list[asyncio.subprocess.Process]
) -> None:
    data_dir = tmp_path / "data"
    server = await serve(tmp_path, "--data-dir", str(data_dir))
    processes.append(server.proc)
    for name in ("away", "flaky"):
        async with await connect(server.url, client_id=f"c-{name}") as conn:
            await (await (await conn.create_session()).create_durable_subscriber(TOPIC, name)).close()

    attempted: list[str] = []
    confirmed: set[str] = set()
    acked: set[str] = set()  # taken by flaky in a transaction whose commit returned
    maybe_acked: set[str] = set()  # a commit cut by the kill
    enough = asyncio.Event()
    rounds = 0

    async def produce() -> None:
        try:
            async with await connect(server.url) as conn:
                producer = await (await conn.create_session()).create_producer(TOPIC)
                for i in range(100_000):
                    body = f"t{i:06d}"
                    attempted.append(body)
                    await producer.send(body, persistent=True)  # returns once the broker stored it
                    confirmed.add(body)
                    if len(confirmed) >= KILL_AFTER:
                        enough.set()
        except MinibrokerError:
            return  # the broker is gone: the last send was not confirmed

    async def come_and_go() -> None:
        nonlocal rounds
        try:
            async with await connect(server.url, client_id="c-flaky") as conn:
                session = await conn.create_session(AckMode.SESSION_TRANSACTED)
                while True:
                    subscriber = await session.create_durable_subscriber(TOPIC, "flaky")
                    batch = []
                    while len(batch) < BATCH and (msg := await subscriber.receive(timeout=0.2)) is not None:
                        assert isinstance(msg.body, str)
                        batch.append(msg.body)
                    try:
                        await session.commit()
                    except MinibrokerError:
                        maybe_acked.update(batch)
                        return
                    acked.update(batch)
                    await subscriber.close()  # away again: the topic's log keeps its messages from here
                    rounds += 1
        except MinibrokerError:
            return

    tasks = [asyncio.create_task(produce()), asyncio.create_task(come_and_go())]
    await asyncio.wait_for(enough.wait(), TIMEOUT)
    server.proc.send_signal(signal.SIGKILL)
    assert await asyncio.wait_for(server.proc.wait(), TIMEOUT) == -signal.SIGKILL
    await asyncio.wait_for(asyncio.gather(*tasks), TIMEOUT)
    assert rounds >= 3, "flaky did not come and go before the kill"
    assert acked, "flaky acked nothing before the kill"

    again = await serve(tmp_path, "--data-dir", str(data_dir))
    processes.append(again.proc)
    order = {body: i for i, body in enumerate(attempted)}

    away = await drain(again.url, "away")
    assert len(away) == len(set(away)), "a message came twice"
    assert set(away) <= set(attempted), "a message was invented"
    assert confirmed <= set(away), f"{len(confirmed - set(away))} confirmed sends lost"
    assert away == sorted(away, key=order.__getitem__)

    flaky = await drain(again.url, "flaky")
    assert len(flaky) == len(set(flaky)), "a message came twice"
    assert not set(flaky) & acked, f"{len(set(flaky) & acked)} acked messages came back"
    assert confirmed - acked - maybe_acked <= set(flaky), "confirmed sends not acked were lost"
    assert set(flaky) <= set(attempted)
    assert flaky == sorted(flaky, key=order.__getitem__)
