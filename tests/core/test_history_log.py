"""The history's flat log (issue 34) against its reference: records kept per message in a dict of lists, the oldest
message forgotten as soon as one more than ``limit`` has records. Whatever the order of events and reads, a read
sees the same records."""

from __future__ import annotations

import random

import pytest

from minibroker._core.history import History, HistoryRecord


class ReferenceHistory:
    """The history as it was kept before the flat log: per message, evicted when a new message comes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.records: dict[str, list[HistoryRecord]] = {}

    def add(self, message_id: str, record: HistoryRecord) -> None:
        if message_id not in self.records:
            self.records[message_id] = []
            if len(self.records) > self.limit:
                del self.records[next(iter(self.records))]
        self.records[message_id].append(record)

    def of(self, message_id: str) -> tuple[HistoryRecord, ...]:
        return tuple(self.records.get(message_id, ()))


@pytest.mark.parametrize("seed", range(40))
def test_reads_see_what_the_reference_keeps(seed: int) -> None:
    rng = random.Random(seed)
    limit = rng.choice([1, 2, 3, 5, 50])
    history, reference = History(limit), ReferenceHistory(limit)
    ids = [f"m{i}" for i in range(rng.randint(1, 80))]
    sent: list[str] = []
    for step in range(rng.randint(1, 600)):
        choice = rng.random()
        if choice < 0.1 and sent:  # a read, in the middle of it all
            mid = rng.choice(ids)
            assert history.of(mid) == reference.of(mid)
            continue
        if choice < 0.4 or not sent:
            mid = ids[len(sent) % len(ids)] if rng.random() < 0.8 else rng.choice(ids)
            sent.append(mid)
        else:
            mid = rng.choice(sent[-10:])
        event = rng.choice(["sent", "dispatched", "ack", "released", "expired"])
        record = HistoryRecord(float(step), event, rng.choice([None, 1, 2]), redelivery_counter=rng.randint(0, 3))
        if rng.random() < 0.5:  # the hot paths' short records, appended directly
            history.log.append(
                (mid, record.time, record.event, record.consumer_id, None, None, record.redelivery_counter)
            )
            if len(history.log) > history.cap:
                history.compact()
        else:
            history.add(
                mid, record.time, record.event, record.consumer_id, redelivery_counter=record.redelivery_counter
            )
        reference.add(mid, record)
    for mid in ids:
        assert history.of(mid) == reference.of(mid)
    assert history.message_ids() == list(reference.records)


def test_the_log_stays_bounded_by_what_it_must_keep() -> None:
    history = History(10)
    for i in range(10_000):
        history.add(f"m{i}", float(i), "sent")
    assert len(history.log) <= history.cap <= 4 * 10 + 256
    assert [r.event for r in history.of("m9999")] == ["sent"]
    assert history.of("m9989") == ()


@pytest.mark.parametrize("seed", range(40))
def test_compacting_often_keeps_what_the_reference_keeps(seed: int) -> None:
    """Issue 45: each compaction files only the records logged since the one before. A small cap compacts often:
    messages flow in order and now and then a record of an old one comes late (forgotten, and back with only its
    records from then on)."""
    rng = random.Random(seed)
    limit = rng.choice([2, 5, 20, 100])
    history, reference = History(limit), ReferenceHistory(limit)
    history.cap = rng.choice([4, 16, 64])
    for step in range(rng.randint(50, 2_000)):
        newest = step // 3
        mid = f"m{newest - rng.randint(0, limit * 2)}" if rng.random() < 0.05 else f"m{newest - rng.randint(0, 2)}"
        record = HistoryRecord(float(step), rng.choice(["sent", "dispatched", "ack"]), 1)
        history.log.append((mid, record.time, record.event, record.consumer_id))
        if len(history.log) > history.cap:
            history.compact()
        reference.add(mid, record)
        if rng.random() < 0.02:
            assert history.message_ids() == list(reference.records)
    assert history.message_ids() == list(reference.records)
    for mid in reference.records:
        assert history.of(mid) == reference.of(mid)
    assert len(history.log) <= history.cap
