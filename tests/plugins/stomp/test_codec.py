"""The STOMP codec on its own: no sockets, no broker; bytes in, frames out, and back."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.errors import FrameTooLarge, LocalProtocolError, RemoteProtocolError
from minibroker.plugins.stomp.codec import (
    CLIENT_COMMANDS,
    SERVER_COMMANDS,
    StompDecoder,
    StompFrame,
    encode_frame,
    escape_header,
    unescape_header,
)


def decode_all(data: bytes, **options: object) -> list[StompFrame]:
    decoder = StompDecoder(**options)  # type: ignore[arg-type]
    decoder.receive_data(data)
    return list(decoder)


# -- strategies -------------------------------------------------------------------------------------------------------

_text = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=20)
#: 1.0 escapes nothing (yet ActiveMQ decodes backslash pairs) and trims: keep to what survives that
_text_10 = st.text(st.characters(blacklist_characters="\0\r\n:\\", blacklist_categories=("Cs",)), max_size=20).map(
    lambda s: s.strip("".join(chr(i) for i in range(0x21)))
)


@st.composite
def frames(draw: st.DrawFn, version: str, role: str) -> StompFrame:
    commands = sorted(SERVER_COMMANDS if role == "client" else CLIENT_COMMANDS)
    command = draw(st.sampled_from(commands))
    names = _text_10 if version == "1.0" else _text
    values = _text_10 if version == "1.0" else _text
    headers = draw(st.dictionaries(names.filter(lambda n: n != "content-length"), values, max_size=6))
    if version == "1.0":
        headers = {k: v for k, v in headers.items() if k}
    body = draw(st.binary(max_size=40))
    counted = role == "client" or command == "SEND"
    if counted:
        headers["content-length"] = str(len(body))
    else:
        body = body.replace(b"\0", b"")
    return StompFrame(command, headers, body)


# -- round trips ------------------------------------------------------------------------------------------------------


class TestRoundTrip:
    @pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
    @pytest.mark.parametrize("role", ["server", "client"])
    @settings(max_examples=60, deadline=None)
    @given(data=st.data())
    def test_encode_then_decode_is_identity(self, version: str, role: str, data: st.DataObject) -> None:
        """Any frame the encoder writes for a version decodes to the same frame in that version."""
        batch = data.draw(st.lists(frames(version, role), min_size=1, max_size=4))
        wire = b"".join(encode_frame(f, version) for f in batch)
        assert decode_all(wire, role=role, version=version) == batch

    @settings(max_examples=60, deadline=None)
    @given(data=st.data(), seed=st.integers(0, 2**32))
    def test_partial_feeds_give_the_same_frames(self, data: st.DataObject, seed: int) -> None:
        """Feeding the bytes in arbitrary pieces (down to one byte) changes nothing."""
        batch = data.draw(st.lists(frames("1.2", "server"), min_size=1, max_size=4))
        wire = b"".join(encode_frame(f, "1.2") for f in batch)
        rng = random.Random(seed)
        decoder = StompDecoder(role="server", version="1.2")
        got: list[StompFrame] = []
        i = 0
        while i < len(wire):
            n = rng.randint(1, 7)
            decoder.receive_data(wire[i : i + n])
            i += n
            got.extend(decoder)
        assert got == batch
        decoder.receive_eof()

    @pytest.mark.parametrize("chunk", [1000, 4096, 65536, 70001, 262144])
    def test_long_frames_in_reads_of_any_size(self, chunk: int) -> None:
        """Frames longer than a read (the buffer switches to accumulating in place) come out whole, in order."""
        rng = random.Random(chunk)
        batch = []
        for size in (10, 200_000, 65_536, 65_535, 3, 150_000):
            body = bytes(rng.getrandbits(8) for _ in range(64)) * (size // 64)
            batch.append(StompFrame("SEND", {"destination": "/queue/a", "content-length": str(len(body))}, body))
            batch.append(StompFrame("ACK", {"id": str(size)}))
        wire = b"".join(encode_frame(f, "1.2") for f in batch)
        decoder = StompDecoder(role="server", version="1.2")
        got: list[StompFrame] = []
        for i in range(0, len(wire), chunk):
            decoder.receive_data(wire[i : i + chunk])
            got.extend(decoder)
        assert got == batch and all(type(f.body) is bytes for f in got)
        decoder.receive_eof()

    def test_a_long_frame_read_leaves_no_buffer_behind(self) -> None:
        """Once a frame that accumulated over many reads is taken, its bytes are let go at once, not at the next
        read (the all-read shortcut of ``next_frame`` is for a plain bytes buffer only)."""
        body = b"x" * 300_000
        wire = b"SEND\ndestination:/queue/a\ncontent-length:300000\n\n" + body + b"\0\n"
        decoder = StompDecoder(role="server", version="1.2")
        frames = []
        for i in range(0, len(wire), 70_000):
            decoder.receive_data(wire[i : i + 70_000])
            frames.extend(decoder)
        assert [len(f.body) for f in frames] == [len(body)]
        assert decoder.buffered == 0 and len(decoder._buf) == 0

    def test_reads_of_whole_frames_start_fresh(self) -> None:
        """A read after whole frames (the usual one: the buffer was all taken) decodes as a first read does."""
        send = b"SEND\ndestination:/queue/a\ncontent-length:2\n\nab\0\n"
        decoder = StompDecoder(role="server", version="1.2")
        for _ in range(3):
            decoder.receive_data(send * 2)
            assert [f.body for f in decoder] == [b"ab", b"ab"]
            assert decoder.next_frame() is None and decoder.buffered == 0
        decoder.receive_data(send[:10])
        assert decoder.next_frame() is None
        decoder.receive_data(send[10:])
        assert [f.body for f in decoder] == [b"ab"]

    def test_a_long_frame_in_small_reads_takes_linear_time(self) -> None:
        """20 MB in 4 KB reads: each read costs its own size, not the frame's so far (that took minutes)."""
        body = b"x" * 20_000_000
        wire = b"SEND\ndestination:/queue/a\n\n" + body + b"\0\n"
        decoder = StompDecoder(role="server", version="1.2")
        started = time.monotonic()
        frames = []
        for i in range(0, len(wire), 4096):
            decoder.receive_data(wire[i : i + 4096])
            frames.extend(decoder)
        assert [len(f.body) for f in frames] == [len(body)]
        assert time.monotonic() - started < 10

    def test_one_byte_at_a_time(self) -> None:
        wire = b"SEND\ndestination:/queue/a\ncontent-length:3\n\na\0b\0\nMESSAGE\nx:y\n\nhello\0"
        decoder = StompDecoder(role="server", version="1.2")
        got = []
        for b in wire:
            decoder.receive_data(bytes([b]))
            got.extend(decoder)
        assert [f.command for f in got] == ["SEND", "MESSAGE"]
        assert got[0].body == b"a\0b"
        assert got[1].body == b"hello"


