"""The sans-IO broker core, driven directly: prefetch windows, ack types, dispatch order, consumer removal,
transactions, topics, priority/exclusive consumers, message groups, selectors, expiry and history.

Section numbers refer to the project's ActiveMQ semantics notes (``spec/activemq-semantics.md``).
"""

from __future__ import annotations

from typing import Any

import pytest

from minibroker._core.broker import EXPIRE_PERIOD, NOW_UNKNOWN_DELIVERED, BrokerCore
from minibroker._core.commands import AckType, ConsumerInfo, MessageAck
from minibroker._core.effects import Dispatch
from minibroker._core.history import HistoryRecord
from minibroker._core.policy import DestinationPolicy
from minibroker.errors import IllegalStateError, InvalidAcknowledge, TransactionError
from minibroker.message import Destination, Message

Q = Destination.queue("q")
T = Destination.topic("t")
DLQ = "ActiveMQ.DLQ"
T0 = 1_000.0


class FakeClock:
    """The only thing the core needs of a clock: ``now()``."""

    def __init__(self, now: float = T0) -> None:
        self.t = now

    def now(self) -> float:
        return self.t


class Env:
    """A core with one connection, and shorthands for the commands a client would send."""

    def __init__(self, policy: DestinationPolicy | None = None) -> None:
        self.clock = FakeClock()
        self.core = BrokerCore(self.clock, policy_for=(lambda _d: policy) if policy else None)
        self.conn = self.core.add_connection()
        self._n = 0

    # -- commands ---------------------------------------------------------------------------------------------------

    def message(self, dest: Destination = Q, **kw: Any) -> Message:
        mid = kw.pop("message_id", None) or f"m{self._n}"
        self._n += 1
        return Message(mid, dest, f"body-{mid}", timestamp=self.clock.t, **kw)

    def send(self, n: int = 1, dest: Destination = Q, txn: int | None = None, **kw: Any) -> list[str]:
        ids = []
        for _ in range(n):
            m = self.message(dest, **kw)
            self.core.send(self.conn, m, txn)
            ids.append(m.message_id)
        return ids

    def consumer(self, dest: Destination = Q, prefetch: int = 1000, **kw: Any) -> int:
        return self.core.add_consumer(self.conn, ConsumerInfo(dest, prefetch, **kw))

    def ack(
        self,
        cid: int,
        kind: AckType,
        last: str,
        first: str | None = None,
        count: int = 1,
        txn: int | None = None,
        cause: str | None = None,
    ) -> None:
        self.core.ack(self.conn, MessageAck(cid, kind, last, first, count, txn, cause))

    def advance(self, seconds: float) -> None:
        self.clock.t += seconds

    # -- observations -----------------------------------------------------------------------------------------------

    def drain(self) -> list[Dispatch]:
        return self.core.drain()

    def drained_ids(self, cid: int | None = None) -> list[str | None]:
        return [
            d.message.message_id if d.message else None for d in self.drain() if cid is None or d.consumer_id == cid
        ]

    def held(self, cid: int) -> list[str]:
        return list(self.core.subscriptions[cid].dispatched)

    def stats(self, name: str = "q") -> Any:
        return self.core.queues[name].statistics()

    def pending_ids(self, name: str = "q") -> list[str]:
        return [e.message.message_id for e in self.core.queues[name].pending()]

    def dlq(self) -> list[Message]:
        return self.core.browse(DLQ)

    def snapshot(self) -> Any:
        """Everything an ack could change: statistics, pending order, each subscription's window and holdings."""
        core = self.core
        return (
            {name: q.statistics() for name, q in core.queues.items()},
            {name: self.pending_ids(name) for name in core.queues},
            {cid: (list(s.dispatched), s.extension) for cid, s in core.subscriptions.items()},
            {tid: (len(t.sends), len(t.acks)) for tid, t in core.transactions.items()},
        )


@pytest.fixture
def env() -> Env:
    return Env()


def assert_refused(env: Env, exc: type[BaseException], match: str | None, ack: MessageAck) -> None:
    """The ack raises ``exc`` and changes nothing at all (broker.py rule 3)."""
    before = env.snapshot()
    with pytest.raises(exc, match=match):
        env.core.ack(env.conn, ack)
    assert env.snapshot() == before
    assert env.drain() == []


# ---------------------------------------------------------------------------------------------------------------------


