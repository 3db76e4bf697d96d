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

from minibroker._java.utf8 import java_utf8
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
#: command lines that need no trimming or decoding (a dict lookup instead)
_PLAIN_COMMANDS: Final = {c.encode(): c for c in CLIENT_COMMANDS | SERVER_COMMANDS}
_PLAIN_COMMAND_NAMES: Final = frozenset(_PLAIN_COMMANDS.values())
_CONTENT_LENGTH: Final = re.compile(r"[+-]?[0-9]{1,10}")
#: the longest unfinished frame start joined to newly received bytes by copying (longer: a bytearray accumulates)
_JOIN_LIMIT: Final = 65536
#: SEND heads (command and header lines) a decoder keeps parsed, and the longest kept: a producer's frames mostly
#: repeat theirs; at most 16 x 256 bytes per connection, forgotten at once when full
_HEAD_CACHE_SIZE: Final = 16
_HEAD_CACHE_BYTES: Final = 256


@attrs.define(slots=True)
class StompFrame:
    """One STOMP frame. ``headers`` keep their order (the first of repeated headers, on input); ``body`` is raw."""

    command: str
    headers: dict[str, str] = attrs.field(factory=dict)
    body: bytes = b""

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name, default)


# -- header escaping ------------------------------------------------------------------------------------------------

_UNESCAPE: Final = re.compile(r"\\(.)", re.DOTALL)
_UNESCAPE_11: Final = {"n": "\n", "c": ":", "\\": "\\"}
_UNESCAPE_12: Final = {"n": "\n", "c": ":", "\\": "\\", "r": "\r"}


def escape_header(text: str, version: str) -> str:
    """A header name or value as it is written in ``version`` (1.0: unchanged). Each special character is looked
    for before it is replaced: most headers hold none, and both are single C scans (cheaper than str.translate)."""
    if version == "1.0":
        return text
    if "\\" in text:
        text = text.replace("\\", "\\\\")
    if "\n" in text:
        text = text.replace("\n", "\\n")
    if ":" in text:
        text = text.replace(":", "\\c")
    if "\r" in text and version == "1.2":
        text = text.replace("\r", "\\r")
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
    headers = frame.headers
    if headers:
        # Every name and value in one string, "name\0value" joined by \x01, so that checking and escaping them all
        # is a few scans in C; the separators are then turned into ":" and EOL. When the counts show a NUL or a
        # \x01 of the frame's own, the header-by-header path below decides (and raises for a NUL).
        count = len(headers)
        text: str | None = "\x01".join(map("\0".join, headers.items()))
        assert text is not None
        if text.count("\0") != count or text.count("\x01") != count - 1:
            text = None
        elif version == "1.0":
            if "\n" in text or "\r" in text or ":" in "\0".join(headers):
                text = None
        else:
            text = escape_header(text, version)
        if text is None:
            head = _encode_head(frame, version)
        else:
            head = "".join((frame.command, "\n", text.replace("\0", ":").replace("\x01", "\n"), "\n\n"))
    else:
        head = frame.command + "\n\n"
    body = frame.body
    if body and b"\0" in body and "content-length" not in headers:
        raise LocalProtocolError(f"a {frame.command} body holding NUL needs a content-length header")
    try:
        return b"".join((head.encode("utf-8"), body, trailer))
    except UnicodeEncodeError:  # a lone surrogate: "?", as Java's String.getBytes(UTF_8) writes it
        return b"".join((java_utf8(head), body, trailer))