class TestSendHeads:
    """A SEND head (command and header lines) seen before is not parsed again: the frames are those a decoder that
    never saw it makes, each with its own headers, under the limits in force when it comes."""

    @settings(max_examples=80, deadline=None)
    @given(data=st.data(), repeats=st.integers(2, 20))
    def test_the_frames_of_a_decoder_that_never_saw_the_head(self, data: st.DataObject, repeats: int) -> None:
        batch = data.draw(st.lists(frames("1.2", "server"), min_size=1, max_size=3))
        batch += [StompFrame("SEND", {"destination": "/queue/a", "content-length": "2"}, b"xy")]
        wire = [encode_frame(f, "1.2") for f in batch] * repeats
        decoder = StompDecoder(role="server", version="1.2")
        decoder.receive_data(b"".join(wire))
        got = list(decoder)
        assert got == [decode_all(w, role="server", version="1.2")[0] for w in wire]
        assert len({id(f.headers) for f in got}) == len(got)  # each frame's own dict

    def test_a_head_kept_meets_the_limits_in_force(self) -> None:
        send = b"SEND\ndestination:/queue/a\nx:1\ncontent-length:2\n\nab\0"
        decoder = StompDecoder(role="server", version="1.2")
        decoder.receive_data(send)
        assert decoder.next_frame() is not None
        decoder.max_headers = 2
        decoder.receive_data(send)
        with pytest.raises(RemoteProtocolError, match="number of headers"):
            decoder.next_frame()

    def test_a_head_kept_is_read_as_1_0_once_the_version_is(self) -> None:
        send = b"SEND\ndestination:/queue/a \ncontent-length:2\n\nab\0"
        decoder = StompDecoder(role="server", version="1.2")
        decoder.receive_data(send)
        frame = decoder.next_frame()
        assert frame is not None and frame.headers["destination"] == "/queue/a "
        decoder.version = "1.0"  # 1.0 trims header values
        decoder.receive_data(send)
        frame = decoder.next_frame()
        assert frame is not None and frame.headers["destination"] == "/queue/a"

    def test_at_most_sixteen_heads_of_at_most_256_bytes(self) -> None:
        decoder = StompDecoder(role="server", version="1.2")
        for i in range(40):
            decoder.receive_data(b"SEND\ndestination:/queue/%d\n\nx\0" % i)
            assert decoder.next_frame() is not None
            assert len(decoder._heads) <= 16
        decoder.receive_data(b"SEND\ndestination:/queue/" + b"q" * 300 + b"\n\nx\0")
        assert decoder.next_frame() is not None
        assert all(len(head) <= 256 for head in decoder._heads)


