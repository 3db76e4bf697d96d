"""The TCP edge end to end: a server on port 0 in this process, a real-clock broker, clients over sockets.

No test sleeps: each waits on an event or a future with a timeout. A request on the same connection is a barrier:
the server handles a connection's frames in order, so once ``queue_statistics()`` answers, every ack sent before it
has been applied.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator

import pytest
from support.waiting import until

from minibroker import Broker, ConsumerInfo, Destination, Dispatch, RealClock, wire
from minibroker.client import AckMode, Connection, ReceivedMessage, RedeliveryPolicy, connect
from minibroker.errors import (
    ConnectionClosed,
    FrameTooLarge,
    InvalidAcknowledge,
    InvalidSelector,
    LimitExceeded,
    MinibrokerError,
    TransactionError,
)
from minibroker.plugins.server.tcp import Server, start_server
from minibroker.transport.commands import Browse, Commit, GetQueueStatistics, Rollback
from minibroker.transport.tcp_link import TcpLink

TIMEOUT = 5.0
NO_DELAY = RedeliveryPolicy(initial_redelivery_delay=0.0, redelivery_delay=0.0)


@pytest.fixture
async def conn(server: Server) -> AsyncIterator[Connection]:
    c = await connect(server.url, redelivery_policy=NO_DELAY)
    try:
        yield c
    finally:
        await c.close()


def link_of(conn: Connection) -> TcpLink:
    link = conn._link
    assert isinstance(link, TcpLink)
    return link


async def stats(conn: Connection, queue: str) -> tuple[int, int, int, int]:
    """(size, inflight, enqueued, dequeued) as the broker sees them after this connection's earlier frames."""
    s = await asyncio.wait_for(link_of(conn).request(GetQueueStatistics(queue)), TIMEOUT)
    return (0, 0, 0, 0) if s is None else (s.size, s.inflight, s.enqueued, s.dequeued)


async def receive(consumer: object, timeout: float = TIMEOUT) -> ReceivedMessage:
    msg = await consumer.receive(timeout=timeout)  # type: ignore[attr-defined]
    assert msg is not None, "no message arrived"
    return msg  # type: ignore[no-any-return]


async def send_all(conn: Connection, queue: str, bodies: list[str | bytes], **kw: object) -> None:
    session = await conn.create_session()
    producer = await session.create_producer(queue)
    for body in bodies:
        await producer.send(body, **kw)  # type: ignore[arg-type]
    await session.close()


