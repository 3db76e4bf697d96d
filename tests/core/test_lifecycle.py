"""The lifecycle table (``minibroker._core.lifecycle``) for the moves the random runs of test_core_properties cannot
make (purge, cursor acks, scheduled delivery), and the immutability of the values the core hands out."""

from __future__ import annotations

import pytest

from minibroker._core.broker import BrokerCore
from minibroker._core.commands import AckType, ConsumerInfo, MessageAck
from minibroker._core.effects import Dispatch
from minibroker._core.lifecycle import FINAL, TRANSITIONS, State, event_of, next_states, state_of
from minibroker.message import Destination, Message

Q = Destination.queue("q")


class FakeClock:
    def __init__(self) -> None:
        self.t = 1_000.0

    def now(self) -> float:
        return self.t


def replay(core: BrokerCore, message_id: str) -> frozenset[State]:
    """The states the message's history leads to through the table (failing on a move the table lacks)."""
    states = frozenset({State.NEW})
    for r in core.history.of(message_id):
        event = event_of(r.event, r.ack_type, r.transaction_id, r.consumer_id)
        after: frozenset[State] = frozenset().union(*(next_states(s, event) for s in states))
        assert after, f"{message_id}: '{event}' is no move from {states}"
        states = after
    return states


def send(core: BrokerCore, conn: int, n: int, **kw: object) -> list[str]:
    ids = [f"m{i}" for i in range(n)]
    for mid in ids:
        core.send(conn, Message(mid, Q, mid, **kw))  # type: ignore[arg-type]
    return ids


def test_purge_ends_ready_in_flight_and_transaction_acked_messages() -> None:
    core = BrokerCore(FakeClock())
    conn = core.add_connection()
    send(core, conn, 3)
    cid = core.add_consumer(conn, ConsumerInfo(Q, 2))
    txn = core.begin(conn)
    core.ack(conn, MessageAck(cid, AckType.STANDARD, "m0", "m0", 1, txn))
    q = core.queues["q"]
    assert [state_of(q.entries[s]) for s in range(3)] == [State.TX_ACKED, State.IN_FLIGHT, State.READY]
    assert core.purge("q") == 3
    assert all(replay(core, mid) == {State.PURGED} for mid in ("m0", "m1", "m2"))
    assert q.entries == {} and q.statistics().dequeued == 3


def test_a_cursor_ack_consumes_ready_messages_and_leaves_in_flight_ones() -> None:
    core = BrokerCore(FakeClock())
    conn = core.add_connection()
    send(core, conn, 3)
    cid = core.add_consumer(conn, ConsumerInfo(Q, 1))
    assert [d.message and d.message.message_id for d in core.drain()] == ["m0"]
    result = core.replay.ack_below("q", "spark", 3)
    assert (result.removed, result.skipped) == (2, 1)
    assert replay(core, "m0") == {State.IN_FLIGHT} and state_of(core.queues["q"].entries[0]) is State.IN_FLIGHT
    assert replay(core, "m1") == replay(core, "m2") == {State.CONSUMED}
    core.ack(conn, MessageAck(cid, AckType.STANDARD, "m0"))
    assert replay(core, "m0") == {State.CONSUMED}


def test_a_delayed_message_is_no_queue_entry_until_it_is_due() -> None:
    clock = FakeClock()
    core = BrokerCore(clock, scheduler_support=True)
    conn = core.add_connection()
    send(core, conn, 1, properties={"AMQ_SCHEDULED_DELAY": 5_000})
    assert replay(core, "m0") == {State.READY, State.DELAYED}
    assert "q" not in core.queues or not core.queues["q"].entries  # DELAYED: in the scheduler only
    clock.t += 5.5  # the delay, from ActiveMQ's job start: the send time rounded up to the next half second
    core.tick()
    [entry] = core.queues["q"].entries.values()
    assert state_of(entry) in replay(core, "m0") and State.READY in next_states(State.DELAYED, "due")


def test_the_table_is_well_formed() -> None:
    """Final states have no way out; every state but NEW can be reached; every target is a state."""
    assert not any(state in FINAL for state, event in TRANSITIONS if next_states(state, event) - {state})
    reached = set().union(*TRANSITIONS.values())
    assert reached == set(State) - {State.NEW}


def test_dispatches_and_acks_are_immutable() -> None:
    """What the broker said and what a client acked are values: an edge derives a changed copy, never edits one."""
    dispatch = Dispatch(1, None)
    ack = MessageAck(1, AckType.STANDARD, "m0")
    with pytest.raises(AttributeError):
        dispatch.seq = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ack.transaction_id = 3  # type: ignore[misc]
    assert ack._replace(transaction_id=3).transaction_id == 3 and ack.transaction_id is None


@pytest.mark.parametrize("end", ["commit", "rollback"])
@pytest.mark.parametrize("consumer_left", [False, True])
def test_a_purged_message_stays_purged_when_its_transaction_ends(end: str, consumer_left: bool) -> None:
    """A message acked in a transaction and then purged is not consumed again (counted twice) at commit, nor given
    back to the queue at rollback: PURGED is final."""
    core = BrokerCore(FakeClock())
    conn = core.add_connection()
    send(core, conn, 2)
    cid = core.add_consumer(conn, ConsumerInfo(Q, 1))
    txn = core.begin(conn)
    core.ack(conn, MessageAck(cid, AckType.STANDARD, "m0", "m0", 1, txn))
    assert core.purge("q") == 2
    if consumer_left:
        core.remove_consumer(conn, cid)
    core.commit(conn, txn) if end == "commit" else core.rollback(conn, txn)
    q = core.queues["q"]
    s = q.statistics()
    assert (s.size, s.enqueued - s.dequeued) == (0, 0) and list(q.pending()) == []
    assert replay(core, "m0") == {State.PURGED}
    core.drain()
    core.add_consumer(conn, ConsumerInfo(Q, 10))
    assert core.drain() == []
