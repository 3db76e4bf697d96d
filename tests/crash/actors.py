"""What each actor of a plan does during one lifetime of the broker, and the drain after the last restart.

An actor writes every operation into the ledger before it starts it and again when the broker confirms it; it never
stops on its own when a kill is coming, so a subscriber connected in its lifetime is connected at the kill, as a
real application would be. It ends when the broker's death fails its next call (or the runner cancels it). An error
while the broker is up (``Context.stopping`` not yet set) is an error of the run, never ignored.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import attrs

from .edges import (
    Got,
    Inbox,
    MqttClient,
    MqttInbox,
    MqttProducer,
    NativeBulk,
    NativeInbox,
    NativeProducer,
    OutBox,
    StompInbox,
    StompProducer,
)
from .model import Ledger, body_of
from .workload import Actor, Lifetime, Plan, Turn, actor_rng

__all__ = ["READERS", "Context", "Urls", "drain", "read_retained", "run_actor", "setup"]

#: how long one receive waits in an actor's loop (its pace, not a wait for the broker: nothing is asserted on it)
POLL = 0.1
#: how long the drain waits for the messages a sink is still owed before it calls the rest lost
DRAIN_TIMEOUT = 30.0
#: after everything owed has come, how long the drain listens for anything more (a duplicate, an unconfirmed send)
DRAIN_QUIET = 0.3
#: what the drain takes before it acks: less than a consumer's prefetch window (50), or a take would wait for more
DRAIN_BATCH = 40
#: the retainer's topics: ``crash/r/0`` .. ``crash/r/3``
RETAINED_TOPICS = 4
#: the kinds of actor that read a sink (and whose sink the drain empties)
READERS = ("consumer", "durable", "mqtt-session", "purger")


@attrs.frozen(slots=True)
class Urls:
    native: str
    stomp: str | None = None
    mqtt: str | None = None


@attrs.define(slots=True)
class Context:
    """One lifetime as the actors see it."""

    plan: Plan
    ledger: Ledger
    urls: Urls
    life: Lifetime
    #: set by the runner just before it signals the broker: from then on a failing call is the kill's doing
    stopping: asyncio.Event = attrs.Factory(asyncio.Event)


async def run_actor(ctx: Context, actor: Actor) -> None:
    """Run ``actor``'s turn of this lifetime until the broker dies; errors before the kill go to the ledger."""
    turn = ctx.life.turn(actor.name)
    runner = RUNNERS.get((actor.kind, actor.edge))
    if runner is None or turn.presence == "away":
        return
    try:
        await runner(ctx, actor, turn)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if not ctx.stopping.is_set():
            ctx.ledger.error(f"{actor.name} ({turn.mode}/{turn.presence}): {type(exc).__name__}: {exc}")


# -- producers ------------------------------------------------------------------------------------------------------


async def produce(ctx: Context, actor: Actor, turn: Turn, out: OutBox) -> None:
    """Send until the broker dies: one confirmed send at a time, or transactions of 1-20 sends, most committed."""
    rng = actor_rng(ctx.plan.seed, ctx.life.index, actor.name)
    ledger = ctx.ledger
    producer = f"{actor.name}.L{ctx.life.index}"
    properties = dict(actor.properties)
    seq = 0
    while True:
        if turn.mode == "transacted":
            batch = []
            for _ in range(rng.randint(1, 20)):
                seq += 1
                body = body_of(producer, seq)
                ledger.attempt(body, actor.feature, actor.sinks)
                batch.append(body)
                await out.send(body, properties)
            if rng.random() < 0.8:
                await out.commit()
                ledger.confirm(batch)
            else:
                ledger.roll_back(batch)  # never committed, whatever happens to the rollback: never to arrive
                await out.rollback()
        else:
            seq += 1
            body = body_of(producer, seq)
            ledger.attempt(body, actor.feature, actor.sinks)
            await out.send(body, properties)
            ledger.confirm([body])


async def schedule(ctx: Context, actor: Actor, out: OutBox) -> None:
    """Persistent sends delayed by ``AMQ_SCHEDULED_DELAY`` (0.1-2.5 s): the broker's scheduler keeps them, due at
    their time even across restarts, never before."""
    rng = actor_rng(ctx.plan.seed, ctx.life.index, actor.name)
    producer = f"{actor.name}.L{ctx.life.index}"
    seq = 0
    while True:
        seq += 1
        body = body_of(producer, seq)
        delay_ms = rng.randint(100, 2500)
        ctx.ledger.attempt(body, actor.feature, actor.sinks, not_before=time.time() + delay_ms / 1000)
        await out.send(body, {"AMQ_SCHEDULED_DELAY": delay_ms})
        ctx.ledger.confirm([body])
        await asyncio.sleep(rng.uniform(0.005, 0.04))  # the pace of this actor, not a wait for the broker


