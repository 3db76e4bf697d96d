"""Every input ActiveMQ gives a meaning to, and what minibroker does with it: the audit (issue 17).

Why one table: a fake that quietly does something else with an input it does not understand (a consumer on
``orders.>`` reading a queue literally named ``orders.>``) is worse than no fake. Each row says whether minibroker
reproduces ActiveMQ (*verified* against recordings, or *implemented* and tested), refuses the input with
:class:`~minibroker.errors.UnsupportedFeature` (*refused*), or has no such input (*not applicable*). The check
functions (:mod:`minibroker.refusals`) are the only place that decides a refusal; the core and the
edges call them, and ``docs/gen_fidelity.py`` renders this table as ``docs/fidelity.md``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

__all__ = [
    "FEATURES",
    "FEATURES_BY_ID",
    "Feature",
    "Kind",
    "Status",
]


class Status(enum.Enum):
    VERIFIED = "verified"  # recorded on ActiveMQ 5.17.2 and replayed in CI
    IMPLEMENTED = "implemented"  # reproduced and tested, not recorded
    REFUSED = "refused"  # raises UnsupportedFeature
    NOT_APPLICABLE = "not applicable"  # minibroker has no such input


class Kind(enum.Enum):
    """What sort of input a row is; the value is its heading in docs/fidelity.md."""

    DESTINATION_NAME = "Destination names"
    DESTINATION_OPTION = "Destination options"
    MESSAGE_BODY = "Message bodies"
    MESSAGE_PROPERTY = "Message headers and properties"
    STOMP_HEADER = "STOMP frames and headers"
    CONNECTION_URI = "Connection URIs and options"
    BROKER_CONFIG = "Broker configuration"
    CLIENT_API = "Consumers, sessions and connections"
    MQTT = "MQTT"
    HTTP = "HTTP: the web console, Jolokia and the REST API"
    OPENWIRE = "OpenWire: ActiveMQ's own protocol, for its JMS client"


@attrs.frozen(slots=True)
class Feature:
    """One ActiveMQ input. ``example`` is an input that exercises the row through its check (refused rows: one
    that is refused; others: one that passes); ``tests`` (``path`` or ``path::name``) and ``recordings`` (globs
    from the repository root) are the proof for implemented and verified rows."""

    id: str
    kind: Kind
    input: str
    status: Status
    note: str
    example: str | None = None
    tests: tuple[str, ...] = ()
    recordings: tuple[str, ...] = ()


_NATIVE_RECORDINGS = ("tests/conformance/recordings/[!s]*.json", "tests/differential/corpus/gen_*.json")
_STOMP_PROTOCOL = "tests/plugins/stomp/test_protocol.py"
_THIS = "tests/test_features.py"
#: the feature recordings of issue 17 (tests/differential/record_features.py)
_FEATURES = "tests/differential/features/"
_MQTT = "tests/plugins/mqtt/"
#: the wire corpus: what stomp.py, paho-mqtt and a raw STOMP socket received from ActiveMQ 5.17.2 (issue 42)
_WIRE = "tests/wire_oracle/corpus/"
_HTTP = "tests/plugins/http/"

# Destination options ActiveMQ reads from ``queue://name?consumer.x=y`` (ActiveMQMessageConsumer sets them on its
# ConsumerInfo); minibroker.destination_options reads them for the client's consumers and STOMP SUBSCRIBE.
_HONOURED_OPTIONS = (
    ("prefetchSize", "the consumer's prefetch", "feat_dest_option_prefetch"),
    ("priority", "consumer priority", "feat_consumer_priority"),
    ("exclusive", "exclusive consumer", "feat_exclusive_consumer"),
    ("selector", "a selector in the name (URL-decoded)", None),
    ("noLocal", "no-local subscription", None),
    ("dispatchAsync", "read and ignored: dispatch has no sync/async distinction in minibroker", None),
)
_DESTINATION_OPTIONS = (
    ("retroactive", "retroactive topic consumer (recent messages replayed on subscribe)"),
    (
        "maximumPendingMessageLimit",
        "a per-consumer pending limit (the destination policy's `pending_message_limit` is built)",
    ),
    ("networkSubscription", "network of brokers subscription"),
)
_OPTIONS_TESTS = ("tests/test_destination_options.py", "tests/plugins/stomp/test_destination_options.py")

FEATURES: tuple[Feature, ...] = (
    # -- destination names ------------------------------------------------------------------------------------------
    Feature(
        "queue",
        Kind.DESTINATION_NAME,
        "`orders`, `queue://orders`",
        Status.VERIFIED,
        "a plain queue name",
        "queue://orders",
        recordings=_NATIVE_RECORDINGS,
    ),
    Feature(
        "topic",
        Kind.DESTINATION_NAME,
        "`topic://prices`",
        Status.VERIFIED,
        "a plain topic: only live subscribers get a message",
        "topic://prices",
        recordings=(
            f"{_FEATURES}mixed_topic_exists_after_publish.json",
            f"{_FEATURES}mixed_topic_stats_inflight.json",
            "tests/conformance/recordings/topic_basic.json",
        ),
    ),
    Feature(
        "wildcard-consumer",
        Kind.DESTINATION_NAME,
        "consumer on queues `orders.>`, `*.in`",
        Status.VERIFIED,
        "one subscription with one prefetch window in every matching queue, existing or made later (not temporary "
        "queues); each queue keeps its order, acks and redeliveries go back to the queue a message came from; across "
        "queues the interleaving is ActiveMQ's threads' choice (compared per queue)",
        "queue://orders.>",
        recordings=(f"{_FEATURES}wildcard_queue_*.json",),
    ),
    Feature(
        "wildcard-browser",
        Kind.DESTINATION_NAME,
        "browser on `orders.>` or `qa,qb`",
        Status.REFUSED,
        "a browser reads one queue (wildcard and composite consumers work)",
        "queue://orders.>",
    ),
    Feature(
        "wildcard-topic-consumer",
        Kind.DESTINATION_NAME,
        "subscriber to `topic://prices.>`, `topic://prices.*`",
        Status.VERIFIED,
        "`*` one name, `>` the rest: every matching topic, existing or made later, through one subscriber's window",
        "topic://prices.>",
        recordings=(f"{_FEATURES}wildcard_topic_*.json",),
    ),
    Feature(
        "wildcard-durable",
        Kind.DESTINATION_NAME,
        "durable subscription to `topic://prices.>`",
        Status.VERIFIED,
        "kept for every matching topic, present and later, while the subscriber is away (what an MQTT persistent "
        "session subscribing `prices/#` makes)",
        "topic://prices.>",
        recordings=(f"{_FEATURES}durable_wildcard*.json",),
    ),
    Feature(
        "wildcard-send",
        Kind.DESTINATION_NAME,
        "send to `orders.*`",
        Status.VERIFIED,
        "not a wildcard: a queue of that literal name (checked on ActiveMQ 5.17.2)",
        "queue://orders.*",
        recordings=("tests/conformance/recordings/wildcard_send_literal_queue.json",),
    ),
    Feature(
        "composite-consumer",
        Kind.DESTINATION_NAME,
        "consumer on `qa,qb` or `topic://ta,topic://tb`",
        Status.VERIFIED,
        "one subscription over every part of the composite's own kind (a queue consumer on `qa,topic://tb` reads qa "
        "alone, as ActiveMQ); a message sent to two parts arrives twice, with one message id; at most "
        "`[limits] max_composite_parts` parts (5,000), past which `LimitExceeded` (ActiveMQ has no limit: 20,000 "
        "parts work there, checked on ActiveMQ 5.17.2)",
        "queue://qa,qb",
        recordings=(f"{_FEATURES}composite_consumer*.json",),
    ),
    Feature(
        "composite-send",
        Kind.DESTINATION_NAME,
        "send to `qa,qb` or `queue://qa,topic://tb`",
        Status.VERIFIED,
        "a copy to each part (a part without a prefix has the composite's kind), all or nothing: a refused part "
        "(rights, a full queue failing fast) refuses the whole send; more than `[limits] max_composite_parts` "
        "parts (5,000) refuse it with `LimitExceeded` (ActiveMQ has no limit)",
        "queue://qa,qb",
        recordings=(
            f"{_FEATURES}mixed_composite_with_prefixed_first_part.json",
            f"{_FEATURES}composite_send_*.json",
        ),
    ),
    Feature(
        "stomp-composite-send",
        Kind.DESTINATION_NAME,
        "STOMP SEND to `/queue/qa,/queue/qb`",
        Status.IMPLEMENTED,
        "one copy per destination",
        tests=(f"{_STOMP_PROTOCOL}::test_unprefixed_and_composite_destinations",),
    ),
    Feature(
        "stomp-composite-subscribe",
        Kind.DESTINATION_NAME,
        "STOMP SUBSCRIBE to `/queue/qa,/queue/qb` or `/queue/orders.>`",
        Status.IMPLEMENTED,
        "one subscription over every part (or matching queue), as a native composite or wildcard consumer",
        tests=(f"{_STOMP_PROTOCOL}::test_composite_and_wildcard_subscriptions",),
    ),
    Feature(
        "virtual-topic-send",
        Kind.DESTINATION_NAME,
        "send to `topic://VirtualTopic.orders`",
        Status.VERIFIED,
        "topic subscribers get it, and a copy goes to each queue `Consumer.<name>.VirtualTopic.orders` that exists "
        "then; `[virtual_topics]` in broker.toml changes the names or turns it off",
        "topic://VirtualTopic.orders",
        recordings=(f"{_FEATURES}virtual_topic_*.json",),
    ),
    Feature(
        "virtual-topic-consumer",
        Kind.DESTINATION_NAME,
        "consumer on `Consumer.A.VirtualTopic.orders`",
        Status.VERIFIED,
        "a plain queue (load balanced, redelivery, DLQ with the queue as original destination), created by the "
        "first consumer and kept",
        "queue://Consumer.A.VirtualTopic.orders",
        recordings=(f"{_FEATURES}virtual_topic_*.json",),
    ),
    Feature(
        "virtual-topic-wildcard-consumer",
        Kind.DESTINATION_NAME,
        "consumer on a queue wildcard under the consumer prefix (`Consumer.B.VirtualTopic.>`, "
        "`Consumer.*.VirtualTopic.orders`)",
        Status.VERIFIED,
        "makes a queue of that literal name (ActiveMQ's VirtualTopic.create), which every virtual topic the name "
        "matches copies to and which competing consumers of the same wildcard share; `Consumer.B.VirtualTopic.orders` "
        "itself is not made",
        "queue://Consumer.B.VirtualTopic.>",
        recordings=(
            f"{_FEATURES}virtual_topic_wildcard_*.json",
            f"{_FEATURES}mixed_wildcard_on_virtual_consumer_queues.json",
        ),
    ),
    Feature(
        "advisory-consumer",
        Kind.DESTINATION_NAME,
        "subscriber to `topic://ActiveMQ.Advisory.Consumer.Queue.<name>` (or `.Topic.`, `.TempQueue.`, wildcards)",
        Status.VERIFIED,
        "ConsumerInfo when a consumer comes, RemoveInfo when it goes, `consumerCount` after the change; a new "
        "subscriber first hears of the consumers there are; JMSType `Advisory`, the data structure as JSON text in "
        "the body (`minibroker.advisory.data_structure`)",
        "topic://ActiveMQ.Advisory.Consumer.Queue.orders",
        recordings=(
            f"{_FEATURES}mixed_advisory_durable_offline_count.json",
            f"{_FEATURES}advisory_consumer_*.json",
        ),
    ),
    Feature(
        "advisory-producer",
        Kind.DESTINATION_NAME,
        "subscriber to `topic://ActiveMQ.Advisory.Producer.Queue.<name>` (or `.Topic.`)",
        Status.VERIFIED,
        "ProducerInfo when a producer with a destination is made, RemoveInfo when it is closed, `producerCount`",
        "topic://ActiveMQ.Advisory.Producer.Queue.orders",
        recordings=(f"{_FEATURES}advisory_producer_*.json",),
    ),
    Feature(
        "advisory-connection",
        Kind.DESTINATION_NAME,
        "subscriber to `topic://ActiveMQ.Advisory.Connection`",
        Status.VERIFIED,
        "ConnectionInfo when a connection opens (the open ones first, to a new subscriber), RemoveInfo when it closes",
        "topic://ActiveMQ.Advisory.Connection",
        recordings=(f"{_FEATURES}advisory_connection*.json",),
    ),
    Feature(
        "advisory-expired-dlq",
        Kind.DESTINATION_NAME,
        "subscriber to `topic://ActiveMQ.Advisory.Expired.Queue.<name>`, `...MessageDLQd.Queue.<name>`",
        Status.VERIFIED,
        "the expired or dead-lettered message (body cleared) and `orignalMessageId` (ActiveMQ's spelling)",
        "topic://ActiveMQ.Advisory.Expired.Queue.orders",
        recordings=(f"{_FEATURES}advisory_expired_and_dlq.json",),
    ),
    Feature(
        "advisory-destination",
        Kind.DESTINATION_NAME,
        "subscriber to `topic://ActiveMQ.Advisory.Queue` (or `.Topic`, `.TempQueue`, `.TempTopic`)",
        Status.VERIFIED,
        "a DestinationInfo (`operationType` 0 add, 1 remove, `destination`) when a destination is made (by a consumer, "
        "a send, a transacted send, a dead letter) or a temporary one deleted; a new subscriber first hears of the "
        "destinations there are, in the order ActiveMQ's hash map of them iterates",
        "topic://ActiveMQ.Advisory.Queue",
        recordings=(f"{_FEATURES}advisory_destination_*.json",),
    ),
    Feature(
        "advisory-wildcard",
        Kind.DESTINATION_NAME,
        "subscriber to a wildcard of advisory topics (`topic://ActiveMQ.Advisory.>`)",
        Status.VERIFIED,
        "every advisory published from then on, after the master broker advisory's last image; no replay of "
        "connections, consumers or destinations (ActiveMQ replays only to subscribers of those topics by name)",
        "topic://ActiveMQ.Advisory.>",
        recordings=(f"{_FEATURES}advisory_destination_wildcard.json",),
    ),
    Feature(
        "advisory-send",
        Kind.DESTINATION_NAME,
        "a send to an advisory topic (`topic://ActiveMQ.Advisory.Consumer.Queue.orders`)",
        Status.VERIFIED,
        "published there like any topic message, to whoever listens (ActiveMQ accepts it silently: recorded over "
        "STOMP by the wire corpus, issue 42)",
        "topic://ActiveMQ.Advisory.Consumer.Queue.orders",
        recordings=(
            f"{_WIRE}w2-045.json",
            f"{_WIRE}w3-016.json",
            f"{_WIRE}w3-035.json",
        ),
        tests=(
            "tests/test_advisories.py::test_a_send_to_an_advisory_topic_reaches_its_subscribers_as_a_plain_message",
        ),
    ),
    Feature(
        "advisory",
        Kind.DESTINATION_NAME,
        "other `ActiveMQ.Advisory.*` topics (slow consumers, fast producers, full, discarded, delivered and consumed "
        "messages)",
        Status.REFUSED,
        "ActiveMQ publishes these only when a destination policy turns them on, which minibroker has not",
        "topic://ActiveMQ.Advisory.SlowConsumer.Queue.orders",
    ),
    Feature(
        "advisory-support",
        Kind.BROKER_CONFIG,
        "`advisorySupport` (`Broker(advisory_support=False)`, `[broker] advisory_support`)",
        Status.IMPLEMENTED,
        "on by default, as ActiveMQ; off: no advisory is published",
        tests=("tests/test_advisories.py::test_advisory_support_off_publishes_nothing",),
    ),
    Feature(
        "stomp-consumer-advisory",
        Kind.DESTINATION_NAME,
        "STOMP SUBSCRIBE to `/topic/ActiveMQ.Advisory.Consumer.*` (with `transformation` `jms-json`/`jms-xml`/"
        "`jms-advisory-json`/`jms-advisory-xml`, or none)",
        Status.VERIFIED,
        "ConsumerInfo and RemoveInfo as ActiveMQ's JmsFrameTranslator writes them (XStream through Jettison, or "
        "indented XML), field for field as ActiveMQ 5.17.2 wrote them; `type:Advisory`, `timestamp:0`, "
        "`consumerCount`. A consumer's session id and number and the command id are minibroker's own (ActiveMQ's "
        "count each connection's commands), and `originBrokerName`/`-URL` name minibroker (ActiveMQ's default name "
        "is `localhost`, its URL its first connector's): the wire corpus leaves these out",
        "topic://ActiveMQ.Advisory.Consumer.Queue.orders",
        recordings=(
            f"{_WIRE}basic-advisory-composite.json",
            f"{_WIRE}w1-016.json",
            f"{_WIRE}w1-024.json",
        ),
        tests=(
            "tests/plugins/stomp/test_wire_mapping.py::test_a_consumer_comes_and_goes",
            "tests/plugins/stomp/test_wire_mapping.py::test_as_xml_and_for_a_durable_subscriber",
        ),
    ),
    Feature(
        "stomp-advisory",
        Kind.DESTINATION_NAME,
        "STOMP SUBSCRIBE to the other `/topic/ActiveMQ.Advisory.*` topics (connections, destinations, producers, "
        "expired and dead-lettered messages)",
        Status.REFUSED,
        "ActiveMQ renders their structures as XStream JSON with fields minibroker does not keep (a connection's client "
        "address, a whole message); native clients get them",
    ),
    Feature(
        "scheduler-management-send",
        Kind.DESTINATION_NAME,
        "send to `topic://ActiveMQ.Scheduler.Management` with `AMQ_SCHEDULER_ACTION`",
        Status.VERIFIED,
        "BROWSE (each scheduled message, with `scheduledJobId`, to the request's reply_to), REMOVE (by "
        "`scheduledJobId`, or `ACTION_START_TIME`/`ACTION_END_TIME` in ms), REMOVEALL; with scheduler support",
        "topic://ActiveMQ.Scheduler.Management",
        recordings=(f"{_FEATURES}scheduler_management_*.json",),
    ),
    Feature(
        "scheduler-management-consumer",
        Kind.DESTINATION_NAME,
        "consumer on `ActiveMQ.Scheduler.Management`",
        Status.REFUSED,
        "the management topic takes requests; its answers go to each request's reply_to",
        "topic://ActiveMQ.Scheduler.Management",
    ),
    Feature(
        "temporary-uri",
        Kind.DESTINATION_NAME,
        "`session.create_temporary_queue()`/`_topic()`, `temp-queue://…`, `temp-topic://…`",
        Status.VERIFIED,
        "named `ID:<connection>:<n>`; usable as `reply_to`; only the owning connection consumes; deleted with it; "
        "`delete()` refused while a consumer reads; a send to a deleted one: `DestinationDoesNotExist`",
        "temp-queue://ID:x:1",
        recordings=(f"{_FEATURES}temp_*.json",),
    ),
    Feature(
        "stomp-temporary",
        Kind.DESTINATION_NAME,
        "STOMP `/temp-queue/N`, `/temp-topic/N`",
        Status.IMPLEMENTED,
        "the broker's temporary destinations: owned by the connection, deleted with it, refused to other "
        "connections' consumers, `/remote-temp-queue/…` to others",
        tests=(
            f"{_STOMP_PROTOCOL}::test_temporary_queue_reply_to",
            f"{_STOMP_PROTOCOL}::test_temporary_queue_is_the_brokers_owned_refused_to_others_gone_with_its_connection",
            "tests/core/test_temporary.py",
        ),
    ),
    Feature(
        "dead-letter-queue",
        Kind.DESTINATION_NAME,
        "`ActiveMQ.DLQ`, `DLQ.<queue>`",
        Status.VERIFIED,
        "where poison messages go",
        "queue://ActiveMQ.DLQ",
        recordings=("tests/conformance/recordings/*dlq*.json",),
    ),
    # -- destination options ----------------------------------------------------------------------------------------
    *(
        Feature(
            f"destination-option-{name}",
            Kind.DESTINATION_OPTION,
            f"`queue://q?consumer.{name}=…`",
            Status.VERIFIED if recording else Status.IMPLEMENTED,
            note,
            tests=_OPTIONS_TESTS,
            recordings=(f"tests/differential/features/{recording}.json",) if recording else (),
        )
        for name, note, recording in _HONOURED_OPTIONS
    ),
    *(
        Feature(
            f"destination-option-{name}",
            Kind.DESTINATION_OPTION,
            f"`queue://q?consumer.{name}=…`",
            Status.REFUSED,
            note,
            f"queue://q?consumer.{name}=1",
        )
        for name, note in _DESTINATION_OPTIONS
    ),
    Feature(
        "destination-options",
        Kind.DESTINATION_OPTION,
        "any other `?option` in a destination name",
        Status.REFUSED,
        "refused on a send or browser; on a consumer, non-consumer.* options are ignored and an"
        " unknown consumer.* option fails it (InvalidConfiguration), as ActiveMQ does",
        "queue://q?foo=1",
    ),
    # -- message bodies ---------------------------------------------------------------------------------------------
    Feature(
        "text-message",
        Kind.MESSAGE_BODY,
        "TextMessage (a str body)",
        Status.VERIFIED,
        "the body every recorded scenario sends",
        "'text'",
        recordings=(
            "tests/conformance/recordings/auto_ack_receive.json",
            "tests/conformance/recordings/stomp_jms_interop.json",
        ),
    ),
    Feature(
        "bytes-message",
        Kind.MESSAGE_BODY,
        "BytesMessage (a bytes body; STOMP content-length)",
        Status.VERIFIED,
        "STOMP SEND with content-length is a BytesMessage",
        "b'bytes'",
        recordings=("tests/conformance/recordings/stomp_jms_interop.json",),
    ),
    Feature(
        "map-message",
        Kind.MESSAGE_BODY,
        "MapMessage (a mapping body)",
        Status.VERIFIED,
        "names to str, int, float, bool, bytes, None or minibroker.typed values; read-only once sent; a STOMP "
        "subscriber gets no body (ActiveMQ's default translation) unless it asks a `transformation`",
        "{'k': 1}",
        recordings=(f"{_FEATURES}map_message_*.json",),
    ),
    Feature(
        "typed-properties",
        Kind.MESSAGE_PROPERTY,
        "Java property types: `Byte`, `Short`, `Int`, `Long`, `Float`, `Double` (minibroker.typed)",
        Status.VERIFIED,
        "kept over the native protocol and in the store; `property_as(name, type)` is JMS's conversion table; "
        "selectors compare them as numbers, a String as no number",
        recordings=(f"{_FEATURES}typed_properties_*.json",),
    ),
    Feature(
        "stream-message",
        Kind.MESSAGE_BODY,
        "StreamMessage (a list or tuple body)",
        Status.VERIFIED,
        "values as a map's, in order, read-only once sent; `msg.stream_reader()` reads them by JMS's conversion "
        "table (a failed read does not advance); a STOMP subscriber gets no body; an MQTT subscriber ActiveMQ's "
        "marshalled bytes",
        "[1, 2]",
        recordings=(f"{_FEATURES}stream_message_*.json",),
    ),
    Feature(
        "object-message",
        Kind.MESSAGE_BODY,
        "ObjectMessage (an `ObjectBody` body)",
        Status.VERIFIED,
        "the Java-serialized object as opaque bytes with its class name; `ObjectBody.of(value)` serializes a String, "
        "boxed primitives and byte[] byte for byte as ActiveMQ does; other classes are carried, never deserialized",
        "ObjectBody(b'')",
        recordings=(f"{_FEATURES}object_message_*.json",),
    ),
    Feature(
        "bodiless-message",
        Kind.MESSAGE_BODY,
        "a Message without a body (`session.createMessage()`)",
        Status.REFUSED,
        "not built: send an empty text instead",
        "None",
    ),
    # -- message properties -----------------------------------------------------------------------------------------
    Feature(
        "scheduled-delay",
        Kind.MESSAGE_PROPERTY,
        "`AMQ_SCHEDULED_DELAY`",
        Status.IMPLEMENTED,
        "delayed delivery with scheduler_support=True (ignored without, as in ActiveMQ); as ActiveMQ's, a job "
        "starts at the send time rounded up to the next half second, so it lands 0-500 ms after its delay (on the "
        "ManualClock's default epoch, a whole second: +500 ms; see the ActiveMQ features guide)",
        "AMQ_SCHEDULED_DELAY",
        tests=("tests/test_store.py", "tests/client/test_delay_levels.py"),
    ),
    Feature(
        "scheduled-without-scheduler",
        Kind.MESSAGE_PROPERTY,
        "`AMQ_SCHEDULED_*` without scheduler support",
        Status.VERIFIED,
        "ActiveMQ's default: plain properties, one delivery at once",
        recordings=("tests/conformance/recordings/scheduled_properties_without_scheduler.json",),
    ),
    Feature(
        "scheduled-period",
        Kind.MESSAGE_PROPERTY,
        "`AMQ_SCHEDULED_PERIOD` with `AMQ_SCHEDULED_REPEAT` (and `_DELAY`)",
        Status.VERIFIED,
        "ActiveMQ's job scheduler: the start rounded up to the next half second, then the delay (or the period), "
        "then `repeat` more deliveries a period apart, each a new message with `scheduledJobId`; ignored without "
        "scheduler_support, as ActiveMQ",
        "AMQ_SCHEDULED_PERIOD",
        recordings=(f"{_FEATURES}scheduler_*.json",),
    ),
    Feature(
        "scheduled-repeat",
        Kind.MESSAGE_PROPERTY,
        "`AMQ_SCHEDULED_REPEAT` without a period",
        Status.VERIFIED,
        "one delivery, as ActiveMQ",
        recordings=("tests/differential/features/scheduler_repeat_without_period.json",),
    ),
    Feature(
        "scheduled-cron",
        Kind.MESSAGE_PROPERTY,
        "`AMQ_SCHEDULED_CRON` (with `_DELAY`, `_PERIOD`, `_REPEAT`)",
        Status.VERIFIED,
        "five-field cron in the broker's `scheduler_time_zone` (UTC by default); each firing delivers, or with a "
        "repeat starts a job of its own with the delay, period and repeat, as ActiveMQ's job scheduler",
        "AMQ_SCHEDULED_CRON",
        recordings=(f"{_FEATURES}scheduler_cron_*.json", f"{_FEATURES}scheduler_off_cron.json"),
    ),
    Feature(
        "message-groups",
        Kind.MESSAGE_PROPERTY,
        "JMSXGroupID / JMSXGroupSeq (group_id=, group_seq=)",
        Status.VERIFIED,
        "sticky groups, JMSXGroupFirstForConsumer",
        recordings=(
            f"{_FEATURES}mixed_delivery_count_property.json",
            "tests/conformance/recordings/message_groups.json",
            f"{_FEATURES}feat_groups_*.json",
        ),
    ),
    Feature(
        "group-id-property",
        Kind.MESSAGE_PROPERTY,
        "`JMSXGroupID` set as a property",
        Status.REFUSED,
        "ActiveMQ's client turns it into the group (checked on 5.17.2); pass group_id= instead",
        "JMSXGroupID",
    ),
    Feature(
        "group-seq-property",
        Kind.MESSAGE_PROPERTY,
        "`JMSXGroupSeq` set as a property",
        Status.REFUSED,
        "ActiveMQ's client turns it into the group sequence; pass group_seq= instead",
        "JMSXGroupSeq",
    ),
    Feature(
        "delivery-count-property",
        Kind.MESSAGE_PROPERTY,
        "`JMSXDeliveryCount` set as a property",
        Status.REFUSED,
        "ActiveMQ's client turns it into the redelivery counter",
        "JMSXDeliveryCount",
    ),
    Feature(
        "user-id-property",
        Kind.MESSAGE_PROPERTY,
        "`JMSXUserID` set as a property",
        Status.REFUSED,
        "the broker owns it (populateJMSXUserID)",
        "JMSXUserID",
    ),
    Feature(
        "jms-header-property",
        Kind.MESSAGE_PROPERTY,
        "`JMSPriority`, `JMSType`, `JMSReplyTo`, … set as properties",
        Status.REFUSED,
        "ActiveMQ's client turns them into the headers; pass priority=, type=, reply_to=, …",
        "JMSPriority",
    ),
    Feature(
        "dlq-failure-cause",
        Kind.MESSAGE_PROPERTY,
        "`dlqDeliveryFailureCause` (set by the broker)",
        Status.VERIFIED,
        "ActiveMQ's text on every dead-lettered copy",
        recordings=tuple(
            f"tests/conformance/recordings/{name}.json"
            for name in (
                "individual_dlq_strategy",
                "maximum_redeliveries_zero",
                "redelivery_plugin",
                "transacted_rollback_to_dlq",
                "listener_exception_auto_ack",
            )
        ),
    ),
    Feature(
        "priority-header",
        Kind.MESSAGE_PROPERTY,
        "JMSPriority (send(priority=…))",
        Status.VERIFIED,
        "FIFO unless prioritized_messages, client-side reordering with message_priority_supported",
        recordings=("tests/conformance/recordings/priority.json", f"{_FEATURES}feat_priority_*.json"),
    ),
    Feature(
        "expiration-header",
        Kind.MESSAGE_PROPERTY,
        "JMSExpiration (send(ttl=…))",
        Status.VERIFIED,
        "expired messages are dropped or dead-lettered as ActiveMQ",
        recordings=("tests/conformance/recordings/expired_message*.json", f"{_FEATURES}feat_expiry_*.json"),
    ),
    Feature(
        "delivery-mode-header",
        Kind.MESSAGE_PROPERTY,
        "JMSDeliveryMode (send(persistent=…))",
        Status.VERIFIED,
        "non-persistent messages are not dead-lettered by default",
        recordings=(
            "tests/conformance/recordings/mixed_persistence_order.json",
            "tests/conformance/recordings/non_persistent_to_dlq.json",
        ),
    ),
    # -- STOMP headers ----------------------------------------------------------------------------------------------
    Feature(
        "stomp-heart-beat",
        Kind.STOMP_HEADER,
        "CONNECT `heart-beat`",
        Status.IMPLEMENTED,
        "negotiated as ActiveMQ; the CONNECT counts as input; a client silent for 1.5 of its periods is closed "
        "(ActiveMQ: after one empty check window), so beats at a window's edge are not lost to jitter; periods "
        "under 100 ms are checked and beaten every 100 ms (ActiveMQ runs a timer at any period: 200 clients asking "
        "for 1 ms beats would keep a core busy)",
        tests=(_STOMP_PROTOCOL, "tests/soak/test_stomp_heartbeat_idle.py"),
    ),
    Feature(
        "stomp-prefetch",
        Kind.STOMP_HEADER,
        "SUBSCRIBE `activemq.prefetchSize`",
        Status.VERIFIED,
        "at most N unacked MESSAGEs",
        "activemq.prefetchSize",
        recordings=("tests/conformance/recordings/stomp_prefetch_one.json",),
    ),
    Feature(
        "stomp-consumer-options",
        Kind.STOMP_HEADER,
        "SUBSCRIBE `activemq.priority`, `activemq.exclusive`, `activemq.noLocal`",
        Status.IMPLEMENTED,
        "read into the consumer",
        "activemq.exclusive",
        tests=(_STOMP_PROTOCOL,),
    ),
    Feature(
        "stomp-durable",
        Kind.STOMP_HEADER,
        "SUBSCRIBE/UNSUBSCRIBE `activemq.subscriptionName` (with CONNECT `client-id`)",
        Status.VERIFIED,
        "a durable subscription of the connection's client id, the same as the native client's (default prefetch "
        "100); UNSUBSCRIBE with the name is ActiveMQ's RemoveSubscriptionInfo alone: refused with 'Durable consumer "
        "is in use' while a subscriber is open, which keeps the subscription (STOMP 1.0 names it as its client id)",
        recordings=(
            f"{_WIRE}w1-009.json",
            f"{_WIRE}w1-012.json",
            f"{_WIRE}w1-014.json",
            f"{_WIRE}w1-017.json",
        ),
        tests=("tests/plugins/stomp/test_interop.py::test_a_stomp_durable_subscription",),
    ),
    Feature(
        "stomp-original-destination",
        Kind.STOMP_HEADER,
        "MESSAGE `original-destination`",
        Status.VERIFIED,
        "on a virtual topic's copy (the topic), on each part of a composite SEND (the composite, as ActiveMQ's "
        "physical name), on a dead letter (where it was)",
        recordings=(
            f"{_WIRE}w1-001.json",
            f"{_WIRE}w1-002.json",
            f"{_WIRE}w1-003.json",
        ),
    ),
    Feature(
        "stomp-original-expiration",
        Kind.STOMP_HEADER,
        "MESSAGE `originalExpiration`",
        Status.VERIFIED,
        "a dead letter's former expiration in epoch ms, 0 for none (RegionBroker.stampAsExpired), unless the policy "
        "gives dead letters an expiration; a JMS client's copy drops it, as ActiveMQ's does",
        recordings=(
            f"{_WIRE}w1-006.json",
            f"{_WIRE}w1-013.json",
            f"{_WIRE}w1-017.json",
        ),
    ),
    Feature(
        "stomp-redelivered",
        Kind.STOMP_HEADER,
        "MESSAGE `redelivered`",
        Status.VERIFIED,
        "the broker message's own flag: a queue message given back has it; a topic message never does, so a "
        "durable subscriber's unacked message after it comes back has none (ActiveMQ counts that on the dispatch, "
        "which only a JMS client reads)",
        recordings=(
            f"{_WIRE}w1-000.json",
            f"{_WIRE}w1-009.json",
            f"{_WIRE}w1-012.json",
        ),
    ),
    Feature(
        "stomp-errors",
        Kind.STOMP_HEADER,
        "ERROR frames: `message`, `receipt-id`, the body",
        Status.VERIFIED,
        "as ProtocolConverter.handleException writes them: `message` is the exception's message, the body starts "
        "with its class and localized message; sent with or without a receipt asked (a failed command without one "
        "is ActiveMQ's ConnectionError); e.g. DestinationDoesNotExistException for a temporary destination that does "
        'not exist, "Couldn\'t create TopicSubscription" for a bad selector on a topic, the selector itself for one '
        "on a queue; a transacted SEND failing unseen makes its COMMIT fail ('Transaction marked rollback only')",
        recordings=(
            f"{_WIRE}basic-stomp.json",
            f"{_WIRE}w1-001.json",
            f"{_WIRE}w1-037.json",
            f"{_WIRE}w1-043.json",
            f"{_WIRE}w3-015.json",
        ),
    ),
    Feature(
        "stomp-temporary-destinations",
        Kind.STOMP_HEADER,
        "`/temp-queue/NAME`, `/temp-topic/NAME` and `/remote-temp-queue/ID`",
        Status.VERIFIED,
        "a connection's own temporary destinations by its names, another's by their ids; a SEND to one that does "
        "not exist (never made, or gone with its owner) is refused, never made",
        recordings=(
            f"{_WIRE}w1-001.json",
            f"{_WIRE}w1-019.json",
            f"{_WIRE}w1-025.json",
        ),
    ),
    Feature(
        "stomp-subscription-id-reuse",
        Kind.STOMP_HEADER,
        "SUBSCRIBE with an `id` already in use",
        Status.VERIFIED,
        "taken, as ActiveMQ 5.17 takes it: the id names the newer subscription (UNSUBSCRIBE removes that one), the "
        "first keeps delivering until the connection goes",
        recordings=(
            f"{_WIRE}w1-013.json",
            f"{_WIRE}w4-000.json",
            f"{_WIRE}w4-006.json",
        ),
    ),
    Feature(
        "stomp-retroactive",
        Kind.STOMP_HEADER,
        "SUBSCRIBE `activemq.retroactive`",
        Status.REFUSED,
        "retroactive consumers are a later issue",
        "activemq.retroactive",
    ),
    Feature(
        "stomp-pending-limit",
        Kind.STOMP_HEADER,
        "SUBSCRIBE `activemq.maximumPendingMessageLimit`",
        Status.REFUSED,
        "a per-consumer limit is not built; the destination policy's `pending_message_limit` (1000) is",
        "activemq.maximumPendingMessageLimit",
    ),
    Feature(
        "stomp-dispatch-async",
        Kind.STOMP_HEADER,
        "SUBSCRIBE `activemq.dispatchAsync`",
        Status.NOT_APPLICABLE,
        "a broker threading choice with no observable effect",
        "activemq.dispatchAsync",
    ),
    Feature(
        "stomp-map-transformation",
        Kind.STOMP_HEADER,
        "`transformation: jms-map-json` / `jms-map-xml` (SUBSCRIBE also `jms-json`, `jms-xml`, `jms-object-json`, "
        "`jms-object-xml`)",
        Status.VERIFIED,
        "a MapMessage written byte for byte as ActiveMQ's XStream/Jettison do (Java HashMap entry order, Java number "
        "texts); a SEND's map body makes a MapMessage, a body that is no map a TextMessage; bounded by "
        "`[limits] max_transformation_entries` (minibroker's own: past it the subscriber's connection fails as for "
        "any message it cannot be written, a SEND makes the failed-transformation TextMessage)",
        recordings=("tests/plugins/stomp/recordings/transformations.json",),
        tests=("tests/plugins/stomp/test_transformation_limits.py", "tests/plugins/stomp/test_render_failures.py"),
    ),
    Feature(
        "stomp-transformation",
        Kind.STOMP_HEADER,
        "`transformation`: object forms (`jms-object-json`/`-xml`), `jms-byte`, `jms-json`/`jms-xml` on SEND, any "
        "other name",
        Status.VERIFIED,
        "an ObjectMessage's String, boxed primitive or byte[] written as XStream/Jettison do, and a SEND's object body "
        "made into the ObjectMessage ActiveMQ makes (its serialized bytes byte for byte); every message but bytes "
        "carries the subscription's `transformation` header; a body that does not parse, `jms-json` or `jms-xml` on "
        "SEND make a TextMessage with ActiveMQ's `transformation-error`; `jms-byte`, `content-length` or an unknown "
        "name keep the default translation",
        recordings=("tests/plugins/stomp/recordings/transformations.json",),
    ),
    Feature(
        "stomp-object-transformation-class",
        Kind.STOMP_HEADER,
        "an object transformation of a class beyond String, boxed primitives and byte[] (`<map>`, `<list>`, a class "
        "name; rendering such an ObjectMessage)",
        Status.REFUSED,
        "Python cannot run Java serialization: such a SEND is refused; such a message reaches a transforming "
        "subscriber with an empty body and a `transformation-error` header saying so",
        "map",
    ),
    Feature(
        "stomp-transaction",
        Kind.STOMP_HEADER,
        "SEND/ACK `transaction`",
        Status.VERIFIED,
        "invisible until COMMIT",
        recordings=("tests/conformance/recordings/stomp_transaction_send.json",),
    ),
    Feature(
        "stomp-nack",
        Kind.STOMP_HEADER,
        "NACK",
        Status.VERIFIED,
        "redelivery through the broker",
        recordings=("tests/conformance/recordings/stomp_nack.json",),
    ),
    Feature(
        "stomp-jms-headers",
        Kind.STOMP_HEADER,
        "SEND headers as JMS properties, MESSAGE headers from JMS",
        Status.VERIFIED,
        "every other header is a String property",
        recordings=("tests/conformance/recordings/stomp_jms_interop.json",),
    ),
    Feature(
        "stomp-message-type",
        Kind.STOMP_HEADER,
        "SEND `amq-msg-type`",
        Status.IMPLEMENTED,
        "text or bytes",
        tests=(f"{_STOMP_PROTOCOL}::test_amq_msg_type",),
    ),
    Feature(
        "stomp-browser",
        Kind.STOMP_HEADER,
        "SUBSCRIBE `browser:true`",
        Status.IMPLEMENTED,
        "a queue browser (with `selector`), ended by a `browser:end` MESSAGE",
        "browser",
        tests=(f"{_STOMP_PROTOCOL}::test_queue_browser", f"{_STOMP_PROTOCOL}::test_queue_browser_with_a_selector"),
    ),
    Feature(
        "stomp-selector",
        Kind.STOMP_HEADER,
        "SUBSCRIBE `selector`",
        Status.IMPLEMENTED,
        "string headers compared as numbers and booleans",
        "selector",
        tests=(f"{_STOMP_PROTOCOL}::test_selector",),
    ),
    Feature(
        "stomp-ack-modes",
        Kind.STOMP_HEADER,
        "SUBSCRIBE `ack:client`, `ack:client-individual`",
        Status.VERIFIED,
        "cumulative and individual acks",
        "ack",
        recordings=("tests/conformance/recordings/stomp_*ack*.json",),
    ),
    # -- connection URIs --------------------------------------------------------------------------------------------
    Feature(
        "tcp-uri",
        Kind.CONNECTION_URI,
        "`tcp://host:port`",
        Status.IMPLEMENTED,
        "the native protocol",
        "tcp://127.0.0.1:61616",
        tests=("tests/transport/test_tcp.py",),
    ),
    Feature(
        "uri-options",
        Kind.CONNECTION_URI,
        "`tcp://h:p?jms.prefetchPolicy.all=1` and other URI options",
        Status.REFUSED,
        "pass connect() keywords; RedeliveryPolicy.from_uri_options reads jms.redeliveryPolicy.*",
        "tcp://127.0.0.1:61616?jms.prefetchPolicy.all=1",
    ),
    Feature(
        "redelivery-uri-options",
        Kind.CONNECTION_URI,
        "`jms.redeliveryPolicy.*`",
        Status.IMPLEMENTED,
        "RedeliveryPolicy.from_uri_options",
        tests=("tests/test_redelivery.py",),
    ),
    Feature(
        "failover-uri",
        Kind.CONNECTION_URI,
        "`failover:(tcp://…)?…`",
        Status.REFUSED,
        "in-process, connect(broker, fault_tolerant=True) behaves like failover:",
        "failover:(tcp://a:61616)",
    ),
    Feature(
        "prefetch-policy",
        Kind.CONNECTION_URI,
        "`jms.prefetchPolicy.*` (connect(prefetch=…), prefetch=)",
        Status.VERIFIED,
        "queue 1000, topic 32767, 0 is pull; an in-process AUTO consumer's window is refilled once half of it is free"
        " (when ActiveMQ refills after acks is its dispatch thread's choice)",
        recordings=("tests/conformance/recordings/prefetch_*.json",),
    ),
    Feature(
        "redelivery-policy",
        Kind.CONNECTION_URI,
        "`jms.redeliveryPolicy.*` (connect(redelivery_policy=…))",
        Status.VERIFIED,
        "delays, back-off, maximum redeliveries",
        recordings=(
            "tests/conformance/recordings/exponential_backoff*.json",
            "tests/conformance/recordings/maximum_redeliveries_zero.json",
        ),
    ),
    Feature(
        "fault-tolerant",
        Kind.CONNECTION_URI,
        "failover duplicate suppression (fault_tolerant=True)",
        Status.IMPLEMENTED,
        "poison-acks duplicates as ActiveMQ",
        tests=("tests/client/test_failover.py",),
    ),
    Feature(
        "transport-scheme",
        Kind.CONNECTION_URI,
        "`vm://`, `nio://`, `amqp://`, `stomp://`, …",
        Status.REFUSED,
        "connect to a Broker object in-process, or tcp:// / ssl:// to a listener",
        "vm://localhost",
    ),
    Feature(
        "ssl-transport",
        Kind.CONNECTION_URI,
        "`ssl://HOST:PORT` and `stomp+ssl://` listeners",
        Status.IMPLEMENTED,
        "start_server(..., ssl=) / start_stomp_server(..., ssl=); connect(url, ssl=context)",
        tests=("tests/plugins/test_tls.py",),
    ),
    # -- MQTT (plugins/mqtt) ----------------------------------------------------------------------------------------
    Feature(
        "mqtt-transport",
        Kind.MQTT,
        "`mqtt://` and `mqtt+ssl://` listeners, MQTT 3.1 and 3.1.1",
        Status.IMPLEMENTED,
        "`minibroker serve --mqtt-port/--mqtt-ssl-port`, `[server] mqtt_port`, start_mqtt_server(), the "
        "`minibroker_mqtt` fixture; a malformed packet closes its connection only",
        tests=(f"{_MQTT}test_serve_mqtt.py", f"{_MQTT}test_fuzz.py", f"{_MQTT}test_codec.py"),
    ),
    Feature(
        "mqtt-topic-mapping",
        Kind.MQTT,
        "MQTT topic `a/b/c`, filters `+` and `#`",
        Status.VERIFIED,
        "ActiveMQ topic `a.b.c` (`/` and `.` trade places), wildcards `*` and `>`: MQTT, STOMP and JMS-style clients "
        "share topics",
        tests=(f"{_MQTT}test_paho.py::test_jms_and_mqtt_share_topics_as_activemq_maps_them",),
        recordings=(f"{_MQTT}recordings/jms_interop.json",),
    ),
    Feature(
        "mqtt-qos",
        Kind.MQTT,
        "PUBLISH QoS 0, 1, 2 and their acknowledgements",
        Status.VERIFIED,
        "persistent unless QoS 0, `ActiveMQ.MQTT.QoS` kept; delivered at the lower of the message's and the "
        "subscription's QoS (a JMS message: 0 if persistent, 1 if not, as ActiveMQ's converter)",
        tests=(f"{_MQTT}test_paho.py::test_qos_0_1_2_and_the_delivered_qos_is_the_lower_of_the_two",),
        recordings=(f"{_MQTT}recordings/qos_flows.json",),
    ),
    Feature(
        "mqtt-retain",
        Kind.MQTT,
        "PUBLISH with the retain flag",
        Status.VERIFIED,
        "ActiveMQ's retained message policy: the last one per topic goes first to each new subscription; an empty "
        "one clears it",
        tests=(f"{_MQTT}test_paho.py::test_a_retained_message_reaches_later_subscribers_until_cleared",),
        recordings=(f"{_MQTT}recordings/retained.json",),
    ),
    Feature(
        "mqtt-persistent-session",
        Kind.MQTT,
        "CONNECT with clean session false",
        Status.VERIFIED,
        "a QoS 1/2 subscription is a durable subscription `<QoS>:<filter>` of the client id (in `stat`, kept with "
        "--data-dir); a clean session removes them",
        tests=(
            f"{_MQTT}test_paho.py::test_a_persistent_session_keeps_qos_1_messages_as_a_durable_subscription",
            f"{_MQTT}test_serve_mqtt.py",
        ),
        recordings=(f"{_MQTT}recordings/persistent_session.json",),
    ),
    Feature(
        "mqtt-will",
        Kind.MQTT,
        "CONNECT with a will",
        Status.VERIFIED,
        "published when the connection is lost or dropped for silence, not after DISCONNECT",
        tests=(f"{_MQTT}test_paho.py::test_the_will_is_published_when_the_connection_is_lost",),
        recordings=(f"{_MQTT}recordings/will.json",),
    ),
    Feature(
        "mqtt-client-id",
        Kind.MQTT,
        "CONNECT client id and credentials",
        Status.VERIFIED,
        "a client id in use is taken over (ActiveMQ's MQTT link stealing); an empty one needs a clean session "
        "(else CONNACK 2); credentials checked by the broker's users (refused: CONNACK 5); keep-alive: dropped after "
        "1.5 periods of silence, its will published (recorded: keepalive.json)",
        tests=(
            f"{_MQTT}test_paho.py::test_a_second_connection_with_a_client_id_takes_it_over",
            f"{_MQTT}test_paho.py::test_credentials_go_to_the_broker_s_users",
            f"{_MQTT}test_aiomqtt.py::test_a_silent_client_is_dropped_after_one_and_a_half_keep_alives",
        ),
        recordings=(f"{_MQTT}recordings/client_ids.json", f"{_MQTT}recordings/keepalive.json"),
    ),
    Feature(
        "mqtt-subscription-strategy",
        Kind.MQTT,
        "the MQTT transport's `subscriptionStrategy` (`mqtt-virtual-topic-subscriptions`)",
        Status.IMPLEMENTED,
        '`[server] mqtt_subscription_strategy = "virtual-topic"` / start_mqtt_server(subscription_strategy=): '
        "publishes to `VirtualTopic.<topic>`, persistent QoS 1/2 subscriptions as queues `Consumer.<client id>:<QoS>."
        "VirtualTopic.<topic>` (to one topic: a wildcard filter is refused in SUBACK)",
        tests=(f"{_MQTT}test_paho.py::test_the_virtual_topic_strategy_keeps_a_persistent_session_in_a_queue",),
    ),
    Feature(
        "mqtt-protocol-name",
        Kind.MQTT,
        "CONNECT protocol name and level",
        Status.VERIFIED,
        "`MQTT` level 4 (3.1.1) and `MQIsdp` level 3 (3.1) are accepted; any other name, or a name with the other "
        "level, closes the socket without a CONNACK (a level other than 3 and 4: CONNACK 1)",
        recordings=(f"{_MQTT}recordings/connect_protocol.json",),
    ),
    Feature(
        "mqtt-dollar-topics",
        Kind.MQTT,
        "PUBLISH to a topic starting with `$` (the transport's `publishDollarTopics`)",
        Status.VERIFIED,
        "off by default, as ActiveMQ's: acknowledged and dropped, no subscriber gets it; "
        "start_mqtt_server(publish_dollar_topics=True) delivers it like any other",
        tests=(f"{_MQTT}test_dollar_topics.py",),
        recordings=(f"{_MQTT}recordings/dollar_topics.json",),
    ),
    Feature(
        "mqtt-session-present",
        Kind.MQTT,
        "CONNACK's session present flag",
        Status.VERIFIED,
        "always 0, also when a persistent session reconnects to the subscriptions it kept (ActiveMQ 5.17's MQTT "
        "connector never sets it); its unacknowledged QoS 1 messages come again with the dup flag",
        recordings=(f"{_MQTT}recordings/redelivery_on_reconnect.json", f"{_MQTT}recordings/keepalive.json"),
    ),
    Feature(
        "mqtt-subscribe-filters",
        Kind.MQTT,
        "SUBSCRIBE and UNSUBSCRIBE filters: overlapping, malformed, never subscribed",
        Status.VERIFIED,
        "two filters of one client matching a topic deliver it twice, once at each filter's QoS; a malformed filter "
        "(`#` not last, a wildcard inside a level) closes the connection without a SUBACK; UNSUBSCRIBE of a filter "
        "never subscribed is acknowledged (the Paho interoperability suite's checks, recorded)",
        recordings=(
            f"{_MQTT}recordings/overlapping_subscriptions.json",
            f"{_MQTT}recordings/subscribe_failure.json",
            f"{_MQTT}recordings/unsubscribe.json",
        ),
    ),
    Feature(
        "mqtt-qos-property",
        Kind.MQTT,
        "`ActiveMQ.MQTT.QoS` on a message from another edge (a STOMP header, a JMS property)",
        Status.VERIFIED,
        "read as ActiveMQ's getIntProperty reads it (a number, or text holding one): the subscriber gets the lower of "
        "it and its subscription's QoS; without it, 0 for a persistent message and 1 for a non-persistent one "
        "(ActiveMQ's inversion)",
        recordings=(
            f"{_WIRE}w1-002.json",
            f"{_WIRE}w1-005.json",
            f"{_WIRE}basic-mqtt.json",
        ),
    ),
    Feature(
        "mqtt-advisories",
        Kind.MQTT,
        "an MQTT subscription that reads advisory topics (`ActiveMQ/Advisory/#`, `#`)",
        Status.VERIFIED,
        "advisories with an empty payload (ActiveMQ's carry a data structure, no content); `#` gets the master "
        "broker advisory's last image first",
        recordings=(
            f"{_WIRE}w1-010.json",
            f"{_WIRE}w1-020.json",
            f"{_WIRE}w1-046.json",
        ),
    ),
    Feature(
        "mqtt-qos2-order",
        Kind.MQTT,
        "the order of a QoS 2 delivery's PUBREL and the next PUBLISH to the same subscriber",
        Status.IMPLEMENTED,
        "no order to reproduce: ActiveMQ writes the PUBREL on the transport's thread and dispatches on another, and "
        "the two race (its runs disagree); minibroker writes them in the order they happen. The wire corpus syncs "
        "between a QoS 2 and the next publish",
        tests=("tests/wire_oracle/test_wire_oracle.py::test_replay",),
    ),
    # -- OpenWire (plugins/openwire: the converter answers each with an ExceptionResponse naming it) ---------------
    Feature(
        "openwire-transport",
        Kind.OPENWIRE,
        "ActiveMQ's JMS client (`activemq-client` 5.17) with `tcp://HOST:PORT`, `ssl://`, `failover:(...)`",
        Status.IMPLEMENTED,
        "`minibroker serve` on its own port (61616, as ActiveMQ; `--ssl-port` over TLS) beside the native protocol, "
        "told apart by each client's first bytes as ActiveMQ's `auto` transport does, or alone on `--openwire-port "
        "PORT`; `minibroker_openwire` and `start_openwire_server` in tests: OpenWire v12 in its loose encoding (the "
        "server's offer, which the client's negotiation takes), every JMS body, consumer option, ack type, local "
        "transactions, temporary destinations, keep-alive, producer windows",
        tests=(
            "tests/plugins/openwire/test_serve_openwire.py::test_the_java_client_and_the_native_client_share_serves_port",
            "tests/plugins/openwire/test_serve_openwire.py::test_an_openwire_port_of_its_own",
            "tests/plugins/openwire/test_java_client.py::test_scenario",
        ),
    ),
    Feature(
        "openwire-failover-producer-audit",
        Kind.OPENWIRE,
        "a `failover:` client's sends resent after a reconnect (`ConnectionInfo.failoverReconnect`): the broker's "
        "producer audit (`ProducerBrokerExchange.canDispatch`, KahaDB's `producerSequenceIdTracker`)",
        Status.IMPLEMENTED,
        "a persistent send at or below its producer's last stored sequence is dropped and answered; the store keeps "
        "the last sequence of 1000 producers with the messages, so a restart (SIGKILL too) and a message consumed "
        "before it do not let the resent copy in; non-persistent sends and first connections are not checked",
        tests=(
            "tests/plugins/openwire/test_failover.py::test_an_in_flight_send_resent_after_a_restart_is_dropped",
            "tests/core/test_producer_audit.py",
        ),
    ),
    Feature(
        "openwire-failover-duplicate-delivery",
        Kind.OPENWIRE,
        "the client's connection audit (`checkForDuplicates` on a `failover:` connection): a POISON ack "
        '"Suppressing duplicate delivery on connection, consumer <id>" for a message dispatched again after a '
        "reconnect that the client had delivered",
        Status.IMPLEMENTED,
        "the message goes to the DLQ with that cause in `dlqDeliveryFailureCause`; the test runs the same client "
        "against an embedded ActiveMQ 5.17.2 and expects the same lines",
        tests=(
            "tests/plugins/openwire/test_failover.py::"
            "test_redispatched_deliveries_are_poison_acked_by_the_clients_audit",
        ),
    ),
    Feature(
        "openwire-xa-transaction",
        Kind.OPENWIRE,
        "an XA transaction (XATransactionId, TransactionInfo PREPARE/END/RECOVER/FORGET/two-phase commit)",
        Status.REFUSED,
        "minibroker has local transactions only",
        "TransactionInfo PREPARE",
    ),
    Feature(
        "openwire-network-bridge",
        Kind.OPENWIRE,
        "a network bridge or broker-to-broker command (BrokerInfo from a client, duplex or network "
        "ConnectionInfo, network subscriptions, MessageDispatchNotification, BrokerSubscriptionInfo)",
        Status.REFUSED,
        "minibroker is a single broker",
        "BrokerInfo",
    ),
    Feature(
        "openwire-blob-message",
        Kind.OPENWIRE,
        "a BlobMessage",
        Status.REFUSED,
        "minibroker does not fetch or store blobs",
        "ActiveMQBlobMessage",
    ),
    Feature(
        "openwire-nested-property",
        Kind.OPENWIRE,
        "a message property holding a map or a list (ActiveMQ's nested properties)",
        Status.REFUSED,
        "minibroker's property values are JMS primitives",
        "a property holding a map",
    ),
    Feature(
        "openwire-replay",
        Kind.OPENWIRE,
        "a ReplayCommand or a PartialCommand (reliable UDP)",
        Status.REFUSED,
        "minibroker speaks TCP only",
        "ReplayCommand",
    ),
    Feature(
        "openwire-control-command",
        Kind.OPENWIRE,
        "a ControlCommand, or a ConsumerControl that closes, flushes, starts or stops a consumer (one that changes "
        "a consumer's prefetch is carried out: `BrokerConnection.set_prefetch`)",
        Status.REFUSED,
        "ActiveMQ's broker or its tools send these; a JMS client does not send them to a broker",
        "ControlCommand shutdown",
    ),
    Feature(
        "openwire-unknown-command",
        Kind.OPENWIRE,
        "a command the broker never receives (a Response, a MessageDispatch, ...)",
        Status.REFUSED,
        "it has no meaning sent to a broker",
        "Response",
    ),
    # -- broker configuration ---------------------------------------------------------------------------------------
    Feature(
        "config-policies",
        Kind.BROKER_CONFIG,
        "policy entries (dead letters, limits, priorities) by wildcard",
        Status.IMPLEMENTED,
        '[destinations."pattern"] in broker.toml',
        tests=("tests/test_config.py",),
    ),
    Feature(
        "config-unknown-key",
        Kind.BROKER_CONFIG,
        "any key minibroker does not know",
        Status.IMPLEMENTED,
        "a ConfigError naming the key, never ignored",
        tests=("tests/test_config.py",),
    ),
    Feature(
        "config-redelivery-plugin",
        Kind.BROKER_CONFIG,
        "`redeliveryPlugin` (RedeliveryPlugin, [redelivery])",
        Status.VERIFIED,
        "broker-side redelivery through the scheduler",
        recordings=(
            "tests/conformance/recordings/redelivery_plugin*.json",
            "tests/conformance/recordings/stomp_redelivery_plugin.json",
        ),
    ),
    Feature(
        "config-dead-letter-strategy",
        Kind.BROKER_CONFIG,
        "`individualDeadLetterStrategy`",
        Status.VERIFIED,
        'DestinationPolicy(dead_letter_strategy="individual", queue_prefix=…)',
        recordings=("tests/conformance/recordings/individual_dlq_strategy.json",),
    ),
    Feature(
        "config-pending-message-limit",
        Kind.BROKER_CONFIG,
        "`pendingMessageLimitStrategy` (`constantPendingMessageLimitStrategy`) on topics",
        Status.VERIFIED,
        "DestinationPolicy(pending_message_limit=N), 1000 by default as in the stock activemq.xml: a slow non-durable "
        "subscriber's oldest waiting messages are discarded (persistent ones to the DLQ, `TopicSubDiscard`)",
        recordings=(f"{_FEATURES}topic_pending_limit_*.json",),
    ),
    Feature(
        "config-scheduler",
        Kind.BROKER_CONFIG,
        "`schedulerSupport`",
        Status.IMPLEMENTED,
        "Broker(scheduler_support=True)",
        tests=("tests/client/test_delay_levels.py",),
    ),
    Feature(
        "config-network",
        Kind.BROKER_CONFIG,
        "`networkConnectors`, `persistenceAdapter`, JMX, …",
        Status.NOT_APPLICABLE,
        "one broker in one process; persistence is --data-dir",
    ),
    Feature(
        "config-shared-storage-master-slave",
        Kind.BROKER_CONFIG,
        "shared-storage master/slave: a second broker on a locked data directory (`SharedFileLocker`, "
        "`lockAcquireSleepInterval`, `failIfLocked`)",
        Status.IMPLEMENTED,
        "`serve --wait-for-lock` (`[server] wait_for_lock`) waits for the directory's lock, trying every "
        "`--lock-retry-interval` seconds (10, ActiveMQ's default), binding no port, and starts when the master stops; "
        'without it a held directory is refused, as with ActiveMQ\'s `failIfLocked="true"` (docs/failover.md says '
        "why); JDBC and lease lockers have no counterpart (one SQLite file)",
        tests=(
            "tests/plugins/openwire/test_master_slave.py::test_the_slave_takes_over_and_the_client_carries_on",
            "tests/plugins/test_serve_master_slave.py",
        ),
    ),
    Feature(
        "config-authorization",
        Kind.BROKER_CONFIG,
        "`simpleAuthenticationPlugin` users and an `authorizationPlugin` map (`[users]`, `[[authorization]]`)",
        Status.VERIFIED,
        "ActiveMQ's rules on every edge alike (the connection object authorizes every operation): a composite gets "
        "the rights every part has an entry for (entries with equal rights count as one), a wildcard subscription "
        "those of every entry under it and then reads only the destinations its user may read, temporary "
        "destinations are their owner's (another connection's is browsed or purged only by a user the entries let "
        "administer it by name), and creating one needs `admin` on `topic://ActiveMQ.Advisory.TempQueue`/`TempTopic` "
        "as ActiveMQ's advisory creates that topic with the client's rights (ActiveMQ checks only while the topic does "
        "not exist yet; minibroker keeps no advisory topics and checks every time); refusals with ActiveMQ's texts. "
        "One recorded difference: ActiveMQ refuses a "
        "plain subscription to a queue, with a composite's name, after an allowed composite consumer on it came and "
        "went (a leftover of its composite handling); minibroker allows it",
        tests=(
            "tests/test_authorization_matrix.py",
            "tests/plugins/test_auth.py",
            "tests/transport_kit/test_kit.py",
            f"{_HTTP}test_security.py::test_another_connections_temporary_queue",
        ),
        recordings=("tests/auth_oracle/recordings/auth_cases.json",),
    ),
    # -- consumers, sessions and connections (the client API) ------------------------------------------------------
    Feature(
        "consumer-selector",
        Kind.CLIENT_API,
        "message selectors (create_consumer(selector=…))",
        Status.VERIFIED,
        "JMS selector grammar: LIKE/ESCAPE, IN, BETWEEN, IS NULL, arithmetic, JMS headers, invalid selectors",
        recordings=(f"{_FEATURES}feat_selector_*.json",),
    ),
    Feature(
        "durable-subscriber",
        Kind.CLIENT_API,
        "`session.create_durable_subscriber(topic, name, selector=, no_local=)`, `session.unsubscribe(name)`, "
        "`connect(client_id=...)`",
        Status.VERIFIED,
        "JMS's rules in ActiveMQ's words: a client id is required, one active subscriber per name, another topic or "
        "selector replaces the subscription, unsubscribe refused while active; offline messages kept (non-persistent "
        "too) with queue rules (acks, redelivery, DLQ with `topic://T` as original destination); going offline counts "
        "a redelivery for every message up to the last one delivered, and a transacted rollback of a redelivered "
        "message makes the subscription forget its count (so transacted rounds never leave more than one)",
        recordings=(
            f"{_FEATURES}mixed_durable_pending_in_prefetch.json",
            f"{_FEATURES}mixed_dups_ok_durable_close_session.json",
            f"{_FEATURES}mixed_dups_ok_durable_close_connection.json",
            f"{_FEATURES}mixed_durable_rollback_close_once.json",
            f"{_FEATURES}mixed_durable_client_close_twice.json",
            f"{_FEATURES}mixed_durable_rollback_close_twice.json",
            f"{_FEATURES}durable_*.json",
        ),
    ),
    Feature(
        "queue-browser",
        Kind.CLIENT_API,
        "queue browsers (`create_browser(queue, selector=...)`)",
        Status.VERIFIED,
        "queued and in-flight messages, acked ones hidden; with a selector only matching ones, and "
        "`maxBrowsePageSize` counts those",
        recordings=(
            f"{_FEATURES}mixed_browse_order_persistent_first.json",
            "tests/conformance/recordings/queue_browser.json",
            f"{_FEATURES}feat_browse_inflight_and_acked.json",
            f"{_FEATURES}browse_selector_*.json",
        ),
    ),
    Feature(
        "client-ack-order",
        Kind.CLIENT_API,
        "CLIENT acknowledge after out-of-order receipt",
        Status.VERIFIED,
        "one range ack that ActiveMQ cannot match acks nothing; a transacted commit consumes all",
        recordings=(
            f"{_FEATURES}priority_client_ack_reordered_false.json",
            f"{_FEATURES}nonblocking_*_out_of_order.json",
        ),
    ),
    Feature(
        "close-rolls-back",
        Kind.CLIENT_API,
        "closing a transacted session or connection",
        Status.VERIFIED,
        "rolls back through the redelivery policy: past the limit, the DLQ",
        recordings=(f"{_FEATURES}close_*_after_rollback_dlq.json",),
    ),
    Feature(
        "connection-start",
        Kind.CLIENT_API,
        "connect(start=False) / start() / stop()",
        Status.VERIFIED,
        "a stopped connection holds prefetched messages back from receive()",
        recordings=(f"{_FEATURES}connect_start_false.json",),
    ),
    # -- HTTP (plugins/http): ActiveMQ's web module has no Debian package to record, so these rows follow its
    # sources (activemq-web MessageServlet, BrokerMBeanSupport, the Jolokia 1.7.1 agent it ships) and are tested
    Feature(
        "http-listener",
        Kind.HTTP,
        "the web module's HTTP connector (port 8161)",
        Status.IMPLEMENTED,
        "`serve --http-port` / `[server] http_port` (off unless given; `--https-port` over TLS); bounded requests, "
        "head, whole-body (30 s) and idle deadlines, a 4xx for bad input; its own count of sockets, apart from the "
        "other listeners' `max_connections`; a `Host` check against DNS rebinding (loopback names, addresses, the "
        "machine's and the listener's names; Jetty answers any `Host`); `nosniff` and a Content-Security-Policy on "
        "every answer",
        tests=(
            f"{_HTTP}test_listener.py",
            f"{_HTTP}test_serve_http.py",
            f"{_HTTP}test_fuzz.py",
            f"{_HTTP}test_security.py",
        ),
    ),
    Feature(
        "http-users",
        Kind.HTTP,
        "the web console's users (`jetty-realm.properties`, `admin`/`admin`)",
        Status.IMPLEMENTED,
        "HTTP basic authentication against the broker's own users and authorization entries instead: reads need "
        "`read`, purge/delete/move/retry `admin`, sends `write`; a wrong login is 401 (realm `ActiveMQRealm`)",
        tests=(f"{_HTTP}test_listener.py", f"{_HTTP}test_jolokia.py::test_mutations_need_admin_rights"),
    ),
    Feature(
        "jolokia-read",
        Kind.HTTP,
        "Jolokia `read` (GET path or POST, one attribute, several, all, a pattern, an inner path)",
        Status.IMPLEMENTED,
        "ActiveMQ's object names and attribute names; answers in Jolokia 1.x's shape, names canonical; HTTP 200 "
        "with `status` in the body",
        tests=(f"{_HTTP}test_jolokia.py",),
    ),
    Feature(
        "jolokia-exec",
        Kind.HTTP,
        "Jolokia `exec` of a queue's `purge()`, `removeMessage`, `moveMessageTo`, `copyMessageTo`, "
        "`retryMessages()`, `retryMessage`, `browse()`",
        Status.IMPLEMENTED,
        "as ActiveMQ's Queue: only waiting messages are removed or moved (the id is kept, originalDestination set); "
        "retry only on a dead-letter queue, rights checked first; each names one queue (a wildcard or composite "
        "name or target is refused, never expanded); `browse()` rows carry the fields harnesses read "
        "(JMSMessageID, Text, StringProperties, ...), not every CompositeData field",
        tests=(f"{_HTTP}test_jolokia.py", f"{_HTTP}test_security.py::test_remove_message_names_one_queue"),
    ),
    Feature(
        "jolokia-broker-operations",
        Kind.HTTP,
        "Jolokia `exec` on the Broker MBean: `addQueue`, `addTopic`, `removeQueue`, `removeTopic`, "
        "`destroyDurableSubscriber`, `browseQueue`, `gc`",
        Status.IMPLEMENTED,
        "through the request's connection: creating or removing a destination needs `admin` on it (ActiveMQ's "
        "`addDestination`/`removeDestination` check), one destination (no wildcard or composite); removing an absent "
        "one does nothing, a removed queue's messages leave the store. Differences: `removeQueue`/`removeTopic` are "
        "refused (500) while a consumer, a durable subscription or an open transaction holds the destination "
        "(ActiveMQ drops it from under them), and a queue added empty does not outlive a restart (KahaDB keeps it); "
        "`gc` does nothing (the store writes through)",
        tests=(
            f"{_HTTP}test_jolokia.py::test_add_and_remove_queues_and_topics",
            f"{_HTTP}test_jolokia.py::test_a_queue_in_use_is_not_removed",
            f"{_HTTP}test_jolokia.py::test_creating_and_removing_needs_admin_rights",
        ),
    ),
    Feature(
        "jolokia-broker-refused",
        Kind.HTTP,
        "the Broker MBean's other operations: `createDurableSubscriber`, `resetStatistics`, `enableStatistics`, "
        "`disableStatistics`, `set*Limit`, `stop`, `restart`, `stopGracefully`, `terminateJVM`, `queryQueues`, "
        "`queryTopics`, `addConnector`, `addNetworkConnector`, `removeConnector`, `removeNetworkConnector`, "
        "`reloadLog4jProperties`, `getTransportConnectorByType`",
        Status.NOT_APPLICABLE,
        "listed by `list` as ActiveMQ lists them; run, each is answered as Jolokia answers an operation its policy "
        'forbids (status 403, `java.lang.Exception`, "Operation NAME forbidden for MBean ...") and does nothing: '
        "minibroker has no connectors, JVM, log4j or usage limits to set, its statistics are always on, and an offline "
        "durable subscription is made by a client that subscribes with its client id",
    ),
    Feature(
        "jolokia-bulk",
        Kind.HTTP,
        "a Jolokia bulk request (a POSTed list of requests)",
        Status.IMPLEMENTED,
        "answered as a list, in turns of 50 requests (other clients run between them); at most 1,000 requests and "
        "1 MiB in one POST, a longer list or body is one 400 `IllegalArgumentException` (Jolokia has no such limit)",
        tests=(f"{_HTTP}test_security.py::test_a_jolokia_bulk_runs_in_turns_and_is_bounded",),
    ),
    Feature(
        "jolokia-search-list-version",
        Kind.HTTP,
        "Jolokia `search`, `list`, `version`",
        Status.IMPLEMENTED,
        "the `org.apache.activemq` broker, queue and topic MBeans only (no `java.lang` or `JMImplementation`); "
        "`version` says agent 1.7.1, protocol 7.2",
        tests=(f"{_HTTP}test_jolokia.py",),
    ),
    Feature(
        "jolokia-errors",
        Kind.HTTP,
        "Jolokia errors: unknown MBean, unknown attribute, malformed request, refused",
        Status.IMPLEMENTED,
        "404 `javax.management.InstanceNotFoundException`, 404 `javax.management.AttributeNotFoundException`, 400 "
        "`java.lang.IllegalArgumentException`, 403; no stack trace (ActiveMQ's `allowErrorDetails=false`)",
        tests=(f"{_HTTP}test_jolokia.py",),
    ),
    Feature(
        "jolokia-other-mbeans",
        Kind.HTTP,
        "other MBeans (connections, subscriptions, connectors, JobScheduler, Health, persistence) and `write`",
        Status.NOT_APPLICABLE,
        "not served: an unknown MBean's 404; `write` is a 500 `UnsupportedOperationException`. Usage percentages "
        "read 0, `TotalConnectionsCount` counts the open connections",
    ),
    Feature(
        "jolokia-cross-site",
        Kind.HTTP,
        "Jolokia's CORS `strict-checking` (`jolokia-access.xml`)",
        Status.IMPLEMENTED,
        "a POST or a GET `exec` a browser marks cross-site (`Origin` or `Referer` of another host, `Sec-Fetch-Site`) "
        "is refused with 403; curl and harnesses send none of them",
        tests=(
            f"{_HTTP}test_jolokia.py::test_cross_site_mutations_are_refused",
            f"{_HTTP}test_security.py::test_cross_site_actions_do_nothing",
        ),
    ),
    Feature(
        "rest-send",
        Kind.HTTP,
        "`POST /api/message/DEST?type=queue|topic` (MessageServlet)",
        Status.IMPLEMENTED,
        "a topic unless `type=queue`; `body` or the raw body line by line (a form post's body is parameters); "
        "JMSType, JMSCorrelationID, JMSReplyTo, JMSPriority (5), JMSTimeToLive, JMSDeliveryMode; other parameters "
        "are string properties; `Message sent` and a `messageID` header",
        tests=(f"{_HTTP}test_rest.py",),
    ),
    Feature(
        "rest-consume",
        Kind.HTTP,
        "`GET /api/message/DEST` with `clientId`, `readTimeout`, `oneShot`, a `selector` header",
        Status.IMPLEMENTED,
        "waits up to readTimeout ms (at most and by default 20,000), 204 when none came; the text with its "
        "properties as headers; a clientId keeps its prefetch-1 consumer until oneShot or action=unsubscribe. "
        "Differences: the message is acked once its answer is written to a client still there (ActiveMQ acks as "
        "it receives, so a client gone during the wait lost it); a GET a browser marks cross-site is refused; a "
        "browser asking for a page (`Accept: text/html`) gets the body as text/plain, and every answer is a "
        "sandboxed document (CSP `sandbox`), so a body never runs in the console's origin",
        tests=(
            f"{_HTTP}test_rest.py",
            f"{_HTTP}test_security.py::test_a_long_poll_whose_client_went_acks_nothing",
            f"{_HTTP}test_security.py::test_a_cross_site_get_never_consumes",
            f"{_HTTP}test_security.py::test_every_answer_is_sandboxed_and_not_sniffed",
        ),
    ),
    Feature(
        "rest-http-session",
        Kind.HTTP,
        "a GET without `clientId` (ActiveMQ: a consumer per HTTP session cookie)",
        Status.NOT_APPLICABLE,
        "no session cookies: each such GET is a one-shot consumer. The AJAX servlet (`/api/amq`) is not served",
    ),
    Feature(
        "web-console",
        Kind.HTTP,
        "the web console (`/admin`)",
        Status.IMPLEMENTED,
        "minibroker's own page at `/`, not ActiveMQ's JSPs: destinations with live counts, a queue's messages, a "
        "message with its delivery history as a timeline, purge/delete/move/copy/retry behind a confirmation, "
        "send; connections (with their protocol and remote address), consumers, producers and scheduled jobs (a job "
        "removed as a client's REMOVE request); every listing filtered and sorted; CSRF token and same-origin checks; "
        "a URL with the login in it works; the page "
        "and its files need a login, under a strict `default-src 'self'` policy; a message's history only for the "
        "queue it is on. No network page (minibroker has no network connectors)",
        tests=(
            f"{_HTTP}test_browser.py",
            f"{_HTTP}test_console_api.py",
            f"{_HTTP}test_console_listings.py",
            f"{_HTTP}test_security.py",
        ),
    ),
)

FEATURES_BY_ID: Mapping[str, Feature] = {feature.id: feature for feature in FEATURES}
