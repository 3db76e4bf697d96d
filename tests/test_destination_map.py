"""ActiveMQ's destination wildcards in policy maps: the most specific entry wins, and the map's memory is bounded."""

from __future__ import annotations

from minibroker.destination_map import CACHE_LIMIT, DestinationMap


def test_the_most_specific_entry_wins() -> None:
    table = DestinationMap("default", {">": "all", "orders.>": "orders", "orders.eu": "eu", "topic://orders.>": "t"})
    assert table.get("queue://orders.eu") == "eu"
    assert table.get("orders.us") == "orders"
    assert table.get("invoices") == "all"
    assert table.get("topic://orders.x") == "t"
    assert table.get("topic://prices") == "default"


def test_asking_for_ever_new_names_does_not_grow_it_without_bound() -> None:
    table = DestinationMap(0, {"a.>": 1})
    for i in range(CACHE_LIMIT * 2 + 5):
        table.get(f"queue://name-{i}")
    assert len(table._cache) <= CACHE_LIMIT
    assert table.get("a.b") == 1