async def purge_now_and_then(ctx: Context, actor: Actor, out: NativeProducer) -> None:
    """A queue nobody reads while the broker lives: batches of confirmed sends, and now and then a purge. What a
    purge that returned removed never comes back; what was sent after it is still owed."""
    rng = actor_rng(ctx.plan.seed, ctx.life.index, actor.name)
    producer = f"{actor.name}.L{ctx.life.index}"
    queue = actor.destination
    seq = 0
    while True:
        for _ in range(rng.randint(5, 40)):
            seq += 1
            body = body_of(producer, seq)
            ctx.ledger.attempt(body, actor.feature, actor.sinks)
            await out.send(body)
            ctx.ledger.confirm([body])
        if rng.random() < 0.5:
            purge = ctx.ledger.purge_attempt(actor.sinks[0])
            await out.conn.purge(queue)
            ctx.ledger.purge_confirmed(purge)


async def retain(ctx: Context, actor: Actor, client: MqttClient) -> None:
    """Retained QoS 1 publishes over a few topics, and now and then a new subscriber that reads them back: it must
    get each topic's last retained publish whose PUBACK came."""
    rng = actor_rng(ctx.plan.seed, ctx.life.index, actor.name)
    producer = f"{actor.name}.L{ctx.life.index}"
    seq = 0
    while True:
        seq += 1
        topic = f"{actor.destination}/{rng.randrange(RETAINED_TOPICS)}"
        write = ctx.ledger.retained_attempt(topic, body_of(producer, seq))
        await client.publish(topic, write.value, retain=True)
        ctx.ledger.retained_confirmed(write)
        if rng.random() < 0.1:
            await read_retained(ctx, actor)
        await asyncio.sleep(rng.uniform(0.005, 0.03))  # the pace of this actor


async def bulk(ctx: Context, actor: Actor, out: NativeBulk) -> None:
    """Batches of 250 persistent messages, each batch one confirmed request, until the lifetime's ``bulk`` target
    (past a page, paging.PAGE = 10,000, in the plan's first lifetime: the next restart loads the topic's log and
    the queue a page at a time); then batches of 20 at a reader's pace, so its readers always have work."""
    rng = actor_rng(ctx.plan.seed, ctx.life.index, actor.name)
    producer = f"{actor.name}.L{ctx.life.index}"
    seq = 0
    while True:
        size = 250 if seq < ctx.life.bulk else 20
        batch = []
        for _ in range(size):
            seq += 1
            batch.append((seq, body_of(producer, seq)))
            ctx.ledger.attempt(batch[-1][1], actor.feature, actor.sinks)
        await out.publish(batch)
        ctx.ledger.confirm([body for _, body in batch])
        if size < 250:
            await asyncio.sleep(rng.uniform(0.01, 0.05))  # the pace of this actor


async def native_producer(ctx: Context, actor: Actor, turn: Turn) -> None:
    out = await NativeProducer.open(ctx.urls.native, actor.destination, transacted=turn.mode == "transacted")
    try:
        if actor.kind == "scheduler":
            await schedule(ctx, actor, out)
        elif actor.kind == "purger":
            await purge_now_and_then(ctx, actor, out)
        else:
            await produce(ctx, actor, turn, out)
    finally:
        await out.close()


async def stomp_producer(ctx: Context, actor: Actor, turn: Turn) -> None:
    assert ctx.urls.stomp is not None
    out = await StompProducer.open(ctx.urls.stomp, actor.destination, transacted=turn.mode == "transacted")
    try:
        if actor.kind == "scheduler":
            await schedule(ctx, actor, out)
        else:
            await produce(ctx, actor, turn, out)
    finally:
        await out.close()


async def mqtt_producer(ctx: Context, actor: Actor, turn: Turn) -> None:
    assert ctx.urls.mqtt is not None
    client = await MqttClient.open(ctx.urls.mqtt, f"{actor.name}-L{ctx.life.index}", clean=True)
    try:
        if actor.kind == "retainer":
            await retain(ctx, actor, client)
        else:
            await produce(ctx, actor, turn, MqttProducer(client, actor.destination))
    finally:
        client.close()


async def bulk_producer(ctx: Context, actor: Actor, turn: Turn) -> None:
    out = await NativeBulk.open(ctx.urls.native, actor.destination, f"{actor.name}.L{ctx.life.index}")
    try:
        await bulk(ctx, actor, out)
    finally:
        await out.close()


# -- consumers and subscribers --------------------------------------------------------------------------------------


