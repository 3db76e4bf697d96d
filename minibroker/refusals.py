"""What minibroker refuses, and the one error it raises for it: the checks the core and the edges call.

The table these checks answer to (every ActiveMQ input, with its status, note, tests and recordings) is
:mod:`minibroker.features`, the documentation's source; it is imported only when something is refused, so the
broker does not load a 1,200-line table to send a message. The checks are pure (no clock, no I/O) and cheap:
destination verdicts are memoised per destination, and message properties are looked at only when a message has
some.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import UnsupportedFeature
from .message import Destination, DestinationKind

__all__ = [
    "ACCEPTED_SEND_NAMES",
    "PUBLISHED_ADVISORIES",
    "REFUSED_OPTIONS",
    "body_refusal",
    "check_browser_destination",
    "check_connection_url",
    "check_consumer_destination",
    "check_durable_destination",
    "check_message_properties",
    "check_send_destination",
    "check_stomp_subscribe_headers",
    "refuse",
]


def refuse(feature_id: str, value: object) -> UnsupportedFeature:
    """The error for ``value``, an input of the refused row ``feature_id`` (raise it); the row's words come from
    the table (:mod:`minibroker.features`), imported only when something is refused."""
    from .features import FEATURES_BY_ID

    feature = FEATURES_BY_ID[feature_id]
    return UnsupportedFeature(
        f"Unsupported feature [{feature_id}]: {feature.input} ({value!r}) is not supported by minibroker: "
        f"{feature.note}",
        feature=feature_id,
        value=value,
    )


# -- destinations ----------------------------------------------------------------------------------------------------

#: names a send may go to whatever the kind: the core's send tests ``dest.name not in ACCEPTED_SEND_NAMES`` before
#: calling the check (a str's hash is cached; a Destination's is a Python-level call, about 1% of a send)
ACCEPTED_SEND_NAMES: set[str] = set()
#: consumer destinations already found acceptable
ACCEPTED_CONSUMERS: set[Destination] = set()
_CACHE_LIMIT = 4096
#: the destination options ActiveMQ acts on that minibroker refuses (their rows: ``destination-option-<name>``)
REFUSED_OPTIONS = ("retroactive", "maximumPendingMessageLimit", "networkSubscription")
_OPTION_IDS = {f"consumer.{name}": f"destination-option-{name}" for name in REFUSED_OPTIONS}


def _option_refusal(name: str) -> str | None:
    if "?" not in name:
        return None
    first = name.split("?", 1)[1].split("&", 1)[0].split("=", 1)[0]
    return _OPTION_IDS.get(first, "destination-options")


def _consumer_refusal(dest: Destination) -> str | None:
    name = dest.name
    refusal = _option_refusal(name)
    if refusal is not None:
        return refusal
    if name.startswith("ActiveMQ.Advisory.") and (dest.kind is DestinationKind.QUEUE or not _published(name)):
        return "advisory"
    if name.startswith("ActiveMQ.Scheduler.Management"):
        return "scheduler-management-consumer"
    return None


def _send_refusal(dest: Destination) -> str | None:
    # a send to an advisory topic is a send like any other: ActiveMQ publishes it there, to whoever listens
    # (recorded over STOMP, issue 42), and so does minibroker
    return _option_refusal(dest.name)


def check_durable_destination(dest: Destination) -> None:
    """Refuses a durable subscription to what minibroker cannot keep one for."""
    check_consumer_destination(dest)


#: the advisory topics the broker publishes (``_core/advisory.py``), which are every one ActiveMQ publishes under
#: its default policy: a subscriber to any other (slow consumers, fast producers, full, discarded, delivered and
#: consumed messages: a policy turns them on, and minibroker has no such policy) is refused
PUBLISHED_ADVISORIES = (
    "ActiveMQ.Advisory.Consumer.",
    "ActiveMQ.Advisory.Producer.",
    "ActiveMQ.Advisory.Expired.",
    "ActiveMQ.Advisory.MessageDLQd.",
)
PUBLISHED_ADVISORY_TOPICS = frozenset(
    "ActiveMQ.Advisory." + name for name in ("Connection", "Queue", "Topic", "TempQueue", "TempTopic", "MasterBroker")
)


def _published(name: str) -> bool:
    """A published advisory topic, or a wildcard or composite over advisory topics (it hears the published ones,
    as it would on ActiveMQ with its default policy)."""
    if "," in name:
        parts = [part.split("://", 1)[-1] for part in name.split(",")]
        return all(_published(part) for part in parts if part.startswith("ActiveMQ.Advisory."))
    if name in PUBLISHED_ADVISORY_TOPICS or name.startswith(PUBLISHED_ADVISORIES):
        return True
    return "*" in name or ">" in name


def check_browser_destination(dest: Destination) -> None:
    """Refuses a browser on what a consumer may read but a browser may not: several queues at once."""
    check_consumer_destination(dest)
    if "," in dest.name or "*" in dest.name or ">" in dest.name:
        raise refuse("wildcard-browser", str(dest))


def check_consumer_destination(dest: Destination) -> None:
    """Refuses a consumer (or browser) on a destination ActiveMQ reads as more than a plain name."""
    if dest in ACCEPTED_CONSUMERS:
        return
    refusal = _consumer_refusal(dest)
    if refusal is not None:
        raise refuse(refusal, str(dest))
    if len(ACCEPTED_CONSUMERS) >= _CACHE_LIMIT:
        ACCEPTED_CONSUMERS.clear()
    ACCEPTED_CONSUMERS.add(dest)


def check_send_destination(dest: Destination) -> None:
    """Refuses a send to a destination ActiveMQ reads as more than a plain name (a wildcard name is not: ActiveMQ
    fills a queue of that literal name, and so does minibroker)."""
    refusal = _send_refusal(dest)
    if refusal is not None:
        raise refuse(refusal, str(dest))
    other = Destination(DestinationKind.TOPIC if dest.is_queue else DestinationKind.QUEUE, dest.name)
    if _send_refusal(other) is None:  # remembered by name only when the name is fine as a queue and as a topic
        if len(ACCEPTED_SEND_NAMES) >= _CACHE_LIMIT:
            ACCEPTED_SEND_NAMES.clear()
        ACCEPTED_SEND_NAMES.add(dest.name)


# -- message bodies --------------------------------------------------------------------------------------------------


def body_refusal(body: object) -> UnsupportedFeature:
    """The error for a body minibroker does not build (None: a Message without a body): raise it."""
    return refuse("bodiless-message", type(body).__name__)


# -- message properties ----------------------------------------------------------------------------------------------

#: properties ActiveMQ's client turns into message headers (ActiveMQMessage's property setters)
_HEADER_PROPERTIES = {
    "JMSXGroupID": "group-id-property",
    "JMSXGroupSeq": "group-seq-property",
    "JMSXDeliveryCount": "delivery-count-property",
    "JMSXUserID": "user-id-property",
    **dict.fromkeys(
        (
            "JMSCorrelationID",
            "JMSDeliveryMode",
            "JMSExpiration",
            "JMSPriority",
            "JMSRedelivered",
            "JMSReplyTo",
            "JMSTimestamp",
            "JMSType",
            "JMSMessageID",
            "JMSDestination",
        ),
        "jms-header-property",
    ),
}
_SCHEDULE_PROPERTIES: dict[str, str] = {}
_NO_EFFECT = (None, 0, "", "0")


def check_message_properties(properties: Mapping[str, object], scheduler_support: bool) -> None:
    """Refuses properties ActiveMQ reads as headers or, with its scheduler on, as a repeating or cron schedule.

    Callers skip it for a message without properties; names not starting with ``JMS`` or ``AMQ_`` cost one
    ``startswith`` each."""
    for name in properties:
        if not name.startswith(("JMS", "AMQ_")):
            continue
        feature = _HEADER_PROPERTIES.get(name)
        if feature is None and scheduler_support:
            feature = _SCHEDULE_PROPERTIES.get(name)
            if feature is not None and properties[name] in _NO_EFFECT:
                feature = None  # a period, repeat or cron of zero schedules nothing more than a plain send
        if feature is not None:
            raise refuse(feature, f"{name}={properties[name]!r}")


# -- STOMP -----------------------------------------------------------------------------------------------------------

_STOMP_SUBSCRIBE_HEADERS = {
    "activemq.retroactive": "stomp-retroactive",
    "activemq.maximumPendingMessageLimit": "stomp-pending-limit",
}


def check_stomp_subscribe_headers(headers: Mapping[str, str]) -> None:
    """Refuses SUBSCRIBE headers ActiveMQ's STOMP connector acts on and minibroker does not."""
    for name, feature in _STOMP_SUBSCRIBE_HEADERS.items():
        value = headers.get(name)
        if value is not None and not (feature == "stomp-retroactive" and value == "false"):
            raise refuse(feature, f"{name}:{value}")


# -- connections -----------------------------------------------------------------------------------------------------


def check_connection_url(url: str) -> None:
    """Refuses a broker URL whose transport or options minibroker would otherwise ignore."""
    if url.startswith("failover:"):
        raise refuse("failover-uri", url)
    if not url.startswith(("tcp://", "ssl://")):
        raise refuse("transport-scheme", url)
    if "?" in url:
        raise refuse("uri-options", url)
