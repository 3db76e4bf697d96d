"""ActiveMQ's MBeans as Jolokia sees them: JMX object names (parsed, matched, written canonically) and the broker,
queue and topic beans, each read and invoked through one :class:`~minibroker.BrokerConnection`.

The names are ActiveMQ 5.17's (``BrokerMBeanSupport``): ``org.apache.activemq:type=Broker,brokerName=localhost`` and
``...,destinationType=Queue|Topic,destinationName=NAME``, the name's ``:,'"`` written ``_``, ``?`` as ``&qe;``,
``=`` as ``&amp;``, ``*`` as ``&ast;`` (``JMXSupport.encodeObjectNamePart``). Attribute and operation names are the
MBean interfaces' (``BrokerViewMBean``, ``QueueViewMBean``, ``TopicViewMBean``); what minibroker does not count
reads as ActiveMQ's value for an idle broker (0, false) and is listed in the fidelity matrix.
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from minibroker.errors import MinibrokerError
from minibroker.message import Destination, Message, string_properties

if TYPE_CHECKING:
    from minibroker import Broker, BrokerConnection, QueueStatistics

__all__ = ["DOMAIN", "MBeanError", "MBeanInfo", "MBeans", "ObjectName", "encode_name_part"]

DOMAIN = "org.apache.activemq"
#: the ActiveMQ version minibroker reproduces (BrokerVersion)
ACTIVEMQ_VERSION = "5.17.2"


class MBeanError(MinibrokerError):
    """A Jolokia request failed as JMX would fail it: ``java_type`` is the Java exception's class name, ``status``
    the Jolokia status (404 unknown MBean or attribute, 400 a bad request, 403 refused, 500 an operation's
    failure)."""

    code = "mbean"
    java_type: str | None = None
    status: int | None = None


def not_found(name: str) -> MBeanError:
    return MBeanError(name, java_type="javax.management.InstanceNotFoundException", status=404)


def bad_argument(text: str) -> MBeanError:
    return MBeanError(text, java_type="java.lang.IllegalArgumentException", status=400)


_UNSAFE = re.compile(r"[:,'\"]")


def encode_name_part(part: str) -> str:
    """A destination or broker name as ActiveMQ writes it in an object name (``JMXSupport.encodeObjectNamePart``:
    ``:,'"`` become ``_``, ``?`` ``&qe;``, ``=`` ``&amp;``, ``*`` ``&ast;``)."""
    return _UNSAFE.sub("_", part).replace("?", "&qe;").replace("=", "&amp;").replace("*", "&ast;")


@attrs.frozen(slots=True)
class ObjectName:
    """A JMX object name: a domain and ``key=value`` properties, possibly a pattern (``*``/``?`` in the domain or a
    value, or a trailing ``*`` property: "and any others")."""

    domain: str
    properties: tuple[tuple[str, str], ...]
    property_pattern: bool = False

    @classmethod
    def parse(cls, text: str) -> ObjectName:
        """Parse as ``javax.management.ObjectName`` does (quoted values included); MBeanError (400) if malformed."""
        domain, colon, rest = text.partition(":")
        if not colon or "\n" in domain or (not rest):
            raise bad_argument(f"Invalid object name {text!r}: a name is DOMAIN:KEY=VALUE[,...]")
        properties: list[tuple[str, str]] = []
        pattern = False
        i = 0
        while i < len(rest):
            if rest[i] == "*" and (i + 1 == len(rest) or rest[i + 1] == ","):
                pattern = True
                i += 2
                continue
            eq = rest.find("=", i)
            if eq < 0:
                raise bad_argument(f"Invalid object name {text!r}: a property without '='")
            key = rest[i:eq]
            if not key or any(c in key for c in ':,=*?"\n'):
                raise bad_argument(f"Invalid object name {text!r}: bad key {key!r}")
            j = eq + 1
            if j < len(rest) and rest[j] == '"':
                k = j + 1
                while k < len(rest) and rest[k] != '"':
                    k += 2 if rest[k] == "\\" else 1
                if k >= len(rest):
                    raise bad_argument(f"Invalid object name {text!r}: an unterminated quoted value")
                value = rest[j : k + 1]
                j = k + 1
            else:
                end = rest.find(",", j)
                end = len(rest) if end < 0 else end
                value = rest[j:end]
                if not value or any(c in value for c in ':="\n'):
                    raise bad_argument(f"Invalid object name {text!r}: bad value for key {key!r}")
                j = end
            if any(k == key for k, _ in properties):
                raise bad_argument(f"Invalid object name {text!r}: key {key!r} given twice")
            properties.append((key, value))
            if j < len(rest) and rest[j] != ",":
                raise bad_argument(f"Invalid object name {text!r}")
            i = j + 1
        if not properties and not pattern:
            raise bad_argument(f"Invalid object name {text!r}: no key properties")
        return cls(domain or "DefaultDomain", tuple(properties), pattern)

    @classmethod
    def of(cls, **properties: str) -> ObjectName:
        return cls(DOMAIN, tuple(properties.items()))

    @property
    def is_pattern(self) -> bool:
        return (
            self.property_pattern
            or any(c in self.domain for c in "*?")
            or any(_is_value_pattern(v) for _, v in self.properties)
        )

    def get(self, key: str) -> str | None:
        for k, v in self.properties:
            if k == key:
                return _unquote(v)
        return None

    @property
    def canonical(self) -> str:
        """Keys in lexical order (``ObjectName.getCanonicalName``): the form Jolokia answers with."""
        props = ",".join(f"{k}={v}" for k, v in sorted(self.properties))
        if self.property_pattern:
            props = f"{props},*" if props else "*"
        return f"{self.domain}:{props}"

    def __str__(self) -> str:
        props = ",".join(f"{k}={v}" for k, v in self.properties)
        if self.property_pattern:
            props = f"{props},*" if props else "*"
        return f"{self.domain}:{props}"

    def matches(self, name: ObjectName) -> bool:
        """Whether the (non-pattern) ``name`` is one this pattern names."""
        if not fnmatch.fnmatchcase(name.domain, self.domain):
            return False
        theirs = dict(name.properties)
        for key, value in self.properties:
            other = theirs.get(key)
            if other is None:
                return False
            if _is_value_pattern(value):
                if not fnmatch.fnmatchcase(_unquote(other), _unquote(value).replace("[", "[[]")):
                    return False
            elif _unquote(other) != _unquote(value):
                return False
        return self.property_pattern or len(theirs) == len(self.properties)


def _is_value_pattern(value: str) -> bool:
    if value.startswith('"'):
        inner = value[1:-1]
        return bool(re.search(r"(?<!\\)[*?]", inner))
    return "*" in value or "?" in value


def _unquote(value: str) -> str:
    if value.startswith('"') and value.endswith('"') and len(value) >= 2:
        return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), value[1:-1])
    return value


