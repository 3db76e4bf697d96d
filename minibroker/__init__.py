"""minibroker: an embeddable asyncio message broker that behaves like ActiveMQ Classic, for integration tests.

>>> from minibroker import Broker, ManualClock
>>> from minibroker.client import connect, AckMode
"""

from ._core.commands import AckType, ConsumerInfo, MessageAck
from ._core.cursors import BrokerInfo, CursorAck, PublishResult, QueuePosition, RangeEntry, RangeRead
from ._core.effects import Dispatch
from ._core.history import HistoryRecord
from ._core.queue import DestinationPolicy, QueueStatistics
from ._driver import Broker, BrokerStatistics, QueueView
from .clock import Clock, ManualClock, RealClock
from .message import Destination, DestinationKind, Message, PropertyValue

__version__ = "0.1.0"

__all__ = [
    "AckType",
    "Broker",
    "BrokerInfo",
    "BrokerStatistics",
    "Clock",
    "ConsumerInfo",
    "CursorAck",
    "Destination",
    "DestinationKind",
    "DestinationPolicy",
    "Dispatch",
    "HistoryRecord",
    "ManualClock",
    "Message",
    "MessageAck",
    "PropertyValue",
    "PublishResult",
    "QueuePosition",
    "QueueStatistics",
    "QueueView",
    "RangeEntry",
    "RangeRead",
    "RealClock",
    "__version__",
]
