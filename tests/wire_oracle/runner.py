"""The wire oracle's script runner: real Python clients (stomp.py, paho-mqtt 2, a raw STOMP socket) driven by a JSON
script against a broker given as host + STOMP port + MQTT port, and what each client received, normalised.

One script is a dict::

    {"name": "...",
     "clients": {"a": {"proto": "stomp", "version": "1.2"},          # stomp.py, Connection10/11/12
                 "m": {"proto": "mqtt", "client_id": "x", "clean": true},   # paho-mqtt 2, MQTT 3.1.1
                 "r": {"proto": "raw"}},                             # a plain socket speaking STOMP by hand
     "steps": [{"c": "a", "op": "connect", "headers": {...}}, ..., {"op": "sync"}, ...]}

The operations are listed in ``OPS`` below (and in README.md). Every STOMP operation asks for a receipt unless the step
says ``"receipt": false`` and waits for the RECEIPT or ERROR answering it (or for the connection to close). ``sync``
is the sync point: in ``record`` mode it waits until no client has received anything for ``QUIET`` seconds; in
``replay`` mode it waits until each client holds as many events as the recording has before that point, then makes
a receipt round trip on each connected stomp.py client (so that whatever the broker wrote before is in too). The
end of a script is a final ``sync``. Each client's transcript is the list of its events with a ``{"sync": k}``
marker at each sync point, so "nothing more arrived" is a statement of the transcript.

Runs are threaded (stomp.py and paho are threaded clients): ``run_script`` runs one script to completion in the
calling thread; ``run_many`` runs many on a pool, each with names of its own.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import paho.mqtt.client as mqtt
import stomp  # type: ignore[import-untyped]

#: recording: a sync point is reached once nothing arrived on any client for this long
QUIET = 0.5
#: the longest any single wait lasts (a receipt, a CONNACK, a count of events)
TIMEOUT = 5.0
#: replay: how long a sync point waits for the recorded number of events; once one has not come, every later wait
#: of that run is short (the run has diverged and will be reported as such)
REPLAY_WAIT = 3.0
DIVERGED_WAIT = 0.3
#: the topic of an MQTT client's hidden round trip at a replay's sync point
SYNC_TOPIC = "wire-oracle/sync"

Event = dict[str, Any]


class Log:
    """One client's events, in arrival order, with a condition to wait on."""

    def __init__(self, clock: Callable[[], None]) -> None:
        self.events: list[Event] = []
        self.cond = threading.Condition()
        self.messages: list[tuple[Mapping[str, str], str]] = []  # each MESSAGE's headers and body, for ack/nack
        self.closed = False
        self._touch = clock

    def add(self, event: Event) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()
        self._touch()

    #: how long a wait lasts; a replay that has already diverged from its recording shortens it
    timeout = TIMEOUT

    def wait_for(self, predicate: Callable[[], bool], timeout: float | None = None) -> bool:
        with self.cond:
            return self.cond.wait_for(predicate, self.timeout if timeout is None else timeout)

    def since_last_sync(self) -> int:
        n = 0
        for event in reversed(self.events):
            if "sync" in event:
                break
            n += 1
        return n


def frame_event(command: str, headers: Mapping[str, str], body: str) -> Event:
    return {"f": command, "h": dict(headers), "b": body}


# -- stomp.py ------------------------------------------------------------------------------------------------------


class _Listener(stomp.ConnectionListener):  # type: ignore[misc]
    def __init__(self, client: StompPyClient) -> None:
        self.client = client

    def _frame(self, frame: Any) -> None:
        headers = dict(frame.headers)
        receipt = headers.get("receipt-id")
        if receipt is not None and receipt in self.client.hidden:
            with self.client.log.cond:
                self.client.seen_hidden.add(receipt)
                self.client.log.cond.notify_all()
            return
        body = frame.body if isinstance(frame.body, str) else frame.body.decode("utf-8", "replace")
        if frame.cmd == "MESSAGE":
            self.client.log.messages.append((headers, body))
        self.client.log.add(frame_event(frame.cmd, headers, body))

    on_connected = on_message = on_receipt = on_error = _frame

    def on_disconnected(self) -> None:
        self.client.log.closed = True
        self.client.log.add({"closed": True})


