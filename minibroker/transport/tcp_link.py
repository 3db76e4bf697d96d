"""The TCP transport: a :class:`~minibroker.transport.base.BrokerLink` over asyncio streams (ActiveMQ's ``tcp://``).

Fire-and-forget commands (acks, pulls, begins, asynchronous sends) are encoded into an output buffer that is written
once per event-loop turn, so a burst of acks costs one system call. Requests get a request id and a future; a
reader task resolves the futures from the broker's answers and hands dispatches to the consumers' handlers.

Errors the broker reports for a request are raised from the awaiting call as the matching
:class:`~minibroker.errors.MinibrokerError` subclass (by ``code``). Errors caused by fire-and-forget commands have no
caller to raise in: they are kept in :attr:`TcpLink.async_errors` and passed to the async error handler
(``connect()`` installs the connection's: ``Connection.async_errors`` and its exception listener, as ActiveMQ does).
A lost connection calls the closed handler with :class:`~minibroker.errors.ConnectionClosed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from ssl import SSLContext, create_default_context
from typing import Any, TypeVar
from urllib.parse import urlsplit

from .._core.commands import ConsumerInfo, MessageAck
from .._core.durable import DurableView
from .._core.effects import Dispatch
from .._core.queue import QueueStatistics
from .._core.replay import RangeEntry, RangeRead
from .._defaults import KEEP_ALIVE_INTERVAL
from ..clock import Clock, RealClock
from ..errors import ConnectionClosed, InvalidConfiguration, MinibrokerError, RemoteProtocolError
from ..message import Destination, DestinationKind, Message, temporary_text
from ..wire import (
    DEFAULT_MAX_FRAME_SIZE,
    BrokerInfoResult,
    BrowseResult,
    Connected,
    ConsumerAdded,
    CursorAcked,
    Error,
    Frame,
    FrameDecoder,
    Handshake,
    Ok,
    Published,
    Purged,
    QueueList,
    QueueStatisticsResult,
    RangeResult,
    TemporaryCreated,
    TopicList,
    encode_ack,
    encode_ack_below,
    encode_add_consumer,
    encode_add_producer,
    encode_begin,
    encode_browse,
    encode_browse_selected,
    encode_close,
    encode_commit,
    encode_create_temporary,
    encode_delete_temporary,
    encode_get_broker_info,
    encode_get_queue_statistics,
    encode_handshake,
    encode_hello,
    encode_keep_alive,
    encode_list_queues,
    encode_list_topics,
    encode_publish,
    encode_pull,
    encode_purge,
    encode_purge_selected,
    encode_read_range,
    encode_remove_consumer,
    encode_remove_producer,
    encode_rollback,
    encode_send,
    encode_unsubscribe,
    error_for,
    error_from_frame,
)
from . import commands as c
from .base import DispatchHandler
from .commands import Command

__all__ = ["REQUESTS", "TcpLink", "parse_tcp_url"]

R = TypeVar("R")

log = logging.getLogger("minibroker.transport.tcp_link")

_READ_SIZE = 256 * 1024
#: write the output buffer at once (instead of at the end of the loop turn) past this many bytes
_FLUSH_AT = 64 * 1024
#: an asynchronous send waits for the socket to drain past this many unsent bytes
_HIGH_WATER = 1024 * 1024
_CLOSE_TIMEOUT = 10.0


def parse_tcp_url(url: str) -> tuple[str, int]:
    """``tcp://host:port`` (or ``ssl://``) -> (host, port)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidConfiguration(f"invalid broker URL {url!r}: {exc}", url=url) from None
    if parts.scheme not in ("tcp", "ssl") or not parts.hostname or port is None:
        raise InvalidConfiguration(f"invalid broker URL {url!r}: expected tcp://HOST:PORT", url=url)
    return parts.hostname, port


class _Pending:
    __slots__ = ("entries", "future", "handler", "messages")

    def __init__(self, future: asyncio.Future[object], handler: DispatchHandler | None = None) -> None:
        self.future = future
        self.handler = handler
        self.messages: list[Message] = []
        #: the parts of a range read received so far
        self.entries: list[RangeEntry] = []


