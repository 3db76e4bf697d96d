"""Run an oracle script (the JSON format of the real-broker oracle) against minibroker, in virtual time.

The script format and the events it records are those of the ActiveMQ oracle that made the recordings in
``tests/conformance`` and ``tests/differential``: this module is its twin on minibroker's public client API, so the
two event lists can be compared one for one. Time is virtual: receive timeouts and sleeps move a ManualClock, so a
script that took seconds on the real broker replays in milliseconds.

Extensions (ops and fields the Java oracle does not have) are listed in ``tests/conformance/EXTENSIONS.md``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import attrs

from minibroker import Broker, Destination, DestinationPolicy, ManualClock, QueueStatistics
from minibroker.advisory import data_structure
from minibroker.client import (
    AckMode,
    Connection,
    Consumer,
    PrefetchPolicy,
    ReceivedMessage,
    RedeliveryPolicy,
    Session,
    TemporaryDestination,
)
from minibroker.clock import settle
from minibroker.errors import (
    DestinationDoesNotExist,
    IllegalStateError,
    InvalidClientIdError,
    InvalidConfiguration,
    InvalidDestination,
    InvalidSelector,
    MinibrokerError,
    TransactionRolledBack,
)
from minibroker.message import ORIGINAL_EXPIRATION, Body, Message, ObjectBody
from minibroker.plugins.redelivery import RedeliveryPlugin
from support.typed_values import (
    classed,
    classed_object,
    getter,
    java_types,
    object_body,
    plain,
    stream_reads,
    typed,
)

from .transports import connect_to

T = TypeVar("T")
Event = dict[str, Any]

MODES = {
    "AUTO": AckMode.AUTO_ACKNOWLEDGE,
    "CLIENT": AckMode.CLIENT_ACKNOWLEDGE,
    "DUPS_OK": AckMode.DUPS_OK_ACKNOWLEDGE,
    "TRANSACTED": AckMode.SESSION_TRANSACTED,
    "INDIVIDUAL": AckMode.INDIVIDUAL_ACKNOWLEDGE,
}

#: minibroker error classes and the JMS exception the real client throws in the same place
JAVA_TYPES: list[tuple[type[BaseException], str]] = [
    (TransactionRolledBack, "javax.jms.TransactionRolledBackException"),
    (IllegalStateError, "javax.jms.IllegalStateException"),
    (InvalidSelector, "javax.jms.InvalidSelectorException"),
    (DestinationDoesNotExist, "org.apache.activemq.DestinationDoesNotExistException"),
    (InvalidClientIdError, "javax.jms.InvalidClientIDException"),
    (InvalidDestination, "javax.jms.InvalidDestinationException"),
    (InvalidConfiguration, "javax.jms.JMSException"),
    (MinibrokerError, "javax.jms.JMSException"),
]

_ID = re.compile(r"ID:[A-Za-z0-9_.\-]+(:[0-9]+)*")
_EXPIRATION = re.compile(r"Expiration:[0-9]+")
_DISCARDED_BY = re.compile(r"TopicSubDiscard\. ID:\S+")
_DUPLICATE_CLIENT = re.compile(r"^Broker: .* - Client: (.*) already connected from .*$")


def norm(text: str | None) -> str | None:
    """The oracle's normalisation of volatile ids and times inside strings."""
    if text is None:
        return None
    text = _DISCARDED_BY.sub("TopicSubDiscard. ID:<consumer>", text)
    return _EXPIRATION.sub("Expiration:<epoch_ms>", _ID.sub("ID:<id>", text))


class ScriptError(Exception):
    """The script itself is wrong (unknown label, missing field): recorded as an exception of type ScriptError."""


def java_type(exc: BaseException) -> str:
    if isinstance(exc, ScriptError):
        return "ScriptError"
    for cls, name in JAVA_TYPES:
        if isinstance(exc, cls):
            return name
    return f"python:{type(exc).__name__}"


def redelivery_policy(options: dict[str, Any] | None) -> RedeliveryPolicy | None:
    if not options:
        return None
    return RedeliveryPolicy.from_activemq(options)


POLICY_KEYS = {
    "prioritizedMessages",
    "deadLetterStrategy",
    "processNonPersistent",
    "dlqPrefix",
    "processExpired",
    "maxBrowsePageSize",
    "topicPendingMessageLimit",
}


