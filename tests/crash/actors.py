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

from .edges import Got, Inbox, NativeInbox, NativeProducer, OutBox
from .model import Ledger, body_of
from .workload import Actor, Lifetime, Plan, Turn, actor_rng

__all__ = ["Context", "Urls", "drain", "run_actor", "setup"]

#: how long one receive waits in an actor's loop (its pace, not a wait for the broker: nothing is asserted on it)
POLL = 0.1
#: how long the drain waits for the messages a sink is still owed before it calls the rest lost
DRAIN_TIMEOUT = 30.0
#: after everything owed has come, how long the drain listens for anything more (a duplicate, an unconfirmed send)
DRAIN_QUIET = 0.3


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
    seq = 0
    while True:
        if turn.mode == "transacted":
            batch = []
            for _ in range(rng.randint(1, 20)):
                seq += 1
                body = body_of(producer, seq)
                ledger.attempt(body, actor.feature, actor.sinks)
                batch.append(body)
                await out.send(body)
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
            await out.send(body)
            ledger.confirm([body])


async def native_producer(ctx: Context, actor: Actor, turn: Turn) -> None:
    out = await NativeProducer.open(ctx.urls.native, actor.destination, transacted=turn.mode == "transacted")
    try:
        await produce(ctx, actor, turn, out)
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
        while len(batch) < most:
            got = await self.inbox.receive(timeout)
            if got is None:
                break
            self.ledger.delivered(self.sink, got.body, self.name, redelivered=got.redelivered, wall=time.time())
            batch.append(got)
        if self.inbox.mode == "auto":
            self.ledger.ack_sent(self.sink, [g.body for g in batch])  # acked as receive() returned each
        else:
            self.unacked += batch
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
            else:
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


async def native_consumer(ctx: Context, actor: Actor, turn: Turn) -> None:
    await consume(ctx, actor, turn, open_native)


RUNNERS: dict[tuple[str, str], Callable[[Context, Actor, Turn], Awaitable[None]]] = {
    ("producer", "native"): native_producer,
    ("consumer", "native"): native_consumer,
    ("durable", "native"): native_consumer,
}
DRAIN_OPENERS: dict[str, Opener] = {"native": open_native}


# -- setup and drain ------------------------------------------------------------------------------------------------


async def setup(ctx: Context) -> None:
    """Before the first send: every durable subscription and persistent session exists (subscribed, then away), so
    each send is meant for all of them from the start."""
    for actor in ctx.plan.actors:
        if actor.kind in ("durable", "mqtt-session"):
            inbox = await DRAIN_OPENERS[actor.edge](ctx, actor, "client")
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
    inbox = await DRAIN_OPENERS[actor.edge](ctx, actor, "client")
    reader = Reader(ledger, sink, f"{actor.name}@drain", inbox)
    deadline = time.monotonic() + DRAIN_TIMEOUT + max(0.0, _latest_due(ledger, sink) - time.time())
    try:
        while want and time.monotonic() < deadline:
            for got in await reader.take(200, timeout=min(1.0, max(0.01, deadline - time.monotonic()))):
                want.discard(got.body)
            if len(reader.unacked) >= 500:
                await reader.ack_all()
        while await reader.take(200, timeout=DRAIN_QUIET):
            pass
        await reader.ack_all()
        ledger.drained.add(sink)
    finally:
        await inbox.close()


def _latest_due(ledger: Ledger, sink: str) -> float:
    dues = [r.not_before for r in ledger.sends.values() if sink in r.sinks and r.not_before is not None]
    return max(dues, default=0.0)
