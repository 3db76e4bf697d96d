"""Fault injection, a part of :class:`~minibroker.Broker` (documented with it): failing the next commit, pausing
and throttling queues, breaking client transports (every listener registers how to break its connections)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import TransactionRolledBack

if TYPE_CHECKING:
    from .._core.broker import BrokerCore

__all__: list[str] = []


class _FaultInjection:
    """What a test breaks on purpose, as a network or a disk would."""

    if TYPE_CHECKING:
        core: BrokerCore
        _droppers: dict[int, Callable[[], None]]

        def _flush(self) -> None: ...

    def fail_next_commit(self, error: Exception | None = None) -> None:
        """The next commit on this broker fails: its transaction is rolled back and ``error`` (by default a
        :class:`~minibroker.errors.TransactionRolledBack`) reaches the committing client."""
        self.core.fail_next_commit = error or TransactionRolledBack("commit failed (injected fault)")

    def pause(self, queue: str) -> None:
        """Stop dispatching from ``queue``: messages pile up until :meth:`resume`."""
        self.core.pause(queue)
        self._flush()

    def resume(self, queue: str) -> None:
        self.core.resume(queue)
        self._flush()

    def throttle(self, queue: str, interval: float | None) -> None:
        """Slow ``queue`` down to one dispatch every ``interval`` seconds on the broker's clock (None: full speed)."""
        self.core.throttle(queue, interval)
        self._flush()

    def register_dropper(self, connection_id: int, drop: Callable[[], None]) -> None:
        """A transport says how to break its connection, for :meth:`drop_connections`."""
        self._droppers[connection_id] = drop

    def drop_connections(self, connection_id: int | None = None) -> int:
        """Break client transports now, as a network failure would (fault injection); returns how many.

        The broker releases what those connections held (redelivered, counter +1); fault-tolerant clients reconnect.
        """
        ids = list(self._droppers) if connection_id is None else [connection_id]
        dropped = 0
        for cid in ids:
            drop = self._droppers.pop(cid, None)
            if drop is not None:
                drop()
                dropped += 1
        return dropped

    def drop_client(self, client_id: str) -> int:
        """Break the transport of the client connected with ``client_id`` (the native client's ``client_id``, STOMP's
        ``client-id`` header, an MQTT client id), as a network failure would: for testing reconnect logic of any
        protocol. Returns how many connections were dropped (0 or 1)."""
        ids = [c.connection_id for c in self.core.connections.values() if c.client_id == client_id]
        return sum(self.drop_connections(connection_id) for connection_id in ids)
