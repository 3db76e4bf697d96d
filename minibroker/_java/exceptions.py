"""Which Java exception ActiveMQ's broker throws for what a minibroker error stands for: one table for every edge
that names it (an OpenWire ExceptionResponse's class, which the JMS client rebuilds, so ``catch
(InvalidSelectorException e)`` works; the first line of a STOMP ERROR's body, its stack trace's ``toString()``)."""

from __future__ import annotations

from ..errors import (
    AccessDenied,
    DestinationDoesNotExist,
    InvalidClientIdError,
    InvalidDestination,
    InvalidSelector,
    LimitExceeded,
    MessageFormatError,
    MinibrokerError,
    TransactionRolledBack,
    UnsupportedFeature,
)

__all__ = ["java_class"]

#: most specific first: DestinationDoesNotExist is an InvalidDestination
_CLASSES: tuple[tuple[type[MinibrokerError], str], ...] = (
    (InvalidSelector, "javax.jms.InvalidSelectorException"),
    (DestinationDoesNotExist, "org.apache.activemq.DestinationDoesNotExistException"),  # AbstractRegion
    (InvalidDestination, "javax.jms.InvalidDestinationException"),
    (AccessDenied, "java.lang.SecurityException"),
    (InvalidClientIdError, "javax.jms.InvalidClientIDException"),
    (TransactionRolledBack, "javax.jms.TransactionRolledBackException"),
    (LimitExceeded, "javax.jms.ResourceAllocationException"),
    (MessageFormatError, "javax.jms.MessageFormatException"),
    (UnsupportedFeature, "java.lang.UnsupportedOperationException"),
)


def java_class(exc: MinibrokerError) -> str:
    """The class of the exception ActiveMQ's broker answers with where minibroker raised ``exc``."""
    for kind, name in _CLASSES:
        if isinstance(exc, kind):
            return name
    return "javax.jms.JMSException"