class StompPyClient:
    """A stomp.py connection of the version the script names."""

    CLASSES = {"1.0": stomp.Connection10, "1.1": stomp.Connection11, "1.2": stomp.Connection12}

    def __init__(self, host: str, port: int, spec: Mapping[str, Any], log: Log) -> None:
        self.version = spec.get("version", "1.2")
        self.log = log
        self.conn = self.CLASSES[self.version]([(host, port)], reconnect_attempts_max=1, auto_content_length=False)
        self.conn.set_listener("oracle", _Listener(self))
        self.hidden: set[str] = set()
        self.seen_hidden: set[str] = set()
        self._receipts = 0
        self._syncs = 0
        self.started = False

    def connect(self, step: Mapping[str, Any]) -> None:
        headers = dict(step.get("headers", {}))
        headers.setdefault("host", "localhost")
        try:
            if self.version == "1.0":
                self.conn.connect(headers=headers)
            else:
                self.conn.connect(headers=headers, with_connect_command=not step.get("stomp_command", False))
        except Exception as exc:
            self.log.add({"connect_failed": type(exc).__name__})
            return
        self.started = True
        sock = getattr(self.conn.transport, "socket", None)
        if sock is not None:  # one frame per write, each at once: no Nagle delay under a sync's round trip
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.log.wait_for(lambda: self.log.closed or any(e.get("f") in ("CONNECTED", "ERROR") for e in self.log.events))

    def frame(self, command: str, headers: dict[str, str], body: str = "", receipt: bool = True) -> None:
        """Send one frame through stomp.py; with a receipt, wait for the RECEIPT or ERROR naming it."""
        if not self.started or self.log.closed:
            self.log.add({"skipped": command})
            return
        name = None
        if receipt:
            self._receipts += 1
            name = headers["receipt"] = f"r{self._receipts}"
        try:
            self.conn.send_frame(command, headers, body)
        except Exception as exc:
            self.log.add({"send_failed": type(exc).__name__})
            return
        if name is not None:
            self.log.wait_for(
                lambda: self.log.closed or any(e.get("h", {}).get("receipt-id") == name for e in self.log.events)
            )

    def round_trip(self) -> None:
        """A receipt the transcript does not show: everything the broker wrote before it is in."""
        if not self.started or self.log.closed:
            return
        self._syncs += 1
        name = f"sync-{self._syncs}"
        self.hidden.add(name)
        try:
            self.conn.send_frame("BEGIN", {"transaction": name})
            self.conn.send_frame("ABORT", {"transaction": name, "receipt": name})
        except Exception:
            return
        self.log.wait_for(lambda: self.log.closed or name in self.seen_hidden)

    def close(self) -> None:
        if not self.started:
            return
        try:
            self.conn.transport.disconnect_socket()
            self.conn.transport.stop()
        except Exception:
            pass


# -- raw STOMP -----------------------------------------------------------------------------------------------------


def parse_frames(buffer: bytearray) -> Iterable[tuple[str, dict[str, str], bytes]]:
    """Take complete frames off the front of ``buffer`` (heart-beat EOLs skipped), as (command, headers, body)."""
    while True:
        while buffer[:1] in (b"\n", b"\r"):
            del buffer[:1]
        end = buffer.find(b"\n\n")
        if end < 0:
            return
        head = buffer[:end].decode("utf-8", "replace").replace("\r", "").split("\n")
        headers: dict[str, str] = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers.setdefault(name, value)
        start = end + 2
        length = headers.get("content-length")
        if length is not None and length.isdigit():
            if len(buffer) < start + int(length) + 1:
                return
            body = bytes(buffer[start : start + int(length)])
            stop = start + int(length) + 1
        else:
            nul = buffer.find(b"\0", start)
            if nul < 0:
                return
            body = bytes(buffer[start:nul])
            stop = nul + 1
        del buffer[:stop]
        yield head[0], headers, body


def _answers(event: Event, wait_for: str) -> bool:
    """Whether a raw client's event answers what it waits for: CONNECTED (or an ERROR), or a receipt id."""
    if event.get("f") == "ERROR":
        return True
    if wait_for == "CONNECTED":
        return event.get("f") == "CONNECTED"
    return bool(event.get("h", {}).get("receipt-id") == wait_for)


