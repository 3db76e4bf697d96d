"""The converter alone, sans I/O: frames in, frames out, the broker driven directly (no sockets, no loop needed
beyond the broker's own)."""

from __future__ import annotations

import re

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker import Broker, DestinationPolicy, Dispatch, ManualClock
from minibroker._core.temporary import TemporaryDestinations
from minibroker.message import Destination, DestinationKind, Message, PropertyValue
from minibroker.plugins.stomp import StompConverter, StompFrame
from minibroker.plugins.stomp.messages import message_bytes, message_frame, message_from_send
from minibroker.plugins.stomp.subscriptions import Subscription as _Subscription
from minibroker.plugins.stomp.values import escape_value as _escape_value
from minibroker.plugins.stomp.values import java_double, java_string
from minibroker.transport.commands import CreateTemporary

pytestmark = pytest.mark.usefixtures("loop_errors")


def frame(command: str, **headers: str) -> StompFrame:
    return StompFrame(command, {k.replace("_", "-"): v for k, v in headers.items()})


def connected(broker: Broker, **headers: str) -> StompConverter:
    conv = StompConverter(broker)
    conv.receive_frame(frame("CONNECT", accept_version="1.2", **headers))
    (reply,) = conv.take_frames()
    assert reply.command == "CONNECTED"
    return conv


class TestSansIO:
    async def test_connect_send_subscribe_message(self, broker: Broker) -> None:
        conv = connected(broker)
        assert conv.version == "1.2" and conv.connected
        conv.receive_frame(StompFrame("SEND", {"destination": "/queue/q", "receipt": "1"}, b"hi"))
        assert [f.command for f in conv.take_frames()] == ["RECEIPT"]
        conv.receive_frame(frame("SUBSCRIBE", id="s", destination="/queue/q"))
        (msg,) = conv.take_frames()
        assert msg.command == "MESSAGE" and msg.body == b"hi" and msg.headers["subscription"] == "s"
        # the auto ack is owed until the I/O side (or the next frame) sends it
        assert broker.queue("q").inflight == 1
        assert conv.pending_work()
        assert conv.run_pending() is False
        assert broker.queue("q").size == 0 and not conv.pending_work()

    async def test_connected_is_encoded_unescaped_and_later_frames_escaped(self, broker: Broker) -> None:
        conv = StompConverter(broker)
        conv.receive_frame(frame("CONNECT", accept_version="1.2", client_id="a:b"))
        conv.receive_frame(frame("BEGIN"))
        data = conv.data_to_send()
        assert b"session:a:b\n" in data
        assert b"message:Must specify the transaction you are beginning\n" in data

    async def test_dispatch_from_another_connection_calls_on_output(self, broker: Broker) -> None:
        calls: list[int] = []
        consumer = StompConverter(broker, on_output=lambda: calls.append(1))
        consumer.receive_frame(frame("CONNECT", accept_version="1.2"))
        consumer.receive_frame(frame("SUBSCRIBE", id="s", destination="/queue/o", ack="client"))
        consumer.take_frames()
        calls.clear()
        producer = connected(broker)
        producer.receive_frame(StompFrame("SEND", {"destination": "/queue/o"}, b"x"))
        assert calls and [f.command for f in consumer.take_frames()] == ["MESSAGE"]

    async def test_connection_lost_releases_everything(self, broker: Broker) -> None:
        conv = connected(broker)
        conv.receive_frame(StompFrame("SEND", {"destination": "/queue/l", "persistent": "true"}, b"x"))
        conv.receive_frame(frame("SUBSCRIBE", id="s", destination="/queue/l", ack="client-individual"))
        conv.receive_frame(frame("BEGIN", transaction="t"))
        conv.connection_lost()
        assert broker.statistics().connections == 0 and broker.statistics().transactions == 0
        assert broker.queue("l").inflight == 0 and broker.queue("l").size == 1

    async def test_frames_after_disconnect_are_ignored(self, broker: Broker) -> None:
        conv = connected(broker)
        conv.receive_frame(frame("DISCONNECT", receipt="bye"))
        assert conv.close_after_output and conv.closed
        conv.receive_frame(StompFrame("SEND", {"destination": "/queue/late"}, b"x"))
        assert [f.command for f in conv.take_frames()] == ["RECEIPT"]
        assert not broker.queue("late").exists

    async def test_failing_authenticator_is_an_internal_error(self, broker: Broker) -> None:
        def broken(login: str | None, passcode: str | None) -> bool:
            raise RuntimeError("directory down")

        conv = StompConverter(broker, authenticator=broken)
        with pytest.raises(RuntimeError):
            conv.receive_frame(frame("CONNECT", accept_version="1.2"))
        conv.internal_error()
        (error,) = conv.take_frames()
        assert error.command == "ERROR" and conv.close_after_output