def broker_options(cfg: dict[str, Any]) -> dict[str, Any]:
    """A script's broker block as ``Broker`` keyword arguments: its PolicyEntries, the scheduler, the redelivery
    plugin (every replayer of the scripts builds its brokers from this: in-process, over TCP, through OpenWire)."""
    plugins = []
    if "redeliveryPlugin" in cfg:
        options = dict(cfg["redeliveryPlugin"])
        to_dlq = bool(options.pop("sendToDlqIfMaxRetriesExceeded", True))
        fallback = bool(options.pop("fallbackToDeadLetter", True))
        plugins.append(
            RedeliveryPlugin(
                RedeliveryPolicy.from_activemq(options),
                send_to_dlq_if_max_retries_exceeded=to_dlq,
                fallback_to_dead_letter=fallback,
            )
        )
    return {
        "policies": broker_policies(cfg),
        "scheduler_support": bool(cfg.get("schedulerSupport", False)) or "redeliveryPlugin" in cfg,
        "plugins": plugins,
    }


def broker_policies(cfg: dict[str, Any]) -> dict[str, DestinationPolicy] | None:
    """The broker block's PolicyEntries: the stock top-level keys (one entry for ``>``) or ``policies`` (extension)."""
    if "policies" in cfg:
        return {entry.get("queue", ">"): broker_policy(entry) for entry in cfg["policies"]}
    if not POLICY_KEYS & set(cfg):
        return None
    policies = {">": broker_policy(cfg)}
    if "topicPendingMessageLimit" in cfg:  # the oracle's topic entry: the limit, the rest as ActiveMQ's defaults
        policies["topic://>"] = DestinationPolicy(pending_message_limit=int(cfg["topicPendingMessageLimit"]))
    return policies


def broker_policy(cfg: dict[str, Any]) -> DestinationPolicy:
    strategy = cfg.get("deadLetterStrategy", "shared")
    if strategy not in ("shared", "individual"):
        raise ScriptError("deadLetterStrategy must be shared|individual")
    kwargs: dict[str, Any] = {
        "prioritized_messages": bool(cfg.get("prioritizedMessages", False)),
        "dead_letter_strategy": strategy,
        "process_non_persistent": bool(cfg.get("processNonPersistent", False)),
        "process_expired": bool(cfg.get("processExpired", True)),
        # the oracle's embedded broker has no pending limit unless the script sets one (activemq.xml's is 1000)
        "pending_message_limit": int(cfg.get("topicPendingMessageLimit", -1)),
    }
    if strategy == "individual" and "dlqPrefix" in cfg:
        kwargs["queue_prefix"] = cfg["dlqPrefix"]
    if "maxBrowsePageSize" in cfg:
        kwargs["max_browse_page_size"] = int(cfg["maxBrowsePageSize"])
    return DestinationPolicy(**kwargs)


def object_property(msg: ReceivedMessage, name: str) -> Any:
    """``Message.getObjectProperty(name)`` as the oracle records it."""
    if name == "JMSXDeliveryCount":
        return msg.delivery_count
    if name == "JMSXGroupID":
        return msg.group_id
    if name == "JMSXGroupSeq":
        return msg.group_seq
    if name == "JMSXGroupFirstForConsumer":
        return msg.group_first if msg.group_id is not None else None
    value = msg.properties.get(name)
    return norm(value) if isinstance(value, str) else value


def body_text(body: Body) -> str | None:
    if not isinstance(body, (str, bytes)):
        return None
    return body if isinstance(body, str) else body.decode("utf-8", "replace")


