"""Seeded random sequences through the public client API, checking end-to-end guarantees.

Each run (every fifth with ``non_blocking_redelivery``) is a ``random.Random(seed)`` choosing among: sends (plain
and transacted), consumers in every ack mode with prefetch 0/1/3/1000, receives with and without timeouts,
acknowledge, recover, commit/rollback, closing consumers and sessions, and moving the ManualClock. Checked:

* after every step: the broker's queue statistics are consistent (enqueued - dequeued == size, in flight <= size);
  no message is handed to the application while another open consumer still holds it unacked; a message handed to
  the application a second time carries ``redelivered=True``, unless the close rule of semantics §1 left its
  counter alone (it was after the last-delivered message in dispatch order, or that message had been acked);
* at the end (everything closed, the clock advanced past every redelivery delay, the queue drained by an AUTO
  consumer): every committed message was acked exactly once or is in the DLQ, never both; the queue is empty;
  no ack was refused by the broker (``connection.async_errors``).
"""

from __future__ import annotations

import asyncio
import random

import pytest

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, Connection, Consumer, ReceivedMessage, RedeliveryPolicy, Session, connect

DLQ = "ActiveMQ.DLQ"
SEEDS = range(150)
STEPS = 50
MODES = (AckMode.AUTO, AckMode.DUPS_OK, AckMode.CLIENT, AckMode.INDIVIDUAL, AckMode.TRANSACTED)
PREFETCHES = (0, 1, 3, 1000)
POLICIES = (
    RedeliveryPolicy(maximum_redeliveries=2, initial_redelivery_delay=0.25, redelivery_delay=0.25),
    RedeliveryPolicy(
        maximum_redeliveries=3,
        initial_redelivery_delay=0.125,
        use_exponential_backoff=True,
        backoff_multiplier=2.0,
        redelivery_delay=0.125,
    ),
    RedeliveryPolicy(maximum_redeliveries=1, initial_redelivery_delay=0.0, redelivery_delay=0.5),
    RedeliveryPolicy(maximum_redeliveries=0, initial_redelivery_delay=0.25, redelivery_delay=0.25),
)


class Slot:
    """One consumer on its own session, and what the application holds from it."""

    def __init__(self, session: Session, consumer: Consumer, mode: AckMode) -> None:
        self.session = session
        self.consumer = consumer
        self.mode = mode
        self.unacked: dict[str, ReceivedMessage] = {}
        self.last_delivered: str | None = None


