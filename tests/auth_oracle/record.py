#!/usr/bin/env python3
"""Record what a REAL ActiveMQ Classic 5.17.2 answers to authorization questions (STOMP and MQTT).

    tests/auth_oracle/oracle/build.sh /tmp/authbuild
    python3 tests/auth_oracle/record.py --build /tmp/authbuild

Runs every case of CASES on its OWN fresh broker (oracle/AuthBroker.java built into --build, with the
users and authorization map of BROKER_ARGS, queues seeded with SEEDS by admin over STOMP), and the
whole table TWICE. Writes recordings/auth_cases.json: the cases whose runs agree (with their outcome)
and `varied` (cases whose runs differ, all outcomes). A broker per case because a consumer on a
composite queue leaves broker state behind that changes later answers (see README.md).
Stdlib only, raw STOMP 1.1 frames and raw MQTT 3.1.1 packets over blocking sockets; the test
suite never runs this file. --runs N changes the number of runs, --out FILE the output.

Topic cases: after the subscription is answered, admin publishes (STOMP, with receipts)
"m-<name>" to each topic of STOMP_PUBLISH / MQTT_PUBLISH; everything the app connection receives
within 1 s after the last publish is recorded. A case may have `preceded_by`: steps run first, on
the same broker, each on its own connection (their outcomes in outcome["preceding"]).
"""

import argparse
import json
import os
import re
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "recordings", "auth_cases.json")

BROKER_ARGS = [
    "--user",
    "admin:secret:admins",
    "--user",
    "app:pw:apps",
    "--entry",
    "queue:>:admins:admins:admins",
    "--entry",
    "queue:orders.>:apps:apps:apps",
    "--entry",
    "queue:billing.a:apps:apps:apps",
    "--entry",
    "queue:billing.b:apps:apps:apps",
    "--entry",
    "topic:>:admins:admins:admins",
    "--entry",
    "topic:orders.>:apps:apps:apps",
    "--entry",
    "topic:test.*:apps:apps:apps",
    "--entry",
    "topic:ActiveMQ.Advisory.>:admins,apps:admins,apps:admins,apps",
    "--connector",
    "stomp://127.0.0.1:0",
    "--connector",
    "mqtt://127.0.0.1:0",
]
USERS = {"admin": "secret", "app": "pw"}
# queue -> bodies it holds before every case (sent by admin over STOMP, in this order)
SEEDS = {"secret.q": ["top-secret"], "orders.a": ["order-1"], "billing.a": ["billing-a"], "billing.b": ["billing-b"]}
STOMP_PUBLISH = ["test.a", "test.a.b", "orders.x", "secret.t", "secret.x"]  # JMS topic names
MQTT_PUBLISH = ["test/a", "orders/x", "secret/t"]  # MQTT a/b = JMS a.b
WAIT = 1.0
CAVEATS = [
    "Delivery of already-queued messages to a consumer on a composite or wildcard QUEUE "
    "(/queue/a,/queue/b, /queue/orders.*) is not deterministic in ActiveMQ 5.17.2: the same case got the "
    "messages within 1 s in some runs and nothing in others, even when the two recorded runs agree. "
    "Replay only the reply (RECEIPT/ERROR and its message) of such cases, not their `messages`.",
    "Authorization answers (RECEIPT/ERROR, error texts, SUBACK codes, PUBACK) were identical in every run.",
]

_ID = re.compile(r"ID:[A-Za-z0-9._:\-]+")


def norm(s):
    return _ID.sub("ID:<id>", s) if isinstance(s, str) else s


# ============================================================================ the cases
def _c(edge, op, dest, user="app", headers=None):
    c = {"edge": edge, "user": user, "op": op, "destination": dest}
    if headers:
        c["headers"] = headers
    return c