class RawStompClient:
    """A socket speaking STOMP by hand: for the bad input stomp.py will not send."""

    def __init__(self, host: str, port: int, spec: Mapping[str, Any], log: Log) -> None:
        self.host, self.port, self.log = host, port, log
        self.sock: socket.socket | None = None

    def open(self) -> None:
        self.sock = socket.create_connection((self.host, self.port), timeout=TIMEOUT)
        self.sock.settimeout(None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.sock is not None
        buffer = bytearray()
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    break
                buffer += data
                for command, headers, body in parse_frames(buffer):
                    text = body.decode("utf-8", "replace")
                    if command == "MESSAGE":
                        self.log.messages.append((headers, text))
                    self.log.add(frame_event(command, headers, text))
        except OSError:
            pass
        self.log.closed = True
        self.log.add({"closed": True})

    def send(self, data: bytes, wait_for: str | None) -> None:
        if self.sock is None:
            self.open()
        assert self.sock is not None
        if self.log.closed:
            self.log.add({"skipped": "raw"})
            return
        try:
            self.sock.sendall(data)
        except OSError as exc:
            self.log.add({"send_failed": type(exc).__name__})
            return
        if wait_for is not None:
            self.log.wait_for(lambda: self.log.closed or any(_answers(e, wait_for) for e in self.log.events))

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass


# -- paho-mqtt -----------------------------------------------------------------------------------------------------


class PahoClient:
    """A paho-mqtt 2 client speaking MQTT 3.1.1."""

    def __init__(self, host: str, port: int, spec: Mapping[str, Any], log: Log) -> None:
        self.host, self.port, self.log = host, port, log
        self.client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2,
            client_id=spec.get("client_id", ""),
            clean_session=spec.get("clean", True),
            protocol=mqtt.MQTTv311,
            reconnect_on_failure=False,  # a connection the broker closed stays closed, as the transcript says
        )
        self.client.on_connect = self._on_connect
        self.client.on_message = self._on_message
        self.client.on_subscribe = self._on_subscribe
        self.client.on_unsubscribe = self._on_unsubscribe
        self.client.on_disconnect = self._on_disconnect
        self.done: set[int] = set()
        self.connected = False
        self.dropping = False

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        code = reason.value if hasattr(reason, "value") else int(reason)
        self.connected = code == 0
        self.log.add({"connack": code, "session_present": bool(flags.session_present)})

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        self.log.add(
            {
                "publish": message.topic,
                "payload": message.payload.decode("utf-8", "replace"),
                "qos": message.qos,
                "retain": bool(message.retain),
                "dup": bool(message.dup),
            }
        )

    def _on_subscribe(self, client: Any, userdata: Any, mid: int, reasons: Any, properties: Any) -> None:
        self.log.add({"suback": [r.value if hasattr(r, "value") else int(r) for r in reasons]})
        with self.log.cond:
            self.done.add(mid)
            self.log.cond.notify_all()

    def _on_unsubscribe(self, client: Any, userdata: Any, mid: int, reasons: Any, properties: Any) -> None:
        self.log.add({"unsuback": True})
        with self.log.cond:
            self.done.add(mid)
            self.log.cond.notify_all()

    def _on_disconnect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        if self.dropping:
            return
        self.connected = False
        self.log.closed = True
        self.log.add({"closed": True})

    def connect(self, step: Mapping[str, Any]) -> None:
        if "will" in step:
            will = step["will"]
            self.client.will_set(will["topic"], will["payload"], will.get("qos", 0), will.get("retain", False))
        self.client.loop_stop()  # a reconnect after the broker closed the connection: its loop has ended
        self._release()
        try:
            self.client.connect(self.host, self.port, keepalive=step.get("keepalive", 0))
        except OSError as exc:
            self.log.add({"connect_failed": type(exc).__name__})
            return
        before = sum("connack" in e for e in self.log.events)
        self.log.closed = False
        self.client.loop_start()
        self.log.wait_for(lambda: self.log.closed or sum("connack" in e for e in self.log.events) > before)

    def _wait_mid(self, mid: int) -> None:
        self.log.wait_for(lambda: self.log.closed or mid in self.done)

    def subscribe(self, topic: str, qos: int) -> None:
        if not self.connected:
            self.log.add({"skipped": "SUBSCRIBE"})
            return
        try:
            result, mid = self.client.subscribe(topic, qos)
        except ValueError:  # paho refuses an invalid filter itself: nothing is sent
            self.log.add({"refused_by_client": topic})
            return
        if result == mqtt.MQTT_ERR_SUCCESS:
            self._wait_mid(mid)

    def unsubscribe(self, topic: str) -> None:
        if not self.connected:
            self.log.add({"skipped": "UNSUBSCRIBE"})
            return
        result, mid = self.client.unsubscribe(topic)
        if result == mqtt.MQTT_ERR_SUCCESS:
            self._wait_mid(mid)

    def publish(self, topic: str, payload: str, qos: int, retain: bool) -> None:
        if not self.connected:
            self.log.add({"skipped": "PUBLISH"})
            return
        info = self.client.publish(topic, payload.encode(), qos, retain)
        if qos:
            try:
                info.wait_for_publish(TIMEOUT)
            except (RuntimeError, ValueError):
                pass
            if not info.is_published():
                self.log.add({"unconfirmed": topic})

    def round_trip(self) -> None:
        """A QoS 1 PUBLISH to a topic nobody reads, answered by a PUBACK the transcript does not show: the broker
        handles a connection's packets in order, so every earlier (QoS 0) PUBLISH of this client has been handled."""
        if not self.connected:
            return
        info = self.client.publish(SYNC_TOPIC, b"", 1)
        try:
            info.wait_for_publish(self.log.timeout)
        except (RuntimeError, ValueError):
            pass

    def disconnect(self) -> None:
        if not self.connected:
            self.log.add({"skipped": "DISCONNECT"})
            return
        self.client.disconnect()
        self.log.wait_for(lambda: self.log.closed)
        self.client.loop_stop()
        self._release()

    def drop(self) -> None:
        """Close the socket without DISCONNECT (the broker publishes the will, keeps a persistent session)."""
        self.dropping = True
        self.client._thread_terminate = True  # no reconnect when the loop sees the socket go
        sock = self.client.socket()
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.client.loop_stop()
        self._release()
        self.connected = False
        self.log.closed = True
        self.log.add({"dropped": True})

    def close(self) -> None:
        try:
            if self.connected:
                self.dropping = True
                self.client.disconnect()  # wakes the network loop at once (a bare loop_stop waits out its select)
            self.client.loop_stop()
        except Exception:
            pass
        self._release()

    def _release(self) -> None:
        """Close what paho leaves open after loop_stop: its wake-up socket pair, and a socket we dropped."""
        for attr in ("_sockpairR", "_sockpairW", "_sock"):
            sock = getattr(self.client, attr, None)
            if sock is not None:
                try:
                    sock.close()
                except OSError:
                    pass
                setattr(self.client, attr, None)


