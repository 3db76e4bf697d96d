"""The floor under the STOMP benchmark: ``stomp_bench.py --broker floor`` runs this instead of a broker.

The least an asyncio STOMP server can do per frame: split at NUL, read the command and headers, answer with one
format string; no broker, no checks. ack:auto subscribers get every message at once, client-individual ones one per
ACK (prefetch 1). What a client-individual round trip costs here is the floor under any pure-Python broker's figure:
an event-loop turn, a read and a write per message. Prints ``port N``; answers ``cpu`` with its CPU seconds and stops
at ``quit``, as the benchmark's broker child does.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import threading
import time

QUEUE: collections.deque[bytes] = collections.deque()


class Floor(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.buf = b""
        self.seq = 0

    def message(self, body: bytes) -> bytes:
        self.seq += 1
        return (
            b"MESSAGE\nsubscription:s\nmessage-id:ID:floor-%d\nack:%d\ndestination:/queue/q\ncontent-length:%d\n\n%s\0"
            % (
                self.seq,
                self.seq,
                len(body),
                body,
            )
        )

    def data_received(self, data: bytes) -> None:
        self.buf += data
        out: list[bytes] = []
        while (end := self.buf.find(b"\0")) >= 0:
            frame, self.buf = self.buf[:end].lstrip(b"\r\n"), self.buf[end + 1 :]
            head, _, body = frame.partition(b"\n\n")
            command, *lines = head.split(b"\n")
            headers = dict(line.split(b":", 1) for line in lines if b":" in line)
            if command in (b"CONNECT", b"STOMP"):
                out.append(b"CONNECTED\nversion:1.2\nheart-beat:0,0\n\n\0")
            elif command == b"SEND":
                QUEUE.append(body)
            elif command == b"SUBSCRIBE":
                if headers.get(b"ack", b"auto") == b"auto":
                    out.extend(self.message(QUEUE.popleft()) for _ in range(len(QUEUE)))
                elif QUEUE:
                    out.append(self.message(QUEUE.popleft()))
            elif command == b"ACK" and QUEUE:
                out.append(self.message(QUEUE.popleft()))
            if b"receipt" in headers:
                out.append(b"RECEIPT\nreceipt-id:%s\n\n\0" % headers[b"receipt"])
        if out:
            self.transport.write(b"".join(out))


async def main() -> None:
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    def commands() -> None:
        for line in sys.stdin:
            if line.strip() == "cpu":
                print(f"cpu {time.process_time():.6f}", flush=True)
            elif line.strip() == "quit":
                break
        loop.call_soon_threadsafe(done.set)

    server = await loop.create_server(Floor, "127.0.0.1", 0)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    threading.Thread(target=commands, daemon=True).start()
    await done.wait()
    server.close()


if __name__ == "__main__":
    asyncio.run(main())
