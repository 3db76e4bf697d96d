"""STOMP 1.0/1.1/1.2 framing, sans I/O: bytes in, :class:`StompFrame` objects out, and frames back to bytes.

No sockets and no asyncio here (as h11): feed whatever bytes arrived to :meth:`StompDecoder.receive_data` and take
complete frames from :meth:`StompDecoder.next_frame`; :func:`encode_frame` turns a frame into bytes for a version.

Theory of operation
-------------------
The decoder parses the way ActiveMQ 5.17's ``StompWireFormat`` does (the project's STOMP notes, section 1), so that a
client that works against minibroker works against ActiveMQ:

* Blank lines before a command (heart-beats, the EOL after a NUL) are skipped; the command line is trimmed.
* A header's name is everything before the first ``:``, its value the rest (no ``:``: the value is empty). The
  **first** of repeated headers wins. Values (and names) are trimmed in 1.0 only; a trailing CR is stripped in 1.0
  and 1.2 and kept in 1.1 (CONNECT is always parsed as 1.0: set :attr:`StompDecoder.version` after CONNECTED).
* Escapes ``\\n`` ``\\c`` ``\\\\`` are decoded in every version, ``\\r`` in 1.2 only; any other backslash pair is
  kept as it is (ActiveMQ raises no error for it).
* On the server side only a SEND honours ``content-length`` (exactly that many bytes, then a NUL is required); any
  other frame's body runs to the first NUL. A client-side decoder honours ``content-length`` on every frame.
* Limits, each with ActiveMQ's message: command line 1024 bytes, header line 10240 bytes, 1000 headers, body
  104857600 bytes, and an optional whole-frame maximum (:class:`~minibroker.errors.FrameTooLarge`).

Malformed input raises :class:`~minibroker.errors.RemoteProtocolError` (or its subclass ``FrameTooLarge``) and nothing
else; the decoder then stays failed and raises the same error again. Header bytes that are not UTF-8 are replaced
(U+FFFD), as Java's ``String`` decoding does. Encoding something the protocol cannot carry (a NUL in a header, a body
holding NUL without ``content-length``, a newline in a 1.0 header) raises
:class:`~minibroker.errors.LocalProtocolError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final, Literal

import attrs

from minibroker.errors import FrameTooLarge, LocalProtocolError, RemoteProtocolError

__all__ = [
    "CLIENT_COMMANDS",
    "DEFAULT_MAX_COMMAND_LENGTH",
    "DEFAULT_MAX_DATA_LENGTH",
    "DEFAULT_MAX_HEADERS",
    "DEFAULT_MAX_HEADER_LENGTH",
    "HEARTBEAT",
    "SERVER_COMMANDS",
    "VERSIONS",
    "Role",
    "StompDecoder",
    "StompFrame",
    "can_encode_header",
    "encode_frame",
    "escape_header",
    "unescape_header",
]

#: the protocol versions, oldest first
VERSIONS: Final = ("1.0", "1.1", "1.2")
#: frames a client may send
CLIENT_COMMANDS: Final = frozenset(
    {"CONNECT", "STOMP", "SEND", "SUBSCRIBE", "UNSUBSCRIBE", "ACK", "NACK", "BEGIN", "COMMIT", "ABORT", "DISCONNECT"}
)
#: frames a server sends
SERVER_COMMANDS: Final = frozenset({"CONNECTED", "MESSAGE", "RECEIPT", "ERROR"})
#: a heart-beat: one end of line on its own
HEARTBEAT: Final = b"\n"

DEFAULT_MAX_COMMAND_LENGTH: Final = 1024
DEFAULT_MAX_HEADER_LENGTH: Final = 10240
DEFAULT_MAX_HEADERS: Final = 1000
DEFAULT_MAX_DATA_LENGTH: Final = 104_857_600

Role = Literal["server", "client"]

#: what Java's String.trim() removes: every byte up to and including the space
_JAVA_WS_BYTES: Final = bytes(range(0x21))
_JAVA_WS: Final = "".join(chr(i) for i in range(0x21))

_COMMAND, _HEADERS, _BODY = 0, 1, 2


@attrs.define(slots=True)
class StompFrame:
    """One STOMP frame. ``headers`` keep their order (the first of repeated headers, on input); ``body`` is raw."""

    command: str
    headers: dict[str, str] = attrs.field(factory=dict)
    body: bytes = b""

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name, default)


# -- header escaping ------------------------------------------------------------------------------------------------

_ESCAPE_11: Final = str.maketrans({"\\": "\\\\", "\n": "\\n", ":": "\\c"})
_ESCAPE_12: Final = str.maketrans({"\\": "\\\\", "\n": "\\n", ":": "\\c", "\r": "\\r"})
#: escaped header names, by version (names repeat: message-id, destination, ...)
_ESCAPED_NAMES_11: dict[str, str] = {}
_ESCAPED_NAMES_12: dict[str, str] = {}
_UNESCAPE: Final = re.compile(r"\\(.)", re.DOTALL)
_UNESCAPE_11: Final = {"n": "\n", "c": ":", "\\": "\\"}
_UNESCAPE_12: Final = {"n": "\n", "c": ":", "\\": "\\", "r": "\r"}


def escape_header(text: str, version: str) -> str:
    """A header name or value as it is written in ``version`` (1.0: unchanged)."""
    if version == "1.2":
        return text.translate(_ESCAPE_12)
    if version == "1.1":
        return text.translate(_ESCAPE_11)
    return text


def unescape_header(text: str, version: str) -> str:
    """Decode escapes as ActiveMQ does: ``\\n \\c \\\\`` in every version, ``\\r`` in 1.2; others kept literally."""
    if "\\" not in text:
        return text
    table = _UNESCAPE_12 if version == "1.2" else _UNESCAPE_11

    def replace(match: re.Match[str]) -> str:
        return table.get(match.group(1), match.group(0))

    return _UNESCAPE.sub(replace, text)


def can_encode_header(name: str, value: str, version: str) -> bool:
    """True when ``name: value`` survives a round trip in ``version`` (no NUL; in 1.0 no EOL, no ``:`` in the name)."""
    if "\0" in name or "\0" in value:
        return False
    if version == "1.0":
        return not ("\n" in name or "\r" in name or ":" in name or "\n" in value or "\r" in value)
    return True


def encode_frame(frame: StompFrame, version: str = "1.2", *, trailer: bytes = b"\0\n") -> bytes:
    """The bytes of ``frame`` with its headers escaped for ``version``, ended by NUL and (by default) an EOL.

    The caller sets ``content-length`` when it wants one; a body holding NUL needs it.
    """
    parts: list[str] = [frame.command, "\n"]
    if version == "1.0":
        for name, value in frame.headers.items():
            if not can_encode_header(name, value, version):
                raise LocalProtocolError(f"header {name!r} cannot be written in STOMP 1.0", header=name)
            parts += (name, ":", value, "\n")
    else:
        table = _ESCAPE_12 if version == "1.2" else _ESCAPE_11
        names = _ESCAPED_NAMES_12 if version == "1.2" else _ESCAPED_NAMES_11
        for name, value in frame.headers.items():
            escaped = names.get(name)
            if escaped is None:
                if "\0" in name:
                    raise LocalProtocolError(f"header {name!r} holds a NUL character", header=name)
                escaped = name.translate(table)
                if len(names) < 4096:
                    names[name] = escaped
            if "\0" in value:
                raise LocalProtocolError(f"header {name!r} holds a NUL character", header=name)
            parts += (escaped, ":", value.translate(table), "\n")
    parts.append("\n")
    body = frame.body
    if body and "content-length" not in frame.headers and b"\0" in body:
        raise LocalProtocolError(f"a {frame.command} body holding NUL needs a content-length header")
    return "".join(parts).encode("utf-8") + body + trailer


# -- decoding ---------------------------------------------------------------------------------------------------------


class StompDecoder:
    """Incremental STOMP parser: ``receive_data(bytes)``, then ``next_frame()`` until it returns None.

    ``role="server"`` parses what clients send (ActiveMQ's rules: only SEND honours ``content-length``);
    ``role="client"`` parses what a broker sends (``content-length`` honoured on every frame). ``version`` is the
    negotiated protocol version and may be changed between frames (after CONNECTED). ``max_frame_size`` bounds one
    whole frame (None: only the per-part limits apply, as in ActiveMQ).
    """

    def __init__(
        self,
        *,
        role: Role = "server",
        version: str = "1.0",
        max_frame_size: int | None = None,
        max_command_length: int = DEFAULT_MAX_COMMAND_LENGTH,
        max_header_length: int = DEFAULT_MAX_HEADER_LENGTH,
        max_headers: int = DEFAULT_MAX_HEADERS,
        max_data_length: int = DEFAULT_MAX_DATA_LENGTH,
    ) -> None:
        if role not in ("server", "client"):
            raise ValueError(f"role is 'server' or 'client', not {role!r}")
        self.role: Role = role
        self.version = version
        self.max_frame_size = max_frame_size
        self.max_command_length = max_command_length
        self.max_header_length = max_header_length
        self.max_headers = max_headers
        self.max_data_length = max_data_length
        self._buf = bytearray()
        self._pos = 0
        self._state = _COMMAND
        self._frame_start = 0
        self._command = ""
        self._headers: dict[str, str] = {}
        self._header_count = 0
        self._body_start = 0
        self._scan = 0
        self._length: int | None = None
        self._error: RemoteProtocolError | None = None
        #: heart-beats (blank lines between frames) seen so far, the EOL that follows each frame included
        self.heartbeats = 0
        #: total bytes fed
        self.bytes_received = 0

    # -- public API ---------------------------------------------------------------------------------------------------

    def receive_data(self, data: bytes) -> None:
        """Add bytes read from the peer. Raises the decoder's error if it has already failed."""
        if self._error is not None:
            raise self._error
        self.bytes_received += len(data)
        self._buf += data

    def receive_eof(self) -> None:
        """The peer closed its side: an error if a frame was cut short (blank lines alone are fine)."""
        if self._error is not None:
            raise self._error
        rest = bytes(self._buf[self._pos :])
        if self._state != _COMMAND or rest.strip(_JAVA_WS_BYTES):
            self._fail(RemoteProtocolError("The connection closed in the middle of a STOMP frame"))

    def next_frame(self) -> StompFrame | None:
        """The next complete frame, or None until more bytes arrive."""
        if self._error is not None:
            raise self._error
        try:
            return self._next()
        except RemoteProtocolError as exc:
            self._error = exc
            raise

    def __iter__(self) -> Iterator[StompFrame]:
        while (frame := self.next_frame()) is not None:
            yield frame

    @property
    def failed(self) -> bool:
        return self._error is not None

    @property
    def buffered(self) -> int:
        """Bytes received and not yet turned into frames."""
        return len(self._buf) - self._pos

    # -- the state machine --------------------------------------------------------------------------------------------

    def _fail(self, error: RemoteProtocolError) -> None:
        self._error = error
        raise error

    def _check_frame_size(self, end: int) -> None:
        limit = self.max_frame_size
        if limit is not None and end - self._frame_start > limit:
            size = end - self._frame_start
            raise FrameTooLarge("The maximum frame size was exceeded", size=size, maximum=limit)

    def _next(self) -> StompFrame | None:
        buf = self._buf
        while True:
            state = self._state
            if state == _COMMAND:
                nl = buf.find(b"\n", self._pos)
                if nl < 0:
                    if len(buf) - self._pos > self.max_command_length:
                        raise RemoteProtocolError("The maximum command length was exceeded")
                    self._compact()
                    return None
                start = self._pos
                line = bytes(buf[start:nl])
                self._pos = nl + 1
                if len(line) > self.max_command_length:
                    raise RemoteProtocolError("The maximum command length was exceeded")
                command = line.strip(_JAVA_WS_BYTES)
                if not command:
                    self.heartbeats += 1
                    continue
                self._frame_start = start
                self._command = command.decode("utf-8", "replace")
                self._headers = {}
                self._header_count = 0
                self._state = _HEADERS
                # fast path: the whole header block is here, LF-only and short: parse it in one go
                end = buf.find(b"\n\n", nl)
                if end >= 0 and end - nl <= self.max_header_length:
                    block = bytes(buf[nl + 1 : end])
                    if b"\r" not in block:
                        self._check_frame_size(end + 2)
                        if block:
                            self._parse_block(block)
                        self._pos = end + 2
                        self._start_body()
            elif state == _HEADERS:
                nl = buf.find(b"\n", self._pos)
                if nl < 0:
                    if len(buf) - self._pos > self.max_header_length:
                        raise RemoteProtocolError("The maximum header length was exceeded")
                    self._check_frame_size(len(buf))
                    self._compact()
                    return None
                line = bytes(buf[self._pos : nl])
                self._pos = nl + 1
                if len(line) > self.max_header_length:
                    raise RemoteProtocolError("The maximum header length was exceeded")
                self._check_frame_size(self._pos)
                if self.version != "1.1" and line.endswith(b"\r"):
                    line = line[:-1]
                if not line:
                    self._start_body()
                    continue
                self._header_count += 1
                if self._header_count > self.max_headers:
                    raise RemoteProtocolError("The maximum number of headers was exceeded")
                self._add_header(line)
            else:
                frame = self._read_body()
                if frame is None:
                    return None
                return frame

    def _parse_block(self, block: bytes) -> None:
        """Every header line of a frame at once (no CR anywhere, none longer than the header limit)."""
        text = block.decode("utf-8", "replace")
        lines = text.split("\n")
        if len(lines) > self.max_headers:
            raise RemoteProtocolError("The maximum number of headers was exceeded")
        headers = self._headers
        version = self.version
        trim = version == "1.0"
        escaped = "\\" in text
        for line in lines:
            name, _, value = line.partition(":")
            if trim:
                name = name.strip(_JAVA_WS)
                value = value.strip(_JAVA_WS)
            if escaped:
                name = unescape_header(name, version)
                value = unescape_header(value, version)
            if name not in headers:
                headers[name] = value

    def _add_header(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace")
        name, sep, value = text.partition(":")
        version = self.version
        if version == "1.0":
            name = name.strip(_JAVA_WS)
            value = value.strip(_JAVA_WS)
        name = unescape_header(name, version)
        value = unescape_header(value, version) if sep else ""
        if name not in self._headers:
            self._headers[name] = value

    def _start_body(self) -> None:
        self._state = _BODY
        self._body_start = self._pos
        self._scan = self._pos
        self._length = None
        if self.role == "client" or self._command == "SEND":
            raw = self._headers.get("content-length")
            if raw is not None:
                text = raw.strip(_JAVA_WS)
                if not re.fullmatch(r"[+-]?[0-9]{1,10}", text) or not 0 <= int(text) <= 2**31 - 1:
                    raise RemoteProtocolError("Specified content-length is not a valid integer", value=raw)
                length = int(text)
                if length > self.max_data_length:
                    raise RemoteProtocolError("The maximum data length was exceeded", size=length)
                self._length = length

    def _read_body(self) -> StompFrame | None:
        buf = self._buf
        start = self._body_start
        if self._length is not None:
            end = start + self._length
            if len(buf) <= end:
                self._check_frame_size(len(buf))
                self._compact()
                return None
            if buf[end] != 0:
                raise RemoteProtocolError("content-length bytes were read and there was no trailing null byte")
        else:
            end = buf.find(b"\0", self._scan)
            if end < 0:
                self._scan = len(buf)
                if len(buf) - start > self.max_data_length:
                    raise RemoteProtocolError("The maximum data length was exceeded", size=len(buf) - start)
                self._check_frame_size(len(buf))
                self._compact()
                return None
            if end - start > self.max_data_length:
                raise RemoteProtocolError("The maximum data length was exceeded", size=end - start)
        self._check_frame_size(end + 1)
        frame = StompFrame(self._command, self._headers, bytes(buf[start:end]))
        self._pos = end + 1
        self._state = _COMMAND
        self._headers = {}
        self._compact()
        return frame

    def _compact(self) -> None:
        """Drop consumed bytes from the buffer (offsets are moved with them)."""
        cut = self._pos if self._state == _COMMAND else self._frame_start
        if cut == 0 or (cut < 65536 and cut < len(self._buf)):
            return
        del self._buf[:cut]
        self._pos -= cut
        self._frame_start -= cut
        self._body_start -= cut
        self._scan = max(0, self._scan - cut)

