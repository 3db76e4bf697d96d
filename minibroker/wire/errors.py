"""Errors and the wire: an ERROR frame's code back to the typed exception it names, and the two failures of the
codec itself (input that is not a valid frame, a value the protocol cannot carry).

Malformed input raises :class:`~minibroker.errors.RemoteProtocolError` (or its subclass
:class:`~minibroker.errors.FrameTooLarge`) and nothing else; trying to encode something the protocol cannot carry
raises :class:`~minibroker.errors.LocalProtocolError`.
"""

from __future__ import annotations

import struct
from typing import NoReturn

from .. import errors as _errors
from ..errors import LocalProtocolError, MinibrokerError
from .frames import Error

#: what packing or encoding a bad value raises inside an encoder (each is reported as LocalProtocolError)
ENCODE_FAILURES = (struct.error, UnicodeEncodeError, TypeError, AttributeError, OverflowError, ValueError)


class Malformed(Exception):
    """A precise description of what is wrong inside one frame (turned into RemoteProtocolError by the decoder)."""


def cannot_encode(what: str, exc: BaseException | None = None) -> NoReturn:
    detail = f": {exc}" if exc is not None else ""
    raise LocalProtocolError(f"cannot encode {what}{detail}") from exc


def _error_classes() -> dict[str, type[MinibrokerError]]:
    table: dict[str, type[MinibrokerError]] = {}
    for name in _errors.__all__:
        cls = getattr(_errors, name)
        if isinstance(cls, type) and issubclass(cls, MinibrokerError):
            table.setdefault(cls.code, cls)
    return table


_ERROR_CLASSES = _error_classes()


def error_for(code: str, message: str) -> MinibrokerError:
    """The :class:`MinibrokerError` subclass whose ``code`` is ``code`` (the root class for an unknown code)."""
    cls = _ERROR_CLASSES.get(code, MinibrokerError)
    try:
        return cls(message)
    except Exception:  # pragma: no cover - every class in the tree takes a message
        return MinibrokerError(message)


def error_from_frame(frame: Error) -> MinibrokerError:
    return error_for(frame.code, frame.message)
