"""The count of client sockets open on every listener of one broker (native and STOMP together).

One count, so a flood on one port can neither exceed ``max_connections`` nor lock the other protocol out beyond it
(issue 15, items 9 and 10). Each listener passes its own limit; ActiveMQ's ``maximumConnections`` is the default.
"""

from __future__ import annotations


class SocketSlots:
    """Client sockets open now; a listener claims a slot on accept and releases it when the socket goes."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open = 0

    def claim(self, limit: int) -> bool:
        """Take a slot unless ``limit`` sockets are open already; a True answer must be paired with :meth:`release`."""
        if self.open >= limit:
            return False
        self.open += 1
        return True

    def release(self) -> None:
        self.open -= 1