class TestPrefetchWindow:
    def test_dispatches_stop_at_prefetch(self, env: Env) -> None:
        """A consumer is given at most ``prefetch`` unacked messages; the rest stay pending."""
        env.send(10)
        c = env.consumer(prefetch=3)
        assert env.drained_ids(c) == ["m0", "m1", "m2"]
        s = env.stats()
        assert (s.size, s.inflight, s.enqueued, s.dequeued, s.dispatched) == (10, 3, 10, 0, 3)
        env.send(1)
        assert env.drain() == []

    def test_delivered_ack_widens_by_message_count(self, env: Env) -> None:
        """DELIVERED removes nothing but widens the window by its message_count (AMQ-6824, §2)."""
        env.send(10)
        c = env.consumer(prefetch=3)
        env.drain()
        env.ack(c, AckType.DELIVERED, "m1", "m0", 2)
        assert env.drained_ids(c) == ["m3", "m4"]
        assert env.core.subscriptions[c].extension == 2
        assert env.stats().size == 10 and env.stats().dequeued == 0
        assert env.held(c) == ["m0", "m1", "m2", "m3", "m4"]

    def test_standard_ack_narrows_a_widened_window(self, env: Env) -> None:
        """A STANDARD ack takes the extension back one per message: acking the 2 delivered frees no slot."""
        env.send(10)
        c = env.consumer(prefetch=3)
        env.drain()
        env.ack(c, AckType.DELIVERED, "m1", "m0", 2)
        env.drain()
        env.ack(c, AckType.STANDARD, "m1", "m0", 2)
        assert env.drain() == []
        assert env.core.subscriptions[c].extension == 0
        assert env.held(c) == ["m2", "m3", "m4"]
        assert env.stats().dequeued == 2

    def test_standard_ack_without_extension_frees_slots(self, env: Env) -> None:
        """With no extension, each consumed message makes room for one more dispatch."""
        env.send(10)
        c = env.consumer(prefetch=3)
        env.drain()
        env.ack(c, AckType.STANDARD, "m1", "m0", 2)
        assert env.drained_ids(c) == ["m3", "m4"]
        assert len(env.held(c)) == 3

    def test_prefetch_zero_gets_nothing_without_pull(self, env: Env) -> None:
        """prefetch 0 is pull mode: a backlog is not pushed to the consumer."""
        env.send(3)
        env.consumer(prefetch=0)
        assert env.drain() == []
        env.send(1)
        assert env.drain() == []
        assert env.stats().inflight == 0

    def test_pull_no_wait_answers_with_a_message(self, env: Env) -> None:
        """pull(-1) with a backlog: exactly one message, at once."""
        env.send(3)
        c = env.consumer(prefetch=0)
        env.core.pull(env.conn, c, -1)
        assert env.drained_ids(c) == ["m0"]
        env.send(1)
        assert env.drain() == []

    def test_pull_no_wait_answers_null_when_empty(self, env: Env) -> None:
        """pull(-1) on an empty queue: a null dispatch at once, and a later message is not pushed."""
        c = env.consumer(prefetch=0)
        env.core.pull(env.conn, c, -1)
        assert env.drain() == [Dispatch(c, None)]
        env.send(1)
        assert env.drain() == []

    def test_pull_with_timeout_gives_null_dispatch_after_timeout(self, env: Env) -> None:
        """pull(t): nothing until t has passed, then a null dispatch from tick(); the pull is then over."""
        c = env.consumer(prefetch=0)
        env.core.pull(env.conn, c, 5.0)
        assert env.drain() == []
        assert env.core.next_deadline() == T0 + 5.0
        env.advance(4.999)
        env.core.tick()
        assert env.drain() == []
        env.advance(0.001)
        env.core.tick()
        assert env.drain() == [Dispatch(c, None)]
        env.send(1)
        assert env.drain() == []

    def test_pull_with_timeout_answered_by_a_message(self, env: Env) -> None:
        """A message sent during pull(t) is dispatched, and no null dispatch follows at t."""
        c = env.consumer(prefetch=0)
        env.core.pull(env.conn, c, 5.0)
        env.advance(2)
        env.send(2)
        assert env.drained_ids(c) == ["m0"]
        env.advance(10)
        env.core.tick()
        assert env.drain() == []

    def test_pull_zero_waits_indefinitely(self, env: Env) -> None:
        """pull(0) has no deadline: no null dispatch ever; the next message (one only) answers it."""
        c = env.consumer(prefetch=0)
        env.core.pull(env.conn, c, 0)
        assert env.core.next_deadline() is None
        env.advance(3600)
        env.core.tick()
        assert env.drain() == []
        env.send(2)
        assert env.drained_ids(c) == ["m0"]

    def test_pull_on_a_prefetching_consumer_is_ignored(self, env: Env) -> None:
        """MessagePull only means something for prefetch 0."""
        env.send(3)
        c = env.consumer(prefetch=1)
        env.drain()
        env.core.pull(env.conn, c, -1)
        assert env.drain() == []
        assert env.held(c) == ["m0"]