@attrs.define(slots=True)
class Reader:
    """One consumer instance of a sink: it records deliveries and acks in the ledger, mode by mode."""

    ledger: Ledger
    sink: str
    name: str
    inbox: Inbox
    unacked: list[Got] = attrs.Factory(list)

    async def take(self, most: int, timeout: float = POLL) -> list[Got]:
        batch: list[Got] = []
        auto = self.inbox.mode == "auto"
        while len(batch) < most:
            got = await self.inbox.receive(timeout)
            if got is None:
                break
            self.ledger.delivered(
                self.sink, got.body, self.name, redelivered=got.redelivered, wall=time.time(), broker_seq=got.broker_seq
            )
            batch.append(got)
            if auto or got.acked:  # acked as receive() returned it: written down now, before the next receive fails
                self.ledger.ack_sent(self.sink, [got.body])
            else:
                self.unacked.append(got)
        return batch

    async def settle(self, batch: list[Got], rng_value: float, pick: Callable[[list[Got]], list[Got]]) -> None:
        """Ack what the mode acks after a batch and fence it; a transaction commits (or, at times, rolls back)."""
        ledger, sink, mode = self.ledger, self.sink, self.inbox.mode
        if mode == "auto":
            if batch:
                await self.inbox.fence()
                ledger.ack_confirmed(sink, [g.body for g in batch])
        elif mode == "client":
            if self.unacked and rng_value < 0.85:
                acked, self.unacked = self.unacked, []
                await self.inbox.ack(acked)
                ledger.ack_sent(sink, [g.body for g in acked])
                await self.inbox.fence()
                ledger.ack_confirmed(sink, [g.body for g in acked])
        elif mode == "individual":
            chosen = pick(self.unacked)
            if chosen:
                ids = {id(g) for g in chosen}
                self.unacked = [g for g in self.unacked if id(g) not in ids]
                await self.inbox.ack(chosen)
                ledger.ack_sent(sink, [g.body for g in chosen])
                await self.inbox.fence()
                ledger.ack_confirmed(sink, [g.body for g in chosen])
        elif self.unacked:  # transacted
            if rng_value < 0.85:
                acked, self.unacked = self.unacked, []
                ledger.ack_sent(sink, [g.body for g in acked])
                await self.inbox.commit()
                ledger.ack_confirmed(sink, [g.body for g in acked])
            elif self.inbox.rolls_back:
                self.unacked = []
                await self.inbox.rollback()  # redelivered (marked so) from here on

    async def ack_all(self) -> None:
        """Everything still unacked, acked and confirmed (before a subscriber goes away, and by the drain)."""
        if not self.unacked and self.inbox.mode != "transacted":
            return
        acked, self.unacked = self.unacked, []
        self.ledger.ack_sent(self.sink, [g.body for g in acked])
        if self.inbox.mode == "transacted":
            await self.inbox.commit()
        else:
            await self.inbox.ack(acked)
            await self.inbox.fence()
        self.ledger.ack_confirmed(self.sink, [g.body for g in acked])


def _picker(rng_random: Callable[[], float]) -> Callable[[list[Got]], list[Got]]:
    """Individual acks: most of what is unacked, leaving some for a later batch (or for the kill)."""
    return lambda unacked: [g for g in unacked if rng_random() < 0.7]


Opener = Callable[[Context, Actor, str], Awaitable[Inbox]]


async def open_native(ctx: Context, actor: Actor, mode: str) -> Inbox:
    return await NativeInbox.open(
        ctx.urls.native, actor.destination, mode, client_id=actor.client_id, subscription=actor.subscription
    )


async def open_stomp(ctx: Context, actor: Actor, mode: str) -> Inbox:
    assert ctx.urls.stomp is not None
    return await StompInbox.open(
        ctx.urls.stomp, actor.destination, mode, client_id=actor.client_id, subscription=actor.subscription
    )


async def open_mqtt(ctx: Context, actor: Actor, mode: str) -> Inbox:
    assert ctx.urls.mqtt is not None and actor.client_id is not None
    return await MqttInbox.open(
        ctx.urls.mqtt, actor.destination, "individual" if mode == "client" else mode, actor.client_id
    )


async def consume(ctx: Context, actor: Actor, turn: Turn, opener: Opener) -> None:
    """Online: one consumer for the whole lifetime. Flaky: subscribe, take a few batches, ack them all, go away for
    a moment, again and again: its position is stored and caught up over and over."""
    rng = actor_rng(ctx.plan.seed, ctx.life.index, actor.name)
    sink = actor.sinks[0]
    instance = 0
    while True:
        instance += 1
        inbox = await opener(ctx, actor, turn.mode)
        reader = Reader(ctx.ledger, sink, f"{actor.name}@L{ctx.life.index}#{instance}", inbox)
        try:
            rounds = rng.randint(1, 4) if turn.presence == "flaky" else None
            while rounds is None or rounds > 0:
                batch = await reader.take(rng.randint(1, 25))
                await reader.settle(batch, rng.random(), _picker(rng.random))
                if rounds is not None:
                    rounds -= 1
            await reader.ack_all()
        finally:
            await inbox.close()
        await asyncio.sleep(rng.uniform(0.02, 0.2))  # away for a moment: the broker keeps its messages


