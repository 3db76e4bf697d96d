"""The connector's STOMP behaviour over real sockets, statement by statement (the project's STOMP notes, §14).

Every test talks to ``start_stomp_server(Broker(clock=ManualClock()))`` on port 0 with a raw client; time-dependent
behaviour (heart-beats, the CONNECT deadline, expiry) is driven by advancing the broker's clock.
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from support.stomp_helpers import PeerClosed, RawStompClient

from minibroker import Broker, ManualClock
from minibroker.message import Destination
from minibroker.plugins.stomp import StompServer, start_stomp_server

pytestmark = pytest.mark.usefixtures("loop_errors")


async def connected(server: StompServer, **headers: str) -> RawStompClient:
    client = await RawStompClient.open(server.port, **headers)
    assert client.connected is not None, client.inbox
    return client


class TestConnect:
    async def test_version_negotiation(self, server: StompServer) -> None:
        """No accept-version means 1.0; the highest common version wins."""
        c10 = await RawStompClient.open(server.port, version=None)
        assert c10.connected is not None and c10.connected.headers["version"] == "1.0"
        c12 = await RawStompClient.open(server.port, version="1.0,1.1,1.2")
        assert c12.connected is not None and c12.connected.headers["version"] == "1.2"
        c11 = await RawStompClient.open(server.port, version="1.1,2.0")
        assert c11.connected is not None and c11.connected.headers["version"] == "1.1"
        for c in (c10, c12, c11):
            await c.close()

    @pytest.mark.parametrize("accept", ["2.0", ""])
    async def test_unsupported_version_is_fatal(self, server: StompServer, accept: str) -> None:
        client = await RawStompClient.open(server.port, connect=False)
        reply = await client.connect(version=accept)
        assert reply.command == "ERROR"
        assert reply.headers["message"] == (
            f"Invalid Protocol version[{accept}], supported versions are: [1.2, 1.1, 1.0]"
        )
        await client.wait_closed()
        await client.close()

    async def test_plain_connected_headers(self, server: StompServer) -> None:
        client = await connected(server)
        assert client.connected is not None
        headers = client.connected.headers
        assert set(headers) == {"heart-beat", "server", "session", "version"}
        assert headers["heart-beat"] == "0,0"
        assert headers["server"] == "ActiveMQ/5.17.2"
        assert headers["session"].startswith("ID:")
        await client.close()

    async def test_heart_beat_is_mirrored(self, server: StompServer) -> None:
        client = await connected(server, heart_beat="1000,5000")
        assert client.connected is not None and client.connected.headers["heart-beat"] == "5000,1000"
        await client.close()

    @pytest.mark.parametrize("value", ["0", "T,0", "100,10,50"])
    async def test_bad_heart_beat_is_fatal(self, server: StompServer, value: str) -> None:
        client = await RawStompClient.open(server.port, connect=False)
        reply = await client.connect(heart_beat=value)
        assert reply.command == "ERROR" and reply.headers["message"] == f"Invalid heart-beat header:{value}"
        await client.wait_closed()
        await client.close()

    async def test_client_id_is_the_session_and_must_be_unique(self, server: StompServer) -> None:
        first = await connected(server, client_id="c1")
        assert first.connected is not None and first.connected.headers["session"] == "c1"
        second = await RawStompClient.open(server.port, connect=False)
        reply = await second.connect(client_id="c1")
        assert reply.command == "ERROR" and "Client: c1 already connected" in reply.headers["message"]
        assert reply.body.startswith(b"javax.jms.InvalidClientIDException: ")
        await second.wait_closed()
        for c in (first, second):
            await c.close()

    async def test_receipt_on_connect_goes_into_connected(self, server: StompServer) -> None:
        client = await connected(server, receipt="c-9")
        assert client.connected is not None
        assert client.connected.headers["receipt-id"] == "c-9" and client.connected.headers["response-id"] == "c-9"
        assert not client.inbox
        await client.close()

    async def test_frames_before_connect_are_refused_but_the_connection_stays(self, server: StompServer) -> None:
        client = await RawStompClient.open(server.port, connect=False)
        reply = await client.request("SEND", {"destination": "/queue/Q"}, b"x")
        assert reply.command == "ERROR" and reply.headers["message"] == "Not connected."
        assert (await client.connect()).command == "CONNECTED"
        again = await client.request("CONNECT", {"accept-version": "1.2"})
        assert again.command == "ERROR" and again.headers["message"] == "Already connected."
        await client.barrier()
        await client.close()

    async def test_authenticator(self, broker: Broker, caplog: pytest.LogCaptureFixture) -> None:
        def check(login: str | None, passcode: str | None) -> bool:
            return (login, passcode) == ("app", "secret")

        async with await start_stomp_server(broker, authenticator=check) as server:
            good = await connected(server, login="app", passcode="secret")
            bad = await RawStompClient.open(server.port, connect=False)
            with caplog.at_level(logging.WARNING, logger="minibroker.stomp"):
                reply = await bad.connect(login="app", passcode="wrong")
            refusals = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
            assert any("refusing the STOMP login" in m and "invalid" in m for m in refusals), refusals
            assert reply.command == "ERROR"
            assert reply.headers["message"] == "User name [app] or password is invalid."
            await bad.wait_closed()
            await good.close()
            await bad.close()

    async def test_failing_authenticator_closes_the_connection(
        self, broker: Broker, caplog: pytest.LogCaptureFixture
    ) -> None:
        def broken(login: str | None, passcode: str | None) -> bool:
            raise RuntimeError("directory down")

        async with await start_stomp_server(broker, authenticator=broken) as server:
            client = await RawStompClient.open(server.port, connect=False)
            reply = await client.connect()
            assert reply.command == "ERROR" and reply.headers["message"] == "Internal error"
            await client.wait_closed()
            await client.close()
        assert any("directory down" in r.exc_text for r in caplog.records if r.exc_text)

    async def test_no_connect_within_30_seconds_closes_silently(self, server: StompServer, clock: ManualClock) -> None:
        client = await RawStompClient.open(server.port, connect=False)
        await server.wait_connection_count(1)
        await clock.advance(29.0)
        assert server.connection_count == 1
        await clock.advance(1.5)
        await client.wait_closed()
        assert not client.inbox
        await client.close()


class TestHeartBeats:
    async def test_broker_writes_heart_beats_when_silent(self, server: StompServer, clock: ManualClock) -> None:
        client = await connected(server, heart_beat="0,1000")
        for _ in range(3):
            await clock.advance(1.0)
        await client.barrier()
        assert client.heartbeats >= 2
        await client.close()

    async def test_a_period_under_100_ms_is_beaten_every_100_ms(self, server: StompServer, clock: ManualClock) -> None:
        """issue 29: ``heart-beat:0,1`` asks for a beat every millisecond; the broker mirrors the header (as
        ActiveMQ does) and beats every 100 ms, so such clients cannot keep it busy with timers and writes."""
        client = await connected(server, heart_beat="0,1")
        assert client.connected is not None and client.connected.headers["heart-beat"] == "1,0"
        for _ in range(10):
            await clock.advance(0.1)
        await client.barrier()
        assert 5 <= client.heartbeats <= 11
        await client.close()

    async def test_the_connect_counts_as_input_for_the_first_check(
        self, server: StompServer, clock: ManualClock, caplog: pytest.LogCaptureFixture
    ) -> None:
        """ActiveMQ counts the CONNECT frame as data read: a client idle after connecting survives the first check,
        and is dropped (logged at WARN with its address) only after a whole period without input."""
        client = await connected(server, heart_beat="1000,0")
        await clock.advance(1.0)
        assert server.connection_count == 1
        with caplog.at_level(logging.WARNING, logger="minibroker.stomp"):
            await clock.advance(1.0)
            await client.wait_closed()
        assert any(r.levelno == logging.WARNING and "heart-beat" in r.getMessage() for r in caplog.records)
        await client.close()

    async def test_silent_client_is_dropped_and_its_messages_released(
        self,
        server: StompServer,
        broker: Broker,
        clock: ManualClock,
    ) -> None:
        producer = await connected(server)
        await producer.send("/queue/HB", "m1", persistent="true")
        client = await connected(server, heart_beat="1000,0")
        await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/HB", "ack": "client"})
        await client.message()
        await clock.advance(1.0)  # the first read check sees the SUBSCRIBE
        assert server.connection_count == 2
        await clock.advance(1.0)  # a whole period without input
        await client.wait_closed()
        await server.wait_connection_count(1)
        assert broker.queue("HB").inflight == 0 and broker.queue("HB").size == 1
        sub = await connected(server)
        await sub.request("SUBSCRIBE", {"id": "s2", "destination": "/queue/HB"})
        again = await sub.message()
        assert again.headers["redelivered"] == "true"
        for c in (producer, client, sub):
            await c.close()


class TestSend:
    async def test_headers_become_properties_and_message_headers(self, server: StompServer) -> None:
        client = await connected(server)
        await client.send(
            "/queue/H",
            "body",
            persistent="true",
            priority="7",
            correlation_id="c",
            type="t",
            reply_to="/queue/R",
            x_num="5",
            content_type="text/plain",
        )
        await client.request("SUBSCRIBE", {"id": "s1", "destination": "/queue/H"})
        msg = await client.message()
        h = msg.headers
        assert h["persistent"] == "true" and h["priority"] == "7" and h["correlation-id"] == "c"
        assert h["type"] == "t" and h["reply-to"] == "/queue/R" and h["x-num"] == "5"
        assert h["content-type"] == "text/plain" and h["expires"] == "0" and h["subscription"] == "s1"
        assert "redelivered" not in h and "ack" not in h
        await client.close()

    async def test_default_is_non_persistent(self, server: StompServer, broker: Broker) -> None:
        client = await connected(server)
        await client.send("/queue/NP", "x")
        assert broker.queue("NP").browse()[0].persistent is False
        await client.close()

    async def test_missing_destination_and_unknown_transaction(self, server: StompServer) -> None:
        client = await connected(server)
        reply = await client.request("SEND", {}, b"x")
        assert reply.headers["message"] == "SEND received without a Destination specified!"
        reply = await client.request("SEND", {"destination": "/queue/Q", "transaction": "nope"}, b"x")
        assert reply.headers["message"] == "Invalid transaction id: nope"
        await client.close()

    async def test_first_destination_header_wins(self, server: StompServer, broker: Broker) -> None:
        client = await connected(server)
        client.send_raw(b"SEND\ndestination:/queue/A\ndestination:/queue/B\nreceipt:x\n\nhi\0")
        await client.expect(lambda f: f.command == "RECEIPT")
        assert broker.queue("A").size == 1 and not broker.queue("B").exists
        await client.close()

    async def test_unprefixed_and_composite_destinations(self, server: StompServer, broker: Broker) -> None:
        client = await connected(server)
        await client.send("plain", "x")
        await client.send("/queue/C1,/queue/C2", "y")
        assert broker.queue("plain").size == 1
        assert broker.queue("C1").size == 1 and broker.queue("C2").size == 1
        await client.close()

    async def test_composite_and_wildcard_subscriptions(self, server: StompServer, broker: Broker) -> None:
        """One SUBSCRIBE over several queues reads each of them, as a native composite or wildcard consumer."""
        client = await connected(server)
        await client.send("/queue/C1", "c1")
        await client.send("/queue/W.A", "wa")
        await client.request("SUBSCRIBE", {"id": "s1", "destination": "/queue/C1,/queue/C2"})
        await client.request("SUBSCRIBE", {"id": "s2", "destination": "/queue/W.*"})
        await client.send("/queue/C2", "c2")
        await client.send("/queue/W.B", "wb")
        got = {
            (f.headers["subscription"], f.headers["destination"], f.body)
            for f in [await client.message() for _ in range(4)]
        }
        assert got == {
            ("s1", "/queue/C1", b"c1"),
            ("s1", "/queue/C2", b"c2"),
            ("s2", "/queue/W.A", b"wa"),
            ("s2", "/queue/W.B", b"wb"),
        }
        assert {broker.queue(q).size for q in ("C1", "C2", "W.A", "W.B")} == {0}
        reply = await client.request("SUBSCRIBE", {"id": "s3", "destination": "/queue/W.*", "browser": "true"})
        assert reply.command == "ERROR" and "wildcard-browser" in reply.headers["message"]
        await client.close()

    async def test_non_numeric_priority_drops_the_connection_without_error(self, server: StompServer) -> None:
        client = await connected(server)
        client.send_frame("SEND", {"destination": "/queue/Q", "priority": "high"}, b"x")
        await client.wait_closed()
        assert not [f for f in client.inbox if f.command == "ERROR"]
        await client.close()

    async def test_amq_msg_type(self, server: StompServer, broker: Broker) -> None:
        client = await connected(server)
        await client.send("/queue/T", "as-text", amq_msg_type="text")
        reply = await client.request("SEND", {"destination": "/queue/T", "amq-msg-type": "map"}, b"x")
        assert reply.headers["message"] == "Unsupported message type 'map'"
        assert broker.queue("T").browse()[0].body == "as-text"
        await client.close()

    async def test_expires_is_absolute_epoch_millis(
        self, server: StompServer, broker: Broker, clock: ManualClock
    ) -> None:
        client = await connected(server)
        deadline = int((clock.now() + 5) * 1000)
        await client.send("/queue/E", "x", expires=str(deadline), persistent="true")
        await clock.advance(6)
        await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/E"})
        await client.no_message()
        assert broker.queue("E").expired == 1
        assert broker.queue("ActiveMQ.DLQ").size == 1
        await client.close()

    async def test_escapes_in_and_out(self, server: StompServer) -> None:
        """1.2 decodes \\n on the way in and writes \\c for a colon on the way out."""
        client = await connected(server)
        client.send_raw(b"SEND\ndestination:/queue/X\nk:a\\nb\nurl:http\\c//x\nreceipt:e\n\nv\0")
        await client.expect(lambda f: f.command == "RECEIPT")
        client.send_raw(b"SUBSCRIBE\nid:s\ndestination:/queue/X\n\n\0")
        msg = await client.message()
        assert msg.headers["k"] == "a\nb" and msg.headers["url"] == "http://x"
        await client.close()

    async def test_raw_escaped_bytes_on_the_wire(self, server: StompServer) -> None:
        client = await connected(server)
        await client.send("/queue/W", "v", url="a:b")
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(
            b"CONNECT\naccept-version:1.2\n\n\0SUBSCRIBE\nid:s\ndestination:/queue/W\n\n\0"
            b"BEGIN\ntransaction:a:b\n\n\0BEGIN\ntransaction:a:b\n\n\0"
        )
        data = b""
        async with asyncio.timeout(5):
            while b"ERROR" not in data or not data.rstrip(b"\n").endswith(b"\0"):
                data += await reader.read(4096)
        assert b"\nurl:a\\cb\n" in data
        assert b"session:ID:" in data  # CONNECTED is never escaped
        # header values of an ERROR are escaped too (the transaction name came in as "a:b")
        assert b"\nmessage:The transaction was already started\\c a\\cb\n" in data
        writer.close()
        await client.close()


class TestSubscribe:
    async def test_subscribe_needs_an_id_in_1_2_and_a_destination(self, server: StompServer) -> None:
        client = await connected(server)
        reply = await client.request("SUBSCRIBE", {"destination": "/queue/Q"})
        assert reply.headers["message"] == "SUBSCRIBE received without a subscription id!"
        reply = await client.request("SUBSCRIBE", {"id": "s"})
        assert reply.headers["message"] == "Invalid empty or 'null' Destination header"
        await client.barrier()  # still open
        await client.close()

    async def test_receipt_precedes_the_backlog(self, server: StompServer) -> None:
        client = await connected(server)
        await client.send("/queue/B", "m1")
        await client.send("/queue/B", "m2")
        client.send_frame("SUBSCRIBE", {"id": "s", "destination": "/queue/B", "receipt": "sub"})
        await client.barrier()
        assert [(f.command, f.body) for f in client.inbox] == [("RECEIPT", b""), ("MESSAGE", b"m1"), ("MESSAGE", b"m2")]
        await client.close()

    async def test_ack_header_only_on_client_modes_in_1_2(self, server: StompServer) -> None:
        client = await connected(server)
        for mode in ("auto", "client", "client-individual"):
            await client.send(f"/queue/M-{mode}", "x")
            await client.request("SUBSCRIBE", {"id": mode, "destination": f"/queue/M-{mode}", "ack": mode})
            msg = await client.message()
            assert ("ack" in msg.headers) == (mode != "auto"), mode
        await client.close()

    async def test_selector(self, server: StompServer, broker: Broker) -> None:
        client = await connected(server)
        await client.send("/queue/S", "red", color="red")
        await client.send("/queue/S", "blue", color="blue")
        await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/S", "selector": "color = 'blue'"})
        assert (await client.message()).body == b"blue"
        await client.no_message()
        assert broker.queue("S").size == 1
        reply = await client.request("SUBSCRIBE", {"id": "bad", "destination": "/queue/S", "selector": "a ="})
        assert reply.command == "ERROR"
        assert reply.body.startswith(b"javax.jms.InvalidSelectorException: ")
        await client.close()

    async def test_selector_reads_string_headers_as_numbers_and_booleans(
        self, server: StompServer, broker: Broker
    ) -> None:
        """STOMP headers are strings; ActiveMQ's connector prefixes every SUBSCRIBE selector with
        convert_string_expressions:, so x = 5 matches the header x:5 (spec: stomp.md, SUBSCRIBE)."""
        client = await connected(server)
        for body, price, vip in (
            ("cheap", "5", "false"),
            ("dear", "12", "true"),
            ("odd", "twelve", "true"),
            ("decimal", "12.0", "true"),
        ):
            await client.send("/queue/C", body, price=price, vip=vip)
        await client.request(
            "SUBSCRIBE", {"id": "s", "destination": "/queue/C", "selector": "price > 10 AND vip = TRUE"}
        )
        assert (await client.message()).body == b"dear"  # "twelve" does not read; "12.0" is not an integer
        await client.no_message()
        await client.request("SUBSCRIBE", {"id": "t", "destination": "/queue/C", "selector": "price = 5"})
        assert (await client.message()).body == b"cheap"
        await client.no_message()
        assert broker.queue("C").size == 2
        await client.close()

    async def test_prefetch_zero_never_delivers(self, server: StompServer) -> None:
        client = await connected(server)
        await client.send("/queue/Z", "x")
        await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/Z", "activemq.prefetchSize": "0"})
        await client.no_message()
        await client.close()

    async def test_unsubscribe_releases_unacked_as_redelivered(self, server: StompServer, broker: Broker) -> None:
        client = await connected(server)
        await client.send("/queue/U", "m1")
        await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/U", "ack": "client"})
        first = await client.message()
        assert "redelivered" not in first.headers
        assert (await client.request("UNSUBSCRIBE", {"id": "s"})).command == "RECEIPT"
        assert broker.queue("U").inflight == 0 and broker.queue("U").consumers == 0
        reply = await client.request("UNSUBSCRIBE", {"id": "s"})
        assert reply.headers["message"] == "No subscription matched."
        await client.request("SUBSCRIBE", {"id": "s2", "destination": "/queue/U"})
        assert (await client.message()).headers["redelivered"] == "true"
        await client.close()

    async def test_topic(self, server: StompServer) -> None:
        sub = await connected(server)
        await sub.request("SUBSCRIBE", {"id": "t", "destination": "/topic/news"})
        pub = await connected(server)
        await pub.send("/topic/news", "hello")
        msg = await sub.message()
        assert msg.headers["destination"] == "/topic/news" and msg.body == b"hello"
        await sub.close()
        await pub.close()

    async def test_queue_browser(self, server: StompServer, broker: Broker) -> None:
        client = await connected(server)
        await client.send("/queue/BR", "m1")
        await client.send("/queue/BR", "m2")
        await client.request("SUBSCRIBE", {"id": "b", "destination": "/queue/BR", "browser": "true"})
        bodies = [(await client.message()).body for _ in range(2)]
        end = await client.message()
        assert bodies == [b"m1", b"m2"]
        assert end.headers == {"subscription": "b", "browser": "end", "destination": "/queue/BR", "message-id": "0"}
        assert broker.queue("BR").size == 2
        old = await RawStompClient.open(server.port, version=None)
        reply = await old.request("SUBSCRIBE", {"destination": "/queue/BR", "browser": "true"})
        assert reply.headers["message"] == "Queue Browser feature only valid for Stomp v1.1+ clients!"
        await client.close()
        await old.close()

    async def test_queue_browser_with_a_selector(self, server: StompServer, broker: Broker) -> None:
        """``selector`` on a browser subscription: only matching messages (header strings read as numbers, as
        ActiveMQ's connector reads them), then the ``browser:end`` frame; a bad selector is an ERROR."""
        client = await connected(server)
        for i in range(6):
            await client.send("/queue/BRS", f"m{i}", n=str(i))
        await client.request(
            "SUBSCRIBE", {"id": "b", "destination": "/queue/BRS", "browser": "true", "selector": "n > 3"}
        )
        bodies = [(await client.message()).body for _ in range(2)]
        end = await client.message()
        assert bodies == [b"m4", b"m5"] and end.headers["browser"] == "end"
        assert broker.queue("BRS").size == 6
        reply = await client.request(
            "SUBSCRIBE", {"id": "x", "destination": "/queue/BRS", "browser": "true", "selector": "n >"}
        )
        assert reply.command == "ERROR"
        await client.close()

    async def test_temporary_queue_reply_to(self, server: StompServer) -> None:
        requester = await connected(server)
        await requester.request("SUBSCRIBE", {"id": "r", "destination": "/temp-queue/replies"})
        await requester.send("/queue/requests", "ping", reply_to="/temp-queue/replies")
        responder = await connected(server)
        await responder.request("SUBSCRIBE", {"id": "q", "destination": "/queue/requests"})
        request = await responder.message()
        assert request.headers["reply-to"].startswith("/remote-temp-queue/ID:")
        await responder.send(request.headers["reply-to"], "pong")
        reply = await requester.message()
        assert reply.body == b"pong" and reply.headers["destination"] == "/temp-queue/replies"
        await requester.close()
        await responder.close()

    async def test_temporary_queue_is_the_brokers_owned_refused_to_others_gone_with_its_connection(
        self,
        server: StompServer,
        broker: Broker,
    ) -> None:
        requester = await connected(server)
        await requester.request("SUBSCRIBE", {"id": "r", "destination": "/temp-queue/replies"})
        await requester.send("/queue/requests", "ping", reply_to="/temp-queue/replies")
        responder = await connected(server)
        await responder.request("SUBSCRIBE", {"id": "q", "destination": "/queue/requests"})
        remote = (await responder.message()).headers["reply-to"]
        physical = Destination.queue(remote.removeprefix("/remote-temp-queue/"))
        assert broker.temporary_owner(physical) is not None
        refused = await responder.request("SUBSCRIBE", {"id": "steal", "destination": remote})
        assert refused.headers["message"] == "Cannot use a Temporary destination from another Connection"
        await requester.disconnect()
        assert broker.temporary_owner(physical) is None
        assert not broker.has_queue(physical.name)
        late = await connected(server)
        refused = await late.request("SEND", {"destination": remote}, b"late")
        assert refused.headers["message"] == f"temp-{physical}"
        assert not broker.has_queue(physical.name)
        await responder.close()
        await late.close()


class TestAcknowledge:
    async def test_1_0_acks_by_message_id_and_has_no_nack(self, server: StompServer, broker: Broker) -> None:
        client = await RawStompClient.open(server.port, version=None)
        await client.send("/queue/A10", "m1")
        await client.request("SUBSCRIBE", {"destination": "/queue/A10", "ack": "client"})
        msg = await client.message()
        assert "subscription" not in msg.headers and "ack" not in msg.headers
        reply = await client.request("NACK", {"message-id": msg.headers["message-id"]})
        assert reply.headers["message"] == "NACK received but connection is in v1.0 mode."
        assert (await client.request("ACK", {"message-id": msg.headers["message-id"]})).command == "RECEIPT"
        assert broker.queue("A10").size == 0
        reply = await client.request("UNSUBSCRIBE", {"destination": "/queue/A10"})
        assert reply.command == "RECEIPT"
        await client.close()

    async def test_1_1_needs_message_id_and_subscription(self, server: StompServer, broker: Broker) -> None:
        client = await RawStompClient.open(server.port, version="1.1")
        await client.send("/queue/A11", "m1")
        await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/A11", "ack": "client-individual"})
        msg = await client.message()
        reply = await client.request("ACK", {"message-id": msg.headers["message-id"]})
        assert reply.headers["message"] == "ACK received without a subscription id for acknowledge!"
        reply = await client.request("ACK", {"subscription": "s"})
        assert reply.headers["message"] == "ACK received without a message-id to acknowledge!"
        reply = await client.request("ACK", {"subscription": "s", "message-id": msg.headers["message-id"]})
        assert reply.command == "RECEIPT" and broker.queue("A11").size == 0
        reply = await client.request("ACK", {"subscription": "s", "message-id": msg.headers["message-id"]})
        assert reply.headers["message"] == f"Unexpected ACK received for message-id [{msg.headers['message-id']}]"
        await client.close()

    async def test_1_2_missing_ack_ids(self, server: StompServer) -> None:
        client = await connected(server)
        assert (await client.request("ACK", {})).headers["message"] == "ACK received without a ack id for acknowledge!"
        reply = await client.request("NACK", {})
        assert reply.headers["message"] == "NACK received without an ack header to acknowledge!"
        await client.close()

    async def test_ack_on_auto_is_unexpected(self, server: StompServer) -> None:
        client = await connected(server)
        await client.send("/queue/AA", "m1")
        await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/AA"})
        msg = await client.message()
        reply = await client.request("ACK", {"id": msg.headers["message-id"], "message-id": "m"})
        assert reply.headers["message"] == "Unexpected ACK received for message-id [m]"
        await client.close()

    async def test_client_ack_in_transaction_then_abort_then_plain_ack(
        self, server: StompServer, broker: Broker
    ) -> None:
        client = await connected(server)
        for body in ("m1", "m2"):
            await client.send("/queue/TX", body, persistent="true")
        await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/TX", "ack": "client"})
        m1, m2 = await client.message(), await client.message()
        await client.request("BEGIN", {"transaction": "t1"})
        await client.request("ACK", {"id": m2.headers["ack"], "transaction": "t1"})
        assert broker.queue("TX").dequeued == 0
        await client.request("ABORT", {"transaction": "t1"})
        await client.no_message()  # not redelivered
        assert (await client.request("ACK", {"id": m1.headers["ack"]})).command == "RECEIPT"
        assert broker.queue("TX").size == 1
        await client.request("BEGIN", {"transaction": "t2"})
        await client.request("ACK", {"id": m2.headers["ack"], "transaction": "t2"})
        assert broker.queue("TX").size == 1
        await client.request("COMMIT", {"transaction": "t2"})
        assert broker.queue("TX").size == 0 and broker.queue("TX").dequeued == 2
        await client.close()

    async def test_nack_in_transaction_is_refused(self, server: StompServer) -> None:
        client = await connected(server)
        await client.send("/queue/NT", "m1", persistent="true")
        await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/NT", "ack": "client-individual"})
        msg = await client.message()
        await client.request("BEGIN", {"transaction": "t"})
        reply = await client.request("NACK", {"id": msg.headers["ack"], "transaction": "t"})
        assert reply.command == "ERROR" and reply.headers["message"].startswith("Poison ack cannot be transacted")
        await client.close()

    async def test_transaction_frame_errors(self, server: StompServer) -> None:
        client = await connected(server)
        assert (await client.request("BEGIN")).headers["message"] == "Must specify the transaction you are beginning"
        await client.request("BEGIN", {"transaction": "t"})
        reply = await client.request("BEGIN", {"transaction": "t"})
        assert reply.headers["message"] == "The transaction was already started: t"
        reply = await client.request("ABORT")
        assert reply.headers["message"] == "Must specify the transaction you are committing"
        assert (await client.request("COMMIT", {"transaction": "x"})).headers["message"] == "Invalid transaction id: x"
        await client.close()


class TestErrors:
    async def test_unknown_command_is_fatal(self, server: StompServer) -> None:
        client = await connected(server)
        reply = await client.request("FOO")
        assert reply.command == "ERROR" and reply.headers["message"] == "Unknown STOMP action: FOO"
        assert reply.headers["content-type"] == "text/plain"
        await client.wait_closed()
        await client.close()

    async def test_framing_error_gets_error_then_close(self, broker: Broker) -> None:
        async with await start_stomp_server(broker, max_frame_size=1000) as server:
            client = await connected(server)
            client.send_frame("SEND", {"destination": "/queue/big"}, b"x" * 5000)
            error = await client.error()
            assert error.headers["message"] == "The maximum frame size was exceeded"
            await client.wait_closed()
            await client.close()

    async def test_disconnect_closes_and_releases(self, server: StompServer, broker: Broker) -> None:
        client = await connected(server)
        await client.send("/queue/D", "m1", persistent="true")
        await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/D", "ack": "client-individual"})
        await client.message()
        reply = await client.disconnect()
        assert reply.command == "RECEIPT"
        assert broker.queue("D").inflight == 0 and broker.queue("D").consumers == 0
        with pytest.raises(PeerClosed):
            await client.message(timeout=1)

    async def test_broker_fault_injection_drops_stomp_clients(self, server: StompServer, broker: Broker) -> None:
        client = await connected(server)
        await client.barrier()
        assert broker.drop_connections() == 1
        await client.wait_closed()
        await client.close()

    async def test_server_close_drops_clients(self, broker: Broker) -> None:
        server = await start_stomp_server(broker)
        client = await connected(server)
        await server.close()
        await client.wait_closed()
        assert server.connection_count == 0
        await client.close()
        assert server.url.startswith("stomp://127.0.0.1:")


class TestListenerUrl:
    async def test_an_ipv6_host_is_bracketed(self, broker: Broker) -> None:
        """As the native listener's tcp:// URL: stomp://[::1]:PORT."""
        try:
            srv = await start_stomp_server(broker, host="::1", port=0)
        except OSError:
            pytest.skip("no IPv6 loopback on this machine")
        try:
            assert srv.url == f"stomp://[::1]:{srv.port}"
        finally:
            await srv.close()
