"""The Java exceptions OpenWire answers with: which class ActiveMQ's broker throws for what each minibroker error
stands for (a client rebuilds the exception by that name, so ``catch (InvalidSelectorException e)`` works)."""

from __future__ import annotations

from minibroker.errors import (
    AccessDenied,
    DestinationDoesNotExist,
    InvalidClientIdError,
    InvalidDestination,
    InvalidSelector,
    LimitExceeded,
    MessageFormatError,
    MinibrokerError,
    RemoteProtocolError,
    TransactionRolledBack,
    UnsupportedFeature,
)

from . import commands as ow

__all__ = ["java_class", "throwable"]


def java_class(exc: MinibrokerError) -> str:
    """The exception class ActiveMQ's broker answers with for what ``exc`` stands for."""
    if isinstance(exc, InvalidSelector):
        return "javax.jms.InvalidSelectorException"
    if isinstance(exc, DestinationDoesNotExist):  # a deleted temporary destination (AbstractRegion)
        return "org.apache.activemq.DestinationDoesNotExistException"
    if isinstance(exc, InvalidDestination):
        return "javax.jms.InvalidDestinationException"
    if isinstance(exc, AccessDenied):
        return "java.lang.SecurityException"
    if isinstance(exc, InvalidClientIdError):
        return "javax.jms.InvalidClientIDException"
    if isinstance(exc, TransactionRolledBack):
        return "javax.jms.TransactionRolledBackException"
    if isinstance(exc, LimitExceeded):
        return "javax.jms.ResourceAllocationException"
    if isinstance(exc, MessageFormatError):
        return "javax.jms.MessageFormatException"
    if isinstance(exc, UnsupportedFeature):
        return "java.lang.UnsupportedOperationException"
    return "javax.jms.JMSException"


def throwable(exc: BaseException) -> ow.JavaThrowable:
    if isinstance(exc, RemoteProtocolError):  # bytes that are no OpenWire: ActiveMQ's transport fails with this
        return ow.JavaThrowable("java.io.IOException", exc.message or str(exc))
    if isinstance(exc, MinibrokerError):
        return ow.JavaThrowable(java_class(exc), exc.message or str(exc))
    return ow.JavaThrowable("java.lang.RuntimeException", str(exc) or type(exc).__name__)
