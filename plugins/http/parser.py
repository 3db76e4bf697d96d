"""HTTP/1.1 requests, sans I/O: bytes in, :class:`Request` objects out, and responses back to bytes.

No sockets and no asyncio here (as h11): feed whatever bytes arrived to :meth:`RequestParser.receive_data` and take
complete requests from :meth:`RequestParser.next_request`; :func:`encode_response` turns a status, headers and a body
into bytes.

Theory of operation
-------------------
A server parses only what a browser, curl or a monitoring harness sends, and refuses the rest with a status the
client can read (the listener writes it, then closes):

* the request line ``METHOD SP target SP HTTP/1.x`` (400; 414 past ``max_request_line``; 505 for another version);
* header lines ``name: value`` (400 for a malformed one, an obsolete folded line, or whitespace before the colon;
  431 past ``max_headers`` lines or ``max_head_size`` bytes of head); lines end in CRLF or a bare LF;
* a body of ``Content-Length`` bytes, or ``Transfer-Encoding: chunked`` (both at once is the start of a request
  smuggling attack: 400; another transfer coding: 501); 413 past ``max_body_size``;
* HTTP/1.1 needs exactly one ``Host`` (400), as RFC 9112 says.

Once it has refused a request the parser stays failed and raises the same error again: the connection is done.
:attr:`RequestParser.pending_head` is the head of a request whose body is still coming (the listener answers
``Expect: 100-continue`` and checks credentials before accepting a body).
"""

from __future__ import annotations

import re
from typing import Final

import attrs

from minibroker.errors import RemoteProtocolError

__all__ = [
    "DEFAULT_MAX_BODY_SIZE",
    "DEFAULT_MAX_HEADERS",
    "DEFAULT_MAX_HEAD_SIZE",
    "DEFAULT_MAX_REQUEST_LINE",
    "REASONS",
    "BadRequest",
    "Request",
    "RequestHead",
    "RequestParser",
    "encode_response",
]

#: the longest request line (method, target, version) accepted
DEFAULT_MAX_REQUEST_LINE: Final = 8 * 1024
#: the most bytes of request line and headers together
DEFAULT_MAX_HEAD_SIZE: Final = 16 * 1024
#: the most header lines
DEFAULT_MAX_HEADERS: Final = 100
#: the largest body (the listener passes its ``max_body_size``)
DEFAULT_MAX_BODY_SIZE: Final = 16 * 1024 * 1024

REASONS: Final = {
    100: "Continue",
    200: "OK",
    204: "No Content",
    301: "Moved Permanently",
    304: "Not Modified",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    411: "Length Required",
    413: "Content Too Large",
    414: "URI Too Long",
    415: "Unsupported Media Type",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
    505: "HTTP Version Not Supported",
}

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VERSION = re.compile(rb"HTTP/(\d)\.(\d)")
#: a header value: visible characters, spaces and tabs, and obs-text (bytes above 0x7F), nothing else
_FIELD_VALUE = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")
_TARGET = re.compile(rb"[\x21-\x7e]+")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,8}")


class BadRequest(RemoteProtocolError):
    """The client sent something this server refuses; ``status`` is the HTTP status to answer with."""

    code = "http-bad-request"
    status: int | None = None