class ScriptRunner:
    """Runs one script against a fresh in-process broker on a ManualClock."""

    def __init__(self, script: dict[str, Any], transport: str = "memory") -> None:
        self.script = script
        #: "memory" (in-process) or "tcp" (a server in this process; the client shares the broker's clock)
        self.transport = transport
        self.name = script.get("name", "script")
        self.events: list[Event] = []
        self.clock = ManualClock()
        self.op: dict[str, Any] = {}
        self.conns: dict[str, Connection] = {}
        self.sessions: dict[str, Session] = {}
        self.consumers: dict[str, Consumer] = {}
        self.last_by_body: dict[str, ReceivedMessage] = {}
        #: the last message each consumer received (extension: ack and reply by consumer)
        self.last_by_consumer: dict[str, ReceivedMessage] = {}
        self.producer_conn: Connection | None = None
        self.producer_session: Session | None = None
        self.open: list[Connection] = []
        #: the script's temporary destinations by label
        self.temps: dict[str, TemporaryDestination] = {}
        self.t0 = self.clock.now()

    # -- helpers ----------------------------------------------------------------------------------------------------

    def ev(self, event: Event, *, listener: bool = False) -> None:
        """Record an event; the running op's ``silent``/``omit``/``extra`` apply to events it records itself."""
        op = self.op
        if not listener and op:
            if op.get("silent"):
                return
            for key in op.get("omit", ()):
                event.pop(key, None)
            event.update(op.get("extra", {}))
        event["_t"] = self.t_ms()  # virtual time of every event, for gap checks; never compared
        self.events.append(event)

    def make_broker(self) -> Broker:
        return Broker(clock=self.clock, **broker_options(self.script.get("broker") or {}))

    def t_ms(self) -> int:
        return int(round((self.clock.now() - self.t0) * 1000 / 10.0)) * 10

    async def drive(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable``, jumping virtual time to the next timer whenever everything is waiting."""
        task = asyncio.ensure_future(awaitable)
        while True:
            await settle()
            if task.done():
                return task.result()
            if not await self.clock.advance_to_next_deadline():
                await settle()
                if task.done():
                    return task.result()
                task.cancel()
                raise ScriptError("the script waits for something that can never happen")

    async def sleep(self, ms: float) -> None:
        await self.clock.advance(ms / 1000.0)

    @staticmethod
    def req(op: dict[str, Any], key: str) -> Any:
        if key not in op:
            raise ScriptError(f"op '{op.get('op')}' needs '{key}'")
        return op[key]

    @staticmethod
    def lookup(table: dict[str, T], kind: str, label: str) -> T:
        if label not in table:
            raise ScriptError(f"unknown {kind} '{label}'")
        return table[label]

    @staticmethod
    def oracle_body(msg: ReceivedMessage) -> str | None:
        """The body as the oracle prints it: an advisory's is ``ActiveMQMessage``, a map's None, a stream's or an
        object's its class."""
        if data_structure(msg) is not None:
            return "ActiveMQMessage"
        if isinstance(msg.body, Mapping):
            return None
        if isinstance(msg.body, tuple):
            return "ActiveMQStreamMessage"
        if isinstance(msg.body, ObjectBody):
            return "ActiveMQObjectMessage"
        return body_text(msg.body)

    def describe(self, label: str, msg: ReceivedMessage, record: list[str] | None) -> Event:
        e: Event = {
            "event": "received",
            "consumer": label,
            "body": self.oracle_body(msg),
            "redelivered": msg.redelivered,
            "deliveryCount": msg.delivery_count,
            "redeliveryCounter": msg.redelivery_counter,
            "t_ms": self.t_ms(),
        }
        structure = data_structure(msg)
        if isinstance(msg.body, Mapping):  # a MapMessage: the map beside its (absent) body
            e["map"] = plain(msg.body)
        elif isinstance(msg.body, tuple):  # a StreamMessage: the values
            e["stream"] = [classed(v) for v in msg.body]
        elif isinstance(msg.body, ObjectBody):
            e["object"] = classed_object(msg.body)
        for name in record or ():
            if name == "propertyTypes":
                e["propertyTypes"] = java_types(msg.message.properties)
            elif name == "mapTypes":
                e["mapTypes"] = java_types(msg.body) if isinstance(msg.body, Mapping) else None
            elif name.startswith("get:"):
                e[name] = getter(msg.message.properties, name)
            elif name.startswith("reads:") and isinstance(msg.body, tuple):
                e[name] = stream_reads(msg.stream_reader(), name)
            elif name == "dataStructure":
                e["dataStructure"] = None if structure is None else structure["dataStructure"]
            elif name == "destinationInfo":  # extension: "add|remove <qualified destination>"
                info = structure if structure is not None and structure["dataStructure"] == "DestinationInfo" else None
                e[name] = (
                    None if info is None else f"{('add', 'remove')[info['operationType']]} {norm(info['destination'])}"
                )
            elif name == "priority":
                e["priority"] = msg.priority
            elif name == "persistent":
                e["persistent"] = msg.persistent
            elif name == "properties":
                e["properties"] = {k: (norm(v) if isinstance(v, str) else v) for k, v in sorted(msg.properties.items())}
            elif name == "reply_to":
                e["reply_to"] = self.token(msg.reply_to)
            elif name == "correlation_id":
                e["correlation_id"] = msg.correlation_id
            elif name == "destination":
                e["destination"] = self.token(msg.destination)
            else:
                e[name] = object_property(msg, name)
        return e

    def token(self, destination: Destination | None) -> str | None:
        """The oracle's stable token for a destination: ``temp:LABEL`` for the script's temporary ones."""
        if destination is None:
            return None
        for label, temp in self.temps.items():
            if temp.destination == destination:
                return "temp:" + label
        if self.broker.temporary_owner(destination) is not None:
            return f"temp-{destination.kind.value}:<unknown>"
        return str(destination)

    def target(self, op: dict[str, Any]) -> str | Destination:
        """The destination an op names: ``temp`` (a label), else ``dest`` with ``topic``."""
        if "temp" in op:
            return self.lookup(self.temps, "temp", op["temp"]).destination
        return ("topic://" if op.get("topic") else "queue://") + self.req(op, "dest")

    def stats(self, queue: str) -> None:
        view = self.broker.queue(queue)
        self.ev(stats_event("queue", queue, view.statistics() if view.exists else None))

    # -- running ----------------------------------------------------------------------------------------------------

    async def run(self) -> list[Event]:
        try:
            self.broker = self.make_broker()
        except MinibrokerError as exc:
            self.ev(
                {
                    "event": "exception",
                    "where": "broker.start",
                    "type": java_type(exc).replace("javax.jms.", "java.lang."),
                    "message": norm(str(exc)),
                }
            )
            return self.events
        async with self.broker:
            try:
                for op in self.script.get("ops", []):
                    self.op = op
                    try:
                        await self.exec(op)
                    except Exception as exc:
                        self.op = {}
                        e: Event = {"event": "exception"}
                        if "where" in op:
                            e["where"] = op["where"]
                        else:
                            e["op"] = str(op.get("op"))
                        e.update(type=java_type(exc), message=norm(str(exc)))
                        self.ev(e)
                    self.op = {}
                await settle()
            finally:
                for conn in self.open:
                    try:
                        await conn.close()
                    except MinibrokerError:
                        pass
        return self.events

    async def exec(self, op: dict[str, Any]) -> None:
        name = self.req(op, "op")
        handler: Callable[[dict[str, Any]], Awaitable[None]] | None = getattr(self, "op_" + name, None)
        if handler is None:
            raise ScriptError(f"unknown op '{name}'")
        await handler(op)

    async def op_connect(self, op: dict[str, Any]) -> None:
        label = self.req(op, "conn")
        prefetch = op.get("prefetch")
        conn = await connect_to(
            self.broker,
            self.transport,
            # the oracle's vm:// connections deliver every send in order; over TCP only receipts guarantee that
            always_sync_send=True,
            redelivery_policy=redelivery_policy(op.get("redeliveryPolicy")),
            prefetch=None if prefetch is None else PrefetchPolicy.all(int(prefetch)),
            non_blocking_redelivery=bool(op.get("nonBlockingRedelivery", False)),
            message_priority_supported=bool(op.get("messagePrioritySupported", False)),
            start=bool(op.get("start", True)),
            client_id=op.get("clientId"),
        )
        self.open.append(conn)
        self.conns[label] = conn

    async def op_start_connection(self, op: dict[str, Any]) -> None:
        await self.lookup(self.conns, "conn", self.req(op, "conn")).start()

    async def op_session(self, op: dict[str, Any]) -> None:
        label = self.req(op, "session")
        conn = self.lookup(self.conns, "conn", self.req(op, "conn"))
        mode = op.get("mode", "AUTO")
        if mode not in MODES:
            raise ScriptError(f"unknown mode '{mode}'")
        self.sessions[label] = await conn.create_session(MODES[mode])

    async def op_send(self, op: dict[str, Any]) -> None:
        label = op.get("session")
        if label is None:
            if self.producer_conn is None:
                self.producer_conn = await connect_to(self.broker, self.transport, always_sync_send=True)
                self.open.append(self.producer_conn)
                self.producer_session = await self.producer_conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
            session = self.producer_session
            assert session is not None
        else:
            session = self.lookup(self.sessions, "session", label)
        body = op.get("body") if "map" in op or "stream" in op or "object" in op else self.req(op, "body")
        persistent = bool(op.get("persistent", True))
        priority = int(op.get("priority", 4))
        ttl = int(op.get("ttl_ms", 0))
        group = op.get("group")
        topic = bool(op.get("topic", False))
        if "temp" in op:
            e: Event = {"event": "sent", "temp": op["temp"], "body": body}
        else:
            e = {"event": "sent", "topic" if topic else "queue": self.req(op, "dest")}
            if body is not None:
                e["body"] = body
        if "map" in op:
            e["map"] = dict(sorted(op["map"].items()))
        for key in ("stream", "object"):
            if key in op:
                e[key] = op[key]
        if not persistent:
            e["persistent"] = False
        if priority != 4:
            e["priority"] = priority
        if ttl:
            e["ttl_ms"] = ttl
        if group is not None:
            e["group"] = group
        for key in ("delay_ms", "period_ms", "repeat", "cron"):
            if key in op:
                e[key] = op[key]
        if session.transacted:
            e["transacted"] = True
        for key in ("correlation_id", "reply_to"):  # the oracle echoes these headers (recordings made before it did
            if key in op:  # not: see comparable())
                e[key] = op[key]
        self.ev(e)
        properties: dict[str, Any] = {}
        for key, value in (op.get("props") or {}).items():
            properties[key] = typed(value)
        for key, name in SCHEDULE_PROPERTIES.items():  # set as the oracle sets them
            if key in op:
                properties[name] = op[key]
        producer = await session.create_producer(self.target(op))
        reply_to = op.get("reply_to")
        if reply_to in self.temps:
            reply_to = self.temps[reply_to].destination
        try:
            if "map" in op:
                content: Any = {k: typed(v) for k, v in op["map"].items()}
            elif "stream" in op:
                content = [typed(v) for v in op["stream"]]
            elif "object" in op:
                content = object_body(op["object"])
            else:
                content = body
            await producer.send(
                content,
                properties=properties,
                priority=priority,
                ttl=ttl / 1000.0 if ttl else None,
                persistent=persistent,
                group_id=group,
                correlation_id=op.get("correlation_id"),
                type=op.get("type"),
                reply_to=reply_to,
            )
        finally:
            await producer.close()

    async def op_consumer(self, op: dict[str, Any]) -> None:
        label = self.req(op, "consumer")
        session = self.lookup(self.sessions, "session", self.req(op, "session"))
        prefetch = op.get("prefetch")
        self.consumers[label] = await session.create_consumer(
            self.target(op),
            prefetch=None if prefetch is None else int(prefetch),
            selector=op.get("selector"),
            priority=int(op.get("priority", 0)),
            exclusive=bool(op.get("exclusive", False)),
        )

    async def op_receive(self, op: dict[str, Any]) -> None:
        label = self.req(op, "consumer")
        consumer = self.lookup(self.consumers, "consumer", label)
        timeout = int(op.get("timeout_ms", 0))
        if timeout < 0:
            raise ScriptError("timeout_ms must be >= 0 (0 = receiveNoWait)")
        if timeout == 0:
            msg = await self.drive(consumer.receive(0))
        else:
            msg = await self.drive(consumer.receive(timeout / 1000.0))
        if msg is None:
            self.ev({"event": "null_receive", "consumer": label, "timeout_ms": "noWait" if timeout == 0 else timeout})
            return
        if op.get("headers"):
            self.ev(self.headers_event(msg))
            self.last_by_body[body_text(msg.body)] = msg
            return
        self.ev(self.describe(label, msg, op.get("record")))
        self.last_by_body[body_text(msg.body)] = msg
        self.last_by_consumer[label] = msg

    def headers_event(self, msg: ReceivedMessage) -> Event:
        """The ``received_headers`` event of the message_headers scenario (extension)."""
        props = {}
        for key, value in sorted(msg.message.properties.items()):
            props[key] = f"{_java_property_type(value)}:{_java_text(value)}"
        reply_to = msg.reply_to
        return {
            "event": "received_headers",
            "body": body_text(msg.body),
            "JMSMessageID_prefix": msg.message_id[:3],
            "JMSCorrelationID": msg.correlation_id,
            "JMSType": msg.type,
            "JMSReplyTo": "null" if reply_to is None else str(reply_to),
            "JMSDestination": str(msg.destination),
            "JMSDeliveryMode": 2 if msg.persistent else 1,
            "JMSPriority": msg.priority,
            "JMSExpiration_is_zero": msg.expiration == 0,
            "JMSExpiration_minus_JMSTimestamp": (
                None if msg.expiration == 0 else int(round((msg.expiration - msg.timestamp) * 1000))
            ),
            "JMSTimestamp_nonzero": msg.timestamp != 0,
            "JMSRedelivered": msg.redelivered,
            "properties": props,
            "JMSXDeliveryCount": msg.delivery_count,
        }

    def last_of(self, label: str) -> ReceivedMessage:
        """Extension: the last message consumer ``label`` received."""
        msg = self.last_by_consumer.get(label)
        if msg is None:
            raise ScriptError(f"no message received by consumer '{label}'")
        return msg

    async def op_ack(self, op: dict[str, Any]) -> None:
        if "message" not in op:  # extension: the consumer's last received message
            label = self.req(op, "consumer")
            last = self.last_of(label)
            self.ev({"event": "action", "action": "acknowledge", "consumer": label, "body": self.oracle_body(last)})
            await last.acknowledge()
            return
        body = self.req(op, "message")
        msg = self.last_by_body.get(body)
        if msg is None:
            raise ScriptError(f"no received message with body '{body}'")
        self.ev({"event": "action", "action": "acknowledge", "body": body})
        await msg.acknowledge()

    async def _session_action(self, op: dict[str, Any], action: str) -> None:
        label = self.req(op, "session")
        session = self.lookup(self.sessions, "session", label)
        self.ev({"event": "action", "action": action, "session": label})
        await self.drive(getattr(session, action)())

    async def op_recover(self, op: dict[str, Any]) -> None:
        await self._session_action(op, "recover")

    async def op_commit(self, op: dict[str, Any]) -> None:
        await self._session_action(op, "commit")

    async def op_rollback(self, op: dict[str, Any]) -> None:
        await self._session_action(op, "rollback")

    async def op_listener(self, op: dict[str, Any]) -> None:
        label = self.req(op, "consumer")
        consumer = self.lookup(self.consumers, "consumer", label)
        behaviour = op.get("behaviour", "ok")
        if behaviour not in ("ok", "throw"):
            raise ScriptError("behaviour must be ok|throw")
        record = op.get("record")
        self.ev({"event": "listener_set", "consumer": label, "behaviour": behaviour})

        def on_message(msg: ReceivedMessage) -> None:
            event = self.describe(label, msg, record)
            if behaviour == "throw":
                event["_anchor"] = True  # the listener's failure starts the next redelivery delay
            self.ev(event, listener=True)
            self.last_by_body[body_text(msg.body)] = msg
            self.last_by_consumer[label] = msg
            if behaviour == "throw":
                raise RuntimeError("boom")

        consumer.set_listener(on_message)
        await settle()

    async def op_close_consumer(self, op: dict[str, Any]) -> None:
        label = self.req(op, "consumer")
        consumer = self.lookup(self.consumers, "consumer", label)
        self.ev({"event": "action", "action": "close_consumer", "consumer": label})
        await consumer.close()

    async def op_close_session(self, op: dict[str, Any]) -> None:
        label = self.req(op, "session")
        session = self.lookup(self.sessions, "session", label)
        self.ev({"event": "action", "action": "close_session", "session": label})
        await session.close()

    async def op_close_connection(self, op: dict[str, Any]) -> None:
        label = self.req(op, "conn")
        conn = self.lookup(self.conns, "conn", label)
        self.ev({"event": "action", "action": "close_connection", "conn": label})
        await conn.close()

    async def op_sleep(self, op: dict[str, Any]) -> None:
        await self.sleep(float(op.get("ms", 0)))

    async def op_stats(self, op: dict[str, Any]) -> None:
        await self.sleep(float(op.get("settle_ms", 150)))
        if op.get("topic"):
            self.topic_stats(self.req(op, "dest"))
        else:
            self.stats(self.req(op, "dest"))

    def topic_stats(self, topic: str) -> None:
        self.ev(stats_event("topic", topic, self.broker.topic_statistics(topic)))

    async def op_durable_subscriber(self, op: dict[str, Any]) -> None:
        label = self.req(op, "consumer")
        session = self.lookup(self.sessions, "session", self.req(op, "session"))
        prefetch = op.get("prefetch")
        self.consumers[label] = await session.create_durable_subscriber(
            "topic://" + self.req(op, "dest"),
            self.req(op, "name"),
            selector=op.get("selector"),
            no_local=bool(op.get("noLocal", False)),
            prefetch=None if prefetch is None else int(prefetch),
        )

    async def op_unsubscribe(self, op: dict[str, Any]) -> None:
        session = self.lookup(self.sessions, "session", self.req(op, "session"))
        name = self.req(op, "name")
        self.ev({"event": "action", "action": "unsubscribe", "session": op["session"], "name": name})
        await session.unsubscribe(name)

    async def op_durable_subs(self, op: dict[str, Any]) -> None:
        topic = self.req(op, "dest")
        await self.sleep(float(op.get("settle_ms", 150)))
        if topic not in self.broker.topic_names():  # the oracle looks the topic up by name: a wildcard is none
            self.ev({"event": "durable_subs", "topic": topic, "exists": False})
            return
        subs = [
            {"clientId": d.client_id, "name": d.name, "active": d.active, "pending": d.pending}
            for d in sorted(self.broker.durable_subscriptions(topic), key=lambda d: (d.client_id, d.name))
        ]
        self.ev({"event": "durable_subs", "topic": topic, "subs": subs})

    async def op_dlq(self, op: dict[str, Any]) -> None:
        queue = op.get("dest", "ActiveMQ.DLQ")
        await self.sleep(float(op.get("settle_ms", 150)))
        self.stats(queue)
        if not self.broker.queue(queue).exists:
            return
        if op.get("consume"):
            conn = await connect_to(self.broker, self.transport, always_sync_send=True)
            try:
                session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
                consumer = await session.create_consumer("queue://" + queue)
                received = []
                while True:
                    msg = await self.drive(consumer.receive(0.3))
                    if msg is None:
                        break
                    received.append((msg.message, msg.redelivery_counter))
                await consumer.close()
            finally:
                await conn.close()
        else:
            # as the oracle's JMS QueueBrowser sees them: the client's copy drops the broker's originalExpiration
            received = [(as_jms_client_sees(m), 0) for m in self.broker.queue(queue).browse()[:400]]
        for message, counter in received:
            cause = message.properties.get("dlqDeliveryFailureCause")
            self.ev(
                {
                    "event": "dlq",
                    "queue": queue,
                    "body": body_text(message.body),
                    "cause": None if cause is None else norm(str(cause)),
                    "originalDestination": None
                    if message.original_destination is None
                    else str(message.original_destination),
                    "persistent": message.persistent,
                    "expiration": int(round(message.expiration * 1000)),
                    "redelivered": counter > 0,
                    "redeliveryCounter": counter,
                    "priority": message.priority,
                    "properties": {
                        k: (norm(v) if isinstance(v, str) else v) for k, v in sorted(message.properties.items())
                    },
                }
            )

    async def op_browse(self, op: dict[str, Any]) -> None:
        queue = self.req(op, "dest")
        await self.sleep(float(op.get("settle_ms", 150)))
        view = self.broker.queue(queue)
        if not view.exists:
            self.ev({"event": "browsed", "queue": queue, "exists": False})
            return
        conn = await connect_to(self.broker, self.transport, always_sync_send=True)
        try:
            session = await conn.create_session()
            browser = await session.create_browser(queue, selector=op.get("selector"))
            bodies = [body_text(m.body) for m in await browser.messages()]
        finally:
            await conn.close()
        self.ev({"event": "browsed", "queue": queue, "bodies": bodies})

    async def op_temp_queue(self, op: dict[str, Any]) -> None:
        session = self.lookup(self.sessions, "session", self.req(op, "session"))
        self.temps[self.req(op, "temp")] = await session.create_temporary_queue()

    async def op_temp_topic(self, op: dict[str, Any]) -> None:
        session = self.lookup(self.sessions, "session", self.req(op, "session"))
        self.temps[self.req(op, "temp")] = await session.create_temporary_topic()

    async def op_delete_temp(self, op: dict[str, Any]) -> None:
        label = self.req(op, "temp")
        temp = self.lookup(self.temps, "temp", label)
        self.ev({"event": "action", "action": "delete_temp", "temp": label})
        await temp.delete()

    async def op_temp_exists(self, op: dict[str, Any]) -> None:
        label = self.req(op, "temp")
        temp = self.lookup(self.temps, "temp", label)
        await self.sleep(float(op.get("settle_ms", 150)))
        exists = self.broker.temporary_owner(temp.destination) is not None
        self.ev({"event": "temp_exists", "temp": label, "exists": exists})

    async def op_reply(self, op: dict[str, Any]) -> None:
        """Send to the reply_to of the last received message with body ``to``."""
        session = self.lookup(self.sessions, "session", self.req(op, "session"))
        if "to" not in op:  # extension: the consumer's last received message
            request: ReceivedMessage | None = self.last_of(self.req(op, "consumer"))
            to = self.oracle_body(request)
        else:
            to = self.req(op, "to")
            request = self.last_by_body.get(to)
        if request is None:
            raise ScriptError(f"no received message with body '{to}'")
        body = self.req(op, "body")
        e: Event = {"event": "sent", "reply_to_of": to, "dest": self.token(request.reply_to), "body": body}
        if "correlation_id" in op:
            e["correlation_id"] = op["correlation_id"]
        if session.transacted:
            e["transacted"] = True
        self.ev(e)
        if request.reply_to is None:
            raise ScriptError(f"message '{to}' has no JMSReplyTo")
        producer = await session.create_producer(request.reply_to)
        try:
            await producer.send(body, correlation_id=op.get("correlation_id"))
        finally:
            await producer.close()

    async def op_queues(self, op: dict[str, Any]) -> None:
        """Extension: the names of the broker's queues (not temporary ones, nor durable subscriptions'), sorted."""
        names = [
            name for name in self.broker.queue_names() if self.broker.temporary_owner(Destination.queue(name)) is None
        ]
        self.ev({"event": "queues", "names": names})

    async def op_note(self, op: dict[str, Any]) -> None:
        self.ev({"event": "note", "text": op.get("text", "")})

    async def op_emit(self, op: dict[str, Any]) -> None:
        """Extension: record a copy of ``event`` verbatim."""
        self.ev(dict(self.req(op, "event")))

    async def op_dlq_queues(self, op: dict[str, Any]) -> None:
        """Extension: the sorted names of every existing queue whose name contains DLQ."""
        await self.sleep(float(op.get("settle_ms", 150)))
        self.ev({"event": "dlq_queues", "names": [n for n in self.broker.queue_names() if "DLQ" in n]})


def stats_event(kind: str, name: str, s: QueueStatistics | None) -> Event:
    """The oracle's ``queue_stats`` / ``topic_stats`` event (``exists: false`` for a destination that is not there)."""
    e: Event = {"event": f"{kind}_stats", kind: name}
    if s is None:
        e["exists"] = False
    else:
        e.update(
            size=s.size,
            inflight=s.inflight,
            enqueues=s.enqueued,
            dequeues=s.dequeued,
            expired=s.expired,
            consumers=s.consumers,
        )
    return e


def _java_property_type(value: object) -> str:
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int):
        return "Integer" if -(2**31) <= value < 2**31 else "Long"
    if isinstance(value, float):
        return "Double"
    return "String"


