"""The minibroker client: connections, sessions in the five JMS acknowledge modes, producers and consumers.

>>> from minibroker.client import connect, AckMode

The same API works against an in-process :class:`minibroker.Broker` and, over TCP, against ``minibroker serve``.
"""

# The public names are imported on first use (PEP 562), as minibroker's own: ``from minibroker.client import
# AckMode`` loads the acknowledge modes, not sessions, consumers and the redelivery policies (issue 45).
TYPE_CHECKING = False  # not typing's: the names below are for type checkers only
if TYPE_CHECKING:
    from minibroker.redelivery import DelayLevelPolicy, RedeliveryPolicy, RedeliveryPolicyMap, RetryPolicy

    from ._ack_mode import AckMode
    from ._connection import Connection, ListenerError, PrefetchPolicy, connect
    from ._consumer import Consumer, MessageListener
    from ._message import ReceivedMessage
    from ._producer import Producer
    from ._session import QueueBrowser, Session
    from ._stream import StreamReader
    from ._temporary import TemporaryDestination, TemporaryQueue, TemporaryTopic

#: public name -> the module that defines it
_LAZY = {
    "AckMode": "._ack_mode",
    "Connection": "._connection",
    "Consumer": "._consumer",
    "DelayLevelPolicy": "minibroker.redelivery",
    "ListenerError": "._connection",
    "MessageListener": "._consumer",
    "PrefetchPolicy": "._connection",
    "Producer": "._producer",
    "QueueBrowser": "._session",
    "ReceivedMessage": "._message",
    "RedeliveryPolicy": "minibroker.redelivery",
    "RedeliveryPolicyMap": "minibroker.redelivery",
    "RetryPolicy": "minibroker.redelivery",
    "Session": "._session",
    "StreamReader": "._stream",
    "TemporaryDestination": "._temporary",
    "TemporaryQueue": "._temporary",
    "TemporaryTopic": "._temporary",
    "connect": "._connection",
}

if not TYPE_CHECKING:  # hidden from type checkers, which see the imports above
    from minibroker import _lazy_names

    __getattr__, __dir__ = _lazy_names(__name__, _LAZY, globals())
    del _lazy_names


__all__ = [
    "AckMode",
    "Connection",
    "Consumer",
    "DelayLevelPolicy",
    "ListenerError",
    "MessageListener",
    "PrefetchPolicy",
    "Producer",
    "QueueBrowser",
    "ReceivedMessage",
    "RedeliveryPolicy",
    "RedeliveryPolicyMap",
    "RetryPolicy",
    "Session",
    "StreamReader",
    "TemporaryDestination",
    "TemporaryQueue",
    "TemporaryTopic",
    "connect",
]