class TestAckTypes:
    def test_standard_range_consumes_the_span(self, env: Env) -> None:
        """STANDARD first..last with the right count removes exactly those messages from the queue."""
        env.send(5)
        c = env.consumer(prefetch=10)
        env.drain()
        env.ack(c, AckType.STANDARD, "m3", "m1", 3)
        assert env.held(c) == ["m0", "m4"]
        s = env.stats()
        assert (s.size, s.inflight, s.dequeued) == (2, 2, 3)

    def test_standard_range_from_the_oldest(self, env: Env) -> None:
        """first_message_id None means "from the oldest dispatched message"."""
        env.send(4)
        c = env.consumer(prefetch=10)
        env.drain()
        env.ack(c, AckType.STANDARD, "m2", None, 3)
        assert env.held(c) == ["m3"]

    def test_ack_one_is_a_standard_ack_of_exactly_that_message(self) -> None:
        """ack_one (AUTO's shortcut, no MessageAck) does what STANDARD id..id count 1 does, oldest or not."""
        fast, full = Env(), Env()
        for e in (fast, full):
            e.send(4)
            e.consumer(prefetch=2)
            e.drain()
        c = 1
        assert fast.core.ack_one(fast.conn, c, "m1")
        full.ack(c, AckType.STANDARD, "m1", "m1", 1)
        assert fast.snapshot() == full.snapshot()
        assert fast.drained_ids() == full.drained_ids() == ["m2"]  # the window refilled by one
        assert [r.event for r in fast.core.history.of("m1")] == [r.event for r in full.core.history.of("m1")]
        assert fast.core.history.of("m1")[-1].ack_type == "STANDARD"

    def test_ack_one_individual_is_an_individual_ack_of_that_message(self) -> None:
        """ack_one(individual=True) (a STOMP client-individual ACK) does what an INDIVIDUAL ack does, the history
        included, for a message that is not the oldest held."""
        fast, full = Env(), Env()
        for e in (fast, full):
            e.send(4)
            e.consumer(prefetch=3)
            e.drain()
        assert fast.core.ack_one(fast.conn, 1, "m1", individual=True)
        full.ack(1, AckType.INDIVIDUAL, "m1", "m1", 1)
        assert fast.snapshot() == full.snapshot()
        assert fast.drained_ids() == full.drained_ids() == ["m3"]
        assert fast.core.history.of("m1") == full.core.history.of("m1")
        assert fast.core.history.of("m1")[-1].ack_type == "INDIVIDUAL"

    def test_ack_one_individual_on_a_topic_counts_what_came_before_as_an_individual_ack_does(self) -> None:
        """On a topic, an INDIVIDUAL ack (no first message) also counts the messages dispatched before it as
        dequeued (ActiveMQ's TopicSubscription); ack_one(individual=True) for a message that is not the oldest held
        leaves the topic's figures where the full ack leaves them."""
        topic = Destination.topic("t")
        figures = []
        for fast in (True, False):
            e = Env()
            c = e.consumer(topic, prefetch=10)
            e.send(3, topic)
            e.drain()
            if fast:
                assert e.core.ack_one(e.conn, c, "m1", individual=True)
            else:
                e.ack(c, AckType.INDIVIDUAL, "m1", "m1", 1)
            t = e.core.topics["t"]
            figures.append((t.dequeued, t.inflight, e.held(c)))
        assert figures[0] == figures[1]
        assert figures[0][:2] == (2, 1)  # m0 counted with m1: ActiveMQ's figures, which the full ack kept already

    def test_ack_one_refill_at_half_refills_the_window_in_one_batch(self, env: Env) -> None:
        """An AUTO consumer's acks (refill_at_half) refill its window once half of it is free, in one batch: the
        same messages in the same order as a refill after every ack, fewer dispatch passes."""
        env.send(12)
        c = env.consumer(prefetch=4)
        assert env.drained_ids() == ["m0", "m1", "m2", "m3"]
        assert env.core.ack_one(env.conn, c, "m0", refill_at_half=True)
        assert env.drained_ids() == []  # three of four still held: no refill yet
        assert env.core.ack_one(env.conn, c, "m1", refill_at_half=True)
        assert env.drained_ids() == ["m4", "m5"]  # half free: both slots at once
        for i in range(2, 6):
            assert env.core.ack_one(env.conn, c, f"m{i}", refill_at_half=True)
        assert env.drained_ids() == ["m6", "m7", "m8", "m9"]
        assert env.held(c) == ["m6", "m7", "m8", "m9"]

    @pytest.mark.parametrize("prefetch", [0, 1, 2])
    def test_ack_one_refill_at_half_is_per_ack_for_small_windows(self, prefetch: int) -> None:
        """With a window of one or two (or a pull consumer's), half free is any free slot: the same dispatches as
        without refill_at_half, ack for ack."""
        batched, each = Env(), Env()
        for e in (batched, each):
            e.send(5)
            e.consumer(prefetch=prefetch)
            if prefetch == 0:
                e.core.pull(e.conn, 1, 0)
        for _ in range(3):
            for e, flag in ((batched, True), (each, False)):
                held = e.drained_ids()
                for message_id in held:
                    assert e.core.ack_one(e.conn, 1, message_id, refill_at_half=flag)
                if prefetch == 0:
                    e.core.pull(e.conn, 1, 0)
            assert batched.snapshot() == each.snapshot()

    def test_ack_one_declines_what_it_cannot_apply(self, env: Env) -> None:
        """Unknown consumer, another connection's consumer, a message not held: False and nothing changes, so the
        client sends the full ack, which the broker refuses with the right error."""
        env.send(2)
        c = env.consumer(prefetch=1)
        env.drain()
        other = env.core.add_connection()
        before = env.snapshot()
        assert not env.core.ack_one(env.conn, c + 99, "m0")
        assert not env.core.ack_one(other, c, "m0")
        assert not env.core.ack_one(env.conn, c, "m1")  # pending, not dispatched
        assert env.snapshot() == before and env.drain() == []

    @pytest.mark.parametrize("count", [1, 2, 4])
    def test_standard_wrong_count_is_refused(self, env: Env, count: int) -> None:
        """Outside a transaction, message_count must equal the span: else "Unmatched acknowledge", nothing changes."""
        env.send(5)
        c = env.consumer(prefetch=10)
        env.drain()
        assert_refused(
            env, InvalidAcknowledge, "Unmatched acknowledge", MessageAck(c, AckType.STANDARD, "m3", "m1", count)
        )

    def test_standard_wrong_count_from_the_oldest_is_refused(self, env: Env) -> None:
        """A count-1 ack of a message that is not the oldest, without first id, spans more than one: refused."""
        env.send(3)
        c = env.consumer(prefetch=10)
        env.drain()
        assert_refused(env, InvalidAcknowledge, "Unmatched acknowledge", MessageAck(c, AckType.STANDARD, "m2", None, 1))

    @pytest.mark.parametrize(("first", "last"), [(None, "nope"), ("nope", "m1"), ("m0", "nope")])
    def test_standard_unknown_ids_are_refused(self, env: Env, first: str | None, last: str) -> None:
        """First or last id not dispatched to this consumer: "Unmatched acknowledge", nothing changes."""
        env.send(3)
        c = env.consumer(prefetch=10)
        env.drain()
        assert_refused(
            env, InvalidAcknowledge, "Unmatched acknowledge", MessageAck(c, AckType.STANDARD, last, first, 2)
        )

    def test_standard_reversed_range_acks_nothing(self, env: Env) -> None:
        """first after last in dispatch order matches nothing: ActiveMQ logs "Could not correlate" and acks nothing
        (recorded: priority_client_ack_reordered_*, nonblocking_client_ack_out_of_order)."""
        env.send(3)
        c = env.consumer(prefetch=10)
        env.drain()
        env.core.ack(env.conn, MessageAck(c, AckType.STANDARD, "m0", "m2", 3))
        assert env.held(c) == ["m0", "m1", "m2"]

    def test_standard_for_another_consumers_message_is_refused(self, env: Env) -> None:
        """Ranges are looked up in the acking subscription's own dispatched list."""
        env.send(2)
        c1 = env.consumer(prefetch=1)
        c2 = env.consumer(prefetch=1)
        env.drain()
        assert env.held(c2) == ["m1"]
        assert_refused(env, InvalidAcknowledge, "Unmatched acknowledge", MessageAck(c1, AckType.STANDARD, "m1"))

    def test_ack_from_unknown_consumer_is_refused(self, env: Env) -> None:
        """An ack naming a consumer that does not exist raises InvalidAcknowledge."""
        env.send(1)
        env.consumer()
        env.drain()
        assert_refused(env, InvalidAcknowledge, None, MessageAck(999, AckType.STANDARD, "m0"))

    def test_individual_acks_one_message(self, env: Env) -> None:
        """INDIVIDUAL removes only last_message_id, whatever was delivered before it."""
        env.send(3)
        c = env.consumer(prefetch=10)
        env.drain()
        env.ack(c, AckType.INDIVIDUAL, "m1", "m1", 1)
        assert env.held(c) == ["m0", "m2"]
        assert (env.stats().size, env.stats().dequeued) == (2, 1)

    def test_individual_unknown_id_is_refused(self, env: Env) -> None:
        """INDIVIDUAL of a message not dispatched to the consumer: "Unmatched acknowledge", nothing changes."""
        env.send(2)
        c = env.consumer(prefetch=10)
        env.drain()
        assert_refused(env, InvalidAcknowledge, "Unmatched acknowledge", MessageAck(c, AckType.INDIVIDUAL, "zz"))

    def test_delivered_unknown_id_is_refused(self, env: Env) -> None:
        """An uncorrelated DELIVERED ack is an error and does not widen the window."""
        env.send(3)
        c = env.consumer(prefetch=1)
        env.drain()
        assert_refused(env, InvalidAcknowledge, None, MessageAck(c, AckType.DELIVERED, "m2", None, 5))

    def test_poison_sends_to_the_shared_dlq(self, env: Env) -> None:
        """POISON dead-letters to ActiveMQ.DLQ with dlqDeliveryFailureCause, and dequeues the original (§2, §5)."""
        env.send(2)
        c = env.consumer(prefetch=10)
        env.drain()
        cause = "java.lang.Throwable: Delivery[7] exceeds redelivery policy limit"
        env.ack(c, AckType.POISON, "m0", "m0", 1, cause=cause)
        assert env.held(c) == ["m1"]
        assert (env.stats().size, env.stats().dequeued) == (1, 1)
        [dead] = env.dlq()
        assert dead.message_id == "m0"
        assert dead.properties["dlqDeliveryFailureCause"] == cause
        assert dead.original_destination == Q
        assert dead.destination == Destination.queue(DLQ)
        assert dead.persistent and dead.expiration == 0
        assert env.stats(DLQ).enqueued == 1

    def test_poison_range_dead_letters_in_order(self, env: Env) -> None:
        """A POISON range dead-letters every message in it, in dispatch order."""
        env.send(3)
        c = env.consumer(prefetch=10)
        env.drain()
        env.ack(c, AckType.POISON, "m1", "m0", 2, cause="x")
        assert [m.message_id for m in env.dlq()] == ["m0", "m1"]
        assert env.held(c) == ["m2"]

    def test_poison_of_non_persistent_message_drops_it(self, env: Env) -> None:
        """processNonPersistent=false by default: a poisoned non-persistent message is dropped, not dead-lettered."""
        env.send(1, persistent=False)
        c = env.consumer()
        env.drain()
        env.ack(c, AckType.POISON, "m0", cause="x")
        assert env.stats().size == 0
        assert env.dlq() == []
        assert [r.event for r in env.core.history.of("m0")][-1] == "dropped"

    def test_poison_in_transaction_is_refused(self, env: Env) -> None:
        """ "Poison ack cannot be transacted", and nothing changes."""
        env.send(1)
        c = env.consumer()
        env.drain()
        txn = env.core.begin(env.conn)
        assert_refused(
            env,
            TransactionError,
            "Poison ack cannot be transacted",
            MessageAck(c, AckType.POISON, "m0", transaction_id=txn),
        )
        assert DLQ not in env.core.queues

    def test_redelivered_changes_nothing(self, env: Env) -> None:
        """REDELIVERED is correlated but has no effect at the broker (the counter is not bumped)."""
        env.send(3)
        c = env.consumer(prefetch=2)
        env.drain()
        before = env.snapshot()
        env.ack(c, AckType.REDELIVERED, "m1", "m0", 2)
        assert env.snapshot() == before
        assert env.drain() == []
        assert all(e.redelivery_counter == 0 for e in env.core.queues["q"].entries.values())
        assert env.core.history.of("m0")[-1].ack_type == "REDELIVERED"

    def test_redelivered_unknown_id_is_refused(self, env: Env) -> None:
        """REDELIVERED must correlate with a dispatched message."""
        env.send(1)
        c = env.consumer()
        env.drain()
        assert_refused(env, InvalidAcknowledge, None, MessageAck(c, AckType.REDELIVERED, "zz"))

    def test_expired_ack_of_expired_message_goes_the_expiry_path(self, env: Env) -> None:
        """EXPIRED for a message past its expiration: expired count, DLQ with the "Message Expired" cause."""
        env.send(1, expiration=T0 + 1)
        c = env.consumer()
        env.drain()
        env.advance(2)
        env.ack(c, AckType.EXPIRED, "m0", "m0", 1)
        s = env.stats()
        assert (s.size, s.inflight, s.expired, s.dequeued) == (0, 0, 1, 1)
        [dead] = env.dlq()
        assert dead.properties["dlqDeliveryFailureCause"] == (
            f"java.lang.Throwable: Message Expired. Expiration:{int((T0 + 1) * 1000)}"
        )

    def test_expired_ack_of_unexpired_message_removes_it(self, env: Env) -> None:
        """EXPIRED removes the range even if the broker thinks it has not expired yet (no DLQ then)."""
        env.send(2)
        c = env.consumer(prefetch=1)
        env.drain()
        env.ack(c, AckType.EXPIRED, "m0", "m0", 1)
        assert (env.stats().size, env.stats().expired) == (1, 0)
        assert env.dlq() == []
        assert env.drained_ids(c) == ["m1"]

    def test_unmatched_is_refused(self, env: Env) -> None:
        """UNMATCHED (network bridges) is not accepted by this broker, and changes nothing."""
        env.send(1)
        c = env.consumer()
        env.drain()
        assert_refused(env, InvalidAcknowledge, None, MessageAck(c, AckType.UNMATCHED, "m0"))