class TcpLink:
    """Connects one client connection to a broker over TCP. Create with ``await TcpLink.open_url(url)``."""

    fault_tolerant = False
    coalesce_acks = True

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        clock: Clock | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        url: str = "",
    ) -> None:
        self.clock: Clock = clock if clock is not None else RealClock()
        self.url = url
        self.connection_id = 0
        self.broker_name = ""
        #: errors the broker reported for fire-and-forget commands (acks, pulls, begins, asynchronous sends)
        self.async_errors: list[MinibrokerError] = []
        self._reader = reader
        self._writer = writer
        self._transport = writer.transport
        self._loop = asyncio.get_running_loop()
        self._decoder = FrameDecoder(sender="server", max_frame_size=max_frame_size)
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._flush_scheduled = False
        self._pending: dict[int, _Pending] = {}
        self._handlers: dict[int, DispatchHandler] = {}
        self._request = 0
        self._transaction = 0
        self._open = False
        self._closing = False
        self._lost = False
        self._fatal: MinibrokerError | None = None
        self._closed_handler: Callable[[BaseException | None], None] | None = None
        self._async_error_handler: Callable[[MinibrokerError], None] | None = None
        self._write(encode_handshake())
        self._reader_task = self._loop.create_task(self._read_loop(), name=f"minibroker-tcp-reader {url}")
        #: a KEEP_ALIVE every KEEP_ALIVE_INTERVAL real seconds, so the broker's idle timeout spares a quiet client
        self._keep_alive = self._loop.call_later(KEEP_ALIVE_INTERVAL, self._send_keep_alive)

    def _send_keep_alive(self) -> None:
        if self._lost or self._closing:
            return
        self._write(encode_keep_alive())
        self._keep_alive = self._loop.call_later(KEEP_ALIVE_INTERVAL, self._send_keep_alive)

    def __repr__(self) -> str:
        state = "open" if self._open else "closed"
        return f"<TcpLink {self.url} connection={self.connection_id} {state}>"

    @classmethod
    async def open_url(
        cls,
        url: str,
        *,
        clock: Clock | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        connect_timeout: float = 10.0,
        ssl: SSLContext | None = None,
    ) -> TcpLink:
        """Open a socket to ``tcp://host:port``, or a TLS connection to ``ssl://host:port`` (with ``ssl``, else the
        default client context); ``connect_timeout`` is in real seconds."""
        host, port = parse_tcp_url(url)
        tls: SSLContext | None = None
        if url.startswith("ssl://"):
            tls = ssl if ssl is not None else create_default_context()
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, limit=_READ_SIZE, ssl=tls), connect_timeout
            )
        except (TimeoutError, OSError) as exc:
            raise ConnectionClosed(f"cannot connect to {url}: {exc or type(exc).__name__}", url=url) from exc
        return cls(reader, writer, clock=clock, max_frame_size=max_frame_size, url=url)

    # -- output -----------------------------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        self._out.append(data)
        self._out_bytes += len(data)
        if self._out_bytes >= _FLUSH_AT:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        out = self._out
        if out:
            self._out = []
            self._out_bytes = 0
            if not self._lost:
                self._writer.write(out[0] if len(out) == 1 else b"".join(out))

    def _check(self) -> None:
        if not self._open:
            raise ConnectionClosed("the connection to the broker is closed")

    def _new_request(self, handler: DispatchHandler | None = None) -> tuple[int, asyncio.Future[object]]:
        if self._lost:
            raise self._lost_error()
        request_id = self._request = self._request % 0xFFFFFFFF + 1
        future: asyncio.Future[object] = self._loop.create_future()
        self._pending[request_id] = _Pending(future, handler)
        return request_id, future

    def _next_request_id(self) -> int:
        request_id = self._request = self._request % 0xFFFFFFFF + 1
        return request_id

    # -- input ------------------------------------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        reader = self._reader
        decoder = self._decoder
        handlers = self._handlers
        error: BaseException | None = None
        try:
            while True:
                data = await reader.read(_READ_SIZE)
                if not data:
                    break
                decoder.receive_data(data)
                for frame in decoder:
                    if type(frame) is Dispatch:
                        handler = handlers.get(frame.consumer_id)
                        if handler is not None:
                            try:
                                handler(frame)
                            except Exception:
                                log.exception("%r: a dispatch handler failed", self)
                    else:
                        self._on_frame(frame)
        except RemoteProtocolError as exc:
            log.warning("%r: the broker broke the protocol: %s", self, exc)
            error = exc
        except (ConnectionError, OSError) as exc:
            error = exc
        finally:
            self._connection_lost(error)

    def _on_frame(self, frame: Frame) -> None:
        if isinstance(frame, Error):
            self._on_error(frame)
            return
        if isinstance(frame, Handshake):
            return
        request_id: int = getattr(frame, "request_id", 0)
        pending = self._pending.get(request_id)
        if pending is None:
            log.warning("%r: an answer to no request: %r", self, frame)
            return
        result: object = None
        if isinstance(frame, ConsumerAdded):
            assert pending.handler is not None
            # registered now, before the dispatches that follow in the same read, not when the caller resumes
            self._handlers[frame.consumer_id] = pending.handler
            result = frame.consumer_id
        elif isinstance(frame, BrowseResult):
            pending.messages.extend(frame.messages)
            if not frame.last:
                return
            result = pending.messages
        elif isinstance(frame, QueueStatisticsResult):
            result = frame.statistics
        elif isinstance(frame, QueueList):
            result = list(frame.queues)
        elif isinstance(frame, Connected):
            result = frame
        elif isinstance(frame, RangeResult):
            pending.entries.extend(frame.entries)
            if not frame.last:
                return
            result = (frame.epoch, frame.next_seq, pending.entries)
        elif isinstance(frame, CursorAcked | BrokerInfoResult | Published | TemporaryCreated | TopicList):
            result = frame
        elif isinstance(frame, Purged):
            result = frame.count
        elif not isinstance(frame, Ok):  # pragma: no cover - the decoder only yields server frames
            log.warning("%r: unexpected %r", self, frame)
        del self._pending[request_id]
        if not pending.future.done():
            pending.future.set_result(result)

    def _on_error(self, frame: Error) -> None:
        error = error_from_frame(frame)
        pending = self._pending.pop(frame.request_id, None) if frame.request_id else None
        if pending is not None:
            if not pending.future.done():
                pending.future.set_exception(error)
        elif frame.fatal:
            log.warning("%r: the broker is closing the connection: [%s] %s", self, frame.code, frame.message)
        else:
            log.debug("%r: a command failed at the broker: [%s] %s", self, frame.code, frame.message)
            self.async_errors.append(error)
            if self._async_error_handler is not None:
                self._async_error_handler(error)
        if frame.fatal and self._fatal is None:
            self._fatal = error

    def _lost_error(self) -> MinibrokerError:
        if self._fatal is not None:
            return ConnectionClosed(
                f"the broker closed the connection: [{self._fatal.code}] {self._fatal}", cause=self._fatal
            )
        return ConnectionClosed("the connection to the broker was lost")

    def _connection_lost(self, error: BaseException | None) -> None:
        if self._lost:
            return
        self._lost = True
        self._keep_alive.cancel()
        was_open = self._open
        self._open = False
        if error is not None and self._fatal is None:
            if isinstance(error, MinibrokerError):
                self._fatal = error
            else:
                self._fatal = ConnectionClosed(f"the transport failed: {error}")
        pending, self._pending = self._pending, {}
        for p in pending.values():
            if not p.future.done():
                # a request the broker refused before closing (a connection limit...) fails with the broker's reason
                fatal = self._fatal
                p.future.set_exception(self._lost_error() if fatal is None else error_for(fatal.code, str(fatal)))
        self._handlers.clear()
        self._out.clear()
        self._transport.close()
        if was_open and not self._closing and self._closed_handler is not None:
            self._closed_handler(self._lost_error())

    # -- BrokerLink -------------------------------------------------------------------------------------------------

    async def open(self, client_id: str | None, user: str | None = None, password: str | None = None) -> None:
        request_id, future = self._new_request()
        self._write(encode_hello(request_id, client_id, user, password))
        try:
            connected = await future
        except BaseException:
            await self._abort()
            raise
        assert isinstance(connected, Connected)
        self.connection_id = connected.connection_id
        self.broker_name = connected.broker_name
        self._open = not self._lost

    async def _abort(self) -> None:
        self._closing = True
        self._transport.close()
        task = self._reader_task
        if task is not asyncio.current_task():
            with contextlib.suppress(BaseException):
                await task

    async def close(self, last_delivered_seq: int) -> None:
        if self._open:
            self._closing = True
            request_id, future = self._new_request()
            self._write(encode_close(request_id, last_delivered_seq))
            self._flush()
            # real seconds, whatever the clock: a broker that does not answer must not hang the client's close
            with contextlib.suppress(MinibrokerError, TimeoutError):
                await asyncio.wait_for(future, _CLOSE_TIMEOUT)
            self._open = False
        await self._abort()

    def set_closed_handler(self, handler: Callable[[BaseException | None], None]) -> None:
        self._closed_handler = handler

    def set_async_error_handler(self, handler: Callable[[MinibrokerError], None]) -> None:
        """Where errors of fire-and-forget commands go (``connect()`` passes the connection's exception path)."""
        self._async_error_handler = handler

    async def add_consumer(self, info: ConsumerInfo, handler: DispatchHandler) -> int:
        self._check()
        request_id, future = self._new_request(handler)
        self._write(encode_add_consumer(request_id, info))
        consumer_id = await future
        assert isinstance(consumer_id, int)
        return consumer_id

    def send(self, message: Message, transaction_id: int | None, sync: bool) -> Awaitable[object] | None:
        if not self._open:
            self._check()
        if sync:
            request_id, future = self._new_request()
            self._write(encode_send(request_id, message, transaction_id, True))
            return future  # the broker's receipt
        self._write(encode_send(self._next_request_id(), message, transaction_id, False))
        if self._transport.get_write_buffer_size() > _HIGH_WATER:
            return self._drain()
        return None

    async def _drain(self) -> None:
        """Wait until the socket's write buffer is below its high-water mark (a fast producer, a slow network)."""
        try:
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            raise self._lost_error() from exc

    def ack(self, ack: MessageAck) -> None:
        if not self._open:
            self._check()
        self._write(encode_ack(ack))

    def ack_one(self, consumer_id: int, message_id: str) -> bool:
        """Over the network AUTO acks are folded into range acks (``coalesce_acks``): never this shortcut."""
        return False

    def pull(self, consumer_id: int, timeout: float) -> None:
        self._check()
        self._write(encode_pull(consumer_id, timeout))

    def begin(self) -> int:
        self._check()
        self._transaction += 1
        self._write(encode_begin(self._transaction))
        return self._transaction

    # -- beyond BrokerLink ------------------------------------------------------------------------------------------

    async def list_queues(self) -> list[QueueStatistics]:
        """Every queue of the broker with its statistics, by name (what ``minibroker stat`` prints), asked a page
        at a time until an empty page."""
        self._check()
        queues: list[QueueStatistics] = []
        after = ""
        while True:
            request_id, future = self._new_request()
            self._write(encode_list_queues(request_id, after))
            page = await future
            assert isinstance(page, list)
            if not page:
                return queues
            queues += page
            after = page[-1].name

    async def list_topics(self) -> tuple[list[QueueStatistics], list[DurableView], int]:
        """Every topic with its statistics, every durable subscription, and how many messages wait in the
        scheduler (``minibroker stat``)."""
        self._check()
        request_id, future = self._new_request()
        self._write(encode_list_topics(request_id))
        answer = await future
        assert isinstance(answer, TopicList)
        data = json.loads(answer.json)
        topics = [
            QueueStatistics(name, 0, 0, enq, deq, 0, consumers, 0) for name, enq, deq, consumers in data["topics"]
        ]
        durables = [DurableView(*row) for row in data["durables"]]
        return topics, durables, int(data.get("scheduled", 0))

    def add_producer(self, producer_id: int, destination: Destination | None) -> None:
        self._check()
        self._write(encode_add_producer(producer_id, "" if destination is None else str(destination)))

    def remove_producer(self, producer_id: int) -> None:
        if self._open:
            self._write(encode_remove_producer(producer_id, ""))

    async def request(self, command: Command[R]) -> R:
        """Write the command's frame (its row of :data:`REQUESTS`) and read the broker's answer back into what the
        in-process link would have answered."""
        if type(command) is c.RemoveConsumer:
            await self._remove_consumer(command)
            return None  # type: ignore[return-value]  # a RemoveConsumer answers None
        encode, answer = REQUESTS[type(command)]
        self._check()
        request_id, future = self._new_request()
        self._write(encode(request_id, command))
        result: R = answer(await future, command)
        return result

    async def _remove_consumer(self, command: c.RemoveConsumer) -> None:
        if not self._open:
            return
        request_id, future = self._new_request()
        self._write(encode_remove_consumer(request_id, command.consumer_id, command.last_delivered_seq))
        try:
            await future
        except MinibrokerError:
            if not self._lost:
                raise
            # the connection went away meanwhile: the broker released the consumer with it
        finally:
            self._handlers.pop(command.consumer_id, None)

    def drop(self) -> None:
        """Break the socket as a failed transport would (tests): the broker redelivers what was in flight."""
        self._transport.abort()

    @property
    def is_open(self) -> bool:
        return self._open