class Run:
    def __init__(self, seed: int, broker: Broker, clock: ManualClock, conn: Connection) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.broker = broker
        self.clock = clock
        self.conn = conn
        self.log: list[str] = []
        self.slots: list[Slot] = []
        self.committed: list[str] = []
        self.tx_sends: list[str] = []
        self.acked: dict[str, int] = {}
        self.delivered_before: set[str] = set()
        self.exempt: set[str] = set()
        self.n = 0

    def where(self) -> str:
        return f"seed={self.seed} steps={self.log[-10:]}"

    def check(self, condition: bool, what: str) -> None:
        assert condition, f"{what} [{self.where()}]"

    async def setup(self) -> None:
        session = await self.conn.create_session(AckMode.AUTO)
        self.producer = await session.create_producer("q")
        self.tx_session = await self.conn.create_session(AckMode.TRANSACTED)
        self.tx_producer = await self.tx_session.create_producer("q")

    # -- bookkeeping ------------------------------------------------------------------------------------------------

    def ack(self, ids: list[str]) -> None:
        for mid in ids:
            self.acked[mid] = self.acked.get(mid, 0) + 1

    def delivered(self, slot: Slot, msg: ReceivedMessage) -> None:
        mid = msg.message_id
        self.check(mid in self.committed, f"{mid} delivered but never committed")
        for other in self.slots:
            self.check(mid not in other.unacked, f"{mid} delivered while {other.mode.name} consumer holds it")
        if mid in self.delivered_before and mid not in self.exempt:
            self.check(msg.redelivered, f"{mid} delivered again without redelivered=True")
        self.check(msg.redelivered == (msg.delivery_count > 1), f"{mid}: redelivered vs delivery_count")
        self.exempt.discard(mid)
        self.delivered_before.add(mid)
        slot.last_delivered = mid
        if slot.mode in (AckMode.AUTO, AckMode.DUPS_OK):
            self.ack([mid])
        else:
            slot.unacked[mid] = msg

    def before_close(self, slot: Slot) -> None:
        """Which messages the broker gives back without raising their counter (§1 "Close"): exempt them."""
        sub = self.broker.core.subscriptions.get(slot.consumer.consumer_id)
        if sub is None:
            return
        last = slot.consumer.last_delivered_seq
        held = [e for e in sub.dispatched.values() if e.acked_in_txn is None]
        if any(e.broker_seq == last for e in held):
            cut = next(i for i, e in enumerate(held) if e.broker_seq == last) + 1
            untouched = held[cut:]
        else:
            untouched = held
        self.exempt.update(e.message.message_id for e in untouched if e.redelivery_counter == 0)

    def check_statistics(self) -> None:
        for name in ("q", DLQ):
            view = self.broker.queue(name)
            if view.exists:
                s = view.statistics()
                self.check(s.enqueued - s.dequeued == s.size and 0 <= s.inflight <= s.size, f"{name}: {s}")

    # -- operations -------------------------------------------------------------------------------------------------

    async def op_send(self) -> None:
        self.n += 1
        mid = await self.producer.send(f"b{self.n}")
        self.log.append(f"send {mid[-4:]}")
        self.committed.append(mid)

    async def op_tx_send(self) -> None:
        self.n += 1
        mid = await self.tx_producer.send(f"b{self.n}")
        self.log.append(f"tx-send {mid[-4:]}")
        self.tx_sends.append(mid)

    async def op_tx_producer_end(self) -> None:
        if self.rng.random() < 0.6:
            self.log.append("producer commit")
            await self.tx_session.commit()
            self.committed.extend(self.tx_sends)
        else:
            self.log.append("producer rollback")
            await self.tx_session.rollback()
        self.tx_sends.clear()

    async def op_open(self) -> None:
        if len(self.slots) >= 3:
            return
        mode = self.rng.choice(MODES)
        prefetch = self.rng.choice(PREFETCHES)
        session = await self.conn.create_session(mode)
        consumer = await session.create_consumer("q", prefetch=prefetch)
        self.log.append(f"open {mode.name} prefetch={prefetch} c{consumer.consumer_id}")
        self.slots.append(Slot(session, consumer, mode))

    async def op_receive(self) -> None:
        if not self.slots:
            return
        slot = self.rng.choice(self.slots)
        timeout = self.rng.choice([0, 0, 0.25, 1.0])
        self.log.append(f"receive c{slot.consumer.consumer_id} t={timeout}")
        task = asyncio.create_task(slot.consumer.receive(timeout=timeout))
        await self.clock.advance(timeout)
        # A pull consumer waits for the broker's answer, and (as ActiveMQ's dequeue(-1)) for the end of a blocking
        # redelivery delay: let virtual time pass until it returns.
        for _ in range(40):
            if task.done():
                break
            await self.clock.advance(0.125)
        self.check(task.done(), f"receive({timeout}) still waiting 5 virtual seconds after its timeout")
        msg = task.result()
        if msg is not None:
            self.log[-1] += f" -> {msg.message_id[-4:]} dc={msg.delivery_count}"
            self.delivered(slot, msg)

    async def op_acknowledge(self) -> None:
        slots = [s for s in self.slots if s.unacked and s.mode in (AckMode.CLIENT, AckMode.INDIVIDUAL)]
        if not slots:
            return
        slot = self.rng.choice(slots)
        mid = self.rng.choice(list(slot.unacked))
        self.log.append(f"acknowledge {slot.mode.name} {mid[-4:]}")
        await slot.unacked[mid].acknowledge()
        if slot.mode is AckMode.CLIENT:
            self.ack(list(slot.unacked))
            slot.unacked.clear()
        else:
            self.ack([mid])
            del slot.unacked[mid]

    async def op_recover(self) -> None:
        slots = [s for s in self.slots if s.mode is not AckMode.TRANSACTED]
        if not slots:
            return
        slot = self.rng.choice(slots)
        self.log.append(f"recover c{slot.consumer.consumer_id}")
        await slot.session.recover()
        slot.unacked.clear()

    async def op_end_transaction(self) -> None:
        slots = [s for s in self.slots if s.mode is AckMode.TRANSACTED]
        if not slots:
            return
        slot = self.rng.choice(slots)
        if self.rng.random() < 0.5:
            self.log.append(f"commit c{slot.consumer.consumer_id}")
            await slot.session.commit()
            self.ack(list(slot.unacked))
        else:
            self.log.append(f"rollback c{slot.consumer.consumer_id}")
            await slot.session.rollback()
        slot.unacked.clear()

    async def op_close(self) -> None:
        if not self.slots:
            return
        slot = self.rng.choice(self.slots)
        self.log.append(f"close c{slot.consumer.consumer_id}")
        await self.close(slot)

    async def close(self, slot: Slot) -> None:
        self.before_close(slot)
        if slot.mode is not AckMode.TRANSACTED and self.rng.random() < 0.5:
            await slot.consumer.close()
        await slot.session.close()
        slot.unacked.clear()
        self.slots.remove(slot)

    async def op_advance(self) -> None:
        step = self.rng.choice([0.125, 0.25, 1.0, 3.0])
        self.log.append(f"advance {step}")
        await self.clock.advance(step)

    # -- the run ----------------------------------------------------------------------------------------------------

    async def run(self, steps: int) -> None:
        ops = [
            (self.op_send, 5),
            (self.op_tx_send, 1),
            (self.op_tx_producer_end, 1),
            (self.op_open, 2),
            (self.op_receive, 8),
            (self.op_acknowledge, 2),
            (self.op_recover, 2),
            (self.op_end_transaction, 3),
            (self.op_close, 1),
            (self.op_advance, 2),
        ]
        for _ in range(steps):
            op = self.rng.choices([o for o, _ in ops], [w for _, w in ops])[0]
            await op()
            self.check_statistics()

    async def finish(self) -> None:
        for slot in list(self.slots):
            await self.close(slot)
        if self.tx_sends:
            await self.tx_session.rollback()
            self.tx_sends.clear()
        await self.clock.advance(100)
        self.log.append("drain")
        drain = Slot(await self.conn.create_session(AckMode.AUTO), None, AckMode.AUTO)  # type: ignore[arg-type]
        drain.consumer = await drain.session.create_consumer("q")
        while (msg := await drain.consumer.receive(timeout=0)) is not None:
            self.delivered(drain, msg)
        self.check_statistics()
        self.check(self.broker.queue("q").size == 0, f"queue not empty after the drain: {self.broker.queue('q')}")
        in_dlq = [m.message_id for m in self.broker.queue(DLQ).browse()]
        self.check(len(in_dlq) == len(set(in_dlq)), f"a message is in the DLQ twice: {in_dlq}")
        for mid in self.committed:
            acked = self.acked.get(mid, 0)
            self.check(
                (acked, mid in in_dlq) in ((1, False), (0, True)),
                f"{mid}: acked {acked} times, in DLQ: {mid in in_dlq}",
            )
        self.check(set(in_dlq) <= set(self.committed), "the DLQ holds a message that was never committed")
        self.check(set(self.acked) <= set(self.committed), "acked a message that was never committed")
        self.check(self.conn.async_errors == [], f"the broker refused acks: {self.conn.async_errors}")


@pytest.mark.parametrize("seed", SEEDS)
async def test_random_client_sequences(seed: int) -> None:
    """Random client operations in all five ack modes: nothing lost, nothing doubled, statistics consistent."""
    clock = ManualClock()
    async with Broker(clock=clock) as broker:
        policy = POLICIES[seed % len(POLICIES)]
        async with await connect(
            broker, redelivery_policy=policy, seed=seed, non_blocking_redelivery=seed % 5 == 4
        ) as conn:
            run = Run(seed, broker, clock, conn)
            await run.setup()
            await run.run(STEPS)
            await run.finish()
            assert run.committed, f"seed={seed}: nothing was sent"
