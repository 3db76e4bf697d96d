"""minibroker: an embeddable asyncio message broker that behaves like ActiveMQ Classic, for integration tests.

>>> from minibroker import Broker, ManualClock
>>> from minibroker.client import connect, AckMode
"""

# The public names are imported on first use (PEP 562): every ``minibroker.xxx`` import runs this module, and
# ``minibroker serve`` binds its socket before it pays for asyncio, attrs and the broker.
TYPE_CHECKING = False  # not typing's: importing typing costs a few ms of every launch
if TYPE_CHECKING:
    from ._core.commands import AckType, ConsumerInfo, MessageAck
    from ._core.consumers import NOW_UNKNOWN_DELIVERED
    from ._core.durable import durable_queue_name
    from ._core.effects import Dispatch
    from ._core.history import HistoryRecord
    from ._core.policy import DestinationPolicy
    from ._core.queue import QueueStatistics
    from ._core.replay import BrokerInfo, CursorAck, EpochSource, PublishResult, QueuePosition, RangeEntry, RangeRead
    from ._core.virtual import VirtualTopics
    from ._driver.broker import Broker
    from ._driver.connection import BrokerConnection
    from ._driver.flow import Admission
    from ._driver.link import MemoryLink
    from ._driver.results import BrokerStatistics, QueueView
    from .clock import Clock, ManualClock, RealClock
    from .message import Destination, DestinationKind, Message, ObjectBody, PropertyValue

if TYPE_CHECKING:
    __version__: str  # the installed distribution's, read once on first use (pyproject.toml is the one source)

#: public name -> the module that defines it
_LAZY = {
    "NOW_UNKNOWN_DELIVERED": "._core.consumers",
    "AckType": "._core.commands",
    "ConsumerInfo": "._core.commands",
    "MessageAck": "._core.commands",
    "durable_queue_name": "._core.durable",
    "BrokerInfo": "._core.replay",
    "EpochSource": "._core.replay",
    "CursorAck": "._core.replay",
    "PublishResult": "._core.replay",
    "QueuePosition": "._core.replay",
    "RangeEntry": "._core.replay",
    "RangeRead": "._core.replay",
    "Dispatch": "._core.effects",
    "HistoryRecord": "._core.history",
    "DestinationPolicy": "._core.policy",
    "QueueStatistics": "._core.queue",
    "VirtualTopics": "._core.virtual",
    "Admission": "._driver.flow",
    "Broker": "._driver.broker",
    "BrokerConnection": "._driver.connection",
    "BrokerStatistics": "._driver.results",
    "QueueView": "._driver.results",
    "MemoryLink": "._driver.link",
    "Clock": ".clock",
    "ManualClock": ".clock",
    "RealClock": ".clock",
    "Destination": ".message",
    "DestinationKind": ".message",
    "Message": ".message",
    "ObjectBody": ".message",
    "PropertyValue": ".message",
}


if not TYPE_CHECKING:  # hidden from type checkers, which see the imports above (and flag a misspelt name)

    def __getattr__(name: str) -> object:
        if name == "__version__":
            from importlib.metadata import version

            globals()[name] = value = version("minibroker")
            return value
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value  # once: later lookups find it without coming here
        return value


def __dir__() -> list[str]:
    return sorted((set(globals()) - {"TYPE_CHECKING"}) | set(_LAZY) | {"__version__"})


__all__ = [
    "NOW_UNKNOWN_DELIVERED",
    "AckType",
    "Admission",
    "Broker",
    "BrokerConnection",
    "BrokerInfo",
    "BrokerStatistics",
    "Clock",
    "ConsumerInfo",
    "CursorAck",
    "Destination",
    "DestinationKind",
    "DestinationPolicy",
    "Dispatch",
    "EpochSource",
    "HistoryRecord",
    "ManualClock",
    "MemoryLink",
    "Message",
    "MessageAck",
    "ObjectBody",
    "PropertyValue",
    "PublishResult",
    "QueuePosition",
    "QueueStatistics",
    "QueueView",
    "RangeEntry",
    "RangeRead",
    "RealClock",
    "VirtualTopics",
    "__version__",
    "durable_queue_name",
]
