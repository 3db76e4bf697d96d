"""A small blocking client of the minibroker wire protocol, for code that is not asyncio (Spark's Python workers).

Spark calls a data source's methods synchronously, in processes it starts and kills as it likes, so the asyncio
client (``connect()``) is the wrong tool there: each call would need an event loop, and a connection could not outlive
it. This client is a plain socket plus the sans-IO codec: one request at a time, answers read until the request's
own. It speaks only the replayable-read commands (broker info, range reads, cursor acks, batch publish), and makes a
durable subscription for a topic source with a consumer it closes at once (prefetch 0: nothing is dispatched to it).
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import Iterator, Sequence
from types import TracebackType

from minibroker import BrokerInfo, ConsumerInfo, CursorAck, PublishResult, RangeEntry, RangeRead
from minibroker.errors import ConnectionClosed, MinibrokerError, RemoteProtocolError
from minibroker.message import Destination, Message
from minibroker.transport.tcp_link import parse_tcp_url
from minibroker.wire import (
    BrokerInfoResult,
    Connected,
    ConsumerAdded,
    CursorAcked,
    Error,
    Frame,
    FrameDecoder,
    Handshake,
    Ok,
    Published,
    RangeColumns,
    RangeResult,
    encode_ack_below,
    encode_add_consumer,
    encode_close,
    encode_get_broker_info,
    encode_handshake,
    encode_hello,
    encode_publish,
    encode_read_range,
    encode_remove_consumer,
    error_from_frame,
)

__all__ = ["BlockingClient"]

_READ_SIZE = 1024 * 1024


class BlockingClient:
    """One broker connection over a blocking socket. ``timeout`` (seconds) bounds every socket operation."""

    def __init__(self, url: str, *, timeout: float = 60.0, client_id: str | None = None) -> None:
        self.url = url
        host, port = parse_tcp_url(url)
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise ConnectionClosed(f"cannot connect to {url}: {exc}", url=url) from exc
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._decoder = FrameDecoder(sender="server")
        self._requests = itertools.count(1)
        self._closed = False
        self._sock.sendall(encode_handshake())
        request_id = next(self._requests)
        self._sock.sendall(encode_hello(request_id, client_id))
        connected = self._answer(request_id)
        assert isinstance(connected, Connected)
        self.connection_id = connected.connection_id
        self.broker_name = connected.broker_name

    def __repr__(self) -> str:
        return f"<BlockingClient {self.url}{' closed' if self._closed else ''}>"

    # -- plumbing ---------------------------------------------------------------------------------------------------

    def _frames(self) -> Iterator[Frame]:
        decoder = self._decoder
        while True:
            yield from decoder
            try:
                data = self._sock.recv(_READ_SIZE)
            except OSError as exc:
                self._closed = True
                raise ConnectionClosed(f"the connection to {self.url} failed: {exc}") from exc
            if not data:
                self._closed = True
                raise ConnectionClosed(f"the broker at {self.url} closed the connection")
            decoder.receive_data(data)

    def _answer(self, request_id: int) -> Frame:
        """Frames up to the answer to ``request_id``; its first part for a multi-part answer."""
        for frame in self._frames():
            if isinstance(frame, Handshake):
                continue
            if isinstance(frame, Error):
                if frame.request_id in (request_id, 0):
                    if frame.fatal:
                        self._closed = True
                    raise error_from_frame(frame)
                continue
            if getattr(frame, "request_id", None) == request_id:
                return frame
        raise RemoteProtocolError("unreachable")  # pragma: no cover

    def _send(self, data: bytes) -> None:
        if self._closed:
            raise ConnectionClosed(f"the connection to {self.url} is closed")
        try:
            self._sock.sendall(data)
        except OSError as exc:
            self._closed = True
            raise ConnectionClosed(f"the connection to {self.url} failed: {exc}") from exc

    # -- commands ---------------------------------------------------------------------------------------------------

    def ensure_durable_subscription(self, topic: str, name: str) -> None:
        """Make this connection's client id's durable subscription ``name`` to ``topic`` if it is not there, and
        leave it offline: it keeps what the topic gets, to be read by range like a queue."""
        request_id = next(self._requests)
        info = ConsumerInfo(destination=Destination.topic(topic), prefetch=0, subscription_name=name)
        self._send(encode_add_consumer(request_id, info))
        added = self._answer(request_id)
        assert isinstance(added, ConsumerAdded)
        request_id = next(self._requests)
        self._send(encode_remove_consumer(request_id, added.consumer_id))
        self._answer(request_id)

    def broker_info(self, queues: Sequence[str] | None = None, cursor: str | None = None) -> BrokerInfo:
        request_id = next(self._requests)
        self._send(encode_get_broker_info(request_id, None if queues is None else list(queues), cursor))
        answer = self._answer(request_id)
        assert isinstance(answer, BrokerInfoResult)
        return answer.info

    def read_range(
        self,
        queue: str,
        from_seq: int = 0,
        to_seq: int | None = None,
        limit: int | None = None,
        epoch: str | None = None,
    ) -> RangeRead:
        request_id = next(self._requests)
        self._send(encode_read_range(request_id, queue, from_seq, to_seq, limit, epoch))
        entries: list[RangeEntry] = []
        while True:
            part = self._answer(request_id)
            assert isinstance(part, RangeResult)
            entries.extend(part.entries)
            if part.last:
                return RangeRead(part.epoch, queue, part.next_seq, tuple(entries))

    def iter_range(
        self, queue: str, from_seq: int, to_seq: int, *, page: int = 10_000, epoch: str | None = None
    ) -> Iterator[RangeRead]:
        """``read_range`` in pages of at most ``page`` messages, until ``to_seq``."""
        start = from_seq
        while start < to_seq:
            read = self.read_range(queue, start, to_seq, page, epoch)
            if not read.entries:
                return
            yield read
            # a short page is no end: the broker bounds each answer (count and bytes); the range's end is
            start = read.entries[-1].seq + 1
            if start >= read.next_seq:
                return

    def read_range_columns(
        self,
        queue: str,
        from_seq: int = 0,
        to_seq: int | None = None,
        limit: int | None = None,
        epoch: str | None = None,
    ) -> list[RangeColumns]:
        """A range read answered as column buffers (one :class:`RangeColumns` per frame; see the codec)."""
        return self._columns_answer(self._ask_columns(queue, from_seq, to_seq, limit, epoch))

    def _ask_columns(self, queue: str, from_seq: int, to_seq: int | None, limit: int | None, epoch: str | None) -> int:
        request_id = next(self._requests)
        self._send(encode_read_range(request_id, queue, from_seq, to_seq, limit, epoch, columnar=True))
        return request_id

    def _columns_answer(self, request_id: int) -> list[RangeColumns]:
        parts: list[RangeColumns] = []
        while True:
            part = self._answer(request_id)
            assert isinstance(part, RangeColumns)
            parts.append(part)
            if part.last:
                return parts

    def iter_range_columns(
        self, queue: str, from_seq: int, to_seq: int, *, page: int = 10_000, epoch: str | None = None
    ) -> Iterator[RangeColumns]:
        """Columnar range reads in pages of at most ``page`` messages, until ``to_seq``; empty parts are skipped.

        One request ahead: the next page is asked for before this one is yielded, so the broker reads it while the
        caller converts and hands on this one (a Spark read of 1M messages in 4 partitions spent most of its time
        waiting for pages otherwise). A generator left early leaves that answer unread: :meth:`_answer` skips it."""
        if from_seq >= to_seq:
            return
        pending = self._ask_columns(queue, from_seq, to_seq, page, epoch)
        while True:
            parts = self._columns_answer(pending)
            count = next_seq = last_seq = 0
            for part in parts:
                next_seq = part.next_seq
                if part.count:
                    count += part.count
                    last_seq = int.from_bytes(part.seq[-8:], "little", signed=True)
            if not count:
                return
            # a short page is no end: the broker bounds each answer (count and bytes); the range's end is
            start = last_seq + 1
            more = start < to_seq and start < next_seq
            if more:
                pending = self._ask_columns(queue, start, to_seq, page, epoch)
            for part in parts:
                if part.count:
                    yield part
            if not more:
                return

    def ack_below(self, queue: str, cursor: str, seq: int, epoch: str | None = None) -> CursorAck:
        request_id = next(self._requests)
        self._send(encode_ack_below(request_id, queue, cursor, seq, epoch))
        answer = self._answer(request_id)
        assert isinstance(answer, CursorAcked)
        return answer.result

    def publish(self, messages: Sequence[Message], dedupe: bool = False) -> PublishResult:
        request_id = next(self._requests)
        self._send(encode_publish(request_id, messages, dedupe))
        answer = self._answer(request_id)
        assert isinstance(answer, Published)
        return answer.result

    def close(self) -> None:
        if self._closed:  # the broker ended it (an error frame): the socket may still be open
            self._sock.close()
            return
        try:
            request_id = next(self._requests)
            self._send(encode_close(request_id))
            answer = self._answer(request_id)
            assert isinstance(answer, Ok)
        except (MinibrokerError, OSError, AssertionError):
            pass
        finally:
            self._closed = True
            self._sock.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> BlockingClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