def _java_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


async def run_script(script: dict[str, Any], transport: str = "memory") -> list[Event]:
    """Run ``script`` on a fresh broker with every client connected over ``transport``."""
    return await ScriptRunner(script, transport).run()


# -- comparing event lists ------------------------------------------------------------------------------------------

TIMING = {"t_ms", "gap_ms"}
GAP_ACTIONS = {"rollback", "recover", "close_consumer", "close_session", "close_connection", "nack"}


#: the send op's scheduling fields and the message properties they set (ActiveMQ's ScheduledMessage names)
SCHEDULE_PROPERTIES = {
    "delay_ms": "AMQ_SCHEDULED_DELAY",
    "period_ms": "AMQ_SCHEDULED_PERIOD",
    "repeat": "AMQ_SCHEDULED_REPEAT",
    "cron": "AMQ_SCHEDULED_CRON",
}


def _java_cause(text: Any) -> Any:
    """Python exception names in causes, as the Java client would print them."""
    if isinstance(text, str):
        return text.replace("cause:RuntimeError: ", "cause:java.lang.RuntimeException: ")
    return text


def comparable(event: Event, expected: Event) -> Event:
    e = {k: v for k, v in event.items() if k not in TIMING and not k.startswith("_")}
    if "consumer" not in expected and e.get("event") in ("received", "null_receive", "received_headers"):
        e.pop("consumer", None)
    # ActiveMQ's InvalidSelectorException message is the selector alone; minibroker's quotes it, says what and where
    if (
        e.get("event") == "exception"
        and e.get("type") == "javax.jms.InvalidSelectorException"
        and isinstance(e.get("message"), str)
        and str(expected.get("message")) in e["message"]
    ):
        e["message"] = expected.get("message")
    # the broker's name and the first connection's address are the environment's, not behaviour
    if e.get("event") == "exception" and e.get("type") == "javax.jms.InvalidClientIDException":
        e["message"] = _DUPLICATE_CLIENT.sub(
            r"Broker: <broker> - Client: \1 already connected from vm://<broker>#<n>", e["message"]
        )
    if e.get("event") == "sent":  # the oracle's older patched copy did not echo these in ``sent``
        for key in ("correlation_id", "reply_to"):
            if key not in expected:
                e.pop(key, None)
    if e.get("event") == "dlq":
        e["cause"] = _java_cause(e.get("cause"))
        props = dict(e.get("properties") or {})
        if "dlqDeliveryFailureCause" in props:
            props["dlqDeliveryFailureCause"] = _java_cause(props["dlqDeliveryFailureCause"])
        e["properties"] = props
    return e


