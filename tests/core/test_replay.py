"""Replayable reads in the sans-IO core: sequence ranges, cumulative cursor acks, the epoch, the publish path's
duplicate check (``minibroker._core.replay``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker._core.broker import BrokerCore
from minibroker._core.commands import AckType, ConsumerInfo, MessageAck
from minibroker._core.policy import DestinationPolicy
from minibroker._core.replay import CursorBook, DuplicateFilter, RangeEntry, random_epoch
from minibroker.errors import ConnectionClosed, InvalidAcknowledge, InvalidConfiguration, StaleEpoch
from minibroker.message import Destination, Message

Q = Destination.queue("q")


class FakeClock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.t = now

    def now(self) -> float:
        return self.t


def make(policy: DestinationPolicy | None = None, epoch: str = "e1") -> tuple[BrokerCore, int]:
    core = BrokerCore(FakeClock(), policy_for=(lambda _d: policy) if policy else None)
    core.replay.cursors(lambda: epoch)
    return core, core.add_connection()


def send(core: BrokerCore, conn: int, n: int, dest: Destination = Q, start: int = 0, **kw: Any) -> list[str]:
    ids = []
    for i in range(start, start + n):
        m = Message(f"m{i}", dest, f"body-{i}", timestamp=1_000.0, **kw)
        core.send(conn, m)
        ids.append(m.message_id)
    return ids


def seqs(entries: list[RangeEntry]) -> list[int]:
    return [e.seq for e in entries]


def drained(core: BrokerCore, conn: int, dest: Destination = Q) -> list[str]:
    """Every message a fresh consumer gets, in dispatch order (proves the pending structures are consistent)."""
    cid = core.add_consumer(conn, ConsumerInfo(dest, 100_000))
    out = [d.message.message_id for d in core.drain() if d.consumer_id == cid and d.message is not None]
    core.remove_consumer(conn, cid)
    core.drain()
    return out


class TestEpoch:
    def test_fixed_by_the_source_at_first_use(self) -> None:
        core = BrokerCore(FakeClock())
        assert core.replay.cursors(lambda: "fixed").epoch == "fixed"
        assert core.replay.cursors(lambda: "other").epoch == "fixed"
        assert core.replay.epoch == "fixed"

    def test_random_by_default(self) -> None:
        a, b = BrokerCore(FakeClock()), BrokerCore(FakeClock())
        assert a.replay.epoch != b.replay.epoch and len(a.replay.epoch) == 16
        assert random_epoch() != random_epoch()

    def test_stale_epoch_refused(self) -> None:
        core, conn = make()
        send(core, conn, 2)
        with pytest.raises(StaleEpoch) as info:
            core.replay.read_range("q", epoch="old")
        assert info.value.expected == "old" and info.value.actual == "e1"  # type: ignore[attr-defined]
        with pytest.raises(StaleEpoch):
            core.replay.ack_below("q", "c", 1, epoch="old")
        assert core.queues["q"].size == 2
        assert len(core.replay.read_range("q", epoch="e1")) == 2

    def test_empty_epoch_refused(self) -> None:
        with pytest.raises(InvalidConfiguration):
            CursorBook("")


class TestPositions:
    def test_unknown_queue_is_not_created(self) -> None:
        core, _ = make()
        p = core.replay.queue_positions(["nope"])[0]
        assert (p.first_seq, p.next_seq, p.size, p.latest_seq) == (0, 0, 0, -1)
        assert "nope" not in core.queues
        assert core.replay.queue_positions(["nope"])[0].latest_seq == -1

    def test_first_and_next(self) -> None:
        core, conn = make()
        send(core, conn, 5)
        core.replay.ack_below("q", "c", 2)
        p = core.replay.queue_positions(["q"], cursor="c")[0]
        assert (p.queue, p.first_seq, p.next_seq, p.size, p.cursor_floor) == ("q", 2, 5, 3, 2)
        assert core.replay.queue_positions(["q"], cursor="other")[0].cursor_floor is None
        assert core.replay.queue_positions(["q"])[0].latest_seq == 4

    def test_every_queue_by_name(self) -> None:
        core, conn = make()
        send(core, conn, 1, Destination.queue("b"))
        send(core, conn, 2, Destination.queue("a"), start=10)
        assert [(p.queue, p.next_seq) for p in core.replay.queue_positions()] == [("a", 2), ("b", 1)]
        assert [p.queue for p in core.replay.queue_positions(["b", "zz"])] == ["b", "zz"]


class TestReadRange:
    def test_half_open_range_in_order(self) -> None:
        core, conn = make()
        send(core, conn, 10)
        entries = core.replay.read_range("q", 3, 7)
        assert seqs(entries) == [3, 4, 5, 6]
        assert [e.message.message_id for e in entries] == ["m3", "m4", "m5", "m6"]
        assert seqs(core.replay.read_range("q")) == list(range(10))
        assert seqs(core.replay.read_range("q", 8, 1000)) == [8, 9]
        assert core.replay.read_range("q", 10) == [] and core.replay.read_range("q", 5, 5) == []

    def test_limit(self) -> None:
        core, conn = make()
        send(core, conn, 10)
        assert seqs(core.replay.read_range("q", 2, None, 3)) == [2, 3, 4]
        assert core.replay.read_range("q", 0, None, 0) == []

    def test_non_destructive_and_includes_in_flight(self) -> None:
        """A range read dispatches nothing and counts no delivery; messages held by a consumer are still listed."""
        core, conn = make()
        send(core, conn, 4)
        cid = core.add_consumer(conn, ConsumerInfo(Q, 2))
        assert len(core.drain()) == 2
        before = core.queues["q"].statistics()
        for _ in range(3):
            assert seqs(core.replay.read_range("q")) == [0, 1, 2, 3]
        assert core.queues["q"].statistics() == before
        assert core.drain() == []
        core.remove_consumer(conn, cid, -2)  # transport failure: the two held messages count a delivery
        assert [(e.seq, e.redelivery_counter) for e in core.replay.read_range("q")] == [(0, 1), (1, 1), (2, 0), (3, 0)]

    def test_acked_messages_are_gone(self) -> None:
        core, conn = make()
        send(core, conn, 3)
        cid = core.add_consumer(conn, ConsumerInfo(Q, 10))
        core.drain()
        core.ack(conn, MessageAck(cid, AckType.INDIVIDUAL, "m1"))
        assert seqs(core.replay.read_range("q")) == [0, 2]

    def test_sparse_range_walks_what_is_held(self) -> None:
        core, conn = make()
        send(core, conn, 1000)
        core.replay.ack_below("q", "c", 995)
        assert seqs(core.replay.read_range("q", 0, 1000)) == [995, 996, 997, 998, 999]
        assert seqs(core.replay.read_range("q", 0, 997)) == [995, 996]
        assert seqs(core.replay.read_range("q", 0, None, 2)) == [995, 996]

    def test_limit_counts_messages_not_sequence_numbers(self) -> None:
        """Gaps (acked or expired messages) do not shorten a page: a page is short only at the end of the range."""
        core, conn = make()
        send(core, conn, 3)
        send(core, conn, 3, start=3, expiration=1_005.0)
        send(core, conn, 4, start=6)
        cid = core.add_consumer(conn, ConsumerInfo(Q, 10))
        core.drain()
        for mid in ("m1", "m2"):
            core.ack(conn, MessageAck(cid, AckType.INDIVIDUAL, mid))
        core.clock.t = 1_006.0  # type: ignore[attr-defined]
        assert seqs(core.replay.read_range("q", 0, None, 3)) == [0, 6, 7]
        assert seqs(core.replay.read_range("q", 1, 9, 2)) == [6, 7]
        assert [e.seq for e in core.replay.select_range("q", 0, None, 4)] == [0, 6, 7, 8]

    def test_expired_messages_are_left_out(self) -> None:
        core, conn = make()
        send(core, conn, 2)
        send(core, conn, 1, start=2, expiration=1_010.0)
        assert seqs(core.replay.read_range("q")) == [0, 1, 2]
        core.clock.t = 1_011.0  # type: ignore[attr-defined]
        assert seqs(core.replay.read_range("q")) == [0, 1]

    @pytest.mark.parametrize(
        ("args", "what"), [((-1, None, None), "from_seq"), ((5, 2, None), "below"), ((0, None, -1), "limit")]
    )
    def test_bad_bounds(self, args: tuple[int, int | None, int | None], what: str) -> None:
        core, conn = make()
        send(core, conn, 1)
        with pytest.raises(InvalidConfiguration, match=what):
            core.replay.read_range("q", *args)


class TestAckBelow:
    def test_consumes_below(self) -> None:
        core, conn = make()
        send(core, conn, 10)
        result = core.replay.ack_below("q", "spark", 4)
        assert (
            result.epoch,
            result.queue,
            result.cursor,
            result.floor,
            result.removed,
            result.skipped,
            result.next_seq,
        ) == ("e1", "q", "spark", 4, 4, 0, 10)
        q = core.queues["q"]
        assert (q.size, q.dequeued, q.enqueued) == (6, 4, 10)
        assert drained(core, conn) == [f"m{i}" for i in range(4, 10)]

    def test_idempotent_and_cumulative(self) -> None:
        core, conn = make()
        send(core, conn, 10)
        assert core.replay.ack_below("q", "c", 5).removed == 5
        assert core.replay.ack_below("q", "c", 5).removed == 0
        lower = core.replay.ack_below("q", "c", 2)
        assert (lower.removed, lower.floor) == (0, 5)
        assert core.replay.ack_below("q", "c", 10).removed == 5
        assert core.queues["q"].dequeued == 10
        assert core.replay.ack_below("q", "c", 10).removed == 0

    def test_up_to_head_only(self) -> None:
        core, conn = make()
        send(core, conn, 3)
        with pytest.raises(InvalidAcknowledge, match="restarted"):
            core.replay.ack_below("q", "c", 4)
        with pytest.raises(InvalidAcknowledge):
            core.replay.ack_below("q", "c", -1)
        with pytest.raises(InvalidConfiguration):
            core.replay.ack_below("q", "", 1)
        assert core.queues["q"].size == 3
        assert core.replay.ack_below("nope", "c", 0).removed == 0

    def test_messages_held_by_a_consumer_are_left_to_it(self) -> None:
        """Documented choice: in-flight messages stay with their consumer, whose ack then works as usual."""
        core, conn = make()
        send(core, conn, 6)
        cid = core.add_consumer(conn, ConsumerInfo(Q, 2))
        assert [d.seq for d in core.drain()] == [0, 1]
        result = core.replay.ack_below("q", "c", 4)
        assert (result.removed, result.skipped) == (2, 2)
        assert seqs(core.replay.read_range("q")) == [0, 1, 4, 5]
        core.ack(conn, MessageAck(cid, AckType.STANDARD, "m1", "m0", 2))
        # the window moved: the consumer now gets 4 and 5, never 2 and 3
        assert [d.seq for d in core.drain()] == [4, 5]
        assert seqs(core.replay.read_range("q")) == [4, 5]

    def test_released_messages_below_the_floor_go_at_the_next_ack(self) -> None:
        core, conn = make()
        send(core, conn, 4)
        cid = core.add_consumer(conn, ConsumerInfo(Q, 1))
        core.drain()
        assert core.replay.ack_below("q", "c", 3).skipped == 1
        core.remove_consumer(conn, cid)
        assert seqs(core.replay.read_range("q")) == [0, 3]
        assert core.replay.ack_below("q", "c", 3).removed == 1
        assert drained(core, conn) == ["m3"]

    def test_messages_acked_in_an_open_transaction_are_left(self) -> None:
        core, conn = make()
        send(core, conn, 2)
        cid = core.add_consumer(conn, ConsumerInfo(Q, 10))
        core.drain()
        txn = core.begin(conn)
        core.ack(conn, MessageAck(cid, AckType.STANDARD, "m1", "m0", 2, txn))
        assert core.replay.ack_below("q", "c", 2).skipped == 2
        core.commit(conn, txn)
        assert core.queues["q"].size == 0

    def test_mixed_persistence_and_redelivered_heads(self) -> None:
        """Entries sit in several pending lists (redelivery, paged, persistent, non-persistent): all stay consistent."""
        core, conn = make()
        send(core, conn, 3)
        send(core, conn, 3, start=3, persistent=False)
        send(core, conn, 3, start=6)
        cid = core.add_consumer(conn, ConsumerInfo(Q, 4))
        core.drain()
        core.remove_consumer(conn, cid)  # back to the redelivery list
        core.replay.ack_below("q", "c", 5)
        assert sorted(drained(core, conn)) == sorted(["m5", "m6", "m7", "m8"])
        assert core.queues["q"].pending_count == 4

    def test_prioritised_queue(self) -> None:
        core, conn = make(DestinationPolicy(prioritized_messages=True))
        for i in range(6):
            core.send(conn, Message(f"m{i}", Q, "x", priority=i % 3 * 4))
        core.replay.ack_below("q", "c", 3)
        assert core.queues["q"].pending_count == 3
        assert drained(core, conn) == ["m5", "m4", "m3"]

    def test_history_records_the_cursor_ack(self) -> None:
        core, conn = make()
        send(core, conn, 1)
        core.replay.ack_below("q", "spark", 1)
        [_sent, ack] = core.history.of("m0")
        assert (ack.event, ack.ack_type, ack.detail) == ("ack", "CURSOR", "cursor spark below 1")

    @settings(max_examples=60, deadline=None)
    @given(
        n=st.integers(0, 40),
        held=st.integers(0, 10),
        acks=st.lists(st.integers(0, 40), max_size=6),
        transient=st.lists(st.booleans(), min_size=40, max_size=40),
    )
    def test_invariants(self, n: int, held: int, acks: list[int], transient: list[bool]) -> None:
        """Whatever the acks: exactly the messages below the floor that no consumer holds are gone, the rest are
        dispatched once each in seq order, and the counters add up."""
        core, conn = make()
        for i in range(n):
            core.send(conn, Message(f"m{i}", Q, "x", persistent=not transient[i]))
        held_ids: set[str] = set()
        if held:
            core.add_consumer(conn, ConsumerInfo(Q, held))
            held_ids = {d.message.message_id for d in core.drain() if d.message is not None}
        floor = 0
        for a in acks:
            if a <= n:
                core.replay.ack_below("q", "c", a)
                floor = max(floor, a)
        expected = {f"m{i}" for i in range(n) if i >= floor or f"m{i}" in held_ids}
        q = core.queues.get("q")
        assert q is None or {e.message.message_id for e in q.entries.values()} == expected
        assert {e.message.message_id for e in core.replay.read_range("q")} == expected
        if q is not None:
            assert q.size + q.dequeued == q.enqueued
            assert sorted(drained(core, conn)) == sorted(expected - held_ids)


class TestPublish:
    def test_plain_batch(self) -> None:
        core, conn = make()
        result = core.replay.publish(conn, [Message(f"m{i}", Q, "x") for i in range(3)])
        assert (result.accepted, result.duplicates) == (3, 0)
        assert core.queues["q"].size == 3

    def test_dedupe_drops_ids_seen_before(self) -> None:
        core, conn = make()
        core.replay.publish(conn, [Message(f"m{i}", Q, "x") for i in range(3)], dedupe=True)
        core.replay.ack_below("q", "c", 3)  # even once consumed
        again = core.replay.publish(conn, [Message(f"m{i}", Q, "x") for i in range(5)], dedupe=True)
        assert (again.accepted, again.duplicates) == (2, 3)
        assert [e.message.message_id for e in core.replay.read_range("q")] == ["m3", "m4"]
        assert core.history.of("m0")[-1].event == "dropped"

    def test_per_destination(self) -> None:
        core, conn = make()
        other = Destination.queue("other")
        core.replay.publish(conn, [Message("x", Q, "x")], dedupe=True)
        assert core.replay.publish(conn, [Message("x", other, "x")], dedupe=True).accepted == 1

    def test_enabled_check_applies_without_the_flag(self) -> None:
        core, conn = make()
        core.replay.enable_duplicate_check(Q, window=10)
        core.replay.publish(conn, [Message("x", Q, "x")])
        assert core.replay.publish(conn, [Message("x", Q, "x")]).duplicates == 1

    def test_window(self) -> None:
        f = DuplicateFilter(2)
        assert [f.check_and_add(x) for x in "abab"] == [False, False, True, True]
        assert f.check_and_add("c") is False and "a" not in f and len(f) == 2
        with pytest.raises(InvalidConfiguration):
            DuplicateFilter(0)

    def test_injected_fault_after_some_messages(self) -> None:
        core, conn = make()
        core.replay.cursors().fail_publish = (2, ConnectionClosed("boom"))
        with pytest.raises(ConnectionClosed):
            core.replay.publish(conn, [Message(f"m{i}", Q, "x") for i in range(5)], dedupe=True)
        assert core.queues["q"].size == 2
        result = core.replay.publish(conn, [Message(f"m{i}", Q, "x") for i in range(5)], dedupe=True)
        assert (result.accepted, result.duplicates) == (3, 2)


class TestThePartAlone:
    """``ReplayableReads`` is a part of the core built from what it needs (queues, clock, history, a send), not a
    mixin: it works, and is tested, without a ``BrokerCore``."""

    def test_a_publish_sends_through_the_send_it_was_given_and_reads_back_by_sequence(self) -> None:
        from minibroker._core.history import History
        from minibroker._core.queue import Queue
        from minibroker._core.replay_reads import ReplayableReads

        queues: dict[str, Queue] = {}
        sent: list[tuple[int, str]] = []

        def send_to_a_plain_queue(connection_id: int, message: Message) -> None:
            sent.append((connection_id, message.message_id))
            queue = queues.get(message.destination.name)
            if queue is None:
                core = BrokerCore(FakeClock())  # only to build a queue as the core would
                queue = queues[message.destination.name] = core.queue(message.destination.name)
            queue.add(message)

        part = ReplayableReads(queues, FakeClock(), History(), send_to_a_plain_queue)
        part.cursors(lambda: "e9")
        messages = [Message(f"m{i}", Q, f"b{i}", timestamp=1_000.0) for i in range(3)]
        assert part.publish(7, messages, dedupe=True).accepted == 3
        assert part.publish(7, messages[:1], dedupe=True).accepted == 0  # seen before on this path: dropped
        assert sent == [(7, "m0"), (7, "m1"), (7, "m2")]
        assert [e.message.message_id for e in part.read_range("q", epoch="e9")] == ["m0", "m1", "m2"]
        assert part.epoch == "e9"
        with pytest.raises(StaleEpoch):
            part.read_range("q", epoch="e1")
