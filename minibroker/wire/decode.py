"""The byte stream, sans I/O: bytes in, frame objects out (as h11 does it, no sockets and no asyncio here).

:class:`FrameDecoder` is fed whatever bytes arrived with ``receive_data()`` and hands back every complete frame from
``next_frames()`` (or by iterating it). It cuts the stream into frames, checks the handshake and each frame's size
and sender, and hands each frame to the parser of its row in :mod:`minibroker.wire.table`. Malformed input raises
:class:`~minibroker.errors.RemoteProtocolError` (or its subclass :class:`~minibroker.errors.FrameTooLarge`) and
nothing else; after that the decoder stays failed.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from types import MethodType
from typing import Literal

from .._defaults import DEFAULT_MAX_FRAME_SIZE
from ..errors import FrameTooLarge, RemoteProtocolError
from .encoded import EncodedMessages
from .errors import Malformed
from .frames import PROTOCOL_VERSION, Frame, FrameType, Handshake
from .layouts import HANDSHAKE, HANDSHAKE_PREFIX
from .parsers import U32_UNPACK, FrameParser
from .table import ROWS, SERVER_FRAMES

#: whose frames a decoder reads: the client's (a server), the server's (a client), or either
Side = Literal["client", "server", "any"]
#: receive_data: a leftover up to this size is joined with the new bytes into one bytes object (see there)
_JOIN_LIMIT = 64 * 1024


class FrameDecoder(FrameParser):
    """Turns a byte stream into frames. ``sender`` says whose frames these are: ``"client"`` (the server decodes
    what clients send), ``"server"`` (a client decodes what the broker sends) or ``"any"``; a frame the other side
    should have sent is a protocol error. The stream must start with a HANDSHAKE frame unless ``handshake=False``.
    With ``encoded``, the encoding of every message received in a SEND frame is kept there for re-dispatch.

    ``receive_data(b"")`` means the peer closed its side: a partly received frame then is an error.
    """

    def __init__(
        self,
        *,
        sender: Side = "any",
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        handshake: bool = True,
        encoded: EncodedMessages | None = None,
    ) -> None:
        if max_frame_size < 64:
            raise ValueError(f"max_frame_size must be at least 64 bytes, not {max_frame_size}")
        self.max_frame_size = max_frame_size
        self.sender = sender
        self._buf: bytes | bytearray = b""
        self._pos = 0
        self._eof = False
        self._need_handshake = handshake
        self._failure: RemoteProtocolError | None = None
        super().__init__(encoded)
        # the parsers of the frames ``sender`` sends, bound to this decoder (they use what it remembers)
        self._parsers: dict[int, Callable[[bytes], Frame]] = {
            row.code: MethodType(row.parse, self)
            for row in ROWS
            if row.parse is not None and (sender == "any" or row.sender == sender)
        }

    # -- feeding ----------------------------------------------------------------------------------------------------

    @property
    def buffered(self) -> int:
        """Bytes received and not yet decoded."""
        return len(self._buf) - self._pos

    @property
    def failed(self) -> RemoteProtocolError | None:
        return self._failure

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Add bytes read from the stream (empty: the end of the stream)."""
        if self._eof and data:
            raise self._fail(RemoteProtocolError("data received after the end of the stream"))
        if not data:
            self._eof = True
            return
        buf = self._buf
        pos = self._pos
        if pos >= len(buf):
            self._buf = bytes(data)
            self._pos = 0
        elif isinstance(buf, bytearray):
            if pos:
                del buf[:pos]
                self._pos = 0
            buf += data
        elif len(buf) - pos <= _JOIN_LIMIT:
            # a small frame split across two reads (most reads end inside one): joined into bytes, so that every
            # frame of this read is sliced out once; a bytearray would cost a second copy per frame (bytes(buf[a:b]))
            self._buf = buf[pos:] + data
            self._pos = 0
        else:
            # a large frame arriving in pieces: a bytearray grows in place instead of being copied again on every read
            grown = bytearray(memoryview(buf)[pos:])
            grown += data
            self._buf = grown
            self._pos = 0

    # -- decoding ---------------------------------------------------------------------------------------------------

    def _fail(self, error: RemoteProtocolError) -> RemoteProtocolError:
        self._failure = error
        self._buf = b""
        self._pos = 0
        return error

    def _check_failed(self) -> None:
        if self._failure is not None:
            raise RemoteProtocolError(f"the stream already failed: {self._failure}")

    def _handshake(self) -> Handshake | None:
        buf = self._buf
        pos = self._pos
        avail = len(buf) - pos
        expected = HANDSHAKE_PREFIX
        seen = bytes(buf[pos : pos + min(avail, len(expected))])
        if seen != expected[: len(seen)]:
            raise self._fail(
                RemoteProtocolError(
                    f"not a minibroker peer: the stream must start with a handshake {expected!r}+version, got {seen!r}"
                )
            )
        if avail < HANDSHAKE.size:
            if self._eof and avail:
                raise self._fail(RemoteProtocolError("the stream ended inside the handshake"))
            return None
        _, _, _, version = HANDSHAKE.unpack_from(buf, pos)
        self._pos = pos + HANDSHAKE.size
        if version != PROTOCOL_VERSION:
            raise self._fail(
                RemoteProtocolError(
                    f"protocol version mismatch: the peer speaks version {version}, "
                    f"this side speaks {PROTOCOL_VERSION}",
                    version=version,
                    expected=PROTOCOL_VERSION,
                )
            )
        self._need_handshake = False
        return Handshake(version)

    def next_frame(self) -> Frame | None:
        """The next complete frame, or None when more bytes are needed."""
        if self._failure is not None:
            self._check_failed()
        if self._need_handshake:
            return self._handshake()
        buf = self._buf
        pos = self._pos
        avail = len(buf) - pos
        if avail < 4:
            if self._eof and avail:
                raise self._fail(RemoteProtocolError(f"the stream ended inside a frame header ({avail} bytes)"))
            return None
        (n,) = U32_UNPACK(buf, pos)
        if n > self.max_frame_size:
            raise self._fail(
                FrameTooLarge(
                    f"a frame of {n} bytes is larger than the maximum of {self.max_frame_size} bytes",
                    size=n,
                    maximum=self.max_frame_size,
                )
            )
        if n == 0:
            raise self._fail(RemoteProtocolError("an empty frame (length 0, no frame type)"))
        end = pos + 4 + n
        if end > len(buf):
            if self._eof:
                raise self._fail(
                    RemoteProtocolError(f"the stream ended inside a frame: {n} bytes announced, {avail - 4} received")
                )
            return None
        ftype = buf[pos + 4]
        frame: bytes = bytes(buf[pos + 4 : end]) if isinstance(buf, bytearray) else buf[pos + 4 : end]
        self._pos = end
        if end == len(buf):
            self._buf = b""
            self._pos = 0
        parser = self._parsers.get(ftype)
        if parser is None:
            raise self._fail(self._unexpected(ftype))
        try:
            return parser(frame)
        except Malformed as exc:
            detail = str(exc)
        except struct.error as exc:
            detail = f"a field is truncated ({exc})"
        except UnicodeDecodeError as exc:
            detail = f"a string is not valid UTF-8 ({exc.reason} at byte {exc.start})"
        except (ValueError, IndexError, KeyError, TypeError, OverflowError) as exc:
            detail = f"{type(exc).__name__}: {exc}"
        raise self._fail(RemoteProtocolError(f"malformed {FrameType(ftype).name} frame: {detail}", frame_type=ftype))

    def _unexpected(self, ftype: int) -> RemoteProtocolError:
        try:
            name = FrameType(ftype).name
        except ValueError:
            return RemoteProtocolError(f"unknown frame type 0x{ftype:02x}", frame_type=ftype)
        if ftype == FrameType.HANDSHAKE:
            return RemoteProtocolError("a second HANDSHAKE frame", frame_type=ftype)
        owner = "server" if ftype in SERVER_FRAMES else "client"
        return RemoteProtocolError(f"a {name} frame is only sent by the {owner}", frame_type=ftype)

    def next_frames(self) -> list[Frame]:
        """Every complete frame received so far."""
        frames: list[Frame] = []
        append = frames.append
        next_frame = self.next_frame
        while True:
            frame = next_frame()
            if frame is None:
                return frames
            append(frame)

    def __iter__(self) -> Iterator[Frame]:
        while True:
            frame = self.next_frame()
            if frame is None:
                return
            yield frame
