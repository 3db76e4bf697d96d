"""Every exception minibroker raises, in one tree.

Why one module: an application catches ``MinibrokerError`` and knows it has seen all of them; a test asserts on a
precise subclass whose meaning matches the JMS exception ActiveMQ would throw in the same place.

Errors carry the offending value as attributes and a stable ``code`` so that the network edge can turn them into
error frames (and back) without parsing messages.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "AccessDenied",
    "BrokerClosed",
    "ConnectionClosed",
    "ConsumerClosed",
    "DestinationDoesNotExist",
    "DestinationInUse",
    "DurableSubscriptionError",
    "FilterValidationError",
    "FrameTooLarge",
    "IllegalStateError",
    "InvalidAcknowledge",
    "InvalidClientIdError",
    "InvalidConfiguration",
    "InvalidDestination",
    "InvalidSelector",
    "LimitExceeded",
    "LocalProtocolError",
    "MessageEOFError",
    "MessageFormatError",
    "MinibrokerError",
    "NullValueError",
    "NumberFormatError",
    "ProtocolError",
    "PublishInterrupted",
    "RemoteProtocolError",
    "SessionClosed",
    "SettleTimeout",
    "StaleEpoch",
    "StoreError",
    "StoreUnusable",
    "TransactionError",
    "TransactionRolledBack",
    "UnsupportedFeature",
    "UnsupportedOperation",
]


class MinibrokerError(Exception):
    """Root of every minibroker error. ``code`` is stable and travels in error frames.

    The values an error carries are *fields*: each class declares them, with their types, as class annotations
    (None when the raiser did not know the value). The constructor takes them as keywords and refuses any name
    the class does not declare, so an error never carries an unnamed bag of values.
    """

    code: ClassVar[str] = "error"
    message: str

    def __init__(self, message: str = "", **fields: object) -> None:
        super().__init__(message)
        self.message = message
        declared = self.fields()
        for name, value in fields.items():
            if name not in declared:
                raise TypeError(f"{type(self).__name__} has no field {name!r} (its fields: {', '.join(declared)})")
            setattr(self, name, value)

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        """The names of the values this class of error carries, its own and its parents'."""
        names = _FIELDS.get(cls)
        if names is None:
            import inspect  # only when an error with fields is first built

            found: dict[str, None] = {}
            for klass in reversed(cls.__mro__):
                if issubclass(klass, MinibrokerError):
                    found.update(dict.fromkeys(n for n in inspect.get_annotations(klass) if n not in _NOT_FIELDS))
            names = _FIELDS[cls] = tuple(found)
        return names


_NOT_FIELDS = frozenset({"code", "message"})
_FIELDS: dict[type[MinibrokerError], tuple[str, ...]] = {}


class IllegalStateError(MinibrokerError):
    """The call is not allowed in the object's current state (JMS ``IllegalStateException``).

    Examples: ``recover()`` on a transacted session, ``commit()`` on a non-transacted one, a synchronous
    ``receive()`` on a session that has a listener.
    """

    code = "illegal-state"
    #: the connection, session or consumer the call was made on
    connection_id: int | None = None
    session_id: object = None
    consumer_id: object = None
    #: a setting that makes the state illegal (the redelivery plugin's policy)
    policy: object = None


class ConnectionClosed(IllegalStateError):
    """The connection is closed (by the application, the broker, or a dropped transport)."""

    code = "connection-closed"
    url: str | None = None
    #: the error that closed it, when the broker sent one
    cause: object = None


class SessionClosed(IllegalStateError):
    """The session is closed."""

    code = "session-closed"


class ConsumerClosed(IllegalStateError):
    """The consumer is closed: ``acknowledge()`` after close is refused, as in ActiveMQ ("The Consumer is closed")."""

    code = "consumer-closed"


class BrokerClosed(IllegalStateError):
    """The broker has been stopped."""

    code = "broker-closed"


class TransactionError(MinibrokerError):
    """A transaction could not be used or completed (JMS ``TransactionInProgressException`` and friends)."""

    code = "transaction"
    transaction_id: object = None
    #: the connection that named the transaction (a foreign one is refused)
    connection_id: int | None = None
    session_id: object = None
    #: the acknowledgement refused inside the transaction
    ack: object = None


class TransactionRolledBack(TransactionError):
    """A commit failed and the transaction was rolled back instead (JMS ``TransactionRolledBackException``)."""

    code = "transaction-rolled-back"