# -- running a script ----------------------------------------------------------------------------------------------


class Run:
    """One script's run: its clients, their logs, and the clock of the last thing any client received."""

    def __init__(self, script: Mapping[str, Any], host: str, stomp_port: int, mqtt_port: int) -> None:
        self.script = script
        self.last = time.monotonic()
        self.logs: dict[str, Log] = {}
        self.clients: dict[str, Any] = {}
        self.expires: dict[int, str] = {}  # an absolute expires we sent -> its symbol
        self.syncs = 0
        for name, spec in script["clients"].items():
            log = self.logs[name] = Log(self._touch)
            proto = spec["proto"]
            if proto == "stomp":
                self.clients[name] = StompPyClient(host, stomp_port, spec, log)
            elif proto == "raw":
                self.clients[name] = RawStompClient(host, stomp_port, spec, log)
            else:
                self.clients[name] = PahoClient(host, mqtt_port, spec, log)

    def _touch(self) -> None:
        self.last = time.monotonic()

    # -- sync points ---------------------------------------------------------------------------------------------

    def sync(self, expected: Mapping[str, list[Event]] | None) -> None:
        if expected is None:
            deadline = time.monotonic() + 2 * TIMEOUT
            while time.monotonic() < deadline:
                quiet = time.monotonic() - self.last
                if quiet >= QUIET:
                    break
                time.sleep(QUIET - quiet)
        else:
            for name, log in self.logs.items():
                want = _segment_length(expected.get(name, []), self.syncs)
                if not log.wait_for(lambda log=log, want=want: log.since_last_sync() >= want, REPLAY_WAIT):
                    for each in self.logs.values():  # diverged: the rest of the run waits briefly
                        each.timeout = DIVERGED_WAIT
            for client in self.clients.values():
                if isinstance(client, StompPyClient | PahoClient):
                    client.round_trip()
        for log in self.logs.values():
            log.add({"sync": self.syncs})
        self.syncs += 1

    # -- steps ---------------------------------------------------------------------------------------------------

    def step(self, step: Mapping[str, Any], expected: Mapping[str, list[Event]] | None) -> None:
        op = step["op"]
        if op == "sync":
            self.sync(expected)
            return
        if op == "pause":
            time.sleep(step["ms"] / 1000)  # time passing on the broker's clock (expiry), not waiting for it
            return
        name = step["c"]
        client, log = self.clients[name], self.logs[name]
        if isinstance(client, StompPyClient):
            self._stomp(client, log, step)
        elif isinstance(client, RawStompClient):
            self._raw(client, step)
        else:
            self._mqtt(client, step)

    def _stomp(self, client: StompPyClient, log: Log, step: Mapping[str, Any]) -> None:
        op = step["op"]
        headers = {k: str(v) for k, v in step.get("headers", {}).items()}
        receipt = step.get("receipt", True)
        if "tx" in step:
            headers["transaction"] = step["tx"]
        if op == "connect":
            client.connect(step)
        elif op == "subscribe":
            headers = {"destination": step["dest"], "ack": step.get("ack", "auto"), **headers}
            if "id" in step:
                headers["id"] = step["id"]
            client.frame("SUBSCRIBE", headers, receipt=receipt)
        elif op == "unsubscribe":
            if "id" in step:
                headers["id"] = step["id"]
            if "dest" in step:
                headers["destination"] = step["dest"]
            client.frame("UNSUBSCRIBE", headers, receipt=receipt)
        elif op == "send":
            body = step.get("body", "")
            if "dest_from" in step:  # a destination read from a received message (a reply-to)
                found = _find(log, step["dest_from"])
                if found is None:
                    log.add({"no_message": step["dest_from"]})
                    return
                headers = {"destination": found[0].get(step["dest_from"]["header"], ""), **headers}
            else:
                headers = {"destination": step["dest"], **headers}
            if not step.get("text", False):
                headers["content-length"] = str(len(body.encode()))
            if "expires_in" in step:
                expires = int(time.time() * 1000) + step["expires_in"]
                self.expires[expires] = f"<expires+{step['expires_in']}>"
                headers["expires"] = str(expires)
            client.frame("SEND", headers, body, receipt=receipt)
        elif op in ("ack", "nack"):
            found = _find(log, step["msg"])
            if found is None:
                log.add({"no_message": step["msg"]})
                return
            message = found[0]
            if client.version == "1.2":
                headers["id"] = message.get("ack", "")
            else:
                headers["message-id"] = message.get("message-id", "")
                if "subscription" in message and client.version == "1.1":
                    headers["subscription"] = message["subscription"]
            client.frame(op.upper(), headers, receipt=receipt)
        elif op in ("begin", "commit", "abort"):
            client.frame(op.upper(), headers, receipt=receipt)
        elif op == "disconnect":
            client.frame("DISCONNECT", headers, receipt=receipt)
            log.wait_for(lambda: log.closed)
            client.close()
        elif op == "drop":
            client.close()
            log.wait_for(lambda: log.closed)
        elif op == "frame":
            client.frame(step["command"], headers, step.get("body", ""), receipt=receipt)
        else:
            raise ValueError(f"unknown STOMP operation {op!r}")

    def _raw(self, client: RawStompClient, step: Mapping[str, Any]) -> None:
        op = step["op"]
        if op == "connect":
            version = step.get("version")
            accept = f"accept-version:{version}\n" if version else ""
            client.send(f"CONNECT\n{accept}host:localhost\n\n\0".encode(), wait_for="CONNECTED")
        elif op == "raw":
            client.send(step["data"].encode("utf-8"), wait_for=step.get("wait"))
        elif op == "drop":
            client.close()
            client.log.wait_for(lambda: client.log.closed)
        else:
            raise ValueError(f"unknown raw operation {op!r}")

    def _mqtt(self, client: PahoClient, step: Mapping[str, Any]) -> None:
        op = step["op"]
        if op == "connect":
            client.connect(step)
        elif op == "subscribe":
            client.subscribe(step["topic"], step.get("qos", 0))
        elif op == "unsubscribe":
            client.unsubscribe(step["topic"])
        elif op == "publish":
            client.publish(step["topic"], step.get("payload", ""), step.get("qos", 0), step.get("retain", False))
        elif op == "disconnect":
            client.disconnect()
        elif op == "drop":
            client.drop()
        else:
            raise ValueError(f"unknown MQTT operation {op!r}")

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