class TestDispatchOrder:
    def test_round_robin_between_equal_consumers(self, env: Env) -> None:
        """Consumers present before the sends take turns (each moved to the end of its band after a dispatch)."""
        c1 = env.consumer(prefetch=10)
        c2 = env.consumer(prefetch=10)
        env.send(6)
        out = env.drain()
        assert [(d.consumer_id, d.message.message_id) for d in out if d.message] == [
            (c1, "m0"),
            (c2, "m1"),
            (c1, "m2"),
            (c2, "m3"),
            (c1, "m4"),
            (c2, "m5"),
        ]

    def test_first_consumer_takes_up_to_prefetch_of_backlog(self, env: Env) -> None:
        """The first consumer to attach takes `prefetch` messages of the backlog before a second one connects."""
        env.send(10)
        c1 = env.consumer(prefetch=4)
        assert env.drained_ids(c1) == ["m0", "m1", "m2", "m3"]
        c2 = env.consumer(prefetch=100)
        assert env.drained_ids(c2) == [f"m{i}" for i in range(4, 10)]

    def test_small_prefetch_consumer_created_first(self, env: Env) -> None:
        """prefetch 1 then 1000, both before the sends: A gets m1, B the other nine (prefetch_distribution.json)."""
        a = env.consumer(prefetch=1)
        b = env.consumer(prefetch=1000)
        env.send(10)
        out = env.drain()
        assert [d.message.message_id for d in out if d.consumer_id == a] == ["m0"]
        assert [d.message.message_id for d in out if d.consumer_id == b] == [f"m{i}" for i in range(1, 10)]

    def test_persistent_before_non_persistent_in_a_backlog(self, env: Env) -> None:
        """np1,p1,np2,p2 queued with no consumer come out p1,p2,np1,np2 (mixed_persistence_order.json)."""
        env.send(1, persistent=False, message_id="np1")
        env.send(1, message_id="p1")
        env.send(1, persistent=False, message_id="np2")
        env.send(1, message_id="p2")
        c = env.consumer()
        assert env.drained_ids(c) == ["p1", "p2", "np1", "np2"]

    def test_prioritized_messages_policy(self) -> None:
        """With prioritizedMessages the backlog is dispatched by message priority, FIFO within one (priority.json)."""
        env = Env(DestinationPolicy(prioritized_messages=True))
        env.send(1, priority=1, message_id="p1")
        env.send(1, priority=9, message_id="p9")
        env.send(1, priority=4, message_id="p4a")
        env.send(1, priority=4, message_id="p4b")
        c = env.consumer()
        assert env.drained_ids(c) == ["p9", "p4a", "p4b", "p1"]

    def test_fifo_without_prioritized_messages(self, env: Env) -> None:
        """By default queues ignore message priority (priority.json, NOPRIO.A)."""
        env.send(1, priority=1, message_id="p1")
        env.send(1, priority=9, message_id="p9")
        c = env.consumer()
        assert env.drained_ids(c) == ["p1", "p9"]