class InvalidAcknowledge(MinibrokerError):
    """An ack names messages the subscription never dispatched ("Unmatched acknowledge" in ActiveMQ)."""

    code = "invalid-ack"
    ack: object = None
    consumer_id: object = None
    #: the connection that named the consumer (a foreign one is refused)
    connection_id: int | None = None
    #: for replayable reads: the cursor, the queue and the sequence numbers involved
    cursor: str | None = None
    queue: str | None = None
    seq: int | None = None
    next_seq: int | None = None


class InvalidDestination(MinibrokerError, ValueError):
    """A destination name is malformed or may not be used here (JMS ``InvalidDestinationException``)."""

    code = "invalid-destination"
    destination: object = None
    #: a consumer setting that the destination refuses
    prefetch: int | None = None


class DestinationDoesNotExist(InvalidDestination):
    """A send to a temporary destination that was deleted (with its connection, or by ``delete()``): ActiveMQ's
    ``DestinationDoesNotExistException``, whose message is the destination (``temp-queue://ID:...``)."""

    code = "destination-does-not-exist"


class DestinationInUse(MinibrokerError):
    """A temporary destination cannot be deleted while a consumer reads it (ActiveMQ throws a plain
    ``JMSException``: "A consumer is consuming from the temporary destination")."""

    code = "destination-in-use"
    destination: object = None
    connection_id: int | None = None
    consumer_id: int | None = None


class MessageFormatError(MinibrokerError, ValueError):
    """A value of the wrong type for a message: a property read as a type JMS does not convert it to, a map entry or
    property of a type Java has not (JMS ``MessageFormatException``)."""

    code = "message-format"
    value: object = None


class NumberFormatError(MessageFormatError):
    """A String property read as a number is no number (Java's ``NumberFormatException``)."""

    code = "number-format"


class MessageEOFError(MinibrokerError, EOFError):
    """A StreamMessage read past its last value (JMS ``MessageEOFException``); ``value`` is the position."""

    code = "message-eof"
    value: object = None


class NullValueError(MinibrokerError, TypeError):
    """A StreamMessage's null read as a primitive (Java's ``NullPointerException``); ``value`` is the position."""

    code = "null-value"
    value: object = None


class InvalidSelector(MinibrokerError, ValueError):
    """A message selector does not parse (JMS ``InvalidSelectorException``); ``selector`` holds the text."""

    code = "invalid-selector"
    #: the selector text (or the non-string given instead)
    selector: object = None
    #: 0-based offset of the problem in the expression (after any convert_string_expressions: prefix)
    position: int | None = None
    reason: str | None = None
    #: the length limit a too-long selector broke
    limit: int | None = None


class TopicSubscriptionError(MinibrokerError):
    """A (non-durable) topic subscription could not be made: ActiveMQ's TopicRegion wraps the cause, an invalid
    selector for one, in a plain ``JMSException("Couldn't create TopicSubscription")``. A JMS client checks its
    selector first (InvalidSelector); a STOMP subscriber meets this one (recorded, issue 42). ``selector``: the text,
    ``reason``: what was wrong with it."""

    code = "topic-subscription"
    selector: object = None
    reason: str | None = None


class InvalidConfiguration(MinibrokerError, ValueError):
    """A setting has a value the broker or client cannot use (JMS ``JMSException`` on bad options).

    ``option`` names the setting and ``value`` holds what was given. The short form names the option by keyword:
    ``InvalidConfiguration(text, window=0)`` is ``option="window", value=0``; with several keywords ``option``
    lists them (``"from_seq, to_seq"``) and ``value`` is the tuple of their values.
    """

    code = "invalid-configuration"
    option: str | None = None
    value: object = None

    def __init__(self, message: str = "", *, option: str | None = None, value: object = None, **named: object) -> None:
        declared = self.fields()
        fields = {name: v for name, v in named.items() if name in declared}  # a subclass's own fields
        shorthand = {name: v for name, v in named.items() if name not in declared}
        if shorthand:
            if option is not None:
                raise TypeError("give option= and value=, or name the option by keyword, not both")
            option = ", ".join(shorthand)
            value = next(iter(shorthand.values())) if len(shorthand) == 1 else tuple(shorthand.values())
        super().__init__(message, option=option, value=value, **fields)


class InvalidClientIdError(MinibrokerError):
    """A client id another connection already uses (JMS ``InvalidClientIDException``: ActiveMQ refuses the second)."""

    code = "invalid-client-id"
    client_id: str | None = None


