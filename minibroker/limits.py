"""Per-connection limits: how many consumers, producers and open transactions one connection may hold, so that one
client cannot freeze or exhaust the broker for the others (issue 15: 20,000 consumers on one connection stalled every
client for seconds).

ActiveMQ has the same knobs on its transport connector (``maximumConsumersAllowedPerConnection``,
``maximumProducersAllowedPerConnection``, unlimited by default) and refuses past them with "Can't add consumer on
connection ...: at maximum limit: N"; minibroker gives them finite defaults, far above what an application uses, and
the same refusal as a :class:`~minibroker.errors.LimitExceeded` naming the limit. Sessions live only in the client (no
broker state), so they need no limit here.

A composite destination's parts are bounded too (``max_composite_parts``): ActiveMQ has no such limit (a consumer on
and a send to a composite of 20,000 queues work there; recorded with the oracle, issue 31), and each part is work
the one event loop does while every other client waits (a consumer on 2,000 existing queues: about 50 ms; 10,000:
about 300 ms). The default keeps one command near 150 ms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from .errors import InvalidConfiguration, LimitExceeded

if TYPE_CHECKING:
    from .message import Destination

__all__ = ["DEFAULT_CONNECTION_LIMITS", "ConnectionLimits"]


@attrs.frozen(slots=True)
class ConnectionLimits:
    """The most consumers, producers and open transactions one connection may hold at once."""

    max_consumers: int = 1000
    max_transactions: int = 1000
    max_producers: int = 1000
    max_composite_parts: int = 5000

    def __attrs_post_init__(self) -> None:
        for name in ("max_consumers", "max_transactions", "max_producers", "max_composite_parts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidConfiguration(f"{name} must be a whole number of at least 1, not {value!r}", option=name)

    def check_consumers(self, connection_id: int, open_now: int) -> None:
        if open_now >= self.max_consumers:
            raise LimitExceeded(
                f"Can't add consumer on connection {connection_id}: at maximum limit: {self.max_consumers}",
                limit="max_consumers_per_connection",
                maximum=self.max_consumers,
            )

    def check_producers(self, connection_id: int, open_now: int) -> None:
        if open_now >= self.max_producers:
            raise LimitExceeded(
                f"Can't add producer on connection {connection_id}: at maximum limit: {self.max_producers}",
                limit="max_producers_per_connection",
                maximum=self.max_producers,
            )

    def check_composite(self, destination: Destination) -> None:
        """Refuse a composite destination of more than ``max_composite_parts`` parts."""
        name = destination.name
        if "," not in name:
            return
        parts = name.count(",") + 1
        if parts > self.max_composite_parts:
            shown = name if len(name) <= 60 else f"{name[:60]}..."
            raise LimitExceeded(
                f"A composite destination may have at most {self.max_composite_parts} parts, not {parts}: {shown}",
                limit="max_composite_parts",
                maximum=self.max_composite_parts,
                destination=str(destination),
            )

    def check_transactions(self, connection_id: int, open_now: int) -> None:
        if open_now >= self.max_transactions:
            raise LimitExceeded(
                f"Can't begin a transaction on connection {connection_id}: at maximum limit: {self.max_transactions}"
                " open transactions",
                limit="max_transactions_per_connection",
                maximum=self.max_transactions,
            )


DEFAULT_CONNECTION_LIMITS = ConnectionLimits()