@attrs.frozen(slots=True)
class MBeanInfo:
    """What ``list`` says of one MBean: its attributes (name -> Java type, writable) and operations."""

    description: str
    attributes: dict[str, str]
    operations: dict[str, tuple[tuple[tuple[str, str], ...], str, str]]


_BROKER_ATTRIBUTES = {
    "BrokerId": "java.lang.String",
    "BrokerName": "java.lang.String",
    "BrokerVersion": "java.lang.String",
    "Uptime": "java.lang.String",
    "UptimeMillis": "long",
    "TotalMessageCount": "long",
    "TotalEnqueueCount": "long",
    "TotalDequeueCount": "long",
    "TotalConsumerCount": "long",
    "TotalProducerCount": "long",
    "TotalConnectionsCount": "long",
    "CurrentConnectionsCount": "int",
    "Queues": "[Ljavax.management.ObjectName;",
    "Topics": "[Ljavax.management.ObjectName;",
    "Persistent": "boolean",
    "Slave": "boolean",
    "MemoryPercentUsage": "int",
    "StorePercentUsage": "int",
    "TempPercentUsage": "int",
}

_DESTINATION_ATTRIBUTES = {
    "Name": "java.lang.String",
    "QueueSize": "long",
    "EnqueueCount": "long",
    "DequeueCount": "long",
    "DispatchCount": "long",
    "InFlightCount": "long",
    "ExpiredCount": "long",
    "ConsumerCount": "long",
    "ProducerCount": "long",
    "MemoryPercentUsage": "int",
    "DLQ": "boolean",
}