class TestRemoveConsumer:
    def _five_held(self, env: Env) -> tuple[int, dict[str, int]]:
        env.send(7)
        c = env.consumer(prefetch=5)
        seqs = {d.message.message_id: d.broker_seq for d in env.drain() if d.message}
        assert list(seqs) == ["m0", "m1", "m2", "m3", "m4"]
        return c, seqs

    def _redeliveries(self, env: Env) -> list[tuple[str, int]]:
        c2 = env.consumer(prefetch=100)
        return [(d.message.message_id, d.redelivery_counter) for d in env.drain() if d.consumer_id == c2 and d.message]

    def test_counter_incremented_up_to_last_delivered(self, env: Env) -> None:
        """Held messages go back to the head; +1 up to and including last_delivered_seq, prefetched-only keep 0."""
        c, seqs = self._five_held(env)
        env.core.remove_consumer(env.conn, c, seqs["m1"])
        s = env.stats()
        assert (s.size, s.inflight, s.consumers) == (7, 0, 0)
        assert env.pending_ids() == ["m0", "m1", "m2", "m3", "m4", "m5", "m6"]
        assert self._redeliveries(env) == [("m0", 1), ("m1", 1), ("m2", 0), ("m3", 0), ("m4", 0), ("m5", 0), ("m6", 0)]

    def test_nothing_incremented_when_last_delivered_was_acked(self, env: Env) -> None:
        """If the last-delivered message was already acked, no counter is raised (individual_ack.json's cousin)."""
        c, seqs = self._five_held(env)
        env.ack(c, AckType.INDIVIDUAL, "m1")
        env.core.remove_consumer(env.conn, c, seqs["m1"])
        assert self._redeliveries(env) == [("m0", 0), ("m2", 0), ("m3", 0), ("m4", 0), ("m5", 0), ("m6", 0)]

    def test_nothing_incremented_without_deliveries(self, env: Env) -> None:
        """last_delivered_seq -1 (nothing handed to the application): every counter stays."""
        c, _ = self._five_held(env)
        env.core.remove_consumer(env.conn, c, -1)
        assert all(counter == 0 for _, counter in self._redeliveries(env))

    def test_unknown_delivered_increments_all(self, env: Env) -> None:
        """NOW_UNKNOWN_DELIVERED (-2, transport failure): every held message gets +1."""
        c, _ = self._five_held(env)
        env.core.remove_consumer(env.conn, c, NOW_UNKNOWN_DELIVERED)
        assert self._redeliveries(env) == [("m0", 1), ("m1", 1), ("m2", 1), ("m3", 1), ("m4", 1), ("m5", 0), ("m6", 0)]

    def test_connection_failure_counts_everything(self, env: Env) -> None:
        """remove_connection(..., None) is a failed transport: all held messages +1, the connection is gone."""
        c, _ = self._five_held(env)
        env.core.remove_connection(env.conn, None)
        assert c not in env.core.subscriptions and env.conn not in env.core.connections
        assert {e.redelivery_counter for e in env.core.queues["q"].entries.values() if e.seq <= 4} == {1}
        assert env.core.queues["q"].entries[5].redelivery_counter == 0

    def test_individual_ack_then_close(self, env: Env) -> None:
        """individual_ack.json: 3 delivered, m2 acked, close with last=m3: m1 and m3 come back with counter 1."""
        env.send(3)
        c = env.consumer(prefetch=10)
        seqs = {d.message.message_id: d.broker_seq for d in env.drain()}
        env.ack(c, AckType.INDIVIDUAL, "m1")
        env.core.remove_consumer(env.conn, c, seqs["m2"])
        assert (env.stats().size, env.stats().dequeued) == (2, 1)
        assert self._redeliveries(env) == [("m0", 1), ("m2", 1)]

    def test_released_messages_go_to_another_consumer_first(self, env: Env) -> None:
        """Given-back messages are at the head: a live consumer gets them before the older pending tail."""
        env.send(4)
        c1 = env.consumer(prefetch=2)
        c2 = env.consumer(prefetch=0)
        seqs = {d.message.message_id: d.broker_seq for d in env.drain()}
        env.core.remove_consumer(env.conn, c1, seqs["m1"])
        env.core.pull(env.conn, c2, -1)
        [d] = env.drain()
        assert (d.message.message_id, d.redelivery_counter) == ("m0", 1)

    def test_remove_unknown_consumer_is_a_no_op(self, env: Env) -> None:
        """Removing a consumer twice (or another connection's) does nothing."""
        env.send(1)
        c = env.consumer()
        env.drain()
        other = env.core.add_connection()
        before = env.snapshot()
        env.core.remove_consumer(other, c, -1)
        env.core.remove_consumer(env.conn, 12345, -1)
        assert env.snapshot() == before