def _find(log: Log, ref: Any) -> tuple[Mapping[str, str], str] | None:
    """A received MESSAGE: by index (``0``: the first) or ``{"body": ...}`` (the latest with that body)."""
    if isinstance(ref, int):
        return log.messages[ref] if ref < len(log.messages) else None
    for headers, body in reversed(log.messages):
        if body == ref["body"]:
            return headers, body
    return None


def _segment_length(events: list[Event], k: int) -> int:
    """How many events a recorded transcript has between sync marker k-1 and sync marker k."""
    n = 0
    for event in events:
        if "sync" in event:
            if event["sync"] == k:
                return n
            n = 0
        else:
            n += 1
    return n


def run_script(
    script: Mapping[str, Any],
    host: str,
    stomp_port: int,
    mqtt_port: int,
    expected: Mapping[str, list[Event]] | None = None,
) -> dict[str, list[Event]]:
    """Run one script: each client's normalised transcript. ``expected`` (a recorded transcript) makes the sync
    points wait for the recorded counts instead of a quiet spell."""
    run = Run(script, host, stomp_port, mqtt_port)
    try:
        for step in script["steps"]:
            run.step(step, expected)
        run.sync(expected)
        snapshot = {name: list(log.events) for name, log in run.logs.items()}
    finally:
        run.close()
    return normalise(snapshot, run.expires)