_S = "java.lang.String"
_QUEUE_OPERATIONS: dict[str, tuple[tuple[tuple[str, str], ...], str, str]] = {
    "purge": ((), "void", "Removes all of the messages in the queue."),
    "removeMessage": ((("messageId", _S),), "boolean", "Removes a message from the queue."),
    "moveMessageTo": (
        (("messageId", _S), ("destinationName", _S)),
        "boolean",
        "Moves a message from this queue to another queue.",
    ),
    "copyMessageTo": (
        (("messageId", _S), ("destinationName", _S)),
        "boolean",
        "Copies a message with the given messageId to a destination.",
    ),
    "retryMessages": ((), "int", "Retries messages sent to the DLQ."),
    "retryMessage": ((("messageId", _S),), "boolean", "Retries a message sent to the DLQ."),
    "browse": ((), "[Ljavax.management.openmbean.CompositeData;", "Browse all the messages in the queue."),
}
_TOPIC_OPERATIONS: dict[str, tuple[tuple[tuple[str, str], ...], str, str]] = {}
_NAME = (("name", _S),)
_BROKER_OPERATIONS: dict[str, tuple[tuple[tuple[str, str], ...], str, str]] = {
    "addQueue": (_NAME, "void", "Adds a Queue"),
    "addTopic": (_NAME, "void", "Adds a Topic"),
    "removeQueue": (_NAME, "void", "Removes a Queue"),
    "removeTopic": (_NAME, "void", "Removes a Topic"),
    "destroyDurableSubscriber": (
        (("clientId", _S), ("subscriberName", _S)),
        "void",
        "Destroys a durable subscriber",
    ),
    "browseQueue": (
        (("queueName", _S),),
        "[Ljavax.management.openmbean.CompositeData;",
        "Browse all the messages in the queue.",
    ),
    "gc": ((), "void", "Runs the Garbage Collector."),
    # ActiveMQ's others, listed as its MBean lists them and refused when run (REFUSED_BROKER_OPERATIONS)
    "createDurableSubscriber": (
        (("clientId", _S), ("subscriberName", _S), ("topicName", _S), ("selector", _S)),
        "javax.management.ObjectName",
        "Creates a new durable topic subscriber",
    ),
    "resetStatistics": ((), "void", "Reset all broker statistics."),
    "enableStatistics": ((), "void", "Enable broker statistics."),
    "disableStatistics": ((), "void", "Disable broker statistics."),
    "setMemoryLimit": ((("limit", "long"),), "void", "Set the memory limit."),
    "setStoreLimit": ((("limit", "long"),), "void", "Set the store limit."),
    "setTempLimit": ((("limit", "long"),), "void", "Set the temp limit."),
    "setJobSchedulerStoreLimit": ((("limit", "long"),), "void", "Set the job scheduler store limit."),
    "terminateJVM": ((("exitCode", "int"),), "void", "Shuts down the JVM."),
    "stop": ((), "void", "Stop the broker and all its components."),
    "restart": ((), "void", "Restart the broker and all its components."),
    "stopGracefully": (
        (("connectorName", _S), ("queueName", _S), ("timeout", "long"), ("pollInterval", "long")),
        "void",
        "Poll for queues matching queueName are empty before stopping",
    ),
    "queryQueues": ((("filter", _S), ("page", "int"), ("pageSize", "int")), _S, "Query queues"),
    "queryTopics": ((("filter", _S), ("page", "int"), ("pageSize", "int")), _S, "Query topics"),
    "addConnector": ((("discoveryAddress", _S),), _S, "Adds a Connector to the broker."),
    "addNetworkConnector": ((("discoveryAddress", _S),), _S, "Adds a Network Connector to the broker."),
    "removeConnector": ((("connectorName", _S),), "boolean", "Removes a Connector from the broker."),
    "removeNetworkConnector": ((("connectorName", _S),), "boolean", "Removes a Network Connector from the broker."),
    "reloadLog4jProperties": ((), "void", "Reloads log4j.properties from the classpath."),
    "getTransportConnectorByType": ((("type", _S),), _S, "Address of the transport connector of a type"),
}
#: BrokerViewMBean operations minibroker has no meaning for, or does not reproduce (fidelity row
#: ``jolokia-broker-refused``): Jolokia's answer to an operation its policy forbids, 403
REFUSED_BROKER_OPERATIONS = frozenset(_BROKER_OPERATIONS) - {
    "addQueue",
    "addTopic",
    "removeQueue",
    "removeTopic",
    "destroyDurableSubscriber",
    "browseQueue",
    "gc",
}

