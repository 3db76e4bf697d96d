"""minibroker: an embeddable asyncio message broker that behaves like ActiveMQ Classic, for integration tests.

>>> from minibroker import Broker, ManualClock
>>> from minibroker.client import connect, AckMode
"""

# The public names are imported on first use (PEP 562): every ``minibroker.xxx`` import runs this module, and
# ``minibroker serve`` binds its socket before it pays for asyncio, attrs and the broker.
TYPE_CHECKING = False  # not typing's: importing typing costs a few ms of every launch
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

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


def _lazy_names(
    package: str,
    names: "Mapping[str, str]",
    namespace: "dict[str, object]",
    computed: "Mapping[str, Callable[[], object]] | None" = None,
) -> "tuple[Callable[[str], object], Callable[[], list[str]]]":
    """The module-level ``__getattr__`` and ``__dir__`` (PEP 562) of ``package`` (this one, ``minibroker.client``,
    ``minibroker.wire``), whose ``names`` map each public name to the module it is imported from (relative to
    ``package`` when it starts with a dot): a module is paid for only when one of its names is asked for (issue 45).
    ``computed``: names made by a function instead. A name is looked up once: it is put into the package's
    ``namespace`` for the lookups after. Here, not in a module of its own, as ``import minibroker`` loads nothing
    else."""
    extra = computed or {}

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            make = extra.get(name)
            if make is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            value = make()
        else:
            import importlib

            value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value  # once: later lookups find it without coming here
        return value

    def __dir__() -> list[str]:
        return sorted((set(namespace) - {"TYPE_CHECKING"}) | set(names) | set(extra))

    return __getattr__, __dir__


def _version() -> object:
    from importlib.metadata import version

    return version("minibroker")


if not TYPE_CHECKING:  # hidden from type checkers, which see the imports above (and flag a misspelt name)
    __getattr__, __dir__ = _lazy_names(__name__, _LAZY, globals(), {"__version__": _version})


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