class TestMessaging:
    async def test_url_and_port(self, server: Server) -> None:
        assert server.port > 0 and server.url == f"tcp://127.0.0.1:{server.port}"

    async def test_send_and_receive_typed_message(self, conn: Connection) -> None:
        session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
        producer = await session.create_producer("orders")
        props = {"s": "x", "i": 2**40, "big": 2**70, "f": 0.5, "b": True, "raw": b"\x00\x01", "n": None}
        await producer.send(
            "żółw", properties=props, priority=7, correlation_id="c1", reply_to="topic://r", type="T", group_id="g"
        )
        await producer.send(b"\xff\x00binary", persistent=False)
        consumer = await session.create_consumer("orders")
        first = await receive(consumer)
        assert first.body == "żółw" and first.priority == 7 and first.correlation_id == "c1"
        assert str(first.reply_to) == "topic://r" and first.type == "T" and first.group_id == "g"
        assert {k: first.properties[k] for k in props} == props
        assert [type(first.properties[k]) for k in props] == [type(v) for v in props.values()]
        assert first.get_property("JMSXGroupFirstForConsumer") is True  # answered, not listed (as ActiveMQ)
        second = await receive(consumer)
        assert second.body == b"\xff\x00binary" and not second.persistent and not second.redelivered
        assert await stats(conn, "orders") == (0, 0, 2, 2)

    async def test_backlog_reaches_a_new_consumer(self, conn: Connection) -> None:
        """The broker dispatches the backlog while adding the consumer: the client must already know its id."""
        await send_all(conn, "backlog", [f"m{i}" for i in range(50)])
        session = await conn.create_session()
        consumer = await session.create_consumer("backlog")
        assert [(await receive(consumer)).body for _ in range(50)] == [f"m{i}" for i in range(50)]

    @pytest.mark.parametrize("mode", list(AckMode), ids=lambda m: m.name)
    async def test_each_ack_mode(self, conn: Connection, mode: AckMode) -> None:
        await send_all(conn, "modes", ["a", "b", "c"])
        session = await conn.create_session(mode)
        consumer = await session.create_consumer("modes")
        got = [await receive(consumer) for _ in range(3)]
        assert [m.body for m in got] == ["a", "b", "c"]
        if mode is AckMode.CLIENT_ACKNOWLEDGE:
            assert (await stats(conn, "modes"))[0] == 3
            await got[1].acknowledge()
        elif mode is AckMode.INDIVIDUAL_ACKNOWLEDGE:
            for m in got:
                await m.acknowledge()
        elif mode is AckMode.SESSION_TRANSACTED:
            assert (await stats(conn, "modes"))[0] == 3
            await session.commit()
        elif mode is AckMode.DUPS_OK_ACKNOWLEDGE:
            pass  # on a queue DUPS_OK acks each message, like AUTO
        assert await stats(conn, "modes") == (0, 0, 3, 3)

    async def test_client_ack_recover_redelivers(self, conn: Connection) -> None:
        await send_all(conn, "recover", ["x"])
        session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        consumer = await session.create_consumer("recover")
        assert not (await receive(consumer)).redelivered
        await session.recover()
        again = await receive(consumer)
        assert again.body == "x" and again.redelivered and again.delivery_count == 2
        await again.acknowledge()
        assert (await stats(conn, "recover"))[0] == 0

    async def test_topic(self, conn: Connection) -> None:
        session = await conn.create_session()
        subscribers = [await session.create_consumer("topic://prices") for _ in range(2)]
        producer = await session.create_producer("topic://prices")
        await producer.send("tick")
        for sub in subscribers:
            assert (await receive(sub)).body == "tick"


class TestTransactions:
    async def test_sends_are_invisible_until_commit(self, conn: Connection) -> None:
        session = await conn.create_session(AckMode.SESSION_TRANSACTED)
        producer = await session.create_producer("txq")
        await producer.send("one")
        await producer.send("two")
        assert (await stats(conn, "txq"))[0] == 0
        await session.commit()
        assert (await stats(conn, "txq"))[0] == 2

    async def test_rollback_discards_sends(self, conn: Connection) -> None:
        session = await conn.create_session(AckMode.SESSION_TRANSACTED)
        producer = await session.create_producer("txq2")
        await producer.send("gone")
        await session.rollback()
        await producer.send("kept")
        await session.commit()
        consumer = await session.create_consumer("txq2")
        assert (await receive(consumer)).body == "kept"
        await session.commit()
        assert await stats(conn, "txq2") == (0, 0, 1, 1)

    async def test_rollback_redelivers_receives(self, conn: Connection) -> None:
        await send_all(conn, "txr", ["m"])
        session = await conn.create_session(AckMode.SESSION_TRANSACTED)
        consumer = await session.create_consumer("txr")
        assert not (await receive(consumer)).redelivered
        await session.rollback()
        again = await receive(consumer)
        assert again.redelivered and again.redelivery_counter == 1
        await session.commit()
        assert (await stats(conn, "txr"))[0] == 0

    async def test_unknown_transaction_is_a_typed_error(self, conn: Connection) -> None:
        with pytest.raises(TransactionError, match="unknown transaction 999"):
            await link_of(conn).request(Commit(999))
        with pytest.raises(TransactionError):
            await link_of(conn).request(Rollback(998))
        assert await stats(conn, "anything") == (0, 0, 0, 0)  # the connection is still fine