BROKER_INFO = MBeanInfo("Broker", _BROKER_ATTRIBUTES, _BROKER_OPERATIONS)
QUEUE_INFO = MBeanInfo("Queue", _DESTINATION_ATTRIBUTES, _QUEUE_OPERATIONS)
TOPIC_INFO = MBeanInfo("Topic", _DESTINATION_ATTRIBUTES, _TOPIC_OPERATIONS)


class MBeans:
    """The MBeans one request sees: built on demand from what its connection may see."""

    def __init__(self, broker: Broker, connection: BrokerConnection, broker_name: str, started: float) -> None:
        self.broker = broker
        self.connection = connection
        self.broker_name = broker_name
        self._started = started
        self._queues: list[QueueStatistics] | None = None
        self._topics: list[tuple[str, QueueStatistics]] | None = None
        #: canonical name -> (kind, destination name), built once per request (a bulk request resolves many)
        self._index: dict[str, tuple[str, str | None]] | None = None

    # -- names ------------------------------------------------------------------------------------------------------

    def broker_object(self) -> ObjectName:
        return ObjectName.of(type="Broker", brokerName=encode_name_part(self.broker_name))

    def destination_object(self, kind: str, name: str) -> ObjectName:
        return ObjectName.of(
            type="Broker",
            brokerName=encode_name_part(self.broker_name),
            destinationType=kind,
            destinationName=encode_name_part(name),
        )

    def queues(self) -> list[QueueStatistics]:
        if self._queues is None:
            self._queues = self.connection.queue_listing(self.broker.queue_names())
        return self._queues

    def topics(self) -> list[tuple[str, QueueStatistics]]:
        if self._topics is None:
            self._topics = self.connection.topic_listing()[0]
        return self._topics

    def names(self) -> list[ObjectName]:
        """Every MBean this connection may see."""
        found = [self.broker_object()]
        found += [self.destination_object("Queue", q.name) for q in self.queues()]
        found += [self.destination_object("Topic", name) for name, _ in self.topics()]
        return found

    def search(self, pattern: ObjectName) -> list[ObjectName]:
        if not pattern.is_pattern:
            return [n for n in self.names() if n.canonical == pattern.canonical]
        return [n for n in self.names() if pattern.matches(n)]

    def resolve(self, name: ObjectName) -> tuple[str, str | None]:
        """(``"Broker"``, None), (``"Queue"``, queue name) or (``"Topic"``, topic name); InstanceNotFound else."""
        if self._index is None:
            index: dict[str, tuple[str, str | None]] = {self.broker_object().canonical: ("Broker", None)}
            for queue in self.queues():
                index.setdefault(self.destination_object("Queue", queue.name).canonical, ("Queue", queue.name))
            for topic, _ in self.topics():
                index.setdefault(self.destination_object("Topic", topic).canonical, ("Topic", topic))
            self._index = index
        found = self._index.get(name.canonical)
        if found is None:
            raise not_found(str(name))
        return found

    def info(self, kind: str) -> MBeanInfo:
        return {"Broker": BROKER_INFO, "Queue": QUEUE_INFO, "Topic": TOPIC_INFO}[kind]

    # -- attributes -------------------------------------------------------------------------------------------------

    def attributes(self, kind: str, name: str | None) -> dict[str, Callable[[], Any]]:
        """Attribute name -> how to read it, for one MBean."""
        if kind == "Broker":
            return self._broker_attributes()
        assert name is not None
        stats = self._stats(kind, name)
        destination = Destination.queue(name) if kind == "Queue" else Destination.topic(name)
        return {
            "Name": lambda: name,
            "QueueSize": lambda: stats.size,
            "EnqueueCount": lambda: stats.enqueued,
            "DequeueCount": lambda: stats.dequeued,
            "DispatchCount": lambda: stats.dispatched if kind == "Queue" else stats.dequeued + stats.inflight,
            "InFlightCount": lambda: stats.inflight,
            "ExpiredCount": lambda: stats.expired,
            "ConsumerCount": lambda: stats.consumers,
            "ProducerCount": lambda: self.connection.producer_count(destination),
            "MemoryPercentUsage": lambda: 0,
            "DLQ": lambda: kind == "Queue" and self.is_dlq(name),
        }

    def _stats(self, kind: str, name: str) -> QueueStatistics:
        if kind == "Queue":
            for q in self.queues():
                if q.name == name:
                    return q
        else:
            for topic, stats in self.topics():
                if topic == name:
                    return stats
        raise not_found(str(self.destination_object(kind, name)))

    def _broker_attributes(self) -> dict[str, Callable[[], Any]]:
        queues, topics = self.queues(), self.topics()
        uptime = time.monotonic() - self._started
        # this request's own connection is not one ActiveMQ would count (Jolokia reads JMX without connecting)
        connections = max(0, self.broker.statistics().connections - 1)
        return {
            "BrokerId": lambda: f"ID:minibroker-{self.broker_name}",
            "BrokerName": lambda: self.broker_name,
            "BrokerVersion": lambda: ACTIVEMQ_VERSION,
            "Uptime": lambda: _uptime(uptime),
            "UptimeMillis": lambda: int(uptime * 1000),
            "TotalMessageCount": lambda: sum(q.size for q in queues),
            "TotalEnqueueCount": lambda: sum(q.enqueued for q in queues) + sum(t.enqueued for _, t in topics),
            "TotalDequeueCount": lambda: sum(q.dequeued for q in queues) + sum(t.dequeued for _, t in topics),
            "TotalConsumerCount": lambda: sum(q.consumers for q in queues) + sum(t.consumers for _, t in topics),
            "TotalProducerCount": lambda: sum(
                self.connection.producer_count(d)
                for d in [Destination.queue(q.name) for q in queues] + [Destination.topic(t) for t, _ in topics]
            ),
            "TotalConnectionsCount": lambda: connections,
            "CurrentConnectionsCount": lambda: connections,
            "Queues": lambda: [{"objectName": self.destination_object("Queue", q.name).canonical} for q in queues],
            "Topics": lambda: [{"objectName": self.destination_object("Topic", t).canonical} for t, _ in topics],
            "Persistent": lambda: self.broker.store is not None,
            "Slave": lambda: False,
            "MemoryPercentUsage": lambda: 0,
            "StorePercentUsage": lambda: 0,
            "TempPercentUsage": lambda: 0,
        }

    def is_dlq(self, queue: str) -> bool:
        """ActiveMQ's ``isDLQ``: a queue the dead-letter strategy sends to (``ActiveMQ.DLQ``, ``DLQ.*``, or one the
        broker has dead-lettered to)."""
        if queue == "ActiveMQ.DLQ" or queue.startswith("DLQ."):
            return True
        return any(r.dead_letter_queue == queue for r in self.broker.dead_letters())

    # -- operations -------------------------------------------------------------------------------------------------

    def invoke(self, kind: str, name: str | None, operation: str, arguments: list[Any]) -> Any:
        """Run one of the MBean's operations (already matched to its signature) through the connection."""
        if kind == "Broker":
            return self._invoke_broker(operation, arguments)
        assert name is not None
        conn = self.connection
        if operation == "purge":
            conn.purge(name)
            return None
        if operation == "removeMessage":
            return conn.remove_message(name, _text(arguments[0]))
        if operation in ("moveMessageTo", "copyMessageTo"):
            target = Destination.queue(_text(arguments[1]))
            if operation == "moveMessageTo":
                return conn.move_message(name, _text(arguments[0]), target)
            return conn.copy_message(name, _text(arguments[0]), target)
        if operation in ("retryMessages", "retryMessage"):
            if not conn.is_dead_letter_queue(name):  # rights first: a refused user learns nothing of the queue
                raise MBeanError(
                    "Retry of message is only possible on Dead Letter Queues!",
                    java_type="java.lang.Exception",
                    status=500,
                )
            if operation == "retryMessage":
                return conn.retry_messages(name, _text(arguments[0])) > 0
            return conn.retry_messages(name)
        if operation == "browse":
            return [composite(m) for m in conn.browse(name)]
        raise bad_argument(f"No operation {operation} found on MBean {self.destination_object(kind, name)}")

    def _invoke_broker(self, operation: str, arguments: list[Any]) -> Any:
        """The Broker MBean's operations: each through the connection, which authorizes it as ActiveMQ's broker
        filters do (creating or removing a destination needs ``admin`` on it)."""
        conn = self.connection
        if operation in REFUSED_BROKER_OPERATIONS:
            # as Jolokia refuses an operation its access policy forbids (a SecurityException: 403)
            raise MBeanError(
                f"Operation {operation} forbidden for MBean {self.broker_object().canonical} (minibroker does not "
                "reproduce it: see the fidelity matrix, row jolokia-broker-refused)",
                java_type="java.lang.Exception",
                status=403,
            )
        if operation == "gc":
            return None  # nothing to collect or checkpoint: the store writes through
        if operation in ("addQueue", "addTopic", "removeQueue", "removeTopic"):
            name = _text(arguments[0])
            destination = Destination.queue(name) if operation.endswith("Queue") else Destination.topic(name)
            if operation.startswith("add"):
                conn.add_destination(destination)
            else:
                conn.remove_destination(destination)
            return None
        if operation == "destroyDurableSubscriber":
            conn.unsubscribe(_text(arguments[1]), _text(arguments[0]))
            return None
        if operation == "browseQueue":
            queue = _text(arguments[0])
            if not conn.queue_exists(queue):  # rights first: a refused user learns nothing of the queue
                raise not_found(str(self.destination_object("Queue", queue)))
            return [composite(m) for m in conn.browse(queue)]
        raise bad_argument(f"No operation {operation} found on MBean {self.broker_object()}")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise bad_argument(f"expected a string argument, not {value!r}")
    return value