CASES = (
    [
        _c("stomp", "subscribe", d)
        for d in [
            "/queue/secret.q",
            "/queue/orders.a",
            "/queue/orders.a,/queue/secret.q",
            "/queue/orders.a,/queue/orders.b",
            "/queue/billing.a,/queue/billing.b",
        ]
    ]
    + [
        _c("stomp", "subscribe", "/queue/orders.a", headers={"browser": "true"}),
        _c("stomp", "subscribe", "/queue/secret.q", headers={"browser": "true"}),
    ]
    + [
        _c("stomp", "subscribe", d)
        for d in [
            "/topic/test.*",
            "/topic/test.>",
            "/topic/orders.*",
            "/topic/orders.>",
            "/topic/*.x",
            "/topic/>",
            "/topic/test.a",
            "/topic/secret.t",
            "/queue/orders.*",
            "/queue/>",
        ]
    ]
    + [
        _c("stomp", "send", d)
        for d in [
            "/queue/orders.a",
            "/queue/secret.q",
            "/queue/orders.a,/queue/secret.q",
            "/queue/orders.a,/queue/orders.b",
            "/queue/billing.a,/queue/billing.b",
            "/topic/test.a",
            "/topic/test.*",
            "/queue/orders.new",
            "/queue/newq",
            "/temp-queue/t1",
        ]
    ]
    + [
        _c("mqtt", "subscribe", d)
        for d in ["orders/x,secret/t", "test/+", "+/+", "#", "test/#", "orders/#", "secret/t", "test/a", "orders/x"]
    ]
    + [_c("mqtt", "publish", d) for d in ["test/a", "secret/t", "orders/x"]]
    + [_c("stomp", "browse", "/queue/secret.q", user=u, headers={"browser": "true"}) for u in ["admin", "app"]]
    # controls and the composite-consumer side effect (see README): admin may read both queues; after admin's
    # composite consumer, a plain subscription of app to one member queue
    + [
        _c("stomp", "subscribe", "/queue/orders.a,/queue/secret.q", user="admin"),
        dict(
            _c("stomp", "subscribe", "/queue/orders.a"),
            preceded_by=[_c("stomp", "subscribe", "/queue/orders.a,/queue/secret.q", user="admin")],
        ),
        dict(
            _c("stomp", "subscribe", "/queue/orders.a"),
            preceded_by=[_c("stomp", "subscribe", "/queue/orders.a,/queue/secret.q")],
        ),
    ]
)


# ============================================================================ STOMP
def unescape(v):
    """STOMP 1.1 header decoding (\\c -> ':', \\n, \\\\); ActiveMQ escapes the ':' of queue:// in ERROR messages."""
    return re.sub(r"\\(.)", lambda m: {"c": ":", "n": "\n", "r": "\r", "\\": "\\"}.get(m.group(1), m.group(0)), v)


class Closed(Exception):
    pass