def event_matches(expected: Event, got: Event) -> bool:
    if expected.get("event") == "action":
        return (
            got.get("event") == "action"
            and got.get("action") == expected.get("action")
            and got.get("body") == expected.get("body")
        )
    exp = {k: v for k, v in expected.items() if k not in TIMING}
    return comparable(got, expected) == exp


def compare(
    expected: list[Event],
    got: list[Event],
    *,
    gap_tolerance_ms: int = 60,
    late_tolerance_ms: int = 60,
    check_gaps: bool = True,
) -> str | None:
    """None when ``got`` reproduces ``expected``; else a readable description of the first difference."""
    for i in range(max(len(expected), len(got))):
        if i >= len(expected):
            return f"event {i}: unexpected extra {got[i]}"
        if i >= len(got):
            return f"event {i}: missing {expected[i]}"
        if not event_matches(expected[i], got[i]):
            return f"event {i}:\n  expected {expected[i]}\n  got      {comparable(got[i], expected[i])}"
    if check_gaps:
        for i, e in enumerate(expected):
            want = e.get("gap_ms")
            if want is None or e.get("event") != "received" or not e.get("redelivered"):
                continue
            have = got_gap(got, i)
            if have is not None and not -gap_tolerance_ms <= want - have <= late_tolerance_ms:
                return f"event {i}: gap {have} ms, recorded {want} ms ({e})"
    return None


def got_gap(events: list[Event], index: int) -> int | None:
    """Virtual ms between the last rollback/recover/close/nack before event ``index`` and the event itself."""
    t = events[index].get("_t")
    if t is None:
        return None
    for j in range(index - 1, -1, -1):
        e = events[j]
        if (e.get("event") == "action" and e.get("action") in GAP_ACTIONS) or e.get("_anchor"):
            return int(t - e.get("_t", 0))
    return int(t)


def public(events: list[Event]) -> list[Event]:
    """Events as the oracle prints them (without the runner's private fields)."""
    return [{k: v for k, v in e.items() if not k.startswith("_")} for e in events]


def as_jms_client_sees(message: Message) -> Message:
    """A message browsed broker-side, as a JMS QueueBrowser hands it over: ActiveMQ's client copies what it receives,
    which drops the broker's ``originalExpiration`` stamp."""
    if ORIGINAL_EXPIRATION not in message.properties:
        return message
    return attrs.evolve(message, properties={k: v for k, v in message.properties.items() if k != ORIGINAL_EXPIRATION})