class TestFlushOutput:
    """``flush_output``, the listener's one call per write, does what ``run_pending``, ``render_backlog`` and
    ``data_to_send`` do in turn (each step skipped when it has nothing to do)."""

    @pytest.mark.parametrize("paused", [False, True])
    @pytest.mark.parametrize("budget", [1 << 62, 100])
    async def test_the_same_as_the_three_calls(self, paused: bool, budget: int) -> None:
        runs = []
        for combined in (False, True):
            async with Broker(clock=ManualClock()) as broker:
                conv = connected(broker)
                conv.render_budget = budget  # 100: a backlog after every second message
                for i in range(9):
                    conv.receive_frame(StompFrame("SEND", {"destination": "/queue/f"}, b"%d" % i * 40))
                conv.receive_frame(
                    StompFrame("SUBSCRIBE", {"id": "s", "destination": "/queue/f", "activemq.prefetchSize": "2"})
                )
                steps = []
                for _ in range(8):
                    if combined:
                        data, more = conv.flush_output(3, paused)
                    else:
                        more = not paused and conv.run_pending(3)
                        more = (not paused and conv.render_backlog()) or more
                        data = conv.data_to_send()
                    q = broker.queue("f")
                    # (the connection's own number in the message ids aside)
                    steps.append((re.sub(rb"stomp-[0-9]+", b"stomp-N", data), more, q.size, q.inflight))
                runs.append(steps)
        assert runs[0] == runs[1]
        assert any(data for data, *_ in runs[0])


class TestJavaStrings:
    @pytest.mark.parametrize(
        ("value", "text"),
        [
            (1.0, "1.0"),
            (0.001, "0.001"),
            (1e7, "1.0E7"),
            (1.5e20, "1.5E20"),
            (1e-4, "1.0E-4"),
            (-2.5e-7, "-2.5E-7"),
            (123456.789, "123456.789"),
            (float("nan"), "NaN"),
            (float("-inf"), "-Infinity"),
            (0.0, "0.0"),
        ],
    )
    def test_java_double(self, value: float, text: str) -> None:
        assert java_double(value) == text

    def test_java_string(self) -> None:
        assert java_string(True) == "true" and java_string(42) == "42" and java_string("s") == "s"
        assert java_string(b"raw") is None and java_string(None) is None


class _BareBroker:
    """Enough of a broker for building MESSAGE frames: a clock, and the core's registry of temporary destinations."""

    clock = ManualClock()

    def __init__(self) -> None:
        self._temporaries = TemporaryDestinations()

    def dispatch(self, command: CreateTemporary) -> Destination:
        """A connection's CreateTemporary (the tests' connection is number 1)."""
        return self._temporaries.create(1, command.kind, command.connection_name)

    def temporary_owner(self, destination: Destination) -> int | None:
        return self._temporaries.owners.get(destination)


_header_text = st.text(st.sampled_from("ab:\\\n\r\0é \t"), max_size=6)
_property_names = st.one_of(_header_text, st.sampled_from(["priority", "subscription", "content-length", "x", "ack"]))
_property_values = st.one_of(
    _header_text, st.integers(-5, 5), st.floats(allow_nan=True), st.booleans(), st.binary(max_size=3), st.none()
)
_destinations = st.builds(
    Destination,
    st.sampled_from(list(DestinationKind)),
    st.sampled_from(["q", "a:b", "x\\y", "n\nl", "ID:minibroker-stomp-1:1", "zero\0"]),
)


