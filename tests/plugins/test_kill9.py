"""The persistence proof of issue 4: ``minibroker serve --data-dir`` killed with SIGKILL in the middle of a stream of
10,000 persistent messages, restarted on the same directory.

Two producers stream 5,000 persistent messages each (synchronous sends: a send returns once the broker confirmed
it, which it does only after the message's row is committed); a transacted consumer takes messages meanwhile and
commits every 25 (a commit that returned means those acks are durable) until 2,000 are acked, then holds one more
batch without committing. Once 6,000 sends are confirmed the server gets SIGKILL, whatever is in flight. After a
restart on the same directory, a consumer drains the queue, and:

* every confirmed send is there, or was acked by a commit that returned (nothing confirmed was lost);
* nothing acked by a commit that returned is delivered again;
* nothing was invented or duplicated, and each producer's messages come back in the order they were sent.

Sends and commits interrupted by the kill may or may not have happened: both outcomes are accepted.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from support.servekit import serve

from minibroker.client import AckMode, connect
from minibroker.errors import MinibrokerError
from minibroker.transport.commands import GetQueueStatistics
from minibroker.transport.tcp_link import TcpLink

TIMEOUT = 30.0
PRODUCERS = 2
PER_PRODUCER = 5_000
KILL_AFTER = 6_000
COMMIT_EVERY = 25
#: the consumer commits this many, then holds one more batch uncommitted until the kill
CONSUME = 2_000


async def test_sigkill_mid_stream_loses_nothing_confirmed_and_redelivers_nothing_acked(
    tmp_path: Path, processes: list[asyncio.subprocess.Process]
) -> None:
    data_dir = tmp_path / "data"
    server = await serve(tmp_path, "--data-dir", str(data_dir))
    processes.append(server.proc)

    confirmed: set[str] = set()  # sends the broker answered
    attempted: list[list[str]] = [[] for _ in range(PRODUCERS)]
    acked: set[str] = set()  # received inside a transaction whose commit returned
    maybe_acked: set[str] = set()  # received inside a transaction whose commit was cut by the kill
    enough = asyncio.Event()
    killed = asyncio.Event()
    held: list[str] = []  # received, never committed: must come back

    async def produce(index: int) -> None:
        conn = await connect(server.url)
        try:
            producer = await (await conn.create_session()).create_producer("stream")
            for i in range(PER_PRODUCER):
                body = f"p{index}-{i:05d}"
                attempted[index].append(body)
                await producer.send(body, persistent=True)  # synchronous: returns once stored
                confirmed.add(body)
                if len(confirmed) >= KILL_AFTER:
                    enough.set()
        except MinibrokerError:
            return  # the broker is gone: this send was not confirmed
        finally:
            await conn.close()

    async def consume() -> None:
        conn = await connect(server.url)
        try:
            session = await conn.create_session(AckMode.SESSION_TRANSACTED)
            consumer = await session.create_consumer("stream", prefetch=100)
            batch: list[str] = []
            while True:
                msg = await consumer.receive(timeout=TIMEOUT)
                if msg is None:
                    return
                assert isinstance(msg.body, str)
                batch.append(msg.body)
                if len(acked) >= CONSUME and len(batch) == COMMIT_EVERY:
                    held.extend(batch)
                    await killed.wait()
                    return
                if len(batch) == COMMIT_EVERY:
                    try:
                        await session.commit()
                    except MinibrokerError:
                        maybe_acked.update(batch)
                        return
                    acked.update(batch)
                    batch = []
        except MinibrokerError:
            return
        finally:
            await conn.close()

    tasks = [asyncio.create_task(produce(i)) for i in range(PRODUCERS)]
    consumer_task = asyncio.create_task(consume())
    await asyncio.wait_for(enough.wait(), TIMEOUT)
    server.proc.send_signal(signal.SIGKILL)
    assert await asyncio.wait_for(server.proc.wait(), TIMEOUT) == -signal.SIGKILL
    killed.set()
    await asyncio.wait_for(asyncio.gather(*tasks, consumer_task), TIMEOUT)
    sent_in_total = sum(len(a) for a in attempted)
    assert KILL_AFTER <= len(confirmed) < sent_in_total or len(confirmed) == PRODUCERS * PER_PRODUCER
    assert len(acked) >= CONSUME and len(held) == COMMIT_EVERY, "the consumer did not get its share before the kill"

    # the same directory, a new process
    server = await serve(tmp_path, "--data-dir", str(data_dir))
    processes.append(server.proc)
    link = await TcpLink.open_url(server.url)
    await link.open(None)
    stats = await link.request(GetQueueStatistics("stream"))
    await link.close(-1)
    assert stats is not None
    recovered: list[str] = []
    async with await connect(server.url) as conn:
        consumer = await (await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)).create_consumer("stream")
        for _ in range(stats.size):
            msg = await consumer.receive(timeout=TIMEOUT)
            assert msg is not None
            assert isinstance(msg.body, str)
            recovered.append(msg.body)
        assert await consumer.receive_immediately() is None
        await msg.acknowledge()
    server.proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(server.proc.wait(), TIMEOUT) == 0

    got = set(recovered)
    assert len(got) == len(recovered), "a message came back twice"
    assert got <= {body for bodies in attempted for body in bodies}, "a message nobody sent"
    lost = confirmed - got - acked - maybe_acked
    assert not lost, f"{len(lost)} confirmed message(s) lost, e.g. {sorted(lost)[:5]}"
    again = got & acked
    assert not again, f"{len(again)} acked message(s) delivered again, e.g. {sorted(again)[:5]}"
    assert set(held) <= got, "a message received but never acked did not come back"
    for index in range(PRODUCERS):
        mine = [body for body in recovered if body.startswith(f"p{index}-")]
        assert mine == sorted(mine), f"producer {index}'s messages came back out of order"
    # the figures, for the report (-s shows them)
    print(
        f"\nkill -9: {sent_in_total} sends attempted, {len(confirmed)} confirmed, {len(acked)} acked by "
        f"committed transactions, {len(held)} held unacked, {len(maybe_acked)} in a commit cut by the kill, "
        f"{len(recovered)} recovered "
        f"after the restart; lost 0, acked and delivered again 0"
    )
