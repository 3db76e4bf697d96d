"""Tests of the batch worker: CLIENT acknowledge acks whole batches; recover() brings a failed batch back."""

from __future__ import annotations

from client_ack_worker import JOBS, BatchWorker, StoreUnavailable

from minibroker import Broker
from minibroker.client import Connection


async def fill(conn: Connection, count: int) -> None:
    producer = await (await conn.create_session()).create_producer(JOBS)
    for i in range(count):
        await producer.send(f"job-{i}")


async def test_every_job_is_written_once_despite_a_failed_batch(
    minibroker: Broker, minibroker_connection: Connection
) -> None:
    """The first write fails: the batch is recovered and written on the next try; 25 jobs, each once."""
    await fill(minibroker_connection, 25)
    written: list[str] = []
    calls = 0

    def write(rows: list[str]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise StoreUnavailable("restarting")
        written.extend(rows)

    await BatchWorker(minibroker_connection, write, batch_size=10).run(idle_timeout=5)
    assert sorted(written) == sorted(f"job-{i}" for i in range(25))
    assert minibroker.queue(JOBS).size == 0
    assert minibroker.queue(JOBS).dequeued == 25


async def test_the_queue_keeps_unacked_jobs_while_a_batch_is_open(
    minibroker: Broker, minibroker_connection: Connection
) -> None:
    """Jobs are removed only when the batch is acknowledged: a write that never returns keeps them queued."""
    await fill(minibroker_connection, 3)
    sizes: list[int] = []

    def write(rows: list[str]) -> None:
        sizes.append(minibroker.queue(JOBS).size)

    await BatchWorker(minibroker_connection, write, batch_size=3).run(idle_timeout=1)
    assert sizes == [3]
    assert minibroker.queue(JOBS).size == 0