class TestEarlyEncoding:
    """MESSAGEs are encoded as they are made (no header dict): byte for byte what the frame path writes."""

    @settings(max_examples=400, deadline=None)
    @given(
        version=st.sampled_from(["1.0", "1.1", "1.2"]),
        sub_id=st.one_of(st.none(), _header_text),
        ack_id=st.one_of(st.none(), st.integers(0, 10**6).map(str)),
        redelivery=st.integers(0, 2),
        message_id=_header_text,
        destination=_destinations,
        optional=st.tuples(
            st.one_of(st.none(), _header_text),
            st.one_of(st.none(), _destinations),
            st.one_of(st.none(), _header_text),
            st.one_of(st.none(), _destinations),
        ),
        properties=st.dictionaries(_property_names, _property_values, max_size=4),
        body=st.one_of(st.text(st.sampled_from("x\0é"), max_size=4), st.binary(max_size=4)),
        numbers=st.tuples(
            st.integers(0, 9),
            st.booleans(),
            st.sampled_from([0.0, 1.5, 1763786000.1235]),
            st.sampled_from([0.0, 1763786000.123, 0.0005]),
        ),
        plain=st.booleans(),
    )
    def test_same_bytes_as_the_frame_path(
        self,
        version: str,
        sub_id: str | None,
        ack_id: str | None,
        redelivery: int,
        message_id: str,
        destination: Destination,
        optional: tuple[str | None, Destination | None, str | None, Destination | None],
        properties: dict[str, PropertyValue],
        body: str | bytes,
        numbers: tuple[int, bool, float, float],
        plain: bool,
    ) -> None:
        broker = _BareBroker()
        conv = StompConverter(broker)  # type: ignore[arg-type]
        conv.version = version
        # ID:minibroker-stomp-N:1 is this connection's temporary queue
        conv._names.connection = broker  # type: ignore[assignment]  # the bare broker stands for connection 1
        conv._names.parse_one("/temp-queue/mine", fallback=False)
        correlation_id, reply_to, message_type, original = optional
        priority, persistent, expiration, timestamp = numbers
        if plain:  # the usual MESSAGE: a bytes body, no optional header, no property (its own shortcut)
            correlation_id = reply_to = message_type = original = None
            persistent, redelivery, properties = False, 0, {}
            body = body.encode() if isinstance(body, str) else body
        message = Message(
            message_id,
            destination,
            body,
            properties,
            priority,
            persistent,
            timestamp,
            expiration,
            correlation_id,
            reply_to,
            message_type,
            None,
            0,
            "p",
            1,
            original,
        )
        conv.receive_frame(frame("SUBSCRIBE"))  # not connected: an ERROR, which sets nothing up
        conv.take_frames()
        sub = _Subscription(sub_id, destination, "/queue/q", "client")
        if sub_id is not None:
            escaped = _escape_value(sub_id, version)
            sub.id_line = None if escaped is None else "\nsubscription:" + escaped
        early = message_bytes(conv._names, version, sub.id_line, message, redelivery, ack_id)
        conv._emit(message_frame(conv._names, version, sub.header_id, message, redelivery, ack_id))
        expected = conv.data_to_send()
        if early is not None:
            assert early == expected
            conv._emit(early)
            (decoded,) = conv.take_frames()
            assert decoded == message_frame(conv._names, version, sub.header_id, message, redelivery, ack_id)
        # the common case does take the early path
        if (
            version != "1.0"
            and "\0" not in message_id + (sub_id or "")
            and not properties
            and "\0" not in destination.name
            and all(o is None for o in optional)
        ):
            assert early is not None


class TestAutoDispatch:
    """An ``ack:auto`` subscription's route (``_on_auto_dispatch``, the hot path) leaves a connection as the reference
    route (``_on_dispatch``) does: the same bytes to write, auto acks owed, backlog and failure; and it takes the
    plainest MESSAGE itself."""

    @staticmethod
    def _twin(version: str, sub_id: str, budget: int) -> tuple[StompConverter, _Subscription]:
        broker = _BareBroker()
        conv = StompConverter(broker)  # type: ignore[arg-type]
        conv.version = version
        conv._names.connection = broker  # type: ignore[assignment]  # the bare broker stands for connection 1
        conv._names.parse_one("/temp-queue/mine", fallback=False)  # ID:minibroker-stomp-N:1 is its temporary queue
        conv.render_budget = budget
        sub = _Subscription(sub_id, Destination(DestinationKind.QUEUE, "q"), "/queue/q", "auto")
        sub.consumer_id = 7
        escaped = _escape_value(sub_id, version)
        assert escaped is not None
        sub.id_line = "\nsubscription:" + escaped
        return conv, sub

    @settings(max_examples=400, deadline=None)
    @given(
        version=st.sampled_from(["1.1", "1.2"]),
        sub_id=_header_text.filter(lambda t: "\0" not in t),
        messages=st.lists(
            st.tuples(
                st.one_of(_header_text, st.sampled_from(["ID:p-1:-1:1:1", "ID:x\ud800:1"])),
                st.one_of(_destinations, st.just(Destination(DestinationKind.QUEUE, "q"))),
                st.one_of(st.binary(max_size=60), st.text(st.sampled_from("x\0"), max_size=3)),
                st.one_of(st.just({}), st.dictionaries(_property_names, _property_values, max_size=2)),
                st.integers(0, 2),
                st.booleans(),
                st.sampled_from([0.0, 1.5, 1763786000.1235, float("inf")]),
                st.one_of(st.none(), _header_text),
            ),
            min_size=1,
            max_size=6,
        ),
        budget=st.sampled_from([1 << 62, 50]),
    )
    def test_the_same_as_the_reference_route(
        self,
        version: str,
        sub_id: str,
        messages: list[tuple[str, Destination, bytes | str, dict[str, PropertyValue], int, bool, float, str | None]],
        budget: int,
    ) -> None:
        states = []
        for hot in (False, True):
            conv, sub = self._twin(version, sub_id, budget)
            route = conv._on_auto_dispatch if hot else conv._on_dispatch
            for message_id, destination, body, properties, redelivery, persistent, expiration, kind in messages:
                message = Message(
                    message_id,
                    destination,
                    body,
                    properties,
                    4,
                    persistent,
                    1763786000.123,
                    expiration,
                    None,
                    None,
                    kind,
                    None,
                    0,
                    "p",
                    1,
                )
                route(sub, Dispatch(7, message, 1, redelivery))
            states.append(
                (
                    conv.data_to_send(),
                    list(conv._auto_acks),
                    len(conv._backlog),
                    conv._render_failed,
                    conv.close_after_output,
                )
            )
        assert states[0] == states[1]

    def test_the_plainest_message_takes_the_hot_path(self) -> None:
        conv, sub = self._twin("1.2", "s", 1 << 62)
        taken: list[Dispatch] = []
        conv._on_dispatch = lambda sub, dispatch: taken.append(dispatch)  # type: ignore[method-assign]
        for seq in (1, 2):
            plain = (4, False, 1763786000.123, 0.0, None, None, None, None, 0, "p", seq)
            message = Message(f"ID:p-1:-1:1:{seq}", sub.destination, b"body", {}, *plain)
            conv._on_auto_dispatch(sub, Dispatch(7, message, seq))
        assert taken == [] and sub.escaped_for is sub.destination
        assert conv.data_to_send().count(b"MESSAGE\nmessage-id:ID\\cp-1\\c-1\\c1\\c") == 2
        assert list(conv._auto_acks) == [(7, "ID:p-1:-1:1:1"), (7, "ID:p-1:-1:1:2")]


