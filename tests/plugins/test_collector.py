"""``serve``'s collector policy (plugins/server/collector.py): a full collection freezes the heap when it starts, so
it walks nothing (a flood of queued messages stalled every client for each full collection, issue 41; 50,000
retained topics did for each one during a replay, issue 45); every thaw interval, or once a bounded number more
objects are frozen, one full collection walks the whole heap, so garbage cycles among frozen objects are still
collected."""

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


class Node:
    other: object = None


@pytest.fixture
def policy() -> Iterator[tuple[GenerationalFreeze, Clock]]:
    clock = Clock()
    collector = GenerationalFreeze(thaw_interval=300.0, clock=clock)
    collector.install()
    try:
        yield collector, clock
    finally:
        collector.remove()


def cycle() -> weakref.ref[Node]:
    """A garbage cycle: a collection that walks it frees it (a young one too, if it runs first)."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_a_full_collection_freezes_what_lives_and_walks_nothing(policy: tuple[GenerationalFreeze, Clock]) -> None:
    collector, _ = policy
    kept = [[i] for i in range(10_000)]  # queued messages, say: tracked, alive
    gone = cycle()
    gc.collect()
    assert gc.get_freeze_count() >= len(kept)
    assert gone() is not None  # frozen with the rest, not walked: it waits for a thaw
    assert collector.thaws == 0
    del kept


def test_a_thaw_walks_the_whole_heap_once_then_freezes_what_survived(
    policy: tuple[GenerationalFreeze, Clock],
) -> None:
    collector, clock = policy
    kept = [[i] for i in range(1_000)]
    gone = cycle()  # after them: no young collection runs before the full one
    gc.collect()
    assert gone() is not None
    clock.now += collector.thaw_interval
    gc.collect()  # past the interval: this one walks everything
    assert gone() is None
    assert collector.thaws == 1 and collector.last_thaw == clock.now
    assert collector.frozen_after_thaw >= len(kept)  # what survived the walk is frozen again
    again = cycle()
    gc.collect()  # within the interval again: frozen, not walked
    assert again() is not None and collector.thaws == 1
    del kept


def test_a_thaw_comes_sooner_once_enough_more_objects_are_frozen(
    policy: tuple[GenerationalFreeze, Clock],
) -> None:
    collector, _ = policy
    collector.thaw_growth = 5_000
    gone = cycle()
    gc.collect()
    assert gone() is not None and collector.thaws == 0
    kept = [[i] for i in range(collector.thaw_growth)]  # a large load: the bound on what stays frozen is passed
    gc.collect()  # freezes them
    gc.collect()  # the growth is past the bound: a thaw, before the interval
    assert gone() is None and collector.thaws == 1
    del kept


def test_only_full_collections_count(policy: tuple[GenerationalFreeze, Clock]) -> None:
    collector, _ = policy
    gc.unfreeze()
    collector("start", {"generation": 1, "collected": 0, "uncollectable": 0})
    collector("stop", {"generation": 1, "collected": 0, "uncollectable": 0})
    assert gc.get_freeze_count() == 0
    collector("start", {"generation": 2, "collected": 0, "uncollectable": 0})
    assert gc.get_freeze_count() > 0