def _nothing(answer: object, command: object) -> None:
    return None


def _as_is(answer: Any, command: object) -> Any:
    return answer


def _range_read(answer: Any, command: c.ReadRange) -> RangeRead:
    broker_epoch, next_seq, entries = answer
    return RangeRead(broker_epoch, command.queue, next_seq, tuple(entries))


def _temporary_spec(command: c.CreateTemporary) -> str:
    scheme = "temp-queue://" if command.kind is DestinationKind.QUEUE else "temp-topic://"
    return scheme + (command.connection_name or "")


#: a request's type -> (its frame, given the request id; the broker's answer, read back into the result)
REQUESTS: dict[type[c.Command[Any]], tuple[Callable[[int, Any], bytes], Callable[[Any, Any], Any]]] = {
    c.RemoveConsumer: (lambda rid, cmd: encode_remove_consumer(rid, cmd.consumer_id, cmd.last_delivered_seq), _nothing),
    c.Commit: (lambda rid, cmd: encode_commit(rid, cmd.transaction_id), _nothing),
    c.Rollback: (lambda rid, cmd: encode_rollback(rid, cmd.transaction_id), _nothing),
    c.Unsubscribe: (lambda rid, cmd: encode_unsubscribe(rid, cmd.name), _nothing),
    c.CreateTemporary: (
        lambda rid, cmd: encode_create_temporary(rid, _temporary_spec(cmd)),
        lambda answer, cmd: Destination.parse(answer.destination),
    ),
    c.DeleteTemporary: (lambda rid, cmd: encode_delete_temporary(rid, temporary_text(cmd.destination)), _nothing),
    c.Browse: (
        lambda rid, cmd: (
            encode_browse(rid, cmd.queue)
            if cmd.selector is None
            else encode_browse_selected(rid, cmd.queue, cmd.selector)
        ),
        _as_is,
    ),
    c.GetQueueStatistics: (lambda rid, cmd: encode_get_queue_statistics(rid, cmd.queue), _as_is),
    c.Purge: (
        lambda rid, cmd: (
            encode_purge(rid, cmd.queue)
            if cmd.selector is None
            else encode_purge_selected(rid, cmd.queue, cmd.selector)
        ),
        _as_is,
    ),
    c.ReadRange: (
        lambda rid, cmd: encode_read_range(rid, cmd.queue, cmd.from_seq, cmd.to_seq, cmd.limit, cmd.epoch),
        _range_read,
    ),
    c.AckBelow: (
        lambda rid, cmd: encode_ack_below(rid, cmd.queue, cmd.cursor, cmd.seq, cmd.epoch),
        lambda answer, cmd: answer.result,
    ),
    c.GetBrokerInfo: (
        lambda rid, cmd: encode_get_broker_info(rid, None if cmd.queues is None else list(cmd.queues), cmd.cursor),
        lambda answer, cmd: answer.info,
    ),
    c.Publish: (lambda rid, cmd: encode_publish(rid, cmd.messages, cmd.dedupe), lambda answer, cmd: answer.result),
}
