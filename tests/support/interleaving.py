"""Comparing runs in which ActiveMQ's order across queues is its threads' choice, not a rule.

A consumer on several queues (a wildcard such as ``ORDERS.*.IN``, or a composite ``QA,QB``) is one subscription on
each queue, and each queue dispatches from its own task: a backlog on three queues arrives interleaved differently
from run to run (``c1 c2 a1 b1 b2 a2`` in one recording, ``a1 a2 b1 b2 c1 c2`` in another), while each queue's own
messages keep their order. Recordings of such scripts say ``"order": "per_queue"``; both sides are then compared in
the canonical interleaving below: every run of consecutive deliveries sorted, stably, by the queue each body was
sent to. Order within a queue, and everything around the deliveries, are still compared exactly.
"""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]

__all__ = ["per_queue_order"]


def per_queue_order(events: list[Event]) -> list[Event]:
    """``events`` with each run of consecutive ``received`` events sorted stably by consumer and source queue."""
    source: dict[object, str] = {}
    for e in events:
        if e.get("event") == "sent":
            source.setdefault(e.get("body"), str(e.get("queue") or e.get("topic") or ""))
    out: list[Event] = []
    run: list[Event] = []

    def flush() -> None:
        out.extend(sorted(run, key=lambda e: (str(e.get("consumer", "")), source.get(e.get("body"), ""))))
        run.clear()

    for e in events:
        if e.get("event") == "received":
            run.append(e)
        else:
            flush()
            out.append(e)
    flush()
    return out
