#!/usr/bin/env python3
"""Record how ActiveMQ 5.17.2 renders MapMessages for STOMP subscribers that ask a ``transformation``, and what
it makes of a SEND with one, into recordings/transformations.json (run twice, compared).

    .venv/bin/python tests/plugins/stomp/record_transformations.py

Needs Java 17 and Debian's activemq, libactivemq-java and libxstream-java (oracle/build.sh compiles the broker it
runs). The test suite never runs this file; tests/plugins/stomp/test_transformations.py replays the recording.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "recordings" / "transformations.json"

#: maps sent by a JMS producer (typed values as the scripted oracle writes them)
MAPS: dict[str, dict[str, Any]] = {
    "every_type": {
        "s": {"string": "x"},
        "i": {"int": 1},
        "l": {"long": 12345678901},
        "d": {"double": 1.5},
        "b": {"boolean": True},
        "sh": {"short": 2},
        "f": {"float": 2.5},
        "by": {"byte": 3},
        "raw": {"bytes": "hi"},
    },
    "one": {"k": {"string": "v"}},
    "empty": {},
    "numeric_strings": {
        "a": {"string": "123"},
        "b": {"string": "true"},
        "c": {"string": "1.5"},
        "d": {"string": ""},
        "e": {"string": 'q"<&>\n\u00e9 </x>'},
    },
    "numbers": {
        "f1": {"float": 0.1},
        "f2": {"float": 1e10},
        "d1": {"double": 0.1},
        "d2": {"double": 1e20},
        "d3": {"double": -2.0},
        "l": {"long": -5},
        "big": {"double": 123456789.0},
        "small": {"double": 0.0001},
    },
    "many": {f"k{i}": {"int": i} for i in range(14)},
}
SUBSCRIBE_TRANSFORMATIONS = ["jms-map-json", "jms-map-xml", "jms-json", "jms-xml", "jms-object-json"]
#: objects sent by a JMS producer in an ObjectMessage ("absent": setObject never called)
OBJECTS: dict[str, Any] = {
    "string": {"string": "hello"},
    "numeric_string": {"string": "123"},
    "escaped_string": {"string": 'a<&>"b'},
    "empty_string": {"string": ""},
    "int": {"int": 5},
    "long": {"long": 12345678901},
    "short": {"short": -2},
    "byte": {"byte": 7},
    "double": {"double": 1.5},
    "float": {"float": 0.1},
    "boolean": {"boolean": True},
    "char": {"char": "x"},
    "bytes": {"bytes": "hi"},
    "absent": None,
}
OBJECT_TRANSFORMATIONS = [None, "jms-object-json", "jms-object-xml", "jms-json", "jms-xml", "jms-map-json"]
#: streams sent by a JMS producer in a StreamMessage
STREAMS: dict[str, list[Any]] = {
    "every_type": [
        {"string": "x"},
        {"int": 1},
        {"long": 12345678901},
        {"double": 1.5},
        {"boolean": True},
        {"short": 2},
        {"float": 2.5},
        {"byte": 3},
        {"char": "c"},
        {"bytes": "hi"},
    ],
    "empty": [],
    "long_string": [{"string": "y" * 9000}],
}
STREAM_TRANSFORMATIONS = [None, "jms-json", "jms-xml", "jms-object-json"]
#: more SENDs: the object forms, jms-byte, the plain forms and an unknown name
MORE_SENDS = [
    ("jms-object-xml", "<string>hello</string>", False),
    ("jms-object-xml", "<string>a &amp; b</string>", False),
    ("jms-object-xml", "<int>5</int>", False),
    ("jms-object-xml", "<long>7</long>", False),
    ("jms-object-xml", "<short>3</short>", False),
    ("jms-object-xml", "<byte>4</byte>", False),
    ("jms-object-xml", "<double>1.5</double>", False),
    ("jms-object-xml", "<float>2.5</float>", False),
    ("jms-object-xml", "<boolean>true</boolean>", False),
    ("jms-object-xml", "<char>x</char>", False),
    ("jms-object-xml", "<map>\n  <entry>\n    <string>k</string>\n    <int>1</int>\n  </entry>\n</map>", False),
    ("jms-object-xml", "<no-such-thing/>", False),
    ("jms-object-xml", "not xml", False),
    ("jms-object-json", '{"string":"hello"}', False),
    ("jms-object-json", '{"int":5}', False),
    ("jms-object-json", '{"string":123}', False),
    ("jms-object-json", '{"double":1.5}', False),
    ("jms-object-json", '{"boolean":true}', False),
    ("jms-object-json", "not json", False),
    ("jms-byte", "abc", False),
    ("jms-byte", "abc", True),
    ("jms-json", '{"map":{"entry":{"string":["only",7]}}}', False),
    ("jms-xml", "<string>x</string>", False),
    ("jms-map-json", "abc", True),
    ("no-such-transformation", "abc", False),
]
SENDS = [
    ("jms-map-json", '{"map":{"entry":[{"string":["name","x"]},{"string":"n","int":5},{"string":"f","float":1.5}]}}'),
    ("jms-map-json", '{"map":{"entry":{"string":["only",7]}}}'),
    ("jms-map-xml", "<map>\n  <entry>\n    <string>name</string>\n    <string>x</string>\n  </entry>\n</map>"),
    ("jms-map-json", "not json"),
    ("jms-map-xml", "<not-a-map/>"),
]


def frame(command: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    return (command + "\n" + "".join(f"{k}:{v}\n" for k, v in headers.items()) + "\n").encode() + body + b"\0"


class Frames:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    def next(self) -> tuple[str, dict[str, str], bytes]:
        while b"\0" not in self.buffer:
            self.buffer += self.sock.recv(65536)
        end = self.buffer.index(b"\0")
        raw = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        while self.buffer[:1] == b"\n":
            del self.buffer[:1]
        head, _, body = raw.lstrip(b"\n").partition(b"\n\n")
        lines = head.decode().split("\n")
        return lines[0], dict(line.split(":", 1) for line in lines[1:] if ":" in line), body


def run(classpath: str) -> dict[str, Any]:
    proc = subprocess.Popen(
        ["java", "-cp", classpath, "StompOracle"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    port = json.loads(proc.stdout.readline())["port"]

    def ask(op: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(op) + "\n")
        proc.stdin.flush()
        reply: dict[str, Any] = json.loads(proc.stdout.readline())
        return reply

    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    frames = Frames(sock)
    sock.sendall(frame("CONNECT", {"accept-version": "1.2", "host": "localhost"}))
    frames.next()
    rendered = []
    for name, values in MAPS.items():
        for transformation in SUBSCRIBE_TRANSFORMATIONS:
            queue = f"{name}.{transformation}"
            ask({"op": "send_map", "queue": queue, "map": values})
            sock.sendall(
                frame("SUBSCRIBE", {"id": queue, "destination": f"/queue/{queue}", "transformation": transformation})
            )
            _, headers, body = frames.next()
            rendered.append(
                {
                    "map": name,
                    "transformation": transformation,
                    "header": headers.get("transformation"),
                    "body": body.decode(),
                }
            )
    sent = []
    for transformation, body in SENDS:
        sock.sendall(
            frame("SEND", {"destination": "/queue/IN", "transformation": transformation, "receipt": "r"}, body.encode())
        )
        command, _, _ = frames.next()
        sent.append(
            {
                "transformation": transformation,
                "body": body,
                "reply": command,
                "jms": ask({"op": "receive", "queue": "IN", "timeout_ms": 2000})["message"],
            }
        )

    def subscriber_gets(queue: str, name: str, transformation: str | None) -> dict[str, Any]:
        """What a STOMP subscriber of ``queue`` asking ``transformation`` (or none) gets of its one message."""
        headers = {"id": queue, "destination": f"/queue/{queue}"}
        if transformation is not None:
            headers["transformation"] = transformation
        sock.sendall(frame("SUBSCRIBE", headers))
        _, got, body = frames.next()
        return _rendering(name, transformation, got, body)

    objects = []
    for name, value in OBJECTS.items():
        for transformation in OBJECT_TRANSFORMATIONS:
            queue = f"object.{name}.{transformation}"
            ask({"op": "send_object", "queue": queue, **({} if value is None else {"object": value})})
            objects.append(subscriber_gets(queue, name, transformation))
    streams = []
    for name, values in STREAMS.items():
        for transformation in STREAM_TRANSFORMATIONS:
            queue = f"stream.{name}.{transformation}"
            ask({"op": "send_stream", "queue": queue, "stream": values})
            streams.append(subscriber_gets(queue, name, transformation))
    plain = []
    for op in ("send_text", "send_bytes"):
        for transformation in OBJECT_TRANSFORMATIONS:
            queue = f"{op}.{transformation}"
            ask({"op": op, "queue": queue, "text": "hello"})
            plain.append(subscriber_gets(queue, op.removeprefix("send_"), transformation))
    more = []
    for index, (transformation, body, with_length) in enumerate(MORE_SENDS):
        headers = {"destination": f"/queue/MORE{index}", "transformation": transformation, "receipt": "r"}
        if with_length:
            headers["content-length"] = str(len(body.encode()))
        sock.sendall(frame("SEND", headers, body.encode()))
        command, reply_headers, _ = frames.next()
        more.append(
            {
                "transformation": transformation,
                "body": body,
                "content_length": with_length,
                "reply": command,
                "reply_message": reply_headers.get("message"),
                "jms": _message_or_error(ask({"op": "receive", "queue": f"MORE{index}", "timeout_ms": 2000})),
            }
        )
    sock.close()
    ask({"op": "quit"}) if False else (proc.stdin.write('{"op":"quit"}\n'), proc.stdin.flush())
    proc.wait()
    return {
        "maps": MAPS,
        "rendered": rendered,
        "sent": sent,
        "objects": OBJECTS,
        "objects_rendered": objects,
        "streams": STREAMS,
        "streams_rendered": streams,
        "more_sent": more,
        "plain_rendered": plain,
    }


def _message_or_error(answer: dict[str, Any]) -> Any:
    return answer["message"] if "message" in answer else {"receive_error": answer.get("error")}


#: headers that differ from run to run
_VOLATILE = {"message-id", "timestamp", "expires", "destination", "subscription", "priority", "persistent"}


def _rendering(name: str, transformation: str | None, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    return {
        "value": name,
        "transformation": transformation,
        "headers": {k: v for k, v in sorted(headers.items()) if k not in _VOLATILE},
        "body": body.decode("utf-8", "backslashreplace"),
    }


def main() -> int:
    build = subprocess.run([str(HERE / "oracle" / "build.sh")], check=True, capture_output=True, text=True)
    classpath = build.stdout.strip().splitlines()[-1]
    first, second = run(classpath), run(classpath)
    if first != second:
        print("the two runs differ", file=sys.stderr)
        return 1
    OUT.parent.mkdir(exist_ok=True)
    record = {
        "origin": "recorded on ActiveMQ 5.17.2's STOMP connector (tests/plugins/stomp/oracle, libxstream-java) with "
        "a raw STOMP 1.2 client; the maps were sent by a JMS producer; run twice, identical",
        **first,
    }
    OUT.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(first['rendered'])} renderings, {len(first['sent'])} sends")
    return 0


if __name__ == "__main__":
    sys.exit(main())
