"""The sans-IO HTTP request parser: what it accepts, how it splits, what it refuses and with which status."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minibroker.plugins.http.parser import BadRequest, Request, RequestParser, encode_response


def parse_all(data: bytes, **limits: int) -> list[Request]:
    parser = RequestParser(**limits)
    parser.receive_data(data)
    requests = []
    while (request := parser.next_request()) is not None:
        requests.append(request)
    return requests


def refusal(data: bytes, **limits: int) -> int | None:
    with pytest.raises(BadRequest) as caught:
        parse_all(data, **limits)
    return caught.value.status


class TestAccepted:
    def test_a_get_with_headers(self) -> None:
        """Header names come out in lower case, values trimmed, in the order sent."""
        [request] = parse_all(b"GET /api/x?y=1 HTTP/1.1\r\nHost: h\r\nX-A:  one \r\nx-a: two\r\n\r\n")
        assert (request.method, request.target, request.head.version) == ("GET", "/api/x?y=1", "1.1")
        assert request.head.headers == (("host", "h"), ("x-a", "one"), ("x-a", "two"))
        assert request.header("X-A") == "one" and request.body == b""
        assert request.head.keep_alive

    def test_bare_line_feeds(self) -> None:
        """Lines may end in a bare LF, as RFC 9112 allows a server to accept."""
        [request] = parse_all(b"GET / HTTP/1.0\nUser-Agent: x\n\n")
        assert request.header("user-agent") == "x" and not request.head.keep_alive

    def test_a_content_length_body_and_pipelining(self) -> None:
        """Two requests in one read come out one after the other."""
        data = b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\nHost: h\r\n\r\n"
        first, second = parse_all(data)
        assert first.body == b"hello" and second.target == "/b"

    def test_a_chunked_body(self) -> None:
        """Chunk extensions and the trailer are read and dropped."""
        head = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        data = head + b"5;x=y\r\nhello\r\n1\r\n!\r\n0\r\nT: v\r\n\r\n"
        [request] = parse_all(data)
        assert request.body == b"hello!"

    def test_the_pending_head_and_expect_continue(self) -> None:
        """The head is known before the body: the listener answers ``Expect: 100-continue`` and checks the login."""
        parser = RequestParser()
        parser.receive_data(b"PUT / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nab")
        assert parser.next_request() is None
        assert parser.pending_head is not None and parser.pending_head.expects_continue
        parser.receive_data(b"c")
        request = parser.next_request()
        assert request is not None and request.body == b"abc" and parser.pending_head is None

    def test_connection_close(self) -> None:
        [request] = parse_all(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: Close\r\n\r\n")
        assert not request.head.keep_alive


class TestRefused:
    @pytest.mark.parametrize(
        ("data", "status"),
        [
            (b"GET /\r\n\r\n", 400),
            (b"GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
            (b"G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
            (b"GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505),
            (b"GET / HTTP/1.1\r\n\r\n", 400),  # no Host
            (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: h\x00\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
            (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", 400),
        ],
    )
    def test_malformed(self, data: bytes, status: int) -> None:
        assert refusal(data) == status

    def test_limits(self) -> None:
        """Each bound has its status: 414 for the request line, 431 for the head, 413 for the body."""
        assert refusal(b"GET /" + b"a" * 100 + b" HTTP/1.1\r\n", max_request_line=50) == 414
        assert refusal(b"GET /" + b"a" * 100, max_request_line=50) == 414  # before its end arrives
        many = b"".join(b"X-%d: v\r\n" % i for i in range(11))
        assert refusal(b"GET / HTTP/1.1\r\nHost: h\r\n" + many + b"\r\n", max_headers=10) == 431
        assert refusal(b"GET / HTTP/1.1\r\nHost: h\r\nX: " + b"v" * 300, max_head_size=200) == 431
        assert refusal(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", max_body_size=10) == 413
        chunked = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n"
        assert refusal(chunked, max_body_size=10) == 413

    def test_the_parser_stays_failed(self) -> None:
        parser = RequestParser()
        parser.receive_data(b"BAD\r\n\r\n")
        with pytest.raises(BadRequest):
            parser.next_request()
        parser.receive_data(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        with pytest.raises(BadRequest):
            parser.next_request()


REQUESTS = (
    b"GET /api/jolokia/version HTTP/1.1\r\nHost: h\r\nAuthorization: Basic YTpi\r\n\r\n"
    b"POST /api/message/q?type=queue HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nbody"
    b"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    b"HEAD / HTTP/1.0\n\n"
)


@given(st.lists(st.integers(min_value=0, max_value=len(REQUESTS)), max_size=12))
def test_any_split_gives_the_same_requests(cuts: list[int]) -> None:
    """However the bytes are cut into reads, the same requests come out."""
    expected = parse_all(REQUESTS)
    parser = RequestParser()
    got: list[Request] = []
    bounds = [0, *sorted(cuts), len(REQUESTS)]
    for start, end in itertools.pairwise(bounds):
        parser.receive_data(REQUESTS[start:end])
        while (request := parser.next_request()) is not None:
            got.append(request)
    assert got == expected and len(got) == 4


def test_random_bytes_only_ever_raise_bad_request() -> None:
    """Mutated and random input is a request or a BadRequest, never another exception (seeded: replays exactly)."""
    rng = random.Random(33)
    for _ in range(3000):
        data = bytearray(REQUESTS)
        for _ in range(rng.randrange(1, 6)):
            choice = rng.random()
            if choice < 0.5:
                data[rng.randrange(len(data))] = rng.randrange(256)
            elif choice < 0.75:
                del data[rng.randrange(len(data)) :]
                data += rng.randbytes(rng.randrange(30))
            else:
                at = rng.randrange(len(data))
                data[at:at] = rng.choice([b"\r\n", b":", b" ", b"\n\n", b"0\r\n", b"Content-Length: 9\r\n"])
        parser = RequestParser(max_body_size=1000)
        parser.receive_data(bytes(data))
        try:
            while parser.next_request() is not None:
                pass
        except BadRequest as exc:
            assert exc.status in (400, 413, 414, 431, 501, 505)


def test_encode_response() -> None:
    assert encode_response(200, [("Content-Type", "text/plain")], b"hi") == (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi"
    )
    assert encode_response(204, close=True) == b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"
    assert encode_response(200, (), b"hi", head_only=True).endswith(b"Content-Length: 2\r\n\r\n")
    with pytest.raises(ValueError):
        encode_response(200, [("X", "a\r\nSet-Cookie: x")])
