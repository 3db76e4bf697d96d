"""A raw STOMP client over a real socket, for the connector's tests: frames in, frames out, nothing hidden.

It decodes with the connector's own codec in client role and keeps every frame it has not yet been asked for in
``inbox``; tests wait for a frame matching a predicate, with a timeout. ``barrier()`` makes "nothing arrived" a
deterministic statement: the broker answers frames in order, so once the barrier's RECEIPT is in, every frame the
broker produced before it is in the inbox too.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping

from minibroker.plugins.stomp.codec import StompDecoder, StompFrame, encode_frame

_receipts = itertools.count(1)


class PeerClosed(ConnectionError):
    """The broker closed the connection while we were waiting for a frame."""


class RawStompClient:
    """One STOMP connection driven frame by frame."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, version: str = "1.2") -> None:
        self.reader = reader
        self.writer = writer
        self.version = version
        self.decoder = StompDecoder(role="client", version=version)
        self.inbox: list[StompFrame] = []
        self.connected: StompFrame | None = None
        self.eof = False
        self.heartbeats = 0
        self._changed = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def open(
        cls,
        port: int,
        *,
        version: str | None = "1.2",
        connect: bool = True,
        host: str = "127.0.0.1",
        **headers: str,
    ) -> RawStompClient:
        """Open a socket and (by default) CONNECT with ``accept-version`` = ``version`` (None: no header, 1.0)."""
        reader, writer = await asyncio.open_connection(host, port)
        client = cls(reader, writer, version or "1.0")
        if connect:
            await client.connect(version=version, **headers)
        return client

    async def _read_loop(self) -> None:
        try:
            while True:
                data = await self.reader.read(65536)
                if not data:
                    break
                before = self.decoder.heartbeats
                self.decoder.receive_data(data)
                for frame in self.decoder:
                    self.inbox.append(frame)
                self.heartbeats += self.decoder.heartbeats - before
                self._changed.set()
        except (ConnectionError, OSError):
            pass
        finally:
            self.eof = True
            self._changed.set()

    # -- sending ------------------------------------------------------------------------------------------------------

    def send_frame(self, command: str, headers: Mapping[str, str] | None = None, body: bytes | str = b"") -> None:
        data = body.encode() if isinstance(body, str) else body
        self.writer.write(encode_frame(StompFrame(command, dict(headers or {}), data), self.version))

    def send_raw(self, data: bytes) -> None:
        self.writer.write(data)

    async def connect(self, *, version: str | None = "1.2", **headers: str) -> StompFrame:
        extra = {k.replace("_", "-"): v for k, v in headers.items()}
        if version is not None:
            extra.setdefault("accept-version", version)
        extra.setdefault("host", "localhost")
        self.send_frame("CONNECT", extra)
        frame = await self.expect(lambda f: f.command in ("CONNECTED", "ERROR"))
        if frame.command == "CONNECTED":
            self.connected = frame
            self.version = frame.headers.get("version", "1.0")
            self.decoder.version = self.version
        return frame

    async def request(
        self,
        command: str,
        headers: Mapping[str, str] | None = None,
        body: bytes | str = b"",
        timeout: float = 5.0,
    ) -> StompFrame:
        """Send a frame with a fresh ``receipt`` and return the RECEIPT or ERROR answering it."""
        receipt = f"r-{next(_receipts)}"
        self.send_frame(command, {**(headers or {}), "receipt": receipt}, body)
        return await self.expect(
            lambda f: f.command in ("RECEIPT", "ERROR") and f.headers.get("receipt-id") == receipt, timeout
        )

    async def send(self, destination: str, body: bytes | str, **headers: str) -> StompFrame:
        """SEND with a content-length (a BytesMessage, as most clients send) and wait for its RECEIPT."""
        data = body.encode() if isinstance(body, str) else body
        frame = await self.request(
            "SEND",
            {
                "destination": destination,
                "content-length": str(len(data)),
                **{k.replace("_", "-"): v for k, v in headers.items()},
            },
            data,
        )
        assert frame.command == "RECEIPT", frame
        return frame

    async def barrier(self) -> None:
        """Wait until the broker has answered everything sent so far (BEGIN/ABORT of a throwaway transaction)."""
        tx = f"barrier-{next(_receipts)}"
        self.send_frame("BEGIN", {"transaction": tx})
        reply = await self.request("ABORT", {"transaction": tx})
        assert reply.command == "RECEIPT", reply

    # -- receiving ----------------------------------------------------------------------------------------------------

    async def expect(self, predicate: Callable[[StompFrame], bool], timeout: float = 5.0) -> StompFrame:
        """The first frame in the inbox matching ``predicate`` (taken out), waiting up to ``timeout`` seconds."""
        async with asyncio.timeout(timeout):
            while True:
                for i, frame in enumerate(self.inbox):
                    if predicate(frame):
                        return self.inbox.pop(i)
                if self.eof:
                    raise PeerClosed(f"connection closed; inbox: {self.inbox}")
                self._changed.clear()
                await self._changed.wait()

    async def message(self, timeout: float = 5.0) -> StompFrame:
        return await self.expect(lambda f: f.command == "MESSAGE", timeout)

    async def error(self, timeout: float = 5.0) -> StompFrame:
        return await self.expect(lambda f: f.command == "ERROR", timeout)

    def pending_messages(self) -> list[StompFrame]:
        return [f for f in self.inbox if f.command == "MESSAGE"]

    async def no_message(self) -> None:
        """Assert that no MESSAGE is waiting once the broker has answered everything sent so far."""
        await self.barrier()
        assert not self.pending_messages(), self.pending_messages()

    async def wait_closed(self, timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while not self.eof:
                self._changed.clear()
                await self._changed.wait()

    # -- closing ------------------------------------------------------------------------------------------------------

    async def disconnect(self) -> StompFrame:
        reply = await self.request("DISCONNECT")
        await self.wait_closed()
        await self.close()
        return reply

    def abort(self) -> None:
        """Drop the TCP connection without DISCONNECT."""
        self.writer.transport.abort()

    async def close(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass


def headers_match(expected: Mapping[str, str], actual: Mapping[str, str]) -> list[str]:
    """Differences between recorded headers (``<present>``/``<epoch_ms>`` placeholders) and real ones."""
    problems = []
    for name in sorted(set(expected) | set(actual)):
        want = expected.get(name)
        got = actual.get(name)
        if want is None:
            problems.append(f"unexpected header {name}:{got}")
        elif got is None:
            problems.append(f"missing header {name} (want {want})")
        elif want == "<present>":
            continue
        elif want == "<epoch_ms>":
            if not got.isdigit():
                problems.append(f"header {name}:{got} is not epoch milliseconds")
        elif want != got:
            problems.append(f"header {name}: want {want!r}, got {got!r}")
    return problems