def _encode_head(frame: StompFrame, version: str) -> str:
    """The command and header lines, one header at a time (raises for what ``version`` cannot carry)."""
    parts: list[str] = [frame.command, "\n"]
    if version == "1.0":
        for name, value in frame.headers.items():
            if not can_encode_header(name, value, version):
                raise LocalProtocolError(f"header {name!r} cannot be written in STOMP 1.0", header=name)
            parts += (name, ":", value, "\n")
    else:
        for name, value in frame.headers.items():
            if "\0" in name or "\0" in value:
                raise LocalProtocolError(f"header {name!r} holds a NUL character", header=name)
            parts += (escape_header(name, version), ":", escape_header(value, version), "\n")
    parts.append("\n")
    return "".join(parts)


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
        #: bytes, so that slices are made in one copy; a bytearray while a long frame accumulates (see receive_data)
        self._buf: bytes | bytearray = b""
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
        #: SEND heads parsed before: head bytes -> (command, headers, header count, body length or None or -1)
        self._heads: dict[bytes, tuple[str, dict[str, str], int, int | None]] = {}
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
        buf = self._buf
        cut = self._pos if self._state == _COMMAND else self._frame_start
        rest = len(buf) - cut
        if rest == 0:
            self._buf = bytes(data)
            if cut:  # _shift, inline: the usual read starts a new buffer after whole frames
                self._pos -= cut
                self._frame_start -= cut
                self._body_start -= cut
                self._scan = max(0, self._scan - cut)
            return
        elif type(buf) is bytearray:
            buf += data
            return
        elif rest <= _JOIN_LIMIT:
            self._buf = buf[cut:] + data  # the start of a frame, joined to what follows
        else:  # a long frame still coming: accumulate in a bytearray (amortized appends, not a copy per read)
            self._buf = bytearray(buf[cut:])
            self._buf += data
        self._shift(cut)

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
            # The fast path: a complete frame with a known command, LF line ends, no escapes (not 1.0), every limit
            # met and a valid body. It changes nothing but the position until it has the frame; anything else, or
            # any doubt, goes to the general parser (which raises the errors), from the same position.
            buf = self._buf
            pos = self._pos
            end = buf.find(b"\n\n", pos) if self._state == _COMMAND else -1
            if end < 0 and pos == len(buf) and type(buf) is bytes:
                return None  # all read (the usual end of a read): nothing to scan or compact
            if end > pos:
                head = buf[pos:end]
                known = self._heads.get(head) if type(head) is bytes else None
                if known is not None:  # a SEND head seen before (a producer's usual frame): parsed once
                    command, cached, count, length = known
                    headers = cached.copy()
                    plain = (
                        self.version != "1.0"
                        and len(command) <= self.max_command_length
                        and end - pos - len(command) <= self.max_header_length
                    )
                else:
                    command, _, text = head.decode("utf-8", "replace").partition("\n")
                    plain = (
                        command in _PLAIN_COMMAND_NAMES
                        and len(command) <= self.max_command_length
                        and end - pos - len(command) <= self.max_header_length
                        and "\r" not in text
                        and "\\" not in text
                        and self.version != "1.0"
                    )
                    if plain:
                        headers = {}
                        count = 0
                        if text:
                            for header in text.split("\n"):
                                name, _, value = header.partition(":")
                                if name not in headers:
                                    headers[name] = value
                                count += 1
                        raw = headers.get("content-length") if command == "SEND" or self.role == "client" else None
                        # the body's length, None: up to the NUL, -1: not a length (the general parser says why)
                        length = (
                            None
                            if raw is None
                            else int(raw)
                            if raw.isdigit() and raw.isascii() and len(raw) <= 9
                            else -1
                        )
                        if command == "SEND" and type(head) is bytes and end - pos <= _HEAD_CACHE_BYTES:
                            heads = self._heads
                            if len(heads) >= _HEAD_CACHE_SIZE:
                                heads.clear()
                            heads[head] = (command, headers.copy(), count, length)
                if plain:
                    start = end + 2
                    if length is None:
                        stop = buf.find(b"\0", start)
                        ok = stop >= 0 and stop - start <= self.max_data_length
                    elif length >= 0:
                        stop = start + length
                        ok = length <= self.max_data_length and stop < len(buf) and buf[stop] == 0
                    else:
                        ok = False
                    limit = self.max_frame_size
                    if ok and count <= self.max_headers and (limit is None or stop + 1 - pos <= limit):
                        body = buf[start:stop]
                        frame = StompFrame(command, headers, body if type(body) is bytes else bytes(body))
                        stop += 1
                        if len(buf) > stop and buf[stop] == 10:
                            self.heartbeats += 1  # the EOL after the NUL, skipped at once
                            stop += 1
                        self._pos = stop
                        return frame
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
                pos = self._pos
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    if len(buf) - pos > self.max_command_length:
                        raise RemoteProtocolError("The maximum command length was exceeded")
                    self._compact()
                    return None
                if nl == pos:  # a heart-beat (or the EOL after a frame's NUL)
                    self.heartbeats += 1
                    self._pos = nl + 1
                    continue
                if nl - pos > self.max_command_length:
                    raise RemoteProtocolError("The maximum command length was exceeded")
                line = bytes(buf[pos:nl])
                command = _PLAIN_COMMANDS.get(line)
                if command is None:
                    stripped = line.strip(_JAVA_WS_BYTES)
                    if not stripped:
                        self.heartbeats += 1
                        self._pos = nl + 1
                        continue
                    command = stripped.decode("utf-8", "replace")
                self._frame_start = pos
                # fast path: the whole header block is here, LF-only and short: parse it in one go, and when the body
                # is complete too, return the frame without touching the decoder's state
                end = buf.find(b"\n\n", nl)
                if end >= 0 and end - nl <= self.max_header_length:
                    text = buf[nl + 1 : end].decode("utf-8", "replace")
                    if "\r" not in text:
                        if self.max_frame_size is not None:
                            self._check_frame_size(end + 2)
                        headers: dict[str, str] = {}
                        if text:
                            lines = text.split("\n")
                            if len(lines) > self.max_headers:
                                raise RemoteProtocolError("The maximum number of headers was exceeded")
                            if "\\" in text or self.version == "1.0":
                                self._parse_lines(lines, headers)
                            else:  # the usual case: nothing to trim, nothing to unescape
                                for header in lines:
                                    name, _, value = header.partition(":")
                                    if name not in headers:
                                        headers[name] = value
                        start = end + 2
                        length = None
                        if command == "SEND" or self.role == "client":
                            raw = headers.get("content-length")
                            if raw is not None:
                                length = self._content_length(raw)
                        if length is not None:
                            stop = start + length
                            complete = len(buf) > stop
                            if complete and buf[stop] != 0:
                                raise RemoteProtocolError(
                                    "content-length bytes were read and there was no trailing null byte"
                                )
                        else:
                            stop = buf.find(b"\0", start)
                            complete = stop >= 0
                            if complete and stop - start > self.max_data_length:
                                raise RemoteProtocolError("The maximum data length was exceeded", size=stop - start)
                        if complete:
                            if self.max_frame_size is not None:
                                self._check_frame_size(stop + 1)
                            frame = StompFrame(command, headers, bytes(buf[start:stop]))
                            stop += 1
                            if len(buf) > stop and buf[stop] == 10:
                                self.heartbeats += 1  # the EOL after the NUL, skipped at once
                                stop += 1
                            self._pos = stop
                            return frame
                        # the body is still coming
                        self._command = command
                        self._headers = headers
                        self._state = _BODY
                        self._pos = self._body_start = self._scan = start
                        self._length = length
                        return self._read_body()
                # the general path: one header line at a time
                self._pos = nl + 1
                self._command = command
                self._headers = {}
                self._header_count = 0
                self._state = _HEADERS
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
                return self._read_body()

    def _parse_lines(self, lines: list[str], headers: dict[str, str]) -> None:
        """Header lines that need trimming (1.0) or may hold escapes; the first of repeated names wins."""
        version = self.version
        trim = version == "1.0"
        for line in lines:
            name, _, value = line.partition(":")
            if trim:
                name = name.strip(_JAVA_WS)
                value = value.strip(_JAVA_WS)
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
        self._body_start = self._scan = self._pos
        self._length = None
        if self._command == "SEND" or self.role == "client":
            raw = self._headers.get("content-length")
            if raw is not None:
                self._length = self._content_length(raw)

    def _content_length(self, raw: str) -> int:
        if raw.isdigit() and raw.isascii() and len(raw) <= 9:
            length = int(raw)  # plain digits below 2**31: the usual case
        else:
            text = raw.strip(_JAVA_WS)
            if not _CONTENT_LENGTH.fullmatch(text) or not 0 <= int(text) <= 2**31 - 1:
                raise RemoteProtocolError("Specified content-length is not a valid integer", value=raw)
            length = int(text)
        if length > self.max_data_length:
            raise RemoteProtocolError("The maximum data length was exceeded", size=length)
        return length

    def _read_body(self) -> StompFrame | None:
        buf = self._buf
        start = self._body_start
        length = self._length
        if length is not None:
            end = start + length
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
        if self.max_frame_size is not None:
            self._check_frame_size(end + 1)
        frame = StompFrame(self._command, self._headers, bytes(buf[start:end]))
        self._pos = end + 1
        self._state = _COMMAND
        self._headers = {}
        return frame

    def _compact(self) -> None:
        """Drop consumed bytes from a bytearray buffer (a bytes buffer is cut when the next bytes are joined to it)."""
        buf = self._buf
        cut = self._pos if self._state == _COMMAND else self._frame_start
        if type(buf) is not bytearray or cut == 0 or (cut < 65536 and cut < len(buf)):
            return
        del buf[:cut]
        self._shift(cut)

    def _shift(self, cut: int) -> None:
        """The first ``cut`` bytes left the buffer: move the offsets with them."""
        self._pos -= cut
        self._frame_start -= cut
        self._body_start -= cut
        self._scan = max(0, self._scan - cut)