@attrs.frozen(slots=True)
class RequestHead:
    """A request line and its headers (names in lower case, in the order sent; repeated names kept)."""

    method: str
    target: str
    version: str
    headers: tuple[tuple[str, str], ...]

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (any case), or None."""
        name = name.lower()
        for key, value in self.headers:
            if key == name:
                return value
        return None

    @property
    def keep_alive(self) -> bool:
        """Whether the connection stays open after this request (HTTP/1.1 unless ``close``; 1.0 only if asked)."""
        tokens = {t.strip().lower() for k, v in self.headers if k == "connection" for t in v.split(",")}
        if self.version == "1.0":
            return "keep-alive" in tokens
        return "close" not in tokens

    @property
    def expects_continue(self) -> bool:
        value = self.header("expect")
        return value is not None and value.strip().lower() == "100-continue"


@attrs.frozen(slots=True)
class Request:
    """A complete request: its head and its body."""

    head: RequestHead
    body: bytes

    @property
    def method(self) -> str:
        return self.head.method

    @property
    def target(self) -> str:
        return self.head.target

    def header(self, name: str) -> str | None:
        return self.head.header(name)


def _bad(status: int, message: str) -> BadRequest:
    return BadRequest(message, status=status)


class RequestParser:
    """Requests out of a byte stream, one at a time (see the module notes for what it refuses)."""

    def __init__(
        self,
        *,
        max_request_line: int = DEFAULT_MAX_REQUEST_LINE,
        max_head_size: int = DEFAULT_MAX_HEAD_SIZE,
        max_headers: int = DEFAULT_MAX_HEADERS,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
    ) -> None:
        self.max_request_line = max_request_line
        self.max_head_size = max_head_size
        self.max_headers = max_headers
        self.max_body_size = max_body_size
        self._buffer = bytearray()
        self._failed: BadRequest | None = None
        #: the head of the request whose body is being read (None: reading a head)
        self.pending_head: RequestHead | None = None
        #: the body so far, and how it ends: a byte count (Content-Length) or None (chunked)
        self._body = bytearray()
        self._length: int | None = None
        #: chunked: the bytes left in the current chunk; -1 between chunks; -2 in the trailer
        self._chunk_left = -1

    @property
    def buffered(self) -> int:
        """Bytes received and not parsed yet (the listener stops reading past a bound)."""
        return len(self._buffer)

    @property
    def started(self) -> bool:
        """Whether some of a request has arrived (a deadline then applies to the rest of its head)."""
        return bool(self._buffer) or self.pending_head is not None

    def receive_data(self, data: bytes) -> None:
        self._buffer += data

    def next_request(self) -> Request | None:
        """The next complete request, or None until more bytes come; :class:`BadRequest` for a refused one."""
        if self._failed is not None:
            raise self._failed
        try:
            return self._next()
        except BadRequest as exc:
            self._failed = exc
            raise

    # -- the parts --------------------------------------------------------------------------------------------------

    def _next(self) -> Request | None:
        if self.pending_head is None:
            head = self._parse_head()
            if head is None:
                return None
            self.pending_head = head
        head = self.pending_head
        done = self._read_body()
        if not done:
            return None
        request = Request(head, bytes(self._body))
        self.pending_head = None
        self._body = bytearray()
        self._length = None
        self._chunk_left = -1
        return request

    def _parse_head(self) -> RequestHead | None:
        buffer = self._buffer
        # blank lines before a request line are allowed (RFC 9112 2.2)
        while buffer[:2] == b"\r\n" or buffer[:1] == b"\n":
            del buffer[: 2 if buffer[:1] == b"\r" else 1]
        end = buffer.find(b"\n\r\n")
        bare = buffer.find(b"\n\n")
        if end < 0 or (0 <= bare < end):
            end, skip = bare, 2
        else:
            skip = 3
        first_line_end = buffer.find(b"\n")
        limit = self.max_request_line
        if (first_line_end < 0 and len(buffer) > limit) or first_line_end > limit:
            raise _bad(414, f"the request line is longer than {limit} bytes")
        if end < 0:
            if len(buffer) > self.max_head_size:
                raise _bad(431, f"the request head is larger than {self.max_head_size} bytes")
            return None
        if end + skip > self.max_head_size:
            raise _bad(431, f"the request head is larger than {self.max_head_size} bytes")
        raw = bytes(buffer[:end])
        del buffer[: end + skip]
        lines = [line[:-1] if line.endswith(b"\r") else line for line in raw.split(b"\n")]
        method, target, version = _request_line(lines[0])
        if len(lines) - 1 > self.max_headers:
            raise _bad(431, f"more than {self.max_headers} header lines")
        headers = tuple(_header(line) for line in lines[1:])
        head = RequestHead(method, target, version, headers)
        self._body_framing(head)
        return head

    def _body_framing(self, head: RequestHead) -> None:
        lengths = {v.strip() for k, v in head.headers if k == "content-length"}
        codings = [t.strip().lower() for k, v in head.headers if k == "transfer-encoding" for t in v.split(",")]
        hosts = [v for k, v in head.headers if k == "host"]
        if head.version == "1.1" and len(hosts) != 1:
            raise _bad(400, "an HTTP/1.1 request needs exactly one Host header")
        if codings and lengths:
            raise _bad(400, "Content-Length and Transfer-Encoding together")
        if codings:
            if codings != ["chunked"]:
                raise _bad(501, f"transfer coding {', '.join(codings)!r} is not supported")
            self._length = None
            self._chunk_left = -1
            return
        if len(lengths) > 1:
            raise _bad(400, "different Content-Length values")
        text = lengths.pop() if lengths else "0"
        if not text.isdigit() or not text.isascii() or len(text) > 18:
            raise _bad(400, f"bad Content-Length {text[:40]!r}")
        length = int(text)
        if length > self.max_body_size:
            raise _bad(413, f"a body of {length} bytes is larger than {self.max_body_size}")
        self._length = length

    def _read_body(self) -> bool:
        buffer = self._buffer
        if self._length is not None:
            want = self._length - len(self._body)
            taken = buffer[:want]
            self._body += taken
            del buffer[: len(taken)]
            return len(self._body) == self._length
        while True:
            if self._chunk_left == -2:  # the trailer: header lines up to a blank one, ignored
                line = self._line(self.max_head_size)
                if line is None:
                    return False
                if not line:
                    return True
                continue
            if self._chunk_left == -1:  # a chunk size line
                line = self._line(1024)
                if line is None:
                    return False
                size_text = line.split(b";", 1)[0].strip()
                if not _HEX.fullmatch(size_text):
                    raise _bad(400, f"bad chunk size {size_text[:20]!r}")
                size = int(size_text, 16)
                if len(self._body) + size > self.max_body_size:
                    raise _bad(413, f"a chunked body larger than {self.max_body_size} bytes")
                self._chunk_left = -2 if size == 0 else size
                continue
            if len(buffer) < self._chunk_left + 1:
                taken = buffer[: self._chunk_left]
                self._body += taken
                self._chunk_left -= len(taken)
                del buffer[: len(taken)]
                if self._chunk_left:
                    return False
            else:
                self._body += buffer[: self._chunk_left]
                del buffer[: self._chunk_left]
                self._chunk_left = 0
            # the chunk's end of line
            line = self._line(2)
            if line is None:
                return False
            if line:
                raise _bad(400, "a chunk is longer than its size")
            self._chunk_left = -1

    def _line(self, limit: int) -> bytes | None:
        """One line of the buffer without its end (None: not all there yet)."""
        buffer = self._buffer
        end = buffer.find(b"\n")
        if end < 0:
            if len(buffer) > limit:
                raise _bad(400, f"a line longer than {limit} bytes in a chunked body")
            return None
        line = bytes(buffer[:end])
        del buffer[: end + 1]
        return line[:-1] if line.endswith(b"\r") else line


def _request_line(line: bytes) -> tuple[str, str, str]:
    parts = line.split(b" ")
    if len(parts) != 3:
        raise _bad(400, "a request line is METHOD TARGET HTTP/1.1")
    method, target, version = parts
    if not _TOKEN.fullmatch(method):
        raise _bad(400, "a bad method")
    if not _TARGET.fullmatch(target):
        raise _bad(400, "a bad request target")
    match = _VERSION.fullmatch(version)
    if match is None:
        raise _bad(400, "a bad HTTP version")
    if match.group(1) != b"1":
        raise _bad(505, f"HTTP/{match.group(1).decode()}.{match.group(2).decode()} is not supported")
    minor = "1" if match.group(2) != b"0" else "0"
    return method.decode("ascii"), target.decode("ascii"), f"1.{minor}"


def _header(line: bytes) -> tuple[str, str]:
    if line[:1] in (b" ", b"\t"):
        raise _bad(400, "a folded header line (obsolete line folding)")
    name, colon, value = line.partition(b":")
    if not colon or not _TOKEN.fullmatch(name):
        raise _bad(400, f"a bad header line {line[:40]!r}")
    value = value.strip(b" \t")
    if not _FIELD_VALUE.fullmatch(value):
        raise _bad(400, f"a control character in header {name.decode('ascii')!r}")
    return name.decode("ascii").lower(), value.decode("latin-1")


def encode_response(
    status: int,
    headers: list[tuple[str, str]] | tuple[tuple[str, str], ...] = (),
    body: bytes = b"",
    *,
    head_only: bool = False,
    close: bool = False,
) -> bytes:
    """The bytes of a response: status line, ``headers``, ``Content-Length`` (none on 1xx/204/304) and
    ``Connection: close`` when ``close``, then ``body`` (left out for a HEAD request)."""
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Unknown')}"]
    for name, value in headers:
        if "\r" in name or "\n" in name or "\r" in value or "\n" in value:
            raise ValueError(f"a line break in response header {name!r}")
        lines.append(f"{name}: {value}")
    if status >= 200 and status not in (204, 304):
        lines.append(f"Content-Length: {len(body)}")
    if close:
        lines.append("Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head if head_only or status < 200 or status in (204, 304) else head + body