def run_many(
    scripts: list[Mapping[str, Any]],
    host: str,
    stomp_port: int,
    mqtt_port: int,
    expected: Mapping[str, Mapping[str, list[Event]]] | None = None,
    parallel: int = 8,
) -> dict[str, dict[str, list[Event]] | str]:
    """Run scripts ``parallel`` at a time: name -> transcript, or the text of the exception a run raised."""

    def one(script: Mapping[str, Any]) -> dict[str, list[Event]] | str:
        try:
            return run_script(
                script, host, stomp_port, mqtt_port, None if expected is None else expected[script["name"]]
            )
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"

    with ThreadPoolExecutor(parallel) as pool:
        results = list(pool.map(one, scripts))
    return {script["name"]: result for script, result in zip(scripts, results, strict=True)}


# -- normalisation -------------------------------------------------------------------------------------------------

ID = re.compile(r"ID:[A-Za-z0-9_.\-]+(?::-?[0-9]+)+")
EPOCH = re.compile(r"(?<![0-9])1[0-9]{12}(?![0-9])")
PORT = re.compile(r"(127\.0\.0\.1|localhost):[0-9]+")
#: headers whose value differs between brokers and runs for no reason a client may rely on
OPAQUE = {"server": "<server>", "session": "<session>"}


class _Names:
    def __init__(self, expires: Mapping[int, str]) -> None:
        self.ids: dict[str, str] = {}
        self.acks: dict[str, str] = {}
        self.expires = expires

    def text(self, value: str) -> str:
        value = ID.sub(self._id, value)
        value = EPOCH.sub(self._epoch, value)
        return PORT.sub(r"\1:<port>", value)

    def ack(self, value: str) -> str:
        """A MESSAGE's ``ack`` header is an opaque token (ActiveMQ: an id; others: a counter)."""
        return self.acks.setdefault(value, f"<ack{len(self.acks) + 1}>")

    def _id(self, match: re.Match[str]) -> str:
        return self.ids.setdefault(match.group(0), f"<id{len(self.ids) + 1}>")

    def _epoch(self, match: re.Match[str]) -> str:
        return self.expires.get(int(match.group(0)), "<epoch>")