def _uptime(seconds: float) -> str:
    """ActiveMQ's ``TimeUtils.printDuration``-like text: ``1 hour 2 minutes``, ``3.5 seconds``."""
    if seconds < 60:
        return f"{seconds:.3f} seconds"
    minutes, _ = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    parts = [(days, "day"), (hours, "hour"), (minutes, "minute")]
    return " ".join(f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in parts if n)


def composite(message: Message) -> dict[str, Any]:
    """A browsed message as ActiveMQ's ``OpenTypeSupport`` shows it (the fields harnesses read)."""
    body = message.body
    row: dict[str, Any] = {
        "JMSMessageID": message.message_id,
        "JMSDestination": str(message.destination),
        "JMSCorrelationID": message.correlation_id,
        "JMSType": message.type or "",
        "JMSPriority": message.priority,
        "JMSDeliveryMode": "PERSISTENT" if message.persistent else "NON-PERSISTENT",
        "JMSTimestamp": _millis(message.timestamp),
        "JMSExpiration": _millis(message.expiration),
        "JMSRedelivered": False,
        "JMSXGroupID": message.group_id,
        "JMSXGroupSeq": message.group_seq,
        "StringProperties": {k: v for k, v in string_properties(message) if not k.startswith("JMS")},
    }
    if isinstance(body, str):
        row["Text"] = body
    elif isinstance(body, bytes):
        row["BodyLength"] = len(body)
    return row


def _millis(seconds: float) -> int:
    return int(round(seconds * 1000))