class TestPullAndBrowse:
    async def test_pull_mode(self, conn: Connection) -> None:
        session = await conn.create_session()
        consumer = await session.create_consumer("pull", prefetch=0)
        assert await consumer.receive(timeout=0) is None  # the broker answers "nothing" at once
        await send_all(conn, "pull", ["p1", "p2"])
        assert (await stats(conn, "pull"))[1] == 0  # prefetch 0: nothing is pushed before a pull
        assert (await receive(consumer)).body == "p1"
        assert (await stats(conn, "pull"))[:2] == (1, 0)
        assert (await receive(consumer)).body == "p2"
        waiting = asyncio.ensure_future(consumer.receive(timeout=TIMEOUT))
        await send_all(conn, "pull", ["p3"])
        msg = await asyncio.wait_for(waiting, TIMEOUT)
        assert msg is not None and msg.body == "p3"

    async def test_browse(self, conn: Connection) -> None:
        await send_all(conn, "browse", [f"b{i}" for i in range(5)])
        session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        consumer = await session.create_consumer("browse", prefetch=2)
        await receive(consumer)  # in flight, unacked: still browsed
        browser = await session.create_browser("browse")
        assert [m.body for m in await browser.messages()] == [f"b{i}" for i in range(5)]
        assert await (await session.create_browser("nothing-here")).messages() == []

    async def test_browse_larger_than_a_frame(self, broker: Broker) -> None:
        server = await start_server(broker, max_frame_size=4096)
        try:
            async with await connect(server.url) as c:
                await send_all(c, "wide", ["x" * 1000 for _ in range(20)])
                messages = await link_of(c).request(Browse("wide"))
                assert len(messages) == 20
        finally:
            await server.close()

    async def test_queue_statistics_and_list(self, conn: Connection) -> None:
        await send_all(conn, "listed", ["1", "2"])
        assert await link_of(conn).request(GetQueueStatistics("never-created")) is None
        queues = await link_of(conn).list_queues()
        listed = [q for q in queues if q.name == "listed"]
        assert len(listed) == 1 and listed[0].size == 2 and listed[0].enqueued == 2

    async def test_a_long_queue_list_comes_a_page_at_a_time(
        self, broker: Broker, server: Server, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """issue 15: a million queues made one answer too large for a frame; the list is paged by name."""
        from minibroker.plugins.server import connection

        monkeypatch.setattr(connection, "QUEUE_LIST_PAGE", 3)
        async with await connect(server.url) as conn:
            for i in range(8):
                await send_all(conn, f"q{i}", ["m"])
            asked: list[bytes] = []
            link = link_of(conn)
            write = link._write
            monkeypatch.setattr(link, "_write", lambda data: (asked.append(data), write(data)))
            queues = await link.list_queues()
        assert [q.name for q in queues] == [f"q{i}" for i in range(8)]
        assert sum(1 for data in asked if data[4] == wire.FrameType.LIST_QUEUES) == 4  # 3 + 3 + 2, then an empty page


class TestIdleTimeout:
    """issue 15, item 9: a logged-in connection the broker hears nothing from for its idle timeout is closed
    (ActiveMQ's InactivityMonitor); the client's KEEP_ALIVE keeps a quiet connection open. Real time, short."""

    async def test_a_silent_logged_in_socket_is_closed(self, broker: Broker) -> None:
        server = await start_server(broker, idle_timeout=0.2)
        try:
            reader, writer = await asyncio.open_connection(server.host, server.port)
            writer.write(wire.encode_handshake() + wire.encode_hello(1, None, None, None))
            rest = await asyncio.wait_for(reader.read(), 5)  # everything up to EOF: the socket was closed
            assert b"Channel was inactive for too (>200) long" in rest
            writer.close()
        finally:
            await server.close()

    async def test_a_quiet_client_is_kept_open_by_its_keep_alives(
        self, broker: Broker, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from minibroker.transport import tcp_link

        monkeypatch.setattr(tcp_link, "KEEP_ALIVE_INTERVAL", 0.02)
        server = await start_server(broker, idle_timeout=0.2)
        try:
            async with await connect(server.url) as conn:
                await asyncio.sleep(0.7)  # the network's real time is what is under test: 3 idle timeouts
                await send_all(conn, "still-open", ["m"])
                assert broker.queue("still-open").size == 1
        finally:
            await server.close()

    async def test_a_producer_the_broker_holds_is_not_idle(self) -> None:
        """issue 29: flow control stops reading a held producer's socket; that silence is the broker's, so the idle
        check leaves the connection (and its transaction) alone until the send goes (ActiveMQ's inactivity monitor
        skips a connection whose command is being processed)."""
        from minibroker import DestinationPolicy

        policy = DestinationPolicy(memory_limit=1000)
        async with asyncio.timeout(20), Broker(clock=RealClock(), policies={">": policy}) as broker:
            server = await start_server(broker, idle_timeout=0.2)
            try:
                async with await connect(broker) as operator:
                    await send_all(operator, "full", ["x" * 1200])
                conn = await connect(server.url, always_sync_send=True)
                session = await conn.create_session(AckMode.SESSION_TRANSACTED)
                producer = await session.create_producer("full")
                sending = asyncio.create_task(producer.send("held"))
                await asyncio.sleep(0.7)  # the network's real time is what is under test: 3 idle timeouts
                held = not sending.done()
                broker.purge("full")
                await asyncio.wait_for(sending, 5)
                await session.commit()
                await conn.close()
                assert held
                assert [m.body for m in broker.browse_all("full")] == ["held"]
            finally:
                await server.close()


class TestErrors:
    async def test_broker_errors_are_typed_and_keep_the_connection(self, conn: Connection) -> None:
        session = await conn.create_session()
        with pytest.raises(InvalidSelector):
            await session.create_consumer("q", selector="this is not ( a selector")
        await send_all(conn, "after-error", ["ok"])
        consumer = await session.create_consumer("after-error")
        assert (await receive(consumer)).body == "ok"

    async def test_async_errors_reach_the_exception_listener(self, conn: Connection) -> None:
        from minibroker import AckType, MessageAck

        seen: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()
        conn.exception_listener = lambda exc: seen.done() or seen.set_result(exc)
        link_of(conn).ack(MessageAck(12345, AckType.STANDARD, "ID:nope"))
        error = await asyncio.wait_for(seen, TIMEOUT)
        assert isinstance(error, InvalidAcknowledge)
        assert link_of(conn).async_errors == [error]
        assert not conn.closed and await stats(conn, "still-ok") == (0, 0, 0, 0)

    async def test_max_connections(self, broker: Broker) -> None:
        server = await start_server(broker, max_connections=1)
        try:
            async with await connect(server.url):
                with pytest.raises(LimitExceeded, match="at most 1 connections"):
                    await connect(server.url)
        finally:
            await server.close()

    async def test_frame_too_large_closes_that_connection(self, broker: Broker) -> None:
        server = await start_server(broker, max_frame_size=2048)
        try:
            bad = await connect(server.url)
            lost: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()
            bad.exception_listener = lambda exc: lost.done() or lost.set_result(exc)
            session = await bad.create_session()
            producer = await session.create_producer("big")
            with pytest.raises(FrameTooLarge):
                await producer.send("x" * 10_000)  # persistent: waits for the receipt, gets the fatal error
            assert isinstance(await asyncio.wait_for(lost, TIMEOUT), ConnectionClosed)
            assert bad.closed
            async with await connect(server.url) as good:
                await send_all(good, "small", ["fits"])
                assert (await stats(good, "small"))[0] == 1
        finally:
            await server.close()

    async def test_connect_refused(self) -> None:
        server = await start_server(Broker(clock=RealClock()))
        url = server.url
        await server.close()
        with pytest.raises(ConnectionClosed, match="cannot connect"):
            await connect(url)

    async def test_a_message_the_wire_cannot_carry(self, conn: Connection, broker: Broker) -> None:
        """An in-process producer may give the broker a property the wire has no type for: the TCP consumer is
        disconnected with the reason instead of silently missing the message."""
        async with await connect(broker) as local:
            session = await local.create_session()
            await (await session.create_producer("odd")).send("x", properties={"k": [1, 2]})  # type: ignore[dict-item]
        lost: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()
        conn.exception_listener = lambda exc: lost.done() or lost.set_result(exc)
        await (await conn.create_session()).create_consumer("odd")
        error = await asyncio.wait_for(lost, TIMEOUT)
        assert isinstance(error, ConnectionClosed) and "local-protocol" in str(error) and "'k'" in str(error)
        assert broker.queue("odd").size == 1 and broker.queue("odd").inflight == 0

    async def test_bad_url(self) -> None:
        with pytest.raises(MinibrokerError, match="expected tcp://HOST:PORT"):
            await connect("tcp://nohost")


async def raw_client(server: Server) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.wait_for(asyncio.open_connection("127.0.0.1", server.port), TIMEOUT)


async def read_frames(reader: asyncio.StreamReader) -> list[wire.Frame]:
    """Everything the server sends until it closes the socket."""
    data = await asyncio.wait_for(reader.read(), TIMEOUT)
    decoder = wire.FrameDecoder(sender="server")
    decoder.receive_data(data)
    decoder.receive_data(b"")
    return decoder.next_frames()


class TestProtocolViolations:
    async def test_bad_magic(self, server: Server) -> None:
        reader, writer = await raw_client(server)
        writer.write(b"GET / HTTP/1.1\r\n\r\n")
        frames = await read_frames(reader)
        assert isinstance(frames[0], wire.Handshake)
        [error] = frames[1:]
        assert isinstance(error, wire.Error) and error.fatal and error.code == "remote-protocol"
        assert "not a minibroker peer" in error.message
        writer.close()

    async def test_version_mismatch(self, server: Server) -> None:
        reader, writer = await raw_client(server)
        writer.write(wire.encode_handshake(7))
        [_, error] = await read_frames(reader)
        assert isinstance(error, wire.Error) and "version mismatch" in error.message
        writer.close()

    async def test_command_before_hello(self, server: Server) -> None:
        reader, writer = await raw_client(server)
        writer.write(wire.encode_handshake() + wire.encode_commit(5, 1))
        [_, error] = await read_frames(reader)
        assert isinstance(error, wire.Error)
        assert error.request_id == 5 and error.fatal and "before HELLO" in error.message
        writer.close()

    async def test_garbage_drops_only_that_client_and_its_messages_come_back(
        self, server: Server, broker: Broker
    ) -> None:
        good = await connect(server.url, redelivery_policy=NO_DELAY)
        bad = await connect(server.url, redelivery_policy=NO_DELAY)
        lost: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()
        bad.exception_listener = lambda exc: lost.done() or lost.set_result(exc)
        try:
            await send_all(good, "work", [f"w{i}" for i in range(6)])
            bad_session = await bad.create_session(AckMode.CLIENT_ACKNOWLEDGE)
            bad_consumer = await bad_session.create_consumer("work", prefetch=10)
            held = [await receive(bad_consumer) for _ in range(3)]  # delivered, never acked
            assert [m.body for m in held] == ["w0", "w1", "w2"]
            assert (await stats(good, "work"))[1] == 6  # all six prefetched by the bad client

            link_of(bad)._writer.write(struct.pack(">IB", 3, 0x7E) + b"??")  # an unknown frame type
            error = await asyncio.wait_for(lost, TIMEOUT)
            assert isinstance(error, ConnectionClosed) and "unknown frame type 0x7e" in str(error)
            assert bad.closed

            session = await good.create_session(AckMode.CLIENT_ACKNOWLEDGE)
            consumer = await session.create_consumer("work")
            got = [await receive(consumer) for _ in range(6)]
            assert [m.body for m in got] == [f"w{i}" for i in range(6)]
            # a transport failure: everything the dropped client held counts as delivered
            assert all(m.redelivered for m in got)
            await got[-1].acknowledge()
            assert await stats(good, "work") == (0, 0, 6, 6)
        finally:
            await bad.close()
            await good.close()

    async def test_a_dropped_socket_redelivers(self, server: Server) -> None:
        good = await connect(server.url)
        dropped = await connect(server.url)
        lost: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()
        dropped.exception_listener = lambda exc: lost.done() or lost.set_result(exc)
        try:
            await send_all(good, "drop", ["d"])
            session = await dropped.create_session(AckMode.CLIENT_ACKNOWLEDGE)
            await receive(await session.create_consumer("drop"))
            link_of(dropped).drop()
            assert isinstance(await asyncio.wait_for(lost, TIMEOUT), ConnectionClosed)
            consumer = await (await good.create_session()).create_consumer("drop")
            again = await receive(consumer)
            assert again.body == "d" and again.redelivered
        finally:
            await dropped.close()
            await good.close()

    async def test_broker_drop_connections_reaches_tcp_clients(self, server: Server, broker: Broker) -> None:
        client = await connect(server.url)
        lost: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()
        client.exception_listener = lambda exc: lost.done() or lost.set_result(exc)
        assert broker.drop_connections() == 1
        assert isinstance(await asyncio.wait_for(lost, TIMEOUT), ConnectionClosed)
        await client.close()

    async def test_server_close_disconnects_clients(self, broker: Broker) -> None:
        server = await start_server(broker)
        client = await connect(server.url)
        lost: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()
        client.exception_listener = lambda exc: lost.done() or lost.set_result(exc)
        await asyncio.wait_for(server.close(), TIMEOUT)
        error = await asyncio.wait_for(lost, TIMEOUT)
        assert isinstance(error, ConnectionClosed) and "shutting down" in str(error)
        assert server.connections == 0 and broker.statistics().connections == 0
        with pytest.raises(ConnectionClosed):
            await connect(server.url)
        await client.close()


class TestSlowReaders:
    async def test_a_consumer_that_does_not_read_holds_its_window_unencoded(
        self, server: Server, broker: Broker
    ) -> None:
        """A prefetch window of 50 MB to a client that reads nothing: the server encodes about a socket buffer's
        worth (1 MiB) and keeps the rest as the broker's own messages, so the client is neither dropped nor copied
        for; once it reads, every message comes, in order."""
        from minibroker.plugins.server.connection import HIGH_WATER as _HIGH_WATER

        reader, writer = await raw_client(server)
        decoder = wire.FrameDecoder(sender="server")

        async def next_frame(kind: type) -> wire.Frame:
            while True:
                for frame in decoder.next_frames():
                    if isinstance(frame, kind):
                        return frame
                data = await asyncio.wait_for(reader.read(1 << 20), TIMEOUT)
                assert data, "the server closed the connection"
                decoder.receive_data(data)

        writer.write(wire.encode_handshake() + wire.encode_hello(1, None, None, None))
        await next_frame(wire.Connected)
        writer.write(wire.encode_add_consumer(2, ConsumerInfo(Destination.queue("big"), prefetch=1000)))
        await next_frame(wire.ConsumerAdded)
        body = b"x" * 256 * 1024
        async with await connect(broker) as producer_conn:
            await send_all(producer_conn, "big", [body] * 200, persistent=False)
        assert broker.queue("big").inflight == 200  # all dispatched to the client that does not read
        (client,) = server._connections
        encoded = client.transport.get_write_buffer_size() + sum(len(data) for data in client.out)
        assert encoded <= 3 * _HIGH_WATER and len(client.backlog) >= 180
        bodies = 0
        seqs = []
        while bodies < 200:
            frame = await next_frame(Dispatch)
            assert isinstance(frame, Dispatch) and frame.message is not None
            assert frame.message.body == body
            seqs.append(frame.seq)
            bodies += 1
        assert seqs == sorted(seqs) and server.connections == 1
        writer.close()

    async def test_a_client_that_does_not_read_does_not_hold_up_the_servers_close(self, broker: Broker) -> None:
        """Closing the server ends a connection whose peer reads nothing and has bytes waiting to go (a socket
        closes only once they are read): after a second's grace it is cut."""
        server = await start_server(broker, port=0)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", server.port))
        _, writer = await asyncio.open_connection(sock=sock)
        writer.write(wire.encode_handshake() + wire.encode_hello(1, None, None, None))
        writer.write(wire.encode_add_consumer(2, ConsumerInfo(Destination.queue("big"), prefetch=1000)))
        await until(lambda: broker.queue("big").consumers == 1)
        async with await connect(broker) as producer_conn:
            await send_all(producer_conn, "big", [b"x" * 256 * 1024] * 100, persistent=False)
        (client,) = server._connections
        await until(lambda: client.transport.get_write_buffer_size() > 0)
        await asyncio.wait_for(server.close(), TIMEOUT)
        assert server.connections == 0
        writer.close()