class DurableSubscriptionError(MinibrokerError):
    """A durable subscription cannot be made or removed now: no client id on the connection, a subscriber already
    active on it, or an unsubscribe while one is (ActiveMQ throws a plain ``JMSException`` with these texts)."""

    code = "durable-subscription"
    client_id: str | None = None
    subscription_name: str | None = None


class FilterValidationError(InvalidConfiguration):
    """A broker filter defines an ``on_*`` method that names no hook (a misspelt hook would otherwise never run)."""

    code = "invalid-filter"
    hook: str | None = None
    plugin: str | None = None


class UnsupportedOperation(MinibrokerError, NotImplementedError):
    """The operation exists in JMS but not in this broker (as ActiveMQ's ``UnsupportedOperationException``)."""

    code = "unsupported"
    url: str | None = None


class AccessDenied(MinibrokerError, PermissionError):
    """Authentication failed or the user lacks the right for this destination (JMS ``JMSSecurityException``)."""

    code = "access-denied"
    user: str | None = None
    destination: str | None = None
    #: what the user tried (read, write, admin)
    action: str | None = None


class LimitExceeded(MinibrokerError):
    """A configured limit (connections, memory per destination) refused the operation."""

    code = "limit-exceeded"
    destination: object = None
    #: the limit and the wait it allowed, as configured
    limit: object = None
    maximum: object = None
    timeout: float | None = None
    #: the transaction whose own sends hold the limit (a transacted send refused at once)
    transaction_id: object = None


class PublishInterrupted(MinibrokerError):
    """A batch publish failed part way: the first ``accepted`` messages were taken (and ``duplicates`` dropped as
    re-sent), the rest were not; ``cause`` is the code of the error that stopped it (a full queue, a refused
    destination), whose text ends the message."""

    code = "publish-interrupted"
    accepted: int | None = None
    duplicates: int | None = None
    cause: str | None = None


class SettleTimeout(MinibrokerError, TimeoutError):
    """``broker.settled()`` ran out of time; ``pending`` lists what was still to do."""

    code = "settle-timeout"
    pending: list[str] | None = None


class ProtocolError(MinibrokerError):
    """A frame broke the wire protocol. Subclasses say whose fault it was (as h11 does)."""

    code = "protocol"
    #: what was wrong with the frame, where known
    frame_type: int | None = None
    header: str | None = None
    version: object = None
    size: int | None = None
    maximum: int | None = None
    expected: object = None
    value: object = None


class LocalProtocolError(ProtocolError):
    """This side was about to send something the protocol forbids."""

    code = "local-protocol"


class RemoteProtocolError(ProtocolError):
    """The peer sent something the protocol forbids; the connection is closed after an error frame."""

    code = "remote-protocol"


class FrameTooLarge(RemoteProtocolError):
    """A frame is larger than the configured maximum; ``size`` and ``maximum`` say by how much."""

    code = "frame-too-large"


class StaleEpoch(IllegalStateError):
    """A request named a broker epoch that is not the broker's: the broker was restarted (its messages and sequence
    numbers are gone), so offsets taken before the restart mean nothing now. ``expected`` and ``actual`` hold both."""

    code = "stale-epoch"
    expected: str | None = None
    actual: str | None = None


class StoreError(MinibrokerError):
    """The message store failed: its directory cannot be opened, another broker holds it, the disk is full..."""

    code = "store"
    path: str | None = None
    directory: str | None = None


class StoreUnusable(StoreError):
    """The store's database file cannot be used as one: a directory in its place, a file that is not a database or
    has damaged pages, a schema version newer than this minibroker's, or a conversion from an older one that failed.
    Its message names the file and the problem."""

    code = "store-unusable"
    #: the schema version the file has (None: not known)
    version: int | None = None


class UnsupportedFeature(MinibrokerError, NotImplementedError):
    """ActiveMQ gives this input a meaning minibroker does not reproduce (yet): refused loudly, never misread.

    ``feature`` is the id of the row in :data:`minibroker.features.FEATURES`; ``value`` the offending input. Over
    the wire only the text travels, so the feature id is read back from its ``[id]`` prefix.
    """

    code = "unsupported-feature"
    feature: str | None = None
    value: object = None

    def __init__(
        self, message: str = "", *, feature: str | None = None, value: object = None, **fields: object
    ) -> None:
        if not feature and message.startswith("Unsupported feature [") and "]" in message:
            feature = message[len("Unsupported feature [") : message.index("]")]
        super().__init__(message, feature=feature, value=value, **fields)
