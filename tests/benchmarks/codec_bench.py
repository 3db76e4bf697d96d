"""CPU instructions per frame of the TCP hot path's codec: encoding and decoding SEND, MESSAGE (DISPATCH) and ACK
frames, counted by valgrind's callgrind (the same count on a busy machine as on an idle one).

Run: ``python tests/benchmarks/codec_bench.py [--frames N]``. Each figure is the difference of a run that encodes
(or decodes) ``N`` frames and a run that only builds them, divided by ``N``: start-up, imports and the building of
the sample frames cancel out.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

#: one child process: build the frames and their bytes (in every run, so not counted), then encode or decode them
_CHILD = """
import gc
import sys
from minibroker import AckType, Destination, Dispatch, Message, MessageAck
from minibroker.wire import FrameDecoder, encode_ack, encode_dispatch, encode_send
n, kind, op = int(sys.argv[1]), sys.argv[2], sys.argv[3]
q = Destination.queue("orders")
messages = [Message(f"ID:bench-1:1:1:{i}", q, "order placed", {"amount": i, "region": "eu"}, producer_id="bench-1:1:1",
                    producer_seq=i, timestamp=1_767_225_600.0) for i in range(n)]
acks = [MessageAck(1, AckType.STANDARD, m.message_id) for m in messages]
dispatches = [Dispatch(1, m, i, 0) for i, m in enumerate(messages)]
encoders = {
    "send": lambda: [encode_send(i, m) for i, m in enumerate(messages)],
    "message": lambda: [encode_dispatch(d) for d in dispatches],
    "ack": lambda: [encode_ack(a) for a in acks],
}
sender = "server" if kind == "message" else "client"
data = b"".join(encoders[kind]())
gc.disable()  # count the codec's instructions, not the collector walking every frame built above
if op == "encode":
    encoders[kind]()
elif op == "decode":
    decoder = FrameDecoder(sender=sender, handshake=False)
    decoder.receive_data(data)
    assert len(decoder.next_frames()) == n
"""


def instructions(n: int, kind: str, op: str) -> int:
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-P",
            "-c",
            _CHILD,
            str(n),
            kind,
            op,
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )  # the same dict layouts in every run
    found = re.search(r"Collected : (\d+)", done.stderr)
    assert found is not None, done.stderr
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=10_000, help="frames per run (default 10,000)")
    args = parser.parse_args()
    n = args.frames
    print(
        f"{'frame (' + format(n, ',') + ' per run, callgrind)':<36} {'encode instr/frame':>19} "
        f"{'decode instr/frame':>19}"
    )
    for kind in ("send", "message", "ack"):
        base = instructions(n, kind, "build")
        figures = [(instructions(n, kind, op) - base) / n for op in ("encode", "decode")]
        print(f"{kind.upper():<36} {figures[0]:>19,.0f} {figures[1]:>19,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
