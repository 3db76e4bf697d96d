"""The model of expectations: what every client of a crash run attempted, what the broker confirmed, and what came
back, in the order the harness saw it.

A crash run cannot know what a broker killed in the middle of a send did with it; it can only know what the broker
*confirmed*. So every operation is written down twice: when it is attempted and, if an answer came, when it was
confirmed. The checker (checker.py) then holds the run to what was confirmed and accepts both outcomes of what was
not. Everything runs on one event loop, so a plain counter (:attr:`Ledger.clock`) orders every event of a run: a
delivery recorded after an ack's confirmation really came after it.

A *sink* is one place a message is owed to: a queue (``queue:NAME``, its consumers take turns), a durable
subscription (``durable:CLIENT:NAME``), an MQTT persistent session (``mqtt:CLIENT``). A send names the sinks it is
meant for when it is attempted, so the checker never has to guess the broker's routing.

Bodies are ``PRODUCER:SEQ`` with a producer name unique in the run (it names the lifetime), so any body seen
anywhere says who sent it and in which order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

import attrs

__all__ = [
    "AckRecord",
    "Delivery",
    "Ledger",
    "Purge",
    "RetainedRead",
    "RetainedWrite",
    "SendRecord",
    "body_of",
    "split_body",
]


def body_of(producer: str, seq: int) -> str:
    """The body a producer sends as its ``seq``-th message (zero-padded: sorting bodies sorts by seq)."""
    return f"{producer}:{seq:06d}"


def split_body(body: str) -> tuple[str, int]:
    """``(producer, seq)`` of a body made by :func:`body_of`."""
    producer, _, seq = body.rpartition(":")
    return producer, int(seq)


@attrs.define(slots=True)
class SendRecord:
    """One send: where it was meant to arrive and what the broker said about it."""

    body: str
    feature: str
    sinks: tuple[str, ...]
    lifetime: int
    attempted_at: int
    #: the clock when the broker confirmed it (a returned send, a RECEIPT, a PUBACK, a commit); None: never
    confirmed_at: int | None = None
    #: a transacted send whose transaction was rolled back (confirmed): it must never arrive anywhere
    rolled_back: bool = False
    #: a scheduled send (``AMQ_SCHEDULED_DELAY``): not to be delivered before this wall-clock time
    not_before: float | None = None


@attrs.define(slots=True)
class Delivery:
    """One message handed to a consumer of a sink."""

    sink: str
    body: str
    lifetime: int
    #: the consumer instance it came to (a consumer, a subscription in one connection), for the order check
    consumer: str
    at: int
    #: the broker said it was delivered before (JMSRedelivered, STOMP redelivered, MQTT DUP)
    redelivered: bool
    wall: float
    #: the dispatch's broker sequence id (native edge only; None elsewhere)
    broker_seq: int | None = None


@attrs.define(slots=True)
class AckRecord:
    """The ack of one message on one sink: sent (``sent_at``) and, once a later round trip came back, confirmed."""

    sent_at: int
    confirmed_at: int | None = None


@attrs.define(slots=True)
class Purge:
    """A purge of a queue: what was confirmed sent to it before the purge was asked, and whether it returned."""

    sink: str
    before: frozenset[str]
    attempted_at: int
    confirmed_at: int | None = None


@attrs.define(slots=True)
class RetainedWrite:
    """A retained publish to an MQTT topic (the value a new subscriber is to get)."""

    topic: str
    value: str
    lifetime: int
    attempted_at: int
    confirmed_at: int | None = None


@attrs.define(slots=True)
class RetainedRead:
    """What a new subscriber got as ``topic``'s retained message (None: nothing), and when."""

    topic: str
    value: str | None
    lifetime: int
    at: int