class TestTransactions:
    def test_sends_invisible_until_commit(self, env: Env) -> None:
        """Transacted sends are not queued (nor dispatched) before commit; commit enqueues them in order."""
        c = env.consumer()
        txn = env.core.begin(env.conn)
        env.send(2, txn=txn)
        assert env.drain() == []
        assert env.stats().size == 0 and env.stats().enqueued == 0
        env.core.commit(env.conn, txn)
        assert env.drained_ids(c) == ["m0", "m1"]
        assert txn not in env.core.transactions

    def test_rollback_discards_sends(self, env: Env) -> None:
        """Rollback discards the transaction's sends, recorded as "discarded"."""
        env.consumer()
        txn = env.core.begin(env.conn)
        env.send(2, txn=txn)
        env.core.rollback(env.conn, txn)
        assert env.drain() == []
        assert env.stats().enqueued == 0
        assert [r.event for r in env.core.history.of("m0")] == ["sent", "discarded"]

    def test_acks_in_transaction_apply_at_commit(self, env: Env) -> None:
        """A transacted STANDARD ack removes nothing until commit; commit dequeues (count not checked in a tx)."""
        env.send(3)
        c = env.consumer(prefetch=10)
        env.drain()
        txn = env.core.begin(env.conn)
        env.ack(c, AckType.STANDARD, "m1", "m0", 99, txn=txn)
        s = env.stats()
        assert (s.size, s.inflight, s.dequeued) == (3, 3, 0)
        env.core.commit(env.conn, txn)
        s = env.stats()
        assert (s.size, s.inflight, s.dequeued) == (1, 1, 2)
        assert env.held(c) == ["m2"]

    def test_acks_in_rolled_back_transaction_keep_messages_dispatched(self, env: Env) -> None:
        """After rollback the messages stay dispatched to the consumer (it redelivers them locally, §4)."""
        env.send(3)
        c = env.consumer(prefetch=10)
        env.drain()
        txn = env.core.begin(env.conn)
        env.ack(c, AckType.STANDARD, "m1", "m0", 2, txn=txn)
        env.core.rollback(env.conn, txn)
        assert env.held(c) == ["m0", "m1", "m2"]
        s = env.stats()
        assert (s.size, s.dequeued) == (3, 0)
        assert env.drain() == []

    def test_individual_ack_in_transaction(self, env: Env) -> None:
        """INDIVIDUAL in a tx: deferred to commit."""
        env.send(2)
        c = env.consumer(prefetch=10)
        env.drain()
        txn = env.core.begin(env.conn)
        env.ack(c, AckType.INDIVIDUAL, "m1", txn=txn)
        assert env.stats().size == 2
        env.core.commit(env.conn, txn)
        assert env.held(c) == ["m0"] and env.stats().size == 1

    def test_consumer_closed_inside_transaction_commit(self, env: Env) -> None:
        """A tx-acked message of a consumer removed before commit is not given back, and commit consumes it."""
        env.send(2)
        c = env.consumer(prefetch=10)
        seqs = {d.message.message_id: d.broker_seq for d in env.drain()}
        txn = env.core.begin(env.conn)
        env.ack(c, AckType.STANDARD, "m0", "m0", 1, txn=txn)
        env.core.remove_consumer(env.conn, c, seqs["m0"])
        assert env.pending_ids() == ["m1"]
        env.core.commit(env.conn, txn)
        s = env.stats()
        assert (s.size, s.dequeued, s.enqueued - s.dequeued) == (1, 1, 1)

    def test_consumer_closed_inside_transaction_rollback(self, env: Env) -> None:
        """... and rollback gives it back with its counter raised."""
        env.send(2)
        c = env.consumer(prefetch=10)
        seqs = {d.message.message_id: d.broker_seq for d in env.drain()}
        txn = env.core.begin(env.conn)
        env.ack(c, AckType.STANDARD, "m0", "m0", 1, txn=txn)
        env.core.remove_consumer(env.conn, c, seqs["m0"])
        env.core.rollback(env.conn, txn)
        assert env.pending_ids() == ["m0", "m1"]
        [entry] = [e for e in env.core.queues["q"].entries.values() if e.broker_seq == seqs["m0"]]
        assert entry.redelivery_counter == 1

    def test_unknown_transaction_is_refused(self, env: Env) -> None:
        """Commit/rollback/ack/send with a transaction id that is not open raise TransactionError."""
        env.send(1)
        c = env.consumer()
        env.drain()
        with pytest.raises(TransactionError):
            env.core.commit(env.conn, 77)
        with pytest.raises(TransactionError):
            env.core.rollback(env.conn, 77)
        with pytest.raises(TransactionError):
            env.core.send(env.conn, env.message(), 77)
        assert_refused(env, TransactionError, None, MessageAck(c, AckType.STANDARD, "m0", transaction_id=77))

    def test_another_connections_transaction_is_refused(self, env: Env) -> None:
        """A transaction belongs to the connection that began it."""
        txn = env.core.begin(env.conn)
        other = env.core.add_connection()
        with pytest.raises(TransactionError):
            env.core.commit(other, txn)
        assert txn in env.core.transactions

    def test_remove_connection_rolls_back_open_transactions(self, env: Env) -> None:
        """Closing a connection rolls back its open transactions: their sends are discarded."""
        txn = env.core.begin(env.conn)
        env.send(1, txn=txn)
        env.core.remove_connection(env.conn)
        assert txn not in env.core.transactions
        assert "q" not in env.core.queues or env.stats().enqueued == 0
        with pytest.raises(IllegalStateError):
            env.core.begin(env.conn)


class TestTopics:
    def test_only_present_subscribers_get_copies(self, env: Env) -> None:
        """Non-durable subscribers get only what is published while they are subscribed (topic_basic.json)."""
        env.send(1, dest=T, message_id="t0")
        a = env.consumer(T)
        env.send(1, dest=T, message_id="t1")
        b = env.consumer(T)
        env.send(1, dest=T, message_id="t2")
        out = env.drain()
        assert [d.message.message_id for d in out if d.consumer_id == a] == ["t1", "t2"]
        assert [d.message.message_id for d in out if d.consumer_id == b] == ["t2"]
        assert "t" not in env.core.queues

    def test_topic_poison_is_not_dead_lettered(self, env: Env) -> None:
        """POISON on a non-durable topic subscription only counts; no DLQ (§2)."""
        a = env.consumer(T)
        env.send(1, dest=T)
        env.drain()
        env.ack(a, AckType.POISON, "m0", cause="x")
        assert env.held(a) == []
        assert DLQ not in env.core.queues
        assert env.core.topics["t"].dequeued == 1

    def test_topic_prefetch_window(self, env: Env) -> None:
        """Each subscriber has its own window; a STANDARD ack releases the next copy."""
        a = env.consumer(T, prefetch=1)
        env.send(3, dest=T)
        assert env.drained_ids(a) == ["m0"]
        env.ack(a, AckType.STANDARD, "m0")
        assert env.drained_ids(a) == ["m1"]


