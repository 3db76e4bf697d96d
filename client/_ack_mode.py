"""Session acknowledge modes, with the JMS constant values."""

from __future__ import annotations

import enum

__all__ = ["AckMode"]


class AckMode(enum.IntEnum):
    """How a session's consumed messages are acknowledged (``javax.jms.Session`` constants, plus ActiveMQ's 4)."""

    SESSION_TRANSACTED = 0
    """Acks and sends take effect at ``commit()``; ``rollback()`` redelivers."""
    AUTO_ACKNOWLEDGE = 1
    """Each message is acked as ``receive()`` returns it (after the listener, for listeners)."""
    CLIENT_ACKNOWLEDGE = 2
    """``message.acknowledge()`` acks every message delivered on the session so far."""
    DUPS_OK_ACKNOWLEDGE = 3
    """Lazy acks; on a queue ActiveMQ acks exactly like AUTO."""
    INDIVIDUAL_ACKNOWLEDGE = 4
    """``message.acknowledge()`` acks that one message (ActiveMQ extension)."""

    # Short aliases, as applications often spell them.
    TRANSACTED = 0
    AUTO = 1
    CLIENT = 2
    DUPS_OK = 3
    INDIVIDUAL = 4