# -- escaping ---------------------------------------------------------------------------------------------------------


class TestEscaping:
    def test_encoding_per_version(self) -> None:
        """1.2 escapes \\r \\n \\c \\\\; 1.1 all but \\r; 1.0 nothing."""
        value = "a:b\nc\\d\re"
        assert escape_header(value, "1.2") == "a\\cb\\nc\\\\d\\re"
        assert escape_header(value, "1.1") == "a\\cb\\nc\\\\d\re"
        assert escape_header(value, "1.0") == value

    def test_encoded_frame_in_1_2(self) -> None:
        wire = encode_frame(StompFrame("MESSAGE", {"k:1": "v:1\n"}, b"x"), "1.2")
        assert wire == b"MESSAGE\nk\\c1:v\\c1\\n\n\nx\0\n"

    def test_connected_style_1_0_frame_is_written_raw(self) -> None:
        wire = encode_frame(StompFrame("CONNECTED", {"session": "ID:host-1:2"}), "1.0")
        assert wire == b"CONNECTED\nsession:ID:host-1:2\n\n\0\n"

    def test_1_0_refuses_a_newline_in_a_header(self) -> None:
        with pytest.raises(LocalProtocolError):
            encode_frame(StompFrame("MESSAGE", {"k": "a\nb"}), "1.0")

    def test_nul_in_header_or_uncounted_body_is_refused(self) -> None:
        with pytest.raises(LocalProtocolError):
            encode_frame(StompFrame("MESSAGE", {"k": "a\0b"}), "1.2")
        with pytest.raises(LocalProtocolError):
            encode_frame(StompFrame("MESSAGE", {}, b"a\0b"), "1.2")
        assert encode_frame(StompFrame("MESSAGE", {"content-length": "3"}, b"a\0b"), "1.2").endswith(b"a\0b\0\n")

    def test_decoding_as_activemq(self) -> None:
        """\\n \\c \\\\ decode in every version, \\r in 1.2 only, unknown pairs stay as they are."""
        for version in ("1.0", "1.1", "1.2"):
            assert unescape_header("a\\nb\\cc\\\\d", version) == "a\nb:c\\d"
            assert unescape_header("x\\ty", version) == "x\\ty"
        assert unescape_header("a\\rb", "1.2") == "a\rb"
        assert unescape_header("a\\rb", "1.1") == "a\\rb"
        assert unescape_header("end\\", "1.2") == "end\\"

    def test_1_0_trims_and_1_1_keeps_cr(self) -> None:
        wire = b"SEND\n  k  :  v  \r\n\n\0"
        assert decode_all(wire, version="1.0")[0].headers == {"k": "v"}
        frame = decode_all(b"SEND\nk:v\r\n\n\0", version="1.1")[0]
        assert frame.headers == {"k": "v\r"}
        assert decode_all(b"SEND\r\nk:v\r\n\r\n\0", version="1.2")[0].headers == {"k": "v"}

    def test_repeated_header_first_wins_and_missing_colon_means_empty(self) -> None:
        frame = decode_all(b"SEND\ndestination:/queue/a\ndestination:/queue/b\nflag\n\n\0", version="1.2")[0]
        assert frame.headers == {"destination": "/queue/a", "flag": ""}

    def test_invalid_utf8_in_headers_is_replaced(self) -> None:
        frame = decode_all(b"SEND\nk:\xff\xfe\n\n\0", version="1.2")[0]
        assert frame.headers["k"] == "\ufffd\ufffd"


# -- bodies and heart-beats -----------------------------------------------------------------------------------------


class TestBodies:
    def test_send_with_content_length_may_hold_nul(self) -> None:
        frame = decode_all(b"SEND\ncontent-length:5\n\na\0b\0c\0", version="1.2")[0]
        assert frame.body == b"a\0b\0c"

    def test_only_send_honours_content_length_on_the_server(self) -> None:
        """ActiveMQ reads any other client frame to the first NUL, whatever content-length says."""
        frames_ = decode_all(b"ACK\nid:1\ncontent-length:10\n\nab\0", version="1.2")
        assert frames_[0].body == b"ab"
        # a client-side decoder honours it on every frame
        assert decode_all(b"MESSAGE\ncontent-length:4\n\nab\0c\0", role="client", version="1.2")[0].body == b"ab\0c"

    def test_heartbeats_between_frames_are_skipped_and_counted(self) -> None:
        decoder = StompDecoder(role="server", version="1.2")
        decoder.receive_data(b"\n\r\n\nSEND\n\nx\0\n\n")
        assert [f.body for f in decoder] == [b"x"]
        assert decoder.heartbeats == 5
        decoder.receive_eof()

    def test_empty_body_and_no_headers(self) -> None:
        assert decode_all(b"DISCONNECT\n\n\0") == [StompFrame("DISCONNECT", {}, b"")]