OPENERS: dict[str, Opener] = {"native": open_native, "stomp": open_stomp, "mqtt": open_mqtt}


async def reader(ctx: Context, actor: Actor, turn: Turn) -> None:
    await consume(ctx, actor, turn, OPENERS[actor.edge])


RUNNERS: dict[tuple[str, str], Callable[[Context, Actor, Turn], Awaitable[None]]] = {
    ("producer", "native"): native_producer,
    ("producer", "stomp"): stomp_producer,
    ("producer", "mqtt"): mqtt_producer,
    ("scheduler", "native"): native_producer,
    ("scheduler", "stomp"): stomp_producer,
    ("purger", "native"): native_producer,
    ("retainer", "mqtt"): mqtt_producer,
    ("bulk", "native"): bulk_producer,
    ("consumer", "native"): reader,
    ("consumer", "stomp"): reader,
    ("durable", "native"): reader,
    ("durable", "stomp"): reader,
    ("mqtt-session", "mqtt"): reader,
}


# -- setup and drain ------------------------------------------------------------------------------------------------


async def setup(ctx: Context) -> None:
    """Before the first send: every durable subscription and persistent session exists (subscribed, then away), so
    each send is meant for all of them from the start."""
    for actor in ctx.plan.actors:
        if actor.kind in ("durable", "mqtt-session"):
            inbox = await OPENERS[actor.edge](ctx, actor, "client")
            await inbox.close()


def owed(ledger: Ledger, sink: str) -> set[str]:
    """What ``sink`` must still get: confirmed, not rolled back, not acked (even unconfirmed), not purged."""
    purged = set().union(*(p.before for p in ledger.purges if p.sink == sink))
    return {
        r.body
        for r in ledger.sends.values()
        if sink in r.sinks
        and r.confirmed_at is not None
        and not r.rolled_back
        and (sink, r.body) not in ledger.acks
        and r.body not in purged
    }


async def drain(ctx: Context, actor: Actor) -> None:
    """After the last restart: take everything ``actor``'s sink holds, ack it all, confirmed. It waits until what
    the sink is owed has come (up to :data:`DRAIN_TIMEOUT`; what has not is lost), then listens a moment more."""
    ledger, sink = ctx.ledger, actor.sinks[0]
    want = owed(ledger, sink)
    inbox = await OPENERS[actor.edge](ctx, actor, "client")
    reader = Reader(ledger, sink, f"{actor.name}@drain", inbox)
    deadline = time.monotonic() + DRAIN_TIMEOUT + max(0.0, _latest_due(ledger, sink) - time.time())
    try:
        while want and time.monotonic() < deadline:
            # at most a prefetch window (50) at a time: the broker sends no more until they are acked
            for got in await reader.take(DRAIN_BATCH, timeout=min(1.0, max(0.01, deadline - time.monotonic()))):
                want.discard(got.body)
            await reader.ack_all()
        while await reader.take(DRAIN_BATCH, timeout=DRAIN_QUIET):
            await reader.ack_all()
        await reader.ack_all()
        ledger.drained.add(sink)
    finally:
        await inbox.close()


def _latest_due(ledger: Ledger, sink: str) -> float:
    dues = [r.not_before for r in ledger.sends.values() if sink in r.sinks and r.not_before is not None]
    return max(dues, default=0.0)


async def read_retained(ctx: Context, actor: Actor) -> None:
    """A new clean MQTT client subscribes to the retainer's topics and notes each one's retained message. It waits
    for every topic that had a retained publish confirmed in this lifetime, then listens a moment more."""
    assert ctx.urls.mqtt is not None
    ledger = ctx.ledger
    topics = {w.topic for w in ledger.retained}
    want = {w.topic for w in ledger.retained if w.confirmed_at is not None and w.lifetime == ledger.lifetime}
    seen: dict[str, str | None] = dict.fromkeys(topics)
    client = await MqttClient.open(ctx.urls.mqtt, f"crash-retained-reader-{ledger.clock}", clean=True)
    try:
        await client.subscribe(f"{actor.destination}/+")
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while want and time.monotonic() < deadline:
            msg = await client.next(min(1.0, max(0.01, deadline - time.monotonic())))
            if msg is not None and msg.retain:
                seen[msg.topic] = msg.payload.decode()
                want.discard(msg.topic)
        while (msg := await client.next(DRAIN_QUIET)) is not None:
            if msg.retain:
                seen[msg.topic] = msg.payload.decode()
    finally:
        client.close()
    for topic, value in sorted(seen.items()):
        ledger.retained_read(topic, value)