def normalise(transcript: Mapping[str, list[Event]], expires: Mapping[int, str]) -> dict[str, list[Event]]:
    """What legitimately differs, replaced (README.md lists it): ``ID:...`` names (message ids, temporary
    destinations, connection ids in advisories) by ``<idN>`` in order of first appearance, so a redelivery still
    shows the same id (numbered per client); epoch milliseconds by ``<epoch>``, or ``<expires+T>`` when it is an
    ``expires`` this run sent (T ms after sending); loopback ports by ``<port>``; ``server`` and ``session`` of
    CONNECTED; an ERROR body's Java stack trace (its first line kept); and the order of a SUBACK and the retained
    messages it releases (``_suback_first``)."""
    out: dict[str, list[Event]] = {}
    for client in sorted(transcript):
        names = _Names(expires)  # per client: a difference in one client's transcript does not renumber another's
        events = []
        for event in transcript[client]:
            if "f" in event:
                headers = {}
                for key in sorted(event["h"]):
                    value = event["h"][key]
                    if key in OPAQUE and event["f"] == "CONNECTED":
                        value = OPAQUE[key]
                    elif key == "ack" and event["f"] == "MESSAGE":
                        value = names.ack(value)
                    else:
                        value = names.text(value)
                    headers[key] = value
                body = event["b"]
                if event["f"] == "ERROR":
                    body = body.split("\n\tat ", 1)[0].rstrip("\n")
                event = {"f": event["f"], "h": headers, "b": names.text(body)}
            elif "publish" in event:
                event = {**event, "payload": names.text(event["payload"]), "publish": names.text(event["publish"])}
            events.append(event)
        out[client] = _suback_first(events)
    return out


def _suback_first(events: list[Event]) -> list[Event]:
    """ActiveMQ races a SUBACK against the retained messages its SUBSCRIBE releases (either comes first, run to
    run): a SUBACK right after retained messages is moved before them."""
    out: list[Event] = []
    for event in events:
        if "suback" in event:
            i = len(out)
            while i > 0 and out[i - 1].get("retain") is True and "publish" in out[i - 1]:
                i -= 1
            out.insert(i, event)
        else:
            out.append(event)
    return out


def dumps(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False)


#: an advisory's headers that name the broker (its configuration: ActiveMQ's default name is ``localhost`` and its
#: URL its first connector's; minibroker's are its own), left out of the comparison
ADVISORY_IDENTITY = ("originBrokerName", "originBrokerURL", "originBrokerId")
#: an advisory body's counters that are an edge's own bookkeeping, not the mapping: the command id of the frame that
#: made the consumer and the consumer's session and number (ActiveMQ counts each STOMP connection's commands and
#: consumers; minibroker numbers consumers across the broker)
ADVISORY_COUNTERS = re.compile(r'("commandId":|<commandId>|"sessionId":|<sessionId>|"value":|<value>)-?\d+')


def comparable(transcript: Mapping[str, list[Event]]) -> dict[str, list[Event]]:
    """A normalised transcript without what an advisory says of the broker's identity and counters (the fidelity
    matrix's row ``stomp-consumer-advisory`` says so): what the replay compares."""
    out: dict[str, list[Event]] = {}
    for client, events in transcript.items():
        kept = []
        for event in events:
            if event.get("f") == "MESSAGE" and event["h"].get("type") == "Advisory":
                headers = {k: ("<broker>" if k in ADVISORY_IDENTITY else v) for k, v in event["h"].items()}
                event = {**event, "h": headers, "b": ADVISORY_COUNTERS.sub(r"\1<n>", event["b"])}
            kept.append(event)
        out[client] = kept
    return out