class _Peer:
    """A raw socket to the broker that reads until ``_parse()`` (the protocol's) finds a whole frame."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""
        self.eof = False

    def _parse(self):
        raise NotImplementedError

    def recv(self, timeout):
        """The next frame, or None on timeout; raises Closed at EOF."""
        deadline = time.monotonic() + timeout
        while True:
            f = self._parse()
            if f is not None:
                return f
            if self.eof:
                raise Closed()
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                return None
            except OSError:
                data = b""
            if not data:
                self.eof = True
            self.buf += data


class Stomp(_Peer):
    def __init__(self, port, user):
        super().__init__(port)
        self.frame(
            "CONNECT",
            {"accept-version": "1.1", "host": "localhost", "login": user, "passcode": USERS[user], "heart-beat": "0,0"},
        )
        f = self.recv(5)
        if f is None or f[0] != "CONNECTED":
            raise RuntimeError(f"STOMP connect as {user} failed: {f!r}")

    def frame(self, cmd, headers, body=b""):
        data = cmd + "\n" + "".join("{}:{}\n".format(*kv) for kv in headers.items()) + "\n"
        self.sock.sendall(data.encode() + body + b"\0")

    def _parse(self):
        b = self.buf.lstrip(b"\r\n")
        end = b.find(b"\n\n")
        if end < 0:
            self.buf = b
            return None
        head = b[:end].decode().split("\n")
        headers = {}
        for line in head[1:]:
            k, _, v = line.partition(":")
            headers.setdefault(unescape(k), unescape(v))
        rest = b[end + 2 :]
        if "content-length" in headers:
            n = int(headers["content-length"])
            if len(rest) < n + 1:
                self.buf = b
                return None
            body, rest = rest[:n], rest[n + 1 :]
        else:
            z = rest.find(b"\0")
            if z < 0:
                self.buf = b
                return None
            body, rest = rest[:z], rest[z + 1 :]
        self.buf = rest
        return head[0], headers, body.decode("utf-8", "replace")

    def request(self, cmd, headers, body=b"", rid="r1", timeout=5):
        """Send with a receipt; return (reply frame or None, frames that came before it)."""
        self.frame(cmd, dict(headers, receipt=rid), body)
        before = []
        while True:
            f = self.recv(timeout)
            if f is None:
                return None, before
            if (f[0] == "RECEIPT" and f[1].get("receipt-id") == rid) or f[0] == "ERROR":
                return f, before
            before.append(f)

    def alive(self):
        """Liveness probe: BEGIN+ABORT of a transaction with receipts."""
        try:
            r, _ = self.request("BEGIN", {"transaction": "probe"}, rid="probe1", timeout=2)
            if r is None or r[0] != "RECEIPT":
                return False
            self.request("ABORT", {"transaction": "probe"}, rid="probe2", timeout=2)
            return True
        except (Closed, OSError):
            return False

    def close(self):
        try:
            if not self.eof:
                self.request("DISCONNECT", {}, rid="bye", timeout=2)
        except (Closed, OSError):
            pass
        self.sock.close()


def reply_of(f):
    if f is None:
        return {"reply": "none"}
    if f[0] == "RECEIPT":
        return {"reply": "RECEIPT"}
    out = {"reply": "ERROR", "message": norm(f[1].get("message"))}
    out["error_has_receipt_id"] = "receipt-id" in f[1]
    return out


def msg_of(f):
    h = f[1]
    m = {"destination": norm(h.get("destination")), "body": f[2]}
    if "browser" in h:
        m["browser"] = h["browser"]
    if "subscription" in h:
        m["subscription"] = h["subscription"]
    return m


def collect(conn, timeout, first=()):
    """All MESSAGE frames (plus first) until `timeout` s of silence; other frames recorded by command."""
    out = [msg_of(f) if f[0] == "MESSAGE" else {"frame": f[0], "message": norm(f[1].get("message"))} for f in first]
    while True:
        try:
            f = conn.recv(timeout)
        except Closed:
            out.append({"closed": True})
            return out
        if f is None:
            return out
        out.append(msg_of(f) if f[0] == "MESSAGE" else {"frame": f[0], "message": norm(f[1].get("message"))})


def admin_publish(admin, topics, fmt):
    for t in topics:
        r, _ = admin.request(
            "SEND", {"destination": "/topic/" + t.replace("/", ".")}, ("m-" + fmt(t)).encode(), rid="pub-" + t
        )
        assert r and r[0] == "RECEIPT", r


def browse(port, queue):
    """Bodies in a queue, browsed by admin (creates the queue if it did not exist)."""
    c = Stomp(port, "admin")
    try:
        r, before = c.request(
            "SUBSCRIBE", {"destination": "/queue/" + queue, "id": "b", "ack": "auto", "browser": "true"}
        )
        assert r and r[0] == "RECEIPT", r
        bodies, frames = [], list(before)
        while True:
            f = frames.pop(0) if frames else c.recv(5)
            assert f is not None and f[0] == "MESSAGE", f
            if f[1].get("browser") == "end":
                return bodies
            bodies.append(f[2])
    finally:
        c.close()


def stomp_case(port, admin, case):
    dest, headers = case["destination"], case.get("headers", {})
    conn = Stomp(port, case["user"])
    out = {}
    try:
        if case["op"] in ("subscribe", "browse"):
            r, before = conn.request("SUBSCRIBE", dict({"destination": dest, "id": "s1", "ack": "auto"}, **headers))
            out.update(reply_of(r))
            if dest.startswith("/topic/"):
                admin_publish(admin, STOMP_PUBLISH, lambda t: t)
            out["messages"] = collect(conn, WAIT, before)
        elif dest.startswith("/temp-queue/"):
            r, before = conn.request("SEND", {"destination": dest}, b"temp-1")
            out["send"] = reply_of(r)
            r2, before2 = conn.request("SUBSCRIBE", {"destination": dest, "id": "s1", "ack": "auto"}, rid="r2")
            out["subscribe"] = reply_of(r2)
            out["messages"] = collect(conn, WAIT, before + before2)
        else:
            if dest.startswith("/topic/"):  # a listener as admin on the concrete topics
                lis = Stomp(port, "admin")
                for i, t in enumerate(["test.a", "test.*"]):
                    lis.request("SUBSCRIBE", {"destination": "/topic/" + t, "id": f"l{i}", "ack": "auto"})
            body = b"sent-by-app"
            r, before = conn.request("SEND", dict({"destination": dest}, **headers), body)
            out.update(reply_of(r))
            if before:
                out["frames_before_reply"] = collect(conn, 0, before)
            if dest.startswith("/topic/"):
                out["admin_listener_got"] = collect(lis, WAIT)
                lis.close()
            else:
                out["queues_after"] = {q[len("/queue/") :]: browse(port, q[len("/queue/") :]) for q in dest.split(",")}
        out["connection_open_after"] = conn.alive()
    finally:
        conn.close()
    return out


# ============================================================================ MQTT
def _s(s):
    b = s.encode()
    return struct.pack("!H", len(b)) + b


def _pkt(t, body):
    n, rl = len(body), b""
    while True:
        d, n = n % 128, n // 128
        rl += bytes([d | (0x80 if n else 0)])
        if not n:
            break
    return bytes([t]) + rl + body


class Mqtt(_Peer):
    def __init__(self, port, user, client_id):
        super().__init__(port)
        self.sock.sendall(
            _pkt(
                0x10, _s("MQTT") + bytes([4, 0xC2]) + struct.pack("!H", 60) + _s(client_id) + _s(user) + _s(USERS[user])
            )
        )

    def _parse(self):
        """(type, flags, body) of the first whole packet in the buffer, or None."""
        if len(self.buf) < 2:
            return None
        mult, n, i = 1, 0, 1
        while i < len(self.buf):
            n += (self.buf[i] & 0x7F) * mult
            mult *= 128
            if not self.buf[i] & 0x80:
                break
            i += 1
        else:
            return None
        if len(self.buf) < i + 1 + n:
            return None
        p = (self.buf[0] >> 4, self.buf[0] & 0xF, self.buf[i + 1 : i + 1 + n])
        self.buf = self.buf[i + 1 + n :]
        return p

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def expect(self, ptype, timeout=3):
        """Wait for a packet of ptype; publishes seen meanwhile are returned too."""
        seen = []
        while True:
            try:
                p = self.recv(timeout)
            except Closed:
                return "closed", seen
            if p is None:
                return None, seen
            if p[0] == ptype:
                return p, seen
            seen.append(p)

    def handle_publish(self, p):
        qos = (p[1] >> 1) & 3
        tl = struct.unpack("!H", p[2][:2])[0]
        topic = p[2][2 : 2 + tl].decode()
        rest = p[2][2 + tl :]
        if qos:
            pid, rest = rest[:2], rest[2:]
            self.send(_pkt(0x40 if qos == 1 else 0x50, pid))
        return {"topic": topic, "payload": rest.decode("utf-8", "replace"), "qos": qos}

    def drain(self, timeout, seen=()):
        out = []
        for p in seen:
            out.append(self.handle_publish(p) if p[0] == 3 else {"packet": p[0]})
        while True:
            try:
                p = self.recv(timeout)
            except Closed:
                out.append({"closed": True})
                return out
            if p is None:
                return out
            out.append(self.handle_publish(p) if p[0] == 3 else {"packet": p[0]})

    def alive(self):
        if self.eof or not self.send(b"\xc0\x00"):
            return False
        p, _ = self.expect(13, 2)
        return p not in (None, "closed")

    def close(self):
        self.send(b"\xe0\x00")
        self.sock.close()


def mqtt_case(port, stomp_port, admin, case, cid):
    c = Mqtt(port, case["user"], cid)
    out = {}
    try:
        p, _ = c.expect(2)
        out["connack"] = "closed" if p == "closed" else (None if p is None else p[2][1])
        if case["op"] == "subscribe":
            topics = case["destination"].split(",")
            c.send(_pkt(0x82, struct.pack("!H", 1) + b"".join(_s(t) + b"\x01" for t in topics)))
            p, seen = c.expect(9)
            out["suback"] = "closed" if p == "closed" else (None if p is None else list(p[2][2:]))
            admin_publish(admin, MQTT_PUBLISH, lambda t: t)
            got = c.drain(WAIT, seen)
            out["messages"] = sorted([m for m in got if "topic" in m], key=lambda m: m["topic"]) + [
                m for m in got if "topic" not in m
            ]
        else:
            topic = case["destination"]
            lis = Stomp(stomp_port, "admin")
            lis.request("SUBSCRIBE", {"destination": "/topic/" + topic.replace("/", "."), "id": "l", "ack": "auto"})
            c.send(_pkt(0x32, _s(topic) + struct.pack("!H", 7) + ("p-" + topic).encode()))
            p, seen = c.expect(4)
            out["puback"] = "closed" if p == "closed" else (None if p is None else True)
            if seen:
                out["other_packets"] = [q[0] for q in seen]
            out["admin_listener_got"] = [
                {"destination": m["destination"], "body": m["body"]} for m in collect(lis, WAIT) if "body" in m
            ]
            lis.close()
        out["connection_open_after"] = c.alive()
    finally:
        c.close()
    return out


# ============================================================================ one run
def start_broker(build):
    with open(os.path.join(build, "cp.txt")) as f:
        cp = f.read().strip() + ":" + build
    proc = subprocess.Popen(
        ["java", "-cp", cp, "AuthBroker", *BROKER_ARGS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    ports = {}
    for line in proc.stdout:
        line = line.strip()
        if line == "ready":
            return proc, ports
        scheme, _, port = line.split()
        ports[scheme] = int(port)
    raise RuntimeError("broker did not start")


def run_case(build, case, cid):
    """One case on its own fresh broker: seed the queues, run the preceding steps (if any), then the case."""
    proc, ports = start_broker(build)
    try:
        admin = Stomp(ports["stomp"], "admin")
        for q, bodies in SEEDS.items():
            for b in bodies:
                r, _ = admin.request("SEND", {"destination": "/queue/" + q}, b.encode())
                assert r and r[0] == "RECEIPT", r
        preceding = [stomp_case(ports["stomp"], admin, step) for step in case.get("preceded_by", [])]
        if case["edge"] == "stomp":
            outcome = stomp_case(ports["stomp"], admin, case)
        else:
            outcome = mqtt_case(ports["mqtt"], ports["stomp"], admin, case, cid)
        if preceding:
            outcome["preceding"] = preceding
        admin.close()
        return outcome
    finally:
        proc.stdin.close()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


def one_run(build, run):
    results = []
    for i, case in enumerate(CASES):
        t0 = time.monotonic()
        outcome = run_case(build, case, f"auth-case-{i:02d}")
        results.append(dict(case, outcome=outcome))
        took = time.monotonic() - t0
        print(
            f"[run {run}] {i:2d} {case['edge']:<5} {case['op']:<9} {case['destination']:<40} {took:.1f}s "
            f"{json.dumps(outcome)[:160]}",
            file=sys.stderr,
            flush=True,
        )
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="/tmp/authbuild", help="folder built by oracle/build.sh")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--out", default=OUT)
    a = ap.parse_args()
    runs = [one_run(a.build, r + 1) for r in range(a.runs)]
    cases, varied = [], []
    for i, case in enumerate(CASES):
        outs = [r[i]["outcome"] for r in runs]
        if all(o == outs[0] for o in outs):
            cases.append(runs[0][i])
        else:
            varied.append(dict(case, outcomes=outs))
    doc = {
        "oracle": "ActiveMQ Classic 5.17.2 (Debian), tests/auth_oracle/oracle/AuthBroker.java",
        "broker_args": BROKER_ARGS,
        "seeds": SEEDS,
        "runs": a.runs,
        "stomp_topic_publishes": STOMP_PUBLISH,
        "mqtt_publishes": MQTT_PUBLISH,
        "caveats": CAVEATS,
        "cases": cases,
        "varied": varied,
    }
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases agree, {len(varied)} varied -> {a.out}", file=sys.stderr)
    return 1 if varied else 0


if __name__ == "__main__":
    sys.exit(main())
