"""The history's flat log (issues 34 and 45) against its reference: every event filed in one list, in order. The
history keeps a run of the most recent events that names at least ``limit`` messages; a read sees, of that run, the
``limit`` messages first named most recently, each with all its events in the run."""

from __future__ import annotations

import random

import pytest

from minibroker._core.history import RECORD_WIDTH, History, HistoryRecord


class ReferenceHistory:
    """Every event ever filed, in order: what the history keeps is a run at its end."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.events: list[tuple[str, HistoryRecord]] = []

    def add(self, message_id: str, record: HistoryRecord) -> None:
        self.events.append((message_id, record))

    def named(self, start: int) -> list[str]:
        """The messages the run from ``start`` names, in the order it first names them."""
        return list(dict.fromkeys(mid for mid, _ in self.events[start:]))

    def read(self, start: int) -> dict[str, tuple[HistoryRecord, ...]]:
        """What a read shows when the history keeps the run from ``start``."""
        shown = self.named(start)[-self.limit :]
        return {mid: tuple(r for m, r in self.events[start:] if m == mid) for mid in shown}


def kept_from(history: History, reference: ReferenceHistory) -> int:
    """Where the run the history keeps begins, in the reference's events."""
    fields = sum(len(block) for block, _ in history._blocks) + len(history.log)
    assert fields % RECORD_WIDTH == 0
    return len(reference.events) - fields // RECORD_WIDTH


def check(history: History, reference: ReferenceHistory, ids: list[str]) -> None:
    start = kept_from(history, reference)
    # the run names at least the last `limit` messages (all of them when fewer were ever named)
    assert len(reference.named(start)) >= min(history.limit, len(reference.named(0)))
    expected = reference.read(start)
    assert history.message_ids() == list(expected)
    for mid in ids:
        assert history.of(mid) == expected.get(mid, ())


def file(history: History, mid: str, record: HistoryRecord, direct: bool) -> None:
    if direct:  # the hot paths' writes: the log extended, sealed past its cap
        history.log.extend((mid, *attrs_fields(record)))
        if len(history.log) > history.cap:
            history.seal()
    else:
        history.add(mid, record.time, record.event, record.consumer_id, redelivery_counter=record.redelivery_counter)


def attrs_fields(record: HistoryRecord) -> tuple[object, ...]:
    return (
        record.time,
        record.event,
        record.consumer_id,
        record.ack_type,
        record.transaction_id,
        record.redelivery_counter,
        record.detail,
        record.destination,
        record.delay,
    )


@pytest.mark.parametrize("seed", range(40))
def test_reads_see_the_run_the_reference_names(seed: int) -> None:
    rng = random.Random(seed)
    limit = rng.choice([1, 2, 3, 5, 50])
    history, reference = History(limit), ReferenceHistory(limit)
    history.cap = rng.choice([4, 16, 64, 300]) * RECORD_WIDTH
    ids = [f"m{i}" for i in range(rng.randint(1, 80))]
    sent: list[str] = []
    for step in range(rng.randint(1, 600)):
        choice = rng.random()
        if choice < 0.1 and sent:  # a read, in the middle of it all
            check(history, reference, [rng.choice(ids)])
            continue
        if choice < 0.4 or not sent:
            mid = ids[len(sent) % len(ids)] if rng.random() < 0.8 else rng.choice(ids)
            sent.append(mid)
        else:
            mid = rng.choice(sent[-10:])
        event = rng.choice(["sent", "dispatched", "ack", "released", "expired"])
        record = HistoryRecord(float(step), event, rng.choice([None, 1, 2]), redelivery_counter=rng.randint(0, 3))
        file(history, mid, record, direct=rng.random() < 0.5)
        reference.add(mid, record)
    check(history, reference, ids)


@pytest.mark.parametrize("seed", range(40))
def test_sealing_often_keeps_the_last_messages_whole(seed: int) -> None:
    """Messages flow in order, and now and then an event of an old one comes late. However small the blocks, the
    run names the last ``limit`` messages, and a message named only inside the run shows every event it had."""
    rng = random.Random(seed)
    limit = rng.choice([2, 5, 20, 100])
    history, reference = History(limit), ReferenceHistory(limit)
    history.cap = rng.choice([4, 16, 64]) * RECORD_WIDTH
    for step in range(rng.randint(50, 2_000)):
        newest = step // 3
        mid = f"m{newest - rng.randint(0, limit * 2)}" if rng.random() < 0.05 else f"m{newest - rng.randint(0, 2)}"
        record = HistoryRecord(float(step), rng.choice(["sent", "dispatched", "ack"]), 1)
        file(history, mid, record, direct=True)
        reference.add(mid, record)
        if rng.random() < 0.02:
            check(history, reference, [mid])
    check(history, reference, sorted({mid for mid, _ in reference.events}))
    assert len(history.log) <= history.cap


def test_the_history_stays_bounded_by_what_it_must_keep() -> None:
    history = History(10)
    for i in range(10_000):
        history.add(f"m{i}", float(i), "sent")
    kept = sum(len(block) for block, _ in history._blocks) + len(history.log)
    assert kept <= 2 * history.cap + RECORD_WIDTH  # the newest block names 256 messages: one sealed block at most
    assert [r.event for r in history.of("m9999")] == ["sent"]
    assert history.message_ids() == [f"m{i}" for i in range(9990, 10_000)]
    assert history.of("m9989") == ()


def test_a_message_keeps_its_events_in_order_with_their_fields() -> None:
    history = History(3)
    history.add("a", 1.0, "sent", transaction_id=4)
    history.add("a", 2.0, "ack", 7, "STANDARD", redelivery_counter=1, destination="q", delay=0.5)
    assert history.of("a") == (
        HistoryRecord(1.0, "sent", transaction_id=4),
        HistoryRecord(2.0, "ack", 7, "STANDARD", redelivery_counter=1, destination="q", delay=0.5),
    )
    assert history.of("b") == ()


def test_recording_off_keeps_nothing() -> None:
    history = History(0)
    history.add("a", 1.0, "sent")
    assert not history.enabled
    assert history.log == []
    assert history.message_ids() == []
