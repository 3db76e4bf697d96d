"""One native client's connection on the server: its frames in, as calls on its
:class:`~minibroker.BrokerConnection` (one handler per frame type, :data:`COMMANDS`), and its answers and dispatches
out, through an output buffer written once per read chunk or event-loop turn.

A broker error on a request becomes an ERROR frame with the request's id and the connection stays open (as an
ActiveMQ exception response). A protocol violation (malformed frame, oversize frame, bad handshake, a command before
HELLO) gets a fatal ERROR frame and the connection is closed; the broker then closes the broker connection as a
transport failure (``last_delivered_seq=None``: in-flight messages are redelivered), exactly as when a client drops.
Answers wait for the client to read: past :data:`HIGH_WATER` bytes the next request waits, and dispatches wait
unencoded.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import json
import logging
from collections.abc import Callable, Iterable, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar

from minibroker import Admission, BrokerConnection, Dispatch, MessageAck, RangeRead
from minibroker._defaults import (
    DEFAULT_MAX_WRITE_BUFFER,
    MAX_RANGE_BYTES,
    MAX_RANGE_MESSAGES,
    PRE_LOGIN_MAX_FRAME_SIZE,
)
from minibroker.errors import (
    AccessDenied,
    IllegalStateError,
    InvalidClientIdError,
    LimitExceeded,
    LocalProtocolError,
    MinibrokerError,
    RemoteProtocolError,
    TransactionError,
    TransactionRolledBack,
)
from minibroker.message import Destination, DestinationKind, Message, temporary_text
from minibroker.plugins._listening import FRAMES_PER_TURN, TURN_CHECK, TURN_SECONDS
from minibroker.transport import commands as c
from minibroker.wire import (
    AckBelow,
    AddConsumer,
    AddProducer,
    Begin,
    Browse,
    BrowseSelected,
    Close,
    Commit,
    CreateTemporary,
    DeleteTemporary,
    Frame,
    FrameDecoder,
    GetBrokerInfo,
    GetQueueStatistics,
    Handshake,
    Hello,
    KeepAlive,
    ListQueues,
    ListTopics,
    Publish,
    Pull,
    Purge,
    PurgeSelected,
    ReadRange,
    RemoveConsumer,
    RemoveProducer,
    Rollback,
    Send,
    Unsubscribe,
    encode_broker_info,
    encode_browse_results,
    encode_connected,
    encode_consumer_added,
    encode_cursor_acked,
    encode_dispatch,
    encode_error,
    encode_handshake,
    encode_ok,
    encode_published,
    encode_purged,
    encode_queue_list,
    encode_queue_statistics,
    encode_range_columns_results,
    encode_range_results,
    encode_temporary_created,
    encode_topic_list,
)

__all__ = ["COMMANDS", "HIGH_WATER", "QUEUE_LIST_PAGE", "READ_SIZE", "REQUESTS", "ClientConnection"]

if TYPE_CHECKING:
    from .tcp import Server

log = logging.getLogger("minibroker.server")

READ_SIZE = 256 * 1024
#: frames of one read handled before the loop runs other clients' work (plugins/_listening.py): ten times the STOMP
#: and MQTT turn, as a native frame carries a whole message (a 256 KiB read holds about 1,500) and the TCP benchmark's
#: broker paid 6% more instructions per message yielding every 100 (75.4k -> 80.2k)
NATIVE_FRAMES_PER_TURN = 10 * FRAMES_PER_TURN  # and at most TURN_SECONDS: a fast machine keeps the long turns
#: queues per QUEUE_LIST answer: a million queues are listed a page at a time
QUEUE_LIST_PAGE = 10_000
#: drain a client's socket (wait for it to read) once this many bytes wait to be sent; past it, dispatches to the
#: client wait unencoded (a backlog, encoded this many bytes at a time as the client reads)
HIGH_WATER = 1024 * 1024


class _Violation(Exception):
    """A frame is well formed but not allowed now (a command before HELLO, a second HELLO)."""

    def __init__(self, message: str, request_id: int = 0) -> None:
        super().__init__(message)
        self.request_id = request_id


class ClientConnection:
    """One client socket and the broker connection behind it."""

    def __init__(self, server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.broker = server.broker
        self.reader = reader
        self.writer = writer
        self.transport = writer.transport
        self.loop = asyncio.get_running_loop()
        self.peer = writer.get_extra_info("peername")
        self.out: list[bytes] = []
        #: bytes in ``out``
        self.out_bytes = 0
        self.flush_scheduled = False
        #: the broker connection this client logged in as (None before HELLO and after it closed): the one door
        self.connection: BrokerConnection | None = None
        #: the client's transaction ids (its choice, per connection) -> the broker's
        self.transactions: dict[int, int] = {}
        #: the client's transactions a send without a receipt failed in -> that failure: their commit rolls back
        #: (ActiveMQ's ``rollbackOnlyOnAsyncException``: the client never heard of the failure before committing)
        self.rollback_only: dict[int, MinibrokerError] = {}
        self.finished = False
        self.encoded = server.encoded
        #: a send waiting for room in a queue over its memory limit (producer flow control) and the broker's
        #: admission to await: the connection reads nothing more until it is taken, as ActiveMQ blocks a
        #: flow-controlled producer's connection
        self.held: tuple[Send, Admission] | None = None
        self.decoder: FrameDecoder | None = None
        #: socket reads so far, and at the idle monitor's last look (ActiveMQ's InactivityMonitor read check)
        self.reads = 0
        self.reads_seen = -1
        self.idle_check: asyncio.TimerHandle | None = None
        #: the queue names of a listing in progress (LIST_QUEUES pages through one snapshot)
        self.listing: list[str] = []
        #: dispatches not encoded yet: a client reading slower than its prefetch windows fill has HIGH_WATER bytes
        #: unsent at most, the rest waits here as the broker's own objects (a window of large messages, or a client
        #: that does not read, costs no copy), and is encoded as the client reads (write_backlog)
        self.backlog: collections.deque[Dispatch] = collections.deque()
        self.backlog_writer: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        connection_id = None if self.connection is None else self.connection.connection_id
        return f"<client {self.peer} connection={connection_id}>"

    # -- output -----------------------------------------------------------------------------------------------------

    def emit(self, data: bytes) -> None:
        self.out.append(data)
        self.out_bytes += len(data)
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.loop.call_soon(self.flush)

    def route(self, dispatch: Dispatch) -> None:
        """The broker's route for this connection's consumers."""
        if self.backlog_writer is not None:  # the client has not read what went before
            self.backlog.append(dispatch)
            return
        data = self.encode(dispatch)
        if data is None:
            return
        self.out.append(data)
        self.out_bytes += len(data)
        if self.out_bytes > HIGH_WATER:  # a window refill larger than a socket write: the rest waits unencoded
            self.backlog_writer = self.loop.create_task(self.write_backlog())
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.loop.call_soon(self.flush)

    def encode(self, dispatch: Dispatch) -> bytes | None:
        try:
            return encode_dispatch(dispatch, self.encoded)
        except LocalProtocolError as exc:
            # a message an in-process producer gave the broker that the wire cannot carry: this client cannot
            # receive it, so it goes (after this dispatch round) and the broker redelivers what it held
            log.error("%r: %s", self, exc)
            self.loop.call_soon(self.abort, exc)
            return None

    async def write_backlog(self) -> None:
        """Encode the backlog HIGH_WATER bytes at a time, each time the client has read what was sent before (the
        socket's buffer below its low-water mark), until nothing waits."""
        try:
            while not self.finished:
                await self.writer.drain()
                if not self.backlog:
                    break
                budget = HIGH_WATER
                while self.backlog and budget > 0:
                    data = self.encode(self.backlog.popleft())
                    if data is not None:
                        self.out.append(data)
                        budget -= len(data)
                self.flush()
        except (ConnectionError, OSError):
            pass  # the connection is lost: finish() follows from the reading side
        finally:
            self.backlog_writer = None

    def flush(self) -> None:
        self.flush_scheduled = False
        out = self.out
        if out:
            self.out = []
            self.out_bytes = 0
            if not self.finished:
                self.writer.write(out[0] if len(out) == 1 else b"".join(out))
                unsent = self.transport.get_write_buffer_size()
                if unsent > HIGH_WATER and self.backlog_writer is None:  # what follows waits unencoded
                    self.backlog_writer = self.loop.create_task(self.write_backlog())
                if unsent > DEFAULT_MAX_WRITE_BUFFER:
                    # reading already waits past the high-water mark; this peer does not read at all
                    log.info(
                        "%r: reads too slowly (%d bytes unsent), disconnecting",
                        self,
                        self.transport.get_write_buffer_size(),
                    )
                    self.drop()

    # -- the connection's life --------------------------------------------------------------------------------------

    async def run(self) -> None:
        self.writer.write(encode_handshake())
        clock = self.broker.clock
        deadline = clock.call_at(clock.now() + self.server.handshake_timeout, self.handshake_expired)
        if self.server.idle_timeout > 0:
            self.idle_check = self.loop.call_later(self.server.idle_timeout, self.check_idle)
        try:
            await self.serve()
        finally:
            deadline.cancel()
            if self.idle_check is not None:
                self.idle_check.cancel()

    def check_idle(self) -> None:
        """Close a connection nothing was read from for a whole idle timeout (issue 15, item 9): a peer that is gone
        without a word, or that holds a slot and says nothing; live clients send KEEP_ALIVE."""
        if self.finished:
            return
        if self.reads == self.reads_seen and self.held is None:
            timeout = self.server.idle_timeout
            log.info("%r: nothing read for %s s, closing", self, timeout)
            self.abort(
                LimitExceeded(
                    f"Channel was inactive for too (>{round(timeout * 1000)}) long: {self.server.url}",
                    timeout=timeout,
                )
            )
            self.transport.abort()
            return
        self.reads_seen = self.reads
        self.idle_check = self.loop.call_later(self.server.idle_timeout, self.check_idle)

    def handshake_expired(self) -> None:
        """No HELLO within the deadline: a silent socket may not hold a connection slot (issue 15, item 9)."""
        if self.connection is None and not self.finished:
            log.info("%r: no HELLO within %s s, closing", self, self.server.handshake_timeout)
            self.abort(
                LimitExceeded(
                    f"no HELLO within {self.server.handshake_timeout} s", timeout=self.server.handshake_timeout
                )
            )
            self.transport.abort()

    async def serve(self) -> None:
        # until HELLO is accepted, only small frames: a stranger cannot make the broker buffer a large partial frame
        decoder = self.decoder = FrameDecoder(
            sender="client",
            encoded=self.encoded,
            max_frame_size=min(self.server.max_frame_size, PRE_LOGIN_MAX_FRAME_SIZE),
        )
        reader = self.reader
        # a turn spans reads: StreamReader.read returns what is buffered without letting the loop run, so a flood
        # read after read would otherwise be one long step (issue 41: another client waited 0.3 s and more)
        handled = 0
        started = perf_counter()
        try:
            while not self.finished:
                data = await reader.read(READ_SIZE)
                if not data:
                    log.debug("%r: the client closed the socket", self)
                    break
                self.reads += 1
                decoder.receive_data(data)
                next_frame = decoder.next_frame
                while (frame := next_frame()) is not None:  # not ``for frame in decoder``: no generator per read
                    if handled >= NATIVE_FRAMES_PER_TURN or (
                        not handled % TURN_CHECK and handled and perf_counter() - started > TURN_SECONDS
                    ):  # many frames are handled in turns (TakesTurns)
                        handled = 0
                        self.flush()
                        await asyncio.sleep(0)
                        started = perf_counter()
                        if self.is_finished():
                            break
                    handled += 1
                    self.handle(frame)
                    while self.held is not None:
                        await self.send_held()
                    if self.is_finished():
                        break
                    if self.out_bytes + self.transport.get_write_buffer_size() > HIGH_WATER:
                        # a large answer (a range read, a browse) waits until the client has read what went before
                        # the next request is handled: a packet of many requests cannot pile their answers up
                        self.flush()
                        await self.writer.drain()
                self.flush()
                if self.transport.get_write_buffer_size() > HIGH_WATER:
                    await self.writer.drain()
        except (RemoteProtocolError, _Violation) as exc:
            request_id = exc.request_id if isinstance(exc, _Violation) else 0
            code = exc.code if isinstance(exc, RemoteProtocolError) else RemoteProtocolError.code
            log.warning("%r: protocol violation, closing: %s", self, exc)
            self.emit(encode_error(request_id, code, str(exc), fatal=True))
        except (ConnectionError, OSError) as exc:
            log.debug("%r: transport failed: %s", self, exc)
        finally:
            self.finish(None)

    def is_finished(self) -> bool:
        return self.finished

    def finish(self, last_delivered_seq: int | None) -> None:
        """Close the broker connection (None: as a transport failure) and the socket, after what is buffered."""
        if self.connection is not None:
            connection, self.connection = self.connection, None
            try:
                connection.close(last_delivered_seq)
            except Exception:  # pragma: no cover - the broker never raises here
                log.exception("%r: closing the broker connection failed", self)
        self.flush()
        self.finished = True
        self.backlog.clear()
        if self.backlog_writer is not None:
            self.backlog_writer.cancel()
        self.transactions.clear()
        self.rollback_only.clear()
        self.writer.close()

    def abort(self, error: MinibrokerError) -> None:
        """Tell the client why (a fatal ERROR frame), then close: the server or the broker is stopping."""
        if self.finished:
            return
        self.emit(encode_error(0, error.code, str(error), fatal=True))
        self.finish(None)

    # -- frames -----------------------------------------------------------------------------------------------------

    def handle(self, frame: Frame) -> None:
        connection = self.connection
        if connection is None:
            if isinstance(frame, Hello):
                self.hello(frame)
                return
            if isinstance(frame, Handshake):  # the decoder checked it (magic, version) and allows only one
                return
            raise _Violation(f"a {type(frame).__name__} frame before HELLO", getattr(frame, "request_id", 0))
        request_id = 0
        try:
            # the hot path first: sends, acks and pulls
            if type(frame) is Send:
                request_id = frame.request_id
                txn = frame.transaction_id
                if txn is not None:
                    txn = self.broker_transaction(txn)
                if not connection.send_if_admitted(frame.message, txn):
                    admission = connection.admit(frame.message.destination)
                    assert admission is not None  # nothing changed since send_if_admitted said no
                    self.held = (frame, admission)
                    return
                if frame.receipt:
                    self.emit(encode_ok(request_id))
            elif type(frame) is MessageAck:
                if frame.transaction_id is not None:
                    frame = frame._replace(transaction_id=self.broker_transaction(frame.transaction_id))
                connection.ack(frame)
            elif type(frame) is Pull:
                connection.pull(frame.consumer_id, frame.timeout)
            else:
                request_id = getattr(frame, "request_id", 0)
                if self.rollback_only and type(frame) is Commit:
                    self.refuse_rollback_only(connection, frame.transaction_id)
                handler = COMMANDS.get(type(frame))
                if handler is None:  # pragma: no cover - the decoder only yields client frames
                    raise IllegalStateError(f"unexpected {type(frame).__name__} frame")
                handler(self, connection, frame)
        except MinibrokerError as exc:
            if type(frame) is Send:
                self.send_failed(frame, exc)
            self.emit(encode_error(request_id, exc.code, str(exc)))
        except _Violation:
            raise  # a protocol violation (a second HELLO): fatal, handled by run()
        except Exception as exc:
            log.exception("%r: the broker failed on %s", self, type(frame).__name__)
            self.emit(encode_error(request_id, MinibrokerError.code, f"{type(exc).__name__}: {exc}"))

    async def send_held(self) -> None:
        """Wait for room for the held send (flow control), then handle it; a timeout is that send's error. The send
        stays ``held`` while it waits: the idle check does not count the broker's own holding as the client's
        silence (ActiveMQ's inactivity monitor skips a connection whose command is being processed)."""
        assert self.held is not None
        frame, admission = self.held
        self.flush()
        try:
            await admission
        except MinibrokerError as exc:
            self.held = None
            if not self.finished:
                self.send_failed(frame, exc)
                self.emit(encode_error(frame.request_id, exc.code, str(exc)))
            return
        self.held = None
        if not self.finished and self.connection is not None:
            self.handle(frame)

    def send_failed(self, frame: Send, error: MinibrokerError) -> None:
        """A transacted send without a receipt failed (flow control's timeout, a full queue): its client sent on
        without waiting, so the transaction is marked to roll back at its commit, as ActiveMQ marks it."""
        txn = frame.transaction_id
        if txn is not None and not frame.receipt and txn in self.transactions:
            self.rollback_only.setdefault(txn, error)

    def hello(self, frame: Hello) -> None:
        client_id = frame.client_id
        if client_id is not None and self.broker.client_connected(client_id):
            # ActiveMQ allows one connection per client id (InvalidClientIDException); the STOMP edge refuses too
            peer = f"tcp://{self.peer[0]}:{self.peer[1]}" if isinstance(self.peer, tuple) else str(self.peer)
            error = InvalidClientIdError(
                f"Broker: {self.broker.name} - Client: {client_id} already connected from {peer}", client_id=client_id
            )
            self.emit(encode_error(frame.request_id, error.code, str(error), fatal=True))
            self.finish(None)
            return
        try:
            connection = self.broker.connect(frame.client_id, user=frame.user, password=frame.password, remote=True)
        except AccessDenied as exc:
            log.warning("%r: %s", self, exc)
            self.emit(encode_error(frame.request_id, exc.code, str(exc), fatal=True))
            self.finish(None)
            return
        except MinibrokerError as exc:
            self.emit(encode_error(frame.request_id, exc.code, str(exc), fatal=True))
            self.finish(None)
            return
        self.connection = connection
        context = connection.context  # what the web console's Connections page shows of it
        context.protocol = "native"
        context.remote_address = (
            f"tcp://{self.peer[0]}:{self.peer[1]}" if isinstance(self.peer, tuple) else str(self.peer)
        )
        self.broker.register_dropper(connection.connection_id, self.drop)
        if self.decoder is not None:
            self.decoder.max_frame_size = self.server.max_frame_size
        self.emit(encode_connected(frame.request_id, connection.connection_id, self.broker.name))

    def drop(self) -> None:
        """Break the socket now, as a network failure would (``broker.drop_connections()``)."""
        if not self.finished:
            self.finish(None)
            self.transport.abort()

    def broker_transaction(self, transaction_id: int) -> int:
        txn = self.transactions.get(transaction_id)
        if txn is None:
            raise TransactionError(f"unknown transaction {transaction_id}", transaction_id=transaction_id)
        return txn

    # -- the commands: one method per frame type, dispatched by COMMANDS -------------------------------------------

    def add_consumer(self, connection: BrokerConnection, frame: AddConsumer) -> None:
        # the answer must reach the client before the backlog the broker dispatches to the new consumer
        mark = len(self.out)
        consumer_id = connection.add_consumer(frame.info, self.route)
        self.out.insert(mark, encode_consumer_added(frame.request_id, consumer_id))
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.loop.call_soon(self.flush)

    def begin(self, connection: BrokerConnection, frame: Begin) -> None:
        if frame.transaction_id in self.transactions:
            raise TransactionError(
                f"transaction {frame.transaction_id} is already open", transaction_id=frame.transaction_id
            )
        self.transactions[frame.transaction_id] = connection.begin()

    def list_queues(self, connection: BrokerConnection, frame: ListQueues) -> None:
        if not frame.after:  # a new listing: one sorted snapshot, paged through by name
            self.listing = self.broker.queue_names()
        names = self.listing
        start = bisect.bisect_right(names, frame.after) if frame.after else 0
        page = names[start : start + QUEUE_LIST_PAGE]
        if not page:
            self.listing = []
        self.emit(encode_queue_list(frame.request_id, connection.queue_listing(page)))

    def keep_alive(self, connection: BrokerConnection, frame: KeepAlive) -> None:
        pass  # its read was enough

    def list_topics(self, connection: BrokerConnection, frame: ListTopics) -> None:
        topics, durables = connection.topic_listing()
        answer = {
            "topics": [[name, s.enqueued, s.dequeued, s.consumers] for name, s in topics],
            "durables": [[d.client_id, d.name, d.topic, d.selector, d.active, d.pending] for d in durables],
            "scheduled": self.broker.scheduled_count,
        }
        self.emit(encode_topic_list(frame.request_id, json.dumps(answer)))

    def add_producer(self, connection: BrokerConnection, frame: AddProducer) -> None:
        connection.add_producer(frame.producer_id, Destination.parse(frame.destination) if frame.destination else None)

    def remove_producer(self, connection: BrokerConnection, frame: RemoveProducer) -> None:
        connection.remove_producer(frame.producer_id)

    def close(self, connection: BrokerConnection, frame: Close) -> None:
        self.connection = None
        connection.close(frame.last_delivered_seq)
        self.emit(encode_ok(frame.request_id))
        self.finish(frame.last_delivered_seq)

    def read_range(self, connection: BrokerConnection, frame: ReadRange) -> None:
        if not frame.columnar:
            self.request(connection, frame)
            return
        # the queue's own entries straight into column buffers: no object per message on the way
        epoch, next_seq, all_selected = connection.select_range(
            frame.queue, frame.from_seq, frame.to_seq, _bounded(frame.limit), frame.epoch
        )
        selected = within_bytes(all_selected, lambda e: e.size)
        frames = encode_range_columns_results(
            frame.request_id,
            epoch,
            next_seq,
            [e.seq for e in selected],
            [e.message for e in selected],
            [e.redelivery_counter for e in selected],
            self.server.max_frame_size,
        )
        for data in frames:
            self.emit(data)

    def request(self, connection: BrokerConnection, frame: Any) -> None:
        """A frame that asks the connection something: its command value (the frame's row of :data:`REQUESTS`),
        carried out by :meth:`BrokerConnection.dispatch`, and the answer written back."""
        to_command, answer = REQUESTS[type(frame)]
        result = connection.dispatch(to_command(self, frame))
        for data in answer(self, frame, result):
            self.emit(data)

    def pop_transaction(self, transaction_id: int) -> int:
        """The broker's id of the client's transaction, which ends here (commit, rollback)."""
        txn = self.broker_transaction(transaction_id)
        del self.transactions[transaction_id]
        self.rollback_only.pop(transaction_id, None)
        return txn

    def refuse_rollback_only(self, connection: BrokerConnection, transaction_id: int) -> None:
        """A commit of a transaction a send failed in unseen: it is rolled back and the commit fails (ActiveMQ:
        "COMMIT FAILED: Transaction marked rollback only"); any other commit goes on."""
        cause = self.rollback_only.get(transaction_id)
        if cause is None:
            return
        connection.dispatch(c.Rollback(self.pop_transaction(transaction_id)))
        raise TransactionRolledBack(
            f"COMMIT FAILED: Transaction marked rollback only: {cause}", transaction_id=transaction_id
        )

    def second_hello(self, connection: BrokerConnection, frame: Hello) -> None:
        raise _Violation("a second HELLO frame", frame.request_id)


_Command = Callable[[ClientConnection, BrokerConnection, Any], None]


def _bounded(limit: int | None) -> int:
    """One range read answers at most MAX_RANGE_MESSAGES (issue 15, item 8): the client asks on for the rest."""
    return MAX_RANGE_MESSAGES if limit is None else min(limit, MAX_RANGE_MESSAGES)


def _ok(server: ClientConnection, frame: Any, result: None) -> tuple[bytes, ...]:
    return (encode_ok(frame.request_id),)


def _range_read(server: ClientConnection, frame: ReadRange, read: RangeRead) -> list[bytes]:
    entries = within_bytes(read.entries, lambda e: e.message.size_estimate())
    return encode_range_results(frame.request_id, read.epoch, read.next_seq, entries, server.server.max_frame_size)


def _browsed(server: ClientConnection, frame: Browse | BrowseSelected, found: list[Message]) -> list[bytes]:
    return encode_browse_results(frame.request_id, found, server.server.max_frame_size)


def _temporary(server: ClientConnection, frame: CreateTemporary) -> c.CreateTemporary:
    kind = DestinationKind.TOPIC if frame.spec.startswith("temp-topic://") else DestinationKind.QUEUE
    return c.CreateTemporary(kind, frame.spec.partition("://")[2] or None)


_ToCommand = Callable[[ClientConnection, Any], c.Command[Any]]
_Answer = Callable[[ClientConnection, Any, Any], Iterable[bytes]]

#: a request frame's type -> (the command value it carries, the answer frames for the connection's result)
REQUESTS: dict[type, tuple[_ToCommand, _Answer]] = {
    RemoveConsumer: (lambda s, f: c.RemoveConsumer(f.consumer_id, f.last_delivered_seq), _ok),
    Commit: (lambda s, f: c.Commit(s.pop_transaction(f.transaction_id)), _ok),
    Rollback: (lambda s, f: c.Rollback(s.pop_transaction(f.transaction_id)), _ok),
    Unsubscribe: (lambda s, f: c.Unsubscribe(f.name), _ok),
    CreateTemporary: (_temporary, lambda s, f, made: (encode_temporary_created(f.request_id, temporary_text(made)),)),
    DeleteTemporary: (lambda s, f: c.DeleteTemporary(Destination.parse(f.destination)), _ok),
    Browse: (
        lambda s, f: c.Browse(f.queue),
        _browsed,
    ),
    BrowseSelected: (
        lambda s, f: c.Browse(f.queue, f.selector),
        _browsed,
    ),
    GetQueueStatistics: (
        lambda s, f: c.GetQueueStatistics(f.queue),
        lambda s, f, stats: (encode_queue_statistics(f.request_id, stats),),
    ),
    Purge: (lambda s, f: c.Purge(f.queue), lambda s, f, n: (encode_purged(f.request_id, n),)),
    PurgeSelected: (lambda s, f: c.Purge(f.queue, f.selector), lambda s, f, n: (encode_purged(f.request_id, n),)),
    ReadRange: (
        lambda s, f: c.ReadRange(f.queue, f.from_seq, f.to_seq, _bounded(f.limit), f.epoch),
        _range_read,
    ),
    AckBelow: (
        lambda s, f: c.AckBelow(f.queue, f.cursor, f.seq, f.epoch),
        lambda s, f, acked: (encode_cursor_acked(f.request_id, acked),),
    ),
    GetBrokerInfo: (
        lambda s, f: c.GetBrokerInfo(f.queues, f.cursor),
        lambda s, f, info: (encode_broker_info(f.request_id, info),),
    ),
    Publish: (
        lambda s, f: c.Publish(f.messages, f.dedupe),
        lambda s, f, result: (encode_published(f.request_id, result),),
    ),
}

#: a client frame's type -> the method that carries it out (sends, acks and pulls, the hot path, are in handle();
#: the requests of :data:`REQUESTS` all go through :meth:`ClientConnection.request`)
COMMANDS: dict[type, _Command] = {
    **dict.fromkeys(REQUESTS, ClientConnection.request),
    AddConsumer: ClientConnection.add_consumer,
    Begin: ClientConnection.begin,
    ListQueues: ClientConnection.list_queues,
    KeepAlive: ClientConnection.keep_alive,
    ListTopics: ClientConnection.list_topics,
    AddProducer: ClientConnection.add_producer,
    RemoveProducer: ClientConnection.remove_producer,
    Close: ClientConnection.close,
    ReadRange: ClientConnection.read_range,
    Hello: ClientConnection.second_hello,
}


T = TypeVar("T")


def within_bytes(entries: Sequence[T], size: Callable[[T], int]) -> Sequence[T]:
    """The first entries whose sizes add up to at most MAX_RANGE_BYTES (always the first one)."""
    total = 0
    for i, entry in enumerate(entries):
        total += size(entry)
        if total > MAX_RANGE_BYTES and i > 0:
            return entries[:i]
    return entries