# -- malformed input --------------------------------------------------------------------------------------------------


class TestMalformed:
    @pytest.mark.parametrize(
        ("wire", "options", "message"),
        [
            (b"S" * 2000, {}, "The maximum command length was exceeded"),
            (b"S" * 1500 + b"\n", {}, "The maximum command length was exceeded"),
            (b"SEND\n" + b"k" * 11000, {}, "The maximum header length was exceeded"),
            (b"SEND\n" + b"k:v\n" * 5, {"max_headers": 4}, "The maximum number of headers was exceeded"),
            (b"SEND\ncontent-length:abc\n\n\0", {}, "Specified content-length is not a valid integer"),
            (b"SEND\ncontent-length:-1\n\n\0", {}, "Specified content-length is not a valid integer"),
            (b"SEND\ncontent-length:99999999999\n\n\0", {}, "Specified content-length is not a valid integer"),
            (b"SEND\ncontent-length:2\n\nabc\0", {}, "content-length bytes were read and there was no trailing null"),
            (b"SEND\ncontent-length:2000\n\n", {"max_data_length": 1000}, "The maximum data length was exceeded"),
            (b"SEND\n\n" + b"x" * 2000, {"max_data_length": 1000}, "The maximum data length was exceeded"),
        ],
    )
    def test_limits_and_bad_bodies(self, wire: bytes, options: dict[str, int], message: str) -> None:
        decoder = StompDecoder(role="server", version="1.2", **options)  # type: ignore[arg-type]
        decoder.receive_data(wire)
        with pytest.raises(RemoteProtocolError, match=message):
            decoder.next_frame()
        # the decoder stays failed
        with pytest.raises(RemoteProtocolError):
            decoder.receive_data(b"SEND\n\n\0")

    def test_oversize_frame_is_frame_too_large(self) -> None:
        decoder = StompDecoder(role="server", version="1.2", max_frame_size=100)
        decoder.receive_data(b"SEND\ndestination:/queue/a\n\n" + b"x" * 200)
        with pytest.raises(FrameTooLarge) as info:
            decoder.next_frame()
        assert info.value.maximum == 100  # type: ignore[attr-defined]
        assert isinstance(info.value, RemoteProtocolError)

    def test_frame_just_under_the_limit_passes(self) -> None:
        wire = b"SEND\n\n" + b"x" * 10 + b"\0"
        assert decode_all(wire, max_frame_size=len(wire)) == [StompFrame("SEND", {}, b"x" * 10)]
        with pytest.raises(FrameTooLarge):
            decode_all(wire, max_frame_size=len(wire) - 1)

    @pytest.mark.parametrize("cut", [1, 5, 12, 20])
    def test_truncated_frame_at_eof(self, cut: int) -> None:
        wire = b"SEND\ndestination:/queue/a\n\nbody\0"
        decoder = StompDecoder(role="server")
        decoder.receive_data(wire[:cut])
        assert decoder.next_frame() is None
        with pytest.raises(RemoteProtocolError, match="middle of a STOMP frame"):
            decoder.receive_eof()

    @settings(max_examples=300, deadline=None)
    @given(garbage=st.binary(max_size=3000), version=st.sampled_from(["1.0", "1.1", "1.2"]))
    def test_garbage_raises_only_remote_protocol_error(self, garbage: bytes, version: str) -> None:
        decoder = StompDecoder(role="server", version=version, max_frame_size=2048, max_data_length=1500)
        try:
            decoder.receive_data(garbage)
            for frame in decoder:
                assert isinstance(frame.command, str)
            decoder.receive_eof()
        except RemoteProtocolError:
            pass

    @settings(max_examples=150, deadline=None)
    @given(data=st.data())
    def test_mutated_frames_raise_only_remote_protocol_error(self, data: st.DataObject) -> None:
        batch = data.draw(st.lists(frames("1.2", "server"), min_size=1, max_size=3))
        wire = bytearray(b"".join(encode_frame(f, "1.2") for f in batch))
        for _ in range(data.draw(st.integers(1, 8))):
            pos = data.draw(st.integers(0, len(wire)))
            action = data.draw(st.sampled_from(["flip", "insert", "delete"]))
            if action == "flip" and pos < len(wire):
                wire[pos] = data.draw(st.sampled_from([0, 10, 13, 58, 92, 255, 65]))
            elif action == "insert":
                wire[pos:pos] = data.draw(st.sampled_from([b"\0", b"\n", b":", b"\\", b"content-length:9\n"]))
            elif pos < len(wire):
                del wire[pos]
        decoder = StompDecoder(role="server", version="1.2", max_frame_size=4096)
        try:
            decoder.receive_data(bytes(wire))
            list(decoder)
        except RemoteProtocolError:
            pass
