"""The TCP listener's defaults and limits, shared by :mod:`minibroker.config`, :mod:`minibroker.plugins.server.tcp` and
``minibroker serve``. This module imports nothing: ``minibroker serve`` reads it to bind its socket before it imports
the broker (asyncio, attrs)."""

from __future__ import annotations

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 61616
#: ActiveMQ's ``maximumConnections`` default on a transport connector
DEFAULT_MAX_CONNECTIONS = 1000
#: the default largest frame either side of the native protocol accepts (ActiveMQ's ``wireFormat.maxFrameSize`` is
#: configurable the same way); the codec takes it from here
DEFAULT_MAX_FRAME_SIZE = 64 * 1024 * 1024
#: seconds a native client has from accept to HELLO before its socket is closed (ActiveMQ gives a new connection
#: 30 s, ``transport.connectAttemptTimeout``; the STOMP listener's CONNECT deadline is the same), on the broker's clock
DEFAULT_HANDSHAKE_TIMEOUT = 30.0
#: seconds a native connection may stay silent before the broker closes it (ActiveMQ's ``maxInactivityDuration``,
#: 30 s); clients send a KEEP_ALIVE every :data:`KEEP_ALIVE_INTERVAL` seconds. Real time, not the broker's clock: it is
#: about the network, and a test's virtual hour must not close its clients
DEFAULT_IDLE_TIMEOUT = 30.0
KEEP_ALIVE_INTERVAL = 10.0
#: the largest frame a client may send before it has logged in (native HELLO, STOMP CONNECT: credentials, no body),
#: so an unauthenticated socket cannot make the broker buffer a large partial frame
PRE_LOGIN_MAX_FRAME_SIZE = 64 * 1024
#: the most bytes waiting in one client socket's send buffer: a peer that stops reading has its reading paused past
#: the transport's high-water mark (TCP back-pressure), and is disconnected past this
DEFAULT_MAX_WRITE_BUFFER = 64 * 1024 * 1024
#: the smallest ``max_frame_size`` a listener accepts
MIN_FRAME_SIZE = 1024
#: the most map entries a STOMP ``transformation`` renders or parses: minibroker's own bound, as ActiveMQ has none
#: (XStream takes as long as it takes, with the broker busy meanwhile)
DEFAULT_MAX_TRANSFORMATION_ENTRIES = 10_000


def check_limits(max_frame_size: int, max_connections: int) -> None:
    """ValueError unless ``max_frame_size`` and ``max_connections`` are limits a listener can work with."""
    if max_frame_size < MIN_FRAME_SIZE:
        raise ValueError(f"max_frame_size must be at least {MIN_FRAME_SIZE} bytes, not {max_frame_size}")
    if max_connections < 1:
        raise ValueError(f"max_connections must be at least 1, not {max_connections}")


#: the most messages, and about the most bytes (messages' size estimates), one range read over the network answers:
#: a request for more gets that much and asks again (a reader stops only at an empty answer or the range's end)
MAX_RANGE_MESSAGES = 10_000
MAX_RANGE_BYTES = 16 * 2**20