class TestConsumerSelection:
    def test_higher_priority_consumer_first(self, env: Env) -> None:
        """Higher ConsumerInfo.priority is served first until full, then lower ones."""
        low = env.consumer(prefetch=10)
        high = env.consumer(prefetch=2, priority=5)
        env.send(5)
        out = env.drain()
        assert [d.message.message_id for d in out if d.consumer_id == high] == ["m0", "m1"]
        assert [d.message.message_id for d in out if d.consumer_id == low] == ["m2", "m3", "m4"]

    def test_exclusive_consumer_gets_everything(self, env: Env) -> None:
        """The first exclusive consumer receives every message; when it is full the others still get nothing."""
        plain = env.consumer(prefetch=10)
        ex1 = env.consumer(prefetch=2, exclusive=True)
        ex2 = env.consumer(prefetch=10, exclusive=True)
        env.send(4)
        assert env.drained_ids(ex1) == ["m0", "m1"]
        assert env.held(plain) == [] and env.held(ex2) == []
        assert env.pending_ids() == ["m2", "m3"]

    def test_exclusive_takeover_on_removal(self, env: Env) -> None:
        """When the exclusive consumer goes, the next exclusive one takes over, its held messages first."""
        env.consumer(prefetch=10)
        ex1 = env.consumer(prefetch=2, exclusive=True)
        ex2 = env.consumer(prefetch=10, exclusive=True)
        env.send(4)
        env.drain()
        env.core.remove_consumer(env.conn, ex1, -1)
        assert env.drained_ids(ex2) == ["m0", "m1", "m2", "m3"]

    def test_higher_priority_exclusive_wins(self, env: Env) -> None:
        """A later exclusive consumer with a higher priority becomes the exclusive one."""
        ex1 = env.consumer(prefetch=10, exclusive=True)
        env.send(1)
        ex2 = env.consumer(prefetch=10, exclusive=True, priority=9)
        env.send(1)
        out = env.drain()
        assert [(d.consumer_id, d.message.message_id) for d in out] == [(ex1, "m0"), (ex2, "m1")]

    def test_selector_leaves_non_matching_messages_queued(self, env: Env) -> None:
        """Non-matching messages stay pending; matching ones behind them are still dispatched."""
        red = env.consumer(selector="color = 'red'")
        env.send(1, properties={"color": "blue"}, message_id="b1")
        env.send(1, properties={"color": "red"}, message_id="r1")
        assert env.drained_ids() == ["r1"]
        assert env.pending_ids() == ["b1"]
        assert env.held(red) == ["r1"]
        anyone = env.consumer()
        assert env.drained_ids(anyone) == ["b1"]

    def test_selector_on_headers(self, env: Env) -> None:
        """Selectors see JMS headers: JMSPriority, JMSDeliveryMode."""
        c = env.consumer(selector="JMSPriority > 5 AND JMSDeliveryMode = 'PERSISTENT'")
        env.send(1, priority=9, message_id="hi")
        env.send(1, priority=9, persistent=False, message_id="np")
        env.send(1, priority=1, message_id="lo")
        assert env.drained_ids(c) == ["hi"]


class TestMessageGroups:
    def test_groups_stick_to_their_owner(self, env: Env) -> None:
        """The first message of a group binds it and is flagged group_first; later ones go to the owner only."""
        a = env.consumer(prefetch=10)
        b = env.consumer(prefetch=10)
        for i in (1, 2, 3):
            env.send(1, group_id="G1", message_id=f"G1-{i}")
            env.send(1, group_id="G2", message_id=f"G2-{i}")
        out = env.drain()
        assert [(d.message.message_id, d.group_first) for d in out if d.consumer_id == a] == [
            ("G1-1", True),
            ("G1-2", False),
            ("G1-3", False),
        ]
        assert [(d.message.message_id, d.group_first) for d in out if d.consumer_id == b] == [
            ("G2-1", True),
            ("G2-2", False),
            ("G2-3", False),
        ]

    def test_group_waits_for_a_full_owner(self, env: Env) -> None:
        """A group's messages wait for their owner even when another consumer has room."""
        a = env.consumer(prefetch=1)
        b = env.consumer(prefetch=10)
        env.send(2, group_id="G")
        assert env.drained_ids() == ["m0"]
        assert env.held(a) == ["m0"] and env.held(b) == []
        env.ack(a, AckType.STANDARD, "m0")
        assert env.drained_ids(a) == ["m1"]

    def test_closed_owners_groups_are_reassigned(self, env: Env) -> None:
        """message_groups.json: A closes, G1-4 goes to B flagged first; G2-4 (already B's) is not."""
        a = env.consumer(prefetch=10)
        b = env.consumer(prefetch=10)
        for i in (1, 2, 3):
            env.send(1, group_id="G1", message_id=f"G1-{i}")
            env.send(1, group_id="G2", message_id=f"G2-{i}")
        env.drain()
        env.ack(a, AckType.STANDARD, "G1-3", "G1-1", 3)
        env.core.remove_consumer(env.conn, a, -1)
        env.send(1, group_id="G1", message_id="G1-4")
        env.send(1, group_id="G2", message_id="G2-4")
        assert [(d.consumer_id, d.message.message_id, d.group_first) for d in env.drain()] == [
            (b, "G1-4", True),
            (b, "G2-4", False),
        ]

    def test_new_group_goes_to_consumer_with_fewer_groups(self, env: Env) -> None:
        """A new group is bound to the consumer owning the fewest groups among equal priorities."""
        a = env.consumer(prefetch=10)
        b = env.consumer(prefetch=10)
        env.send(1, group_id="G1", message_id="G1-1")
        env.send(1, message_id="plain")
        env.send(1, group_id="G2", message_id="G2-1")
        out = env.drain()
        assert [(d.consumer_id, d.message.message_id) for d in out] == [(a, "G1-1"), (b, "plain"), (b, "G2-1")]

    def test_negative_group_seq_closes_the_group(self, env: Env) -> None:
        """A message with JMSXGroupSeq -1 goes to the owner and closes the group: the next one binds anew."""
        a = env.consumer(prefetch=10)
        env.send(1, group_id="G", group_seq=1, message_id="g1")
        env.send(1, group_id="G", group_seq=-1, message_id="close")
        env.send(1, group_id="G", message_id="again")
        out = env.drain()
        assert [(d.consumer_id, d.message.message_id, d.group_first) for d in out] == [
            (a, "g1", True),
            (a, "close", False),
            (a, "again", True),
        ]

    def test_group_seq_one_rebinds_the_group(self, env: Env) -> None:
        """A message with JMSXGroupSeq 1 starts the group anew with the consumer chosen for it."""
        a = env.consumer(prefetch=1)
        b = env.consumer(prefetch=10)
        env.send(1, group_id="G", message_id="old")
        env.send(1, group_id="G", group_seq=1, message_id="restart")
        out = env.drain()
        assert [(d.consumer_id, d.message.message_id, d.group_first) for d in out] == [
            (a, "old", True),
            (b, "restart", True),
        ]


