"""The minibroker client: connections, sessions in the five JMS acknowledge modes, producers and consumers.

>>> from minibroker.client import connect, AckMode

The same API works against an in-process :class:`minibroker.Broker` and, over TCP, against ``minibroker serve``.
"""

from minibroker.redelivery import DelayLevelPolicy, RedeliveryPolicy, RedeliveryPolicyMap, RetryPolicy

from ._ack_mode import AckMode
from ._connection import Connection, ListenerError, PrefetchPolicy, connect
from ._consumer import Consumer, MessageListener
from ._message import ReceivedMessage
from ._producer import Producer
from ._session import QueueBrowser, Session
from ._stream import StreamReader
from ._temporary import TemporaryDestination, TemporaryQueue, TemporaryTopic

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
