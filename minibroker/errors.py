"""Every exception minibroker raises, in one tree.

Why one module: an application catches ``MinibrokerError`` and knows it has seen all of them; a test asserts on a
precise subclass whose meaning matches the JMS exception ActiveMQ would throw in the same place.

Errors carry the offending value as attributes and a stable ``code`` so that the network edge can turn them into
error frames (and back) without parsing messages.
"""

from __future__ import annotations

__all__ = [
    "AccessDenied",
    "BrokerClosed",
    "ConnectionClosed",
    "ConsumerClosed",
    "DestinationNotFound",
    "FrameTooLarge",
    "IllegalStateError",
    "InvalidAcknowledge",
    "InvalidClientIdError",
    "InvalidConfiguration",
    "InvalidDestination",
    "InvalidSelector",
    "LimitExceeded",
    "LocalProtocolError",
    "MinibrokerError",
    "ProtocolError",
    "ReceiveTimeout",
    "RemoteProtocolError",
    "SessionClosed",
    "SettleTimeout",
    "StaleEpoch",
    "StoreError",
    "TransactionError",
    "TransactionRolledBack",
    "UnsupportedFeature",
    "UnsupportedOperation",
]


class MinibrokerError(Exception):
    """Root of every minibroker error. ``code`` is stable and travels in error frames."""

    code: str = "error"

    def __init__(self, message: str = "", **fields: object) -> None:
        super().__init__(message)
        self.message = message
        for name, value in fields.items():
            setattr(self, name, value)


class IllegalStateError(MinibrokerError):
    """The call is not allowed in the object's current state (JMS ``IllegalStateException``).

    Examples: ``recover()`` on a transacted session, ``commit()`` on a non-transacted one, a synchronous
    ``receive()`` on a session that has a listener.
    """

    code = "illegal-state"


class ConnectionClosed(IllegalStateError):
    """The connection is closed (by the application, the broker, or a dropped transport)."""

    code = "connection-closed"


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


class TransactionRolledBack(TransactionError):
    """A commit failed and the transaction was rolled back instead (JMS ``TransactionRolledBackException``)."""

    code = "transaction-rolled-back"


class InvalidAcknowledge(MinibrokerError):
    """An ack names messages the subscription never dispatched ("Unmatched acknowledge" in ActiveMQ)."""

    code = "invalid-ack"


class InvalidDestination(MinibrokerError, ValueError):
    """A destination name is malformed or may not be used here (JMS ``InvalidDestinationException``)."""

    code = "invalid-destination"


class DestinationNotFound(InvalidDestination, LookupError):
    """The named destination does not exist."""

    code = "destination-not-found"


class InvalidSelector(MinibrokerError, ValueError):
    """A message selector does not parse (JMS ``InvalidSelectorException``); ``selector`` holds the text."""

    code = "invalid-selector"


class InvalidConfiguration(MinibrokerError, ValueError):
    """A setting has a value the broker or client cannot use (JMS ``JMSException`` on bad options)."""

    code = "invalid-configuration"


class InvalidClientIdError(MinibrokerError):
    """A durable subscription needs a client id (JMS ``InvalidClientIDException``)."""

    code = "invalid-client-id"


class UnsupportedOperation(MinibrokerError, NotImplementedError):
    """The operation exists in JMS but not in this broker (as ActiveMQ's ``UnsupportedOperationException``)."""

    code = "unsupported"


class AccessDenied(MinibrokerError, PermissionError):
    """Authentication failed or the user lacks the right for this destination (JMS ``JMSSecurityException``)."""

    code = "access-denied"


class LimitExceeded(MinibrokerError):
    """A configured limit (connections, memory per destination) refused the operation."""

    code = "limit-exceeded"


class ReceiveTimeout(MinibrokerError, TimeoutError):
    """A wait on the broker ran past its timeout."""

    code = "timeout"


class SettleTimeout(ReceiveTimeout):
    """``broker.settled()`` ran out of time; ``pending`` lists what was still to do."""

    code = "settle-timeout"


class ProtocolError(MinibrokerError):
    """A frame broke the wire protocol. Subclasses say whose fault it was (as h11 does)."""

    code = "protocol"


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


class StoreError(MinibrokerError):
    """The message store failed: its directory cannot be opened, another broker holds it, the disk is full..."""

    code = "store"


class UnsupportedFeature(MinibrokerError, NotImplementedError):
    """ActiveMQ gives this input a meaning minibroker does not reproduce (yet): refused loudly, never misread.

    ``feature`` is the id of the row in :data:`minibroker.features.FEATURES`; ``value`` the offending input. Over
    the wire only the text travels, so the feature id is read back from its ``[id]`` prefix.
    """

    code = "unsupported-feature"

    def __init__(self, message: str = "", *, feature: str = "", value: object = None, **fields: object) -> None:
        if not feature and message.startswith("Unsupported feature [") and "]" in message:
            feature = message[len("Unsupported feature [") : message.index("]")]
        super().__init__(message, feature=feature, value=value, **fields)
        self.feature: str = feature
        self.value: object = value
