"""``serve``'s collector policy (plugins/server/collector.py): after a full collection what survived is frozen, so
the next one walks only what is new (a flood of queued messages stalled every client for each full collection,
issue 41); every thaw interval the heap is unfrozen, so garbage cycles among frozen objects are still collected."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from minibroker.plugins.server.collector import GenerationalFreeze


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def policy() -> Iterator[tuple[GenerationalFreeze, Clock]]:
    clock = Clock()
    collector = GenerationalFreeze(thaw_interval=300.0, clock=clock)
    collector.install()
    try:
        yield collector, clock
    finally:
        collector.remove()


def test_a_full_collection_leaves_only_new_objects_for_the_next(policy: tuple[GenerationalFreeze, Clock]) -> None:
    kept = [[i] for i in range(10_000)]  # queued messages, say: tracked, alive
    gc.collect()  # a full collection: its survivors are frozen
    assert gc.get_freeze_count() >= len(kept)
    young = [[i] for i in range(100)]
    gc.collect()
    assert gc.get_freeze_count() >= len(kept) + len(young)
    del kept, young


def test_a_thaw_lets_a_full_collection_free_cycles_among_frozen_objects(
    policy: tuple[GenerationalFreeze, Clock],
) -> None:
    collector, clock = policy

    class Node:
        other: object = None

    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle, alive while named here
    gone = weakref.ref(a)
    gc.collect()
    assert gc.get_freeze_count() > 0
    del a, b  # garbage now, but frozen: a full collection does not see it
    gc.collect()
    assert gone() is not None
    clock.now += collector.thaw_interval
    gc.collect()  # past the interval: this one thaws when it is done
    assert gc.get_freeze_count() == 0 and collector.last_thaw == clock.now
    gc.collect()  # the next walks the whole heap
    assert gone() is None


def test_only_full_collections_count(policy: tuple[GenerationalFreeze, Clock]) -> None:
    collector, _ = policy
    gc.unfreeze()
    collector("stop", {"generation": 1, "collected": 0, "uncollectable": 0})
    collector("start", {"generation": 2, "collected": 0, "uncollectable": 0})
    assert gc.get_freeze_count() == 0
    collector("stop", {"generation": 2, "collected": 0, "uncollectable": 0})
    assert gc.get_freeze_count() > 0
