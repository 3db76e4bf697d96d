"""STOMP and native floods as another client meets them (issue 41, item 4): ``.venv/bin/python
tests/benchmarks/flood_bench.py [--runs 3] [--only stomp-small ...]``.

Runs ``minibroker serve --port 0 --stomp-port 0 --data-dir TMP`` (a child process). A flooder process writes, as fast
as the socket takes them, one of: many small STOMP SENDs, a few large ones (1 MiB bodies), many small native SEND
frames, a few large ones, many small ones each asking for a receipt (the flooder reads the answers), or persistent
ones (each a store transaction). Meanwhile another client (a process of its own, a raw STOMP socket) sends to a topic
with a receipt, one at a time, and times each RECEIPT: the longest is how long the flood stalled it (target <= 100
ms). The baseline is the same client's longest round trip on the idle broker in the same run; the ratio is flood /
idle. Printed: best of ``--runs`` fresh brokers with the worst beside it (a shared machine's noise). What is left of
a stall under a flood of 100,000 queued messages is mostly CPython's full collections of the growing heap (two
tracked objects per queued message). Not part of the test run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event

from minibroker import Destination, Message
from minibroker.wire import encode_handshake, encode_hello, encode_send

SMALL = 100_000  # small frames per flood
LARGE = 24  # large frames per flood
PERSISTENT = 20_000  # persistent frames per flood (each a store transaction)
LARGE_BODY = 1 << 20
TARGET = 0.100


def start_broker(data_dir: str) -> tuple[subprocess.Popen[str], int, int]:
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "minibroker", "serve", "--port", "0", "--stomp-port", "0", "--data-dir", data_dir],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    native = int(proc.stdout.readline().strip().rsplit(":", 1)[1])
    stomp = int(proc.stdout.readline().strip().rsplit(":", 1)[1])
    return proc, native, stomp


def stomp_frames(count: int, body: bytes, receipts: bool = False, persistent: bool = False) -> bytes:
    head = b"SEND\ndestination:/queue/flood\ncontent-length:%d\n%s" % (len(body), b"persistent:true\n" * persistent)
    if receipts:
        frames = b"".join(head + b"receipt:%d\n\n%s\x00" % (i, body) for i in range(count))
    else:
        frames = (head + b"\n" + body + b"\x00") * count
    return b"CONNECT\naccept-version:1.2\nhost:/\n\n\x00" + frames


def native_frames(count: int, body: bytes, receipts: bool = False, persistent: bool = False) -> bytes:
    queue = Destination.queue("flood")
    frames = [encode_handshake(), encode_hello(1)]
    frames += [
        encode_send(i + 2, Message(f"ID:flood-{i}", queue, body, persistent=persistent), receipt=receipts)
        for i in range(count)
    ]
    return b"".join(frames)


FLOODS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "stomp-small": ("stomp", lambda: stomp_frames(SMALL, b"x" * 100)),
    "stomp-large": ("stomp", lambda: stomp_frames(LARGE, b"x" * LARGE_BODY)),
    "native-small": ("native", lambda: native_frames(SMALL, b"x" * 100)),
    "native-large": ("native", lambda: native_frames(LARGE, b"x" * LARGE_BODY)),
    "stomp-receipts": ("stomp", lambda: stomp_frames(SMALL, b"x" * 100, receipts=True)),
    "native-receipts": ("native", lambda: native_frames(SMALL, b"x" * 100, receipts=True)),
    "stomp-persistent": ("stomp", lambda: stomp_frames(PERSISTENT, b"x" * 100, persistent=True)),
    "native-persistent": ("native", lambda: native_frames(PERSISTENT, b"x" * 100, persistent=True)),
}


def read_until(sock: socket.socket, marker: bytes, seen: bytearray) -> None:
    while marker not in seen:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the broker closed the probe's connection")
        seen += chunk
    del seen[: seen.index(marker) + len(marker)]


def probe(port: int, ready: Event, stop: Event, longest: Synchronized[float]) -> None:
    """SEND with a receipt, one at a time, until ``stop``; the longest wait for the RECEIPT goes to ``longest``."""
    sock = socket.create_connection(("127.0.0.1", port))
    seen = bytearray()
    sock.sendall(b"CONNECT\naccept-version:1.2\nhost:/\n\n\x00")
    read_until(sock, b"\x00", seen)
    most, n = 0.0, 0
    ready.set()
    while not stop.is_set():
        n += 1
        before = time.perf_counter()
        sock.sendall(b"SEND\ndestination:/topic/probe\nreceipt:%d\n\np\x00" % n)
        read_until(sock, b"receipt-id:%d\n" % n, seen)
        most = max(most, time.perf_counter() - before)
        time.sleep(0.002)
    sock.close()
    longest.value = most


def flood(port: int, data: bytes) -> None:
    """Write ``data`` and end it; return once the broker closes the connection: it has handled every frame."""
    sock = socket.create_connection(("127.0.0.1", port))
    reader = threading.Thread(target=lambda: [None for _ in iter(lambda: sock.recv(65536), b"")], daemon=True)
    reader.start()
    sock.sendall(data)
    sock.shutdown(socket.SHUT_WR)
    reader.join(300)


def measure(name: str | None, seconds: float = 2.0) -> float:
    """The probe's longest round trip while ``name`` floods a fresh broker (None: while it idles ``seconds``)."""
    data_dir = tempfile.mkdtemp(prefix="flood-bench-")
    proc, native, stomp = start_broker(data_dir)
    try:
        ready, stop, longest = multiprocessing.Event(), multiprocessing.Event(), multiprocessing.Value("d", 0.0)
        prober = multiprocessing.Process(target=probe, args=(stomp, ready, stop, longest))
        prober.start()
        ready.wait(30)
        if name is None:
            time.sleep(seconds)
        else:
            edge, make = FLOODS[name]
            data = make()
            port = stomp if edge == "stomp" else native
            flooder = multiprocessing.Process(target=flood, args=(port, data))
            flooder.start()
            flooder.join()
        stop.set()
        prober.join()
        return float(longest.value)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=list(FLOODS), choices=list(FLOODS))
    args = parser.parse_args()
    idle = [measure(None) for _ in range(args.runs)]
    print(f"{'flood':<14} {'longest round trip (best / worst)':>34} {'vs idle':>8}  target <= {TARGET * 1000:.0f} ms")
    print(f"{'idle':<14} {min(idle) * 1000:>17.1f} / {max(idle) * 1000:>6.1f} ms {'1.0x':>8}")
    for name in args.only:
        runs = [measure(name) for _ in range(args.runs)]
        best = min(runs)
        verdict = "ok" if best <= TARGET else "FAIL"
        ratio = best / min(idle) if min(idle) else float("inf")
        print(f"{name:<14} {best * 1000:>17.1f} / {max(runs) * 1000:>6.1f} ms {ratio:>7.1f}x  {verdict}")


if __name__ == "__main__":
    main()