class TestExpiry:
    def test_expired_on_dispatch_goes_to_dlq(self, env: Env) -> None:
        """A persistent message found expired when dispatching is not delivered; it goes to ActiveMQ.DLQ."""
        env.send(1, expiration=T0 + 0.1, message_id="old")
        env.send(1, message_id="ok")
        env.advance(0.3)
        c = env.consumer()
        assert env.drained_ids(c) == ["ok"]
        s = env.stats()
        assert (s.size, s.expired, s.dequeued, s.enqueued) == (1, 1, 1, 2)
        [dead] = env.dlq()
        assert dead.message_id == "old" and dead.expiration == 0 and dead.original_destination == Q
        assert dead.properties["dlqDeliveryFailureCause"].startswith("java.lang.Throwable: Message Expired.")

    def test_expired_non_persistent_is_dropped(self, env: Env) -> None:
        """A non-persistent expired message is dropped, not dead-lettered (expired_message_nonpersistent.json)."""
        env.send(1, expiration=T0 + 0.1, persistent=False)
        env.advance(1)
        c = env.consumer()
        assert env.drained_ids(c) == []
        assert env.stats().expired == 1 and env.dlq() == []

    def test_sweep_by_tick(self, env: Env) -> None:
        """With no consumer, tick() expires waiting messages at the periodic sweep (every 30 s)."""
        env.send(1, expiration=T0 + 5, message_id="short")
        env.send(1, expiration=T0 + 100, message_id="long")
        env.send(1, message_id="forever")
        assert env.core.next_deadline() == T0 + EXPIRE_PERIOD
        env.advance(10)
        env.core.tick()
        assert env.stats().expired == 0
        env.advance(EXPIRE_PERIOD - 10)
        env.core.tick()
        assert env.stats().expired == 1
        assert env.pending_ids() == ["long", "forever"]
        assert env.core.next_deadline() == T0 + 2 * EXPIRE_PERIOD
        assert [m.message_id for m in env.dlq()] == ["short"]

    def test_unexpired_messages_are_delivered(self, env: Env) -> None:
        """A message whose expiration is still ahead is delivered normally."""
        env.send(1, expiration=T0 + 5)
        env.advance(4.9)
        c = env.consumer()
        assert env.drained_ids(c) == ["m0"]
        assert env.stats().expired == 0


class TestHistory:
    def test_history_of_a_message(self, env: Env) -> None:
        """history.of(id) records send, dispatch, the ack with its type, release and dead-lettering."""
        env.send(1)
        c = env.consumer()
        [d] = env.drain()
        env.ack(c, AckType.DELIVERED, "m0")
        env.core.remove_consumer(env.conn, c, d.broker_seq)
        c2 = env.consumer()
        env.drain()
        env.ack(c2, AckType.POISON, "m0", cause="boom")
        records = env.core.history.of("m0")
        assert [(r.event, r.consumer_id, r.ack_type) for r in records] == [
            ("sent", None, None),
            ("dispatched", c, None),
            ("ack", c, "DELIVERED"),
            ("released", c, None),
            ("dispatched", c2, None),
            ("ack", c2, "POISON"),
            ("dead-lettered", None, None),
        ]
        assert records[3].redelivery_counter == 1 and records[4].redelivery_counter == 1
        assert records[-1].destination == f"queue://{DLQ}" and records[-1].detail == "boom"
        assert all(r.time == T0 for r in records)

    def test_hot_path_records_read_back_whole(self, env: Env) -> None:
        """The send, dispatch and one-message-ack records (kept short on the hot path) read back with every field,
        the ones they leave out at their defaults."""
        env.send(1)
        c = env.consumer()
        env.drain()
        assert env.core.ack_one(env.conn, c, "m0")
        sent, dispatched, ack = env.core.history.of("m0")
        assert sent == HistoryRecord(T0, "sent")
        assert dispatched == HistoryRecord(T0, "dispatched", c, redelivery_counter=0)
        assert ack == HistoryRecord(T0, "ack", c, "STANDARD", None, 0, None, None, None)

    def test_history_of_unknown_message_is_empty(self, env: Env) -> None:
        """An id the broker never saw has no history."""
        assert env.core.history.of("nope") == ()

    def test_history_limit(self) -> None:
        """history_limit bounds how many messages are remembered (oldest forgotten first)."""
        core = BrokerCore(FakeClock(), history_limit=2)
        conn = core.add_connection()
        for i in range(3):
            core.send(conn, Message(f"m{i}", Q, "x"))
        assert core.history.of("m0") == ()
        assert [r.event for r in core.history.of("m2")] == ["sent"]


class TestStatistics:
    def test_size_counts_in_flight(self, env: Env) -> None:
        """Queue depth includes in-flight unacked messages (§9); enqueued - dequeued == size."""
        env.send(5)
        c = env.consumer(prefetch=2)
        env.drain()
        s = env.stats()
        assert (s.size, s.inflight, s.consumers) == (5, 2, 1)
        env.ack(c, AckType.STANDARD, "m1", "m0", 2)
        env.drain()
        s = env.stats()
        assert (s.size, s.inflight, s.enqueued - s.dequeued) == (3, 2, 3)

    def test_purge_removes_in_flight(self, env: Env) -> None:
        """purge removes everything including in-flight messages, without dead-lettering."""
        env.send(4)
        c = env.consumer(prefetch=2)
        env.drain()
        assert env.core.purge("q") == 4
        s = env.stats()
        assert (s.size, s.inflight, s.enqueued - s.dequeued) == (0, 0, 0)
        assert env.held(c) == [] and DLQ not in env.core.queues


class TestTransactedIndividualAck:
    def test_rollback_takes_back_the_widened_window(self, env: Env) -> None:
        """An INDIVIDUAL ack inside a transaction widens the window by one (the message stays dispatched until the
        commit); a rollback narrows it again, as ActiveMQ's afterRollback does for every ack of the transaction."""
        cid = env.consumer(prefetch=2)
        [a, _b, _c] = env.send(3)
        assert env.drained_ids(cid) == [a, _b]
        before = env.core.subscriptions[cid].extension
        txn = env.core.begin(env.conn)
        env.ack(cid, AckType.INDIVIDUAL, a, txn=txn)
        assert env.core.subscriptions[cid].extension == before + 1
        env.core.rollback(env.conn, txn)
        assert env.core.subscriptions[cid].extension == before
        assert env.held(cid) == [a, _b, _c]  # the widened window let the third one through before the rollback
