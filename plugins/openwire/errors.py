"""The Java exceptions OpenWire answers with: which class ActiveMQ's broker throws for what each minibroker error
stands for (a client rebuilds the exception by that name, so ``catch (InvalidSelectorException e)`` works)."""

from __future__ import annotations

from minibroker._java.exceptions import java_class
from minibroker.errors import MinibrokerError, RemoteProtocolError

from . import commands as ow

__all__ = ["java_class", "throwable"]


def throwable(exc: BaseException) -> ow.JavaThrowable:
    if isinstance(exc, RemoteProtocolError):  # bytes that are no OpenWire: ActiveMQ's transport fails with this
        return ow.JavaThrowable("java.io.IOException", exc.message or str(exc))
    if isinstance(exc, MinibrokerError):
        return ow.JavaThrowable(java_class(exc), exc.message or str(exc))
    return ow.JavaThrowable("java.lang.RuntimeException", str(exc) or type(exc).__name__)