@attrs.define(slots=True)
class Ledger:
    """Every attempt, confirmation, delivery and ack of one crash run, and the counters the runner's kills wait on."""

    clock: int = 0
    lifetime: int = 0
    sends: dict[str, SendRecord] = attrs.Factory(dict)
    deliveries: list[Delivery] = attrs.Factory(list)
    acks: dict[tuple[str, str], AckRecord] = attrs.Factory(dict)
    purges: list[Purge] = attrs.Factory(list)
    retained: list[RetainedWrite] = attrs.Factory(list)
    #: what new subscribers got as retained messages, during the lifetimes and after the last restart
    retained_reads: list[RetainedRead] = attrs.Factory(list)
    #: sinks that were drained to the end after the last restart (the checker needs every sink here)
    drained: set[str] = attrs.Factory(set)
    #: what went wrong outside a kill (a client error while the broker was up): each fails the run
    errors: list[str] = attrs.Factory(list)
    #: what was confirmed in the current lifetime: messages and acks per feature, and operations (a send, a commit,
    #: a batch, an ack with its fence, a purge: one each), with the callback the runner's kill trigger uses
    progress: Counter[str] = attrs.Factory(Counter)
    operations: int = 0
    on_progress: Callable[[], None] | None = None
    kills: list[str] = attrs.Factory(list)
    #: where the run's time went: (phase, seconds)
    timings: list[tuple[str, float]] = attrs.Factory(list)

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    def _advance(self, feature: str, n: int = 1) -> None:
        self.progress[feature] += n
        self.operations += 1
        if self.on_progress is not None:
            self.on_progress()

    # -- sends --------------------------------------------------------------------------------------------------------

    def attempt(self, body: str, feature: str, sinks: Iterable[str], *, not_before: float | None = None) -> SendRecord:
        assert body not in self.sends, f"body {body} sent twice by the harness"
        record = SendRecord(body, feature, tuple(sinks), self.lifetime, self.tick(), not_before=not_before)
        self.sends[body] = record
        return record

    def confirm(self, bodies: Iterable[str]) -> None:
        at = self.tick()
        n = 0
        feature = ""
        for body in bodies:
            record = self.sends[body]
            if record.confirmed_at is None:
                record.confirmed_at = at
                feature = record.feature
                n += 1
        if n:
            self._advance(feature, n)

    def roll_back(self, bodies: Iterable[str]) -> None:
        """A transaction's sends that a rollback (which returned) discarded."""
        for body in bodies:
            self.sends[body].rolled_back = True

    # -- deliveries and acks ------------------------------------------------------------------------------------------

    def delivered(
        self, sink: str, body: str, consumer: str, *, redelivered: bool, wall: float, broker_seq: int | None = None
    ) -> None:
        self.deliveries.append(
            Delivery(sink, body, self.lifetime, consumer, self.tick(), redelivered, wall, broker_seq)
        )

    def ack_sent(self, sink: str, bodies: Iterable[str]) -> None:
        at = self.tick()
        for body in bodies:
            self.acks.setdefault((sink, body), AckRecord(at))

    def ack_confirmed(self, sink: str, bodies: Iterable[str]) -> None:
        """Acks that a later answer proved the broker has (a round trip after them, a RECEIPT, a commit)."""
        at = self.tick()
        n = 0
        for body in bodies:
            record = self.acks.setdefault((sink, body), AckRecord(at))
            if record.confirmed_at is None:
                record.confirmed_at = at
                n += 1
        if n:
            self._advance("ack", n)

    # -- purges and retained messages ---------------------------------------------------------------------------------

    def purge_attempt(self, sink: str) -> Purge:
        before = frozenset(
            r.body for r in self.sends.values() if sink in r.sinks and r.confirmed_at is not None and not r.rolled_back
        )
        purge = Purge(sink, before, self.tick())
        self.purges.append(purge)
        return purge

    def purge_confirmed(self, purge: Purge) -> None:
        purge.confirmed_at = self.tick()
        self._advance("purge")

    def retained_attempt(self, topic: str, value: str) -> RetainedWrite:
        write = RetainedWrite(topic, value, self.lifetime, self.tick())
        self.retained.append(write)
        return write

    def retained_confirmed(self, write: RetainedWrite) -> None:
        write.confirmed_at = self.tick()
        self._advance("retained")

    def retained_read(self, topic: str, value: str | None) -> None:
        self.retained_reads.append(RetainedRead(topic, value, self.lifetime, self.tick()))

    def error(self, text: str) -> None:
        self.errors.append(f"lifetime {self.lifetime}: {text}")