class TestPlainSend:
    """The plainest SEND (a counted body, no other header) is made into a message without message_from_send's walk
    of the headers: the same message it makes; and every other SEND still goes through it."""

    @pytest.mark.parametrize(
        "headers",
        [
            {"content-length": "3"},
            {"content-length": "3", "receipt": "r"},
            {"content-length": "3", "persistent": "true"},
            {"content-length": "3", "color": "red"},
            {},
            {"content-length": "3", "transaction": "t"},
        ],
    )
    async def test_the_message_message_from_send_makes(self, broker: Broker, headers: dict[str, str]) -> None:
        conv = connected(broker)
        conv.receive_frame(frame("BEGIN", transaction="t"))
        sent = []
        for seq in (1, 2):
            send = StompFrame("SEND", {"destination": "/queue/plain", **headers}, b"a:%d" % seq)
            conv.receive_frame(send)
            sent.append(message_from_send(send, Destination(DestinationKind.QUEUE, "plain"), conv._names,
                                          broker.clock.now(), conv._producer_id, seq))  # fmt: skip
        conv.receive_frame(frame("COMMIT", transaction="t"))
        assert [f.command for f in conv.take_frames()] == ["RECEIPT"] * 2 * ("receipt" in headers)
        assert [attrs.astuple(m, recurse=False) for m in broker.queue("plain").browse()] == [
            attrs.astuple(m, recurse=False) for m in sent
        ]

    async def test_after_a_restart_as_any_other_send(self, broker: Broker) -> None:
        """The connection's hot send was made with the broker's core of then: after ``Broker.restart()`` a plain SEND
        goes the way every other SEND does, not to the core the broker replaced."""
        conv = connected(broker)
        await broker.restart()
        conv.receive_frame(StompFrame("SEND", {"destination": "/queue/after", "content-length": "1"}, b"a"))
        conv.receive_frame(StompFrame("SEND", {"destination": "/queue/after", "content-length": "1", "x": "y"}, b"b"))
        assert [m.body for m in broker.queue("after").browse()] == [b"a", b"b"]

    async def test_a_plain_send_to_a_full_queue_is_held_as_any_send(self) -> None:
        policies = {"full.>": DestinationPolicy(memory_limit=1)}
        async with Broker(clock=ManualClock(), policies=policies) as broker:
            conv = connected(broker)
            plain = {"destination": "/queue/full.q", "content-length": "1"}
            conv.receive_frame(StompFrame("SEND", plain, b"a"))
            assert conv.held_admission is None
            conv.receive_frame(StompFrame("SEND", plain, b"b"))
            admission = conv.held_admission
            assert admission is not None
            assert [m.body for m in broker.queue("full.q").browse()] == [b"a"]
            broker.queue("full.q").purge()
            await admission
            conv.release_held(None)
            assert conv.held_admission is None and [m.body for m in broker.queue("full.q").browse()] == [b"b"]
