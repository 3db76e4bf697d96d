#!/usr/bin/env python3
"""Generate small *applications* for ScriptOracle: several features per script over shared connections and sessions.

    python3 gen_mixed.py --seed N --count K --out DIR

Writes DIR/mixed_<seed>_<iii>.json. Stdlib only. gen.py makes one queue at a time; this generator picks two to four
*blocks* (queue work with selectors, topic fan-out, durable subscriptions offline and online, request/reply over a
temporary queue, virtual topics, topic wildcards, composites, consumer advisories, the scheduler, expiry into the
DLQ, competing consumers) and lets them share two or three sessions, so that one commit, rollback, recover or close
acts on several features at once. A script runs in phases: every block sets up its consumers, every block sends,
each consumer receives, one or two cross-cutting actions (commit, rollback, recover, closing a session, closing a
connection and reconnecting with the same client id), a second round of receives and acks, and the checks (queue
and topic statistics, browses, durable subscriptions, the DLQ).

Rules that keep two runs against the real broker identical apart from timing (besides gen.py's):
  * a block's sends are all persistent or all non-persistent (mixing them on one destination with a live consumer
    varies), and topic consumers exist before anything is published to their topic;
  * redelivery delays are 0 and every receive that may wait does so for 250 ms or more;
  * two consumers on one queue only in the competing-consumers block: its backlog is sent first, the second consumer
    starts 100 ms after the first, and their sessions are never transacted with prefetch 1;
  * wildcard consumers only on topics (a queue wildcard's interleaving across queues is ActiveMQ's threads' choice);
  * the scheduler block has its own AUTO session and waits for its delivery before anything else happens;
  * no two consumer closes back to back.
"""

from __future__ import annotations

import argparse
import json
import os
import random

MODES = ["AUTO", "CLIENT", "DUPS_OK", "TRANSACTED", "INDIVIDUAL"]
KINDS = [
    "queue",
    "selector",
    "topic",
    "durable",
    "request_reply",
    "virtual_topic",
    "wildcard",
    "composite",
    "advisory",
    "scheduler",
    "expiry",
    "competing",
]
WAIT_MS = 250


class App:
    """One script: shared connections and sessions, and the blocks that use them."""

    def __init__(self, rng: random.Random, name: str, avoid_races: bool = False) -> None:
        self.r = rng
        self.name = name
        #: --avoid-races: non-persistent messages only from the one producer connection, and no close of a session or
        #: connection holding two competing consumers of a queue (record_mixed.py drops such scripts otherwise)
        self.avoid_races = avoid_races
        self.ops: list[dict[str, object]] = []
        self.broker: dict[str, object] = {}
        self.conns: dict[str, dict[str, object]] = {}  # label -> {client_id, open}
        self.sessions: dict[str, dict[str, object]] = {}  # label -> {conn, mode, open}
        #: consumer label -> {session, how it was made (an op to repeat on reconnect), open}
        self.consumers: dict[str, dict[str, object]] = {}
        self.queues: list[str] = []  # queues whose statistics and browse the checks report
        self.topics: list[str] = []
        self.durables: list[str] = []
        self.dlq = "ActiveMQ.DLQ"  # "" with the individual strategy: one DLQ per queue
        self.serial = 0
        self.bodies = 0

    # ---------------------------------------------------------------- helpers
    def op(self, **kw: object) -> None:
        self.ops.append(kw)

    def label(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}{self.serial}"

    def body(self, prefix: str) -> str:
        self.bodies += 1
        return f"{prefix}-{self.bodies}"

    def is_open(self, session: str) -> bool:
        s = self.sessions[session]
        return bool(s["open"]) and bool(self.conns[str(s["conn"])]["open"])

    def open_sessions(self) -> list[str]:
        return [s for s in self.sessions if self.is_open(s)]

    def open_consumers(self) -> list[str]:
        return [c for c, v in self.consumers.items() if v["open"] and self.is_open(str(v["session"]))]

    def mode(self, session: str) -> str:
        return str(self.sessions[session]["mode"])

    def shared_session(self) -> str:
        return self.r.choice([s for s in self.open_sessions() if not self.sessions[s].get("own")])

    def own_session(self, mode: str = "AUTO") -> str:
        label = self.label("s")
        conn = self.r.choice(sorted(c for c in self.conns if self.conns[c]["open"]))
        self.op(op="session", session=label, conn=conn, mode=mode)
        self.sessions[label] = {"conn": conn, "mode": mode, "open": True, "own": True}
        return label

    def consumer(self, session: str, **kw: object) -> str:
        label = self.label("k")
        make = dict(kw, op="consumer", consumer=label, session=session)
        self.ops.append(make)
        self.consumers[label] = {"session": session, "make": make, "open": True}
        return label

    def durable(self, session: str, topic: str, name: str) -> str:
        label = self.label("d")
        make = {"op": "durable_subscriber", "consumer": label, "session": session, "dest": topic, "name": name}
        self.ops.append(make)
        self.consumers[label] = {"session": session, "make": make, "open": True}
        return label

    def send(self, dest: str, body: str, *, persistent: bool, topic: bool = False, **kw: object) -> None:
        o: dict[str, object] = {"op": "send", "dest": dest, "body": body}
        if topic:
            o["topic"] = True
        if not persistent:
            o["persistent"] = False
        if self.r.random() < 0.5 and (persistent or not self.avoid_races):
            o["session"] = self.shared_session()
        o.update(kw)
        self.ops.append(o)

    def receive(self, consumer: str, **kw: object) -> None:
        self.op(op="receive", consumer=consumer, timeout_ms=WAIT_MS, **kw)

    def settle(self, consumer: str) -> None:
        """What a consumer's session does with what it received: ack, commit, or nothing (AUTO and DUPS_OK)."""
        session = str(self.consumers[consumer]["session"])
        mode = self.mode(session)
        if mode in ("CLIENT", "INDIVIDUAL") and self.r.random() < 0.7:
            self.op(op="ack", consumer=consumer)
        elif mode == "TRANSACTED" and self.r.random() < 0.6:
            self.op(op="commit", session=session)

    # ---------------------------------------------------------------- the application
    def setup(self, kinds: list[str]) -> None:
        r = self.r
        if "scheduler" in kinds:
            self.broker["schedulerSupport"] = True
        if r.random() < 0.2:
            self.broker.update(deadLetterStrategy="individual", dlqPrefix="DLQ.")
            self.dlq = ""
        for i in range(r.choice([1, 2, 2])):
            label = f"c{i + 1}"
            rp = {"maximumRedeliveries": r.choice([0, 1, 2, 3]), "initialRedeliveryDelay": 0, "redeliveryDelay": 0}
            self.op(op="connect", conn=label, clientId=f"app{i + 1}", redeliveryPolicy=rp)
            self.conns[label] = {"client_id": f"app{i + 1}", "open": True, "policy": rp}
        for i in range(r.randint(2, 3)):
            label = f"s{i + 1}"
            conn = r.choice(sorted(self.conns))
            mode = r.choice(MODES)
            self.op(op="session", session=label, conn=conn, mode=mode)
            self.sessions[label] = {"conn": conn, "mode": mode, "open": True}

    def build(self, kinds: list[str]) -> None:
        self.setup(kinds)
        blocks = [getattr(self, f"block_{kind}")(n + 1) for n, kind in enumerate(kinds)]
        for n in range(3):  # each block is a generator of three phases: set up, send, receive
            order = list(blocks)
            if n:
                self.r.shuffle(order)
            for block in order:
                next(block, None)
        for _ in range(self.r.choice([1, 1, 2])):
            self.cross_cut()
            self.op(op="sleep", ms=100)  # what a close gave back is dispatched again before anyone else subscribes
        self.second_round()
        self.checks()

    # ---------------------------------------------------------------- blocks: (set up, send, receive) each
    def block_queue(self, k: int):  # type: ignore[no-untyped-def]
        q = f"orders{k}"
        self.queues.append(q)
        session = self.shared_session()
        prefetch = {"prefetch": 1} if self.mode(session) != "TRANSACTED" and self.r.random() < 0.3 else {}
        c = self.consumer(session, dest=q, **prefetch)
        yield
        persistent = self.r.random() < 0.8
        for _ in range(self.r.randint(1, 3)):
            self.send(q, self.body("o"), persistent=persistent, priority=self.r.choice([4, 4, 7]))
        yield
        for _ in range(self.r.randint(1, 2)):
            self.receive(c)
        self.settle(c)
        yield

    def block_selector(self, k: int):  # type: ignore[no-untyped-def]
        q = f"events{k}"
        self.queues.append(q)
        session = self.shared_session()
        c = self.consumer(session, dest=q, selector="kind = 'red' OR n > 2")
        yield
        persistent = self.r.random() < 0.8
        for n in range(1, self.r.randint(3, 5)):
            kind = self.r.choice(["red", "blue"])
            self.send(q, self.body("e"), persistent=persistent, props={"kind": kind, "n": n})
        yield
        for _ in range(self.r.randint(1, 3)):
            self.receive(c)
        self.settle(c)
        yield

    def block_topic(self, k: int):  # type: ignore[no-untyped-def]
        t = f"prices{k}"
        self.topics.append(t)
        a = self.consumer(self.shared_session(), dest=t, topic=True)
        b = self.consumer(self.shared_session(), dest=t, topic=True)
        yield
        persistent = self.r.random() < 0.5
        for _ in range(self.r.randint(1, 2)):
            self.send(t, self.body("p"), persistent=persistent, topic=True)
        yield
        for c in (a, b):
            self.receive(c)
            self.settle(c)
        yield

    def block_durable(self, k: int):  # type: ignore[no-untyped-def]
        t = f"audit{k}"
        self.topics.append(t)
        self.durables.append(t)
        session = self.shared_session()
        d = self.durable(session, t, f"audit{k}")
        offline = self.r.random() < 0.6
        if offline:
            self.op(op="close_consumer", consumer=d)
            self.consumers[d]["open"] = False
        yield
        persistent = self.r.random() < 0.8
        for _ in range(self.r.randint(1, 3)):
            self.send(t, self.body("a"), persistent=persistent, topic=True)
        yield
        if offline:
            self.op(op="durable_subs", dest=t)
            if not self.is_open(session):
                session = self.shared_session()
            d = self.durable(session, t, f"audit{k}")
        for _ in range(self.r.randint(1, 2)):
            self.receive(d)
        self.settle(d)
        yield

    def block_request_reply(self, k: int):  # type: ignore[no-untyped-def]
        q = f"requests{k}"
        self.queues.append(q)
        requester = self.shared_session()
        server_session = self.shared_session()
        temp = f"t{k}"
        self.op(op="temp_queue", session=requester, temp=temp)
        replies = self.consumer(requester, temp=temp)
        server = self.consumer(server_session, dest=q)
        yield
        self.send(q, self.body("req"), persistent=True, reply_to=temp)
        yield
        self.receive(server)
        self.op(op="reply", session=server_session, consumer=server, body=self.body("rep"))
        self.settle(server)
        self.receive(replies)
        self.settle(replies)
        yield

    def block_virtual_topic(self, k: int):  # type: ignore[no-untyped-def]
        t = f"VirtualTopic.shipments{k}"
        queues = [f"Consumer.{g}.{t}" for g in ("A", "B")[: self.r.randint(1, 2)]]
        self.queues.extend(queues)
        consumers = [self.consumer(self.shared_session(), dest=q) for q in queues]
        yield
        persistent = self.r.random() < 0.8
        for _ in range(self.r.randint(1, 2)):
            self.send(t, self.body("v"), persistent=persistent, topic=True)
        yield
        for c in consumers:
            self.receive(c)
            self.settle(c)
        yield

    def block_wildcard(self, k: int):  # type: ignore[no-untyped-def]
        base = f"metrics{k}"
        self.topics.extend([f"{base}.cpu", f"{base}.disk"])
        c = self.consumer(self.shared_session(), dest=self.r.choice([f"{base}.*", f"{base}.>"]), topic=True)
        yield
        persistent = self.r.random() < 0.5
        for leaf in self.r.sample(["cpu", "disk", "cpu"], self.r.randint(1, 3)):
            self.send(f"{base}.{leaf}", self.body("w"), persistent=persistent, topic=True)
        yield
        for _ in range(self.r.randint(1, 2)):
            self.receive(c)
        self.settle(c)
        yield

    def block_composite(self, k: int):  # type: ignore[no-untyped-def]
        a, b = f"billing{k}", f"archive{k}"
        self.queues.extend([a, b])
        ca = self.consumer(self.shared_session(), dest=a)
        yield
        persistent = self.r.random() < 0.8
        for _ in range(self.r.randint(1, 2)):
            self.send(f"{a},{b}", self.body("c"), persistent=persistent)
        yield
        self.receive(ca)
        self.settle(ca)
        cb = self.consumer(self.shared_session(), dest=b)
        self.receive(cb)
        self.settle(cb)
        yield

    def block_advisory(self, k: int):  # type: ignore[no-untyped-def]
        q = f"jobs{k}"
        self.queues.append(q)
        watch = self.consumer(self.shared_session(), dest=f"ActiveMQ.Advisory.Consumer.Queue.{q}", topic=True)
        worker = self.consumer(self.shared_session(), dest=q)
        yield
        self.send(q, self.body("j"), persistent=True)
        yield
        record = ["consumerCount", "dataStructure"]
        self.receive(watch, record=record)
        self.receive(worker)
        self.settle(worker)
        self.op(op="close_consumer", consumer=worker)
        self.consumers[worker]["open"] = False
        self.receive(watch, record=record)
        self.settle(watch)
        yield

    def block_scheduler(self, k: int):  # type: ignore[no-untyped-def]
        q = f"reminders{k}"
        self.queues.append(q)
        session = self.own_session()
        c = self.consumer(session, dest=q)
        yield
        yield
        self.send(q, self.body("r"), persistent=True, delay_ms=self.r.choice([100, 200, 300]))
        self.op(op="receive", consumer=c, timeout_ms=1500)
        yield

    def block_expiry(self, k: int):  # type: ignore[no-untyped-def]
        q = f"quotes{k}"
        self.queues.append(q)
        yield
        self.send(q, self.body("x"), persistent=True, ttl_ms=100)
        if self.r.random() < 0.5:
            self.send(q, self.body("x"), persistent=True)
        yield
        self.op(op="sleep", ms=300)
        self.op(op="browse", dest=q)
        c = self.consumer(self.shared_session(), dest=q)
        self.receive(c)
        self.settle(c)
        yield

    def block_competing(self, k: int):  # type: ignore[no-untyped-def]
        q = f"work{k}"
        self.queues.append(q)
        yield
        persistent = self.r.random() < 0.8
        for _ in range(self.r.randint(2, 4)):
            self.send(q, self.body("k"), persistent=persistent)
        yield
        sessions = [self.shared_session(), self.shared_session()]
        prefetch = {} if any(self.mode(s) == "TRANSACTED" for s in sessions) or self.r.random() < 0.5 else {"prefetch": 1}
        first = self.consumer(sessions[0], dest=q, **prefetch)
        self.op(op="sleep", ms=100)
        second = self.consumer(sessions[1], dest=q, **prefetch)
        self.op(op="sleep", ms=100)
        for c in (first, second, first):
            self.receive(c)
        self.settle(first)
        self.settle(second)
        yield

    # ---------------------------------------------------------------- what acts on several blocks at once
    def cross_cut(self) -> None:
        r = self.r
        sessions = [s for s in self.open_sessions() if not self.sessions[s].get("own")]
        if not sessions:
            return
        session = r.choice(sessions)
        mode = self.mode(session)
        choices = ["close_session", "close_connection"]
        if mode == "TRANSACTED":
            choices += ["rollback", "rollback", "commit"]
        if mode in ("CLIENT", "INDIVIDUAL"):
            choices += ["recover", "recover"]
        if self.avoid_races:
            closes = {"close_session": [session], "close_connection": self.sessions_of(session)}
            for close, affected in closes.items():
                if self.competing_in(affected):
                    choices = [c for c in choices if c != close]
            if not choices:
                return
        action = r.choice(choices)
        if action in ("rollback", "commit", "recover"):
            self.op(op=action, session=session)
        elif action == "close_session":
            self.op(op="close_session", session=session)
            self.sessions[session]["open"] = False
            self.reopen([c for c, v in self.consumers.items() if v["open"] and v["session"] == session], None)
        else:
            conn = str(self.sessions[session]["conn"])
            dead = [c for c, v in self.consumers.items() if v["open"] and self.sessions[str(v["session"])]["conn"] == conn]
            self.op(op="close_connection", conn=conn)
            self.conns[conn]["open"] = False
            new = self.label("c")
            old = self.conns[conn]
            self.op(op="connect", conn=new, clientId=old["client_id"], redeliveryPolicy=old["policy"])
            self.conns[new] = {"client_id": old["client_id"], "open": True, "policy": old["policy"]}
            for s, v in list(self.sessions.items()):
                if v["conn"] == conn and v["open"] and not v.get("own"):
                    label = self.label("s")
                    self.op(op="session", session=label, conn=new, mode=v["mode"])
                    self.sessions[label] = {"conn": new, "mode": v["mode"], "open": True}
            self.reopen(dead, new)

    def sessions_of(self, session: str) -> list[str]:
        conn = self.sessions[session]["conn"]
        return [s for s, v in self.sessions.items() if v["conn"] == conn]

    def competing_in(self, sessions: list[str]) -> bool:
        """Whether two open consumers of one queue sit on these sessions."""
        queues = [
            str(v["make"].get("dest"))  # type: ignore[union-attr]
            for c, v in self.consumers.items()
            if c in self.open_consumers() and v["session"] in sessions and not v["make"].get("topic")  # type: ignore[union-attr]
            and "dest" in v["make"]  # type: ignore[operator]
        ]
        return len(queues) != len(set(queues))

    def reopen(self, dead: list[str], conn: str | None) -> None:
        """Consumers that a close took away come back (as applications reconnect), on an open shared session."""
        for c in dead:
            self.consumers[c]["open"] = False
            make = dict(self.consumers[c]["make"])  # type: ignore[arg-type]
            if "temp" in make:
                continue  # a temporary queue dies with its connection
            candidates = [s for s in self.open_sessions() if not self.sessions[s].get("own")]
            if conn is not None:
                candidates = [s for s in candidates if self.sessions[s]["conn"] == conn] or candidates
            if not candidates or self.r.random() < 0.25:
                continue
            session = self.r.choice(candidates)
            label = self.label("d" if make["op"] == "durable_subscriber" else "k")
            make.update(consumer=label, session=session)
            self.ops.append(make)
            self.consumers[label] = {"session": session, "make": make, "open": True}

    def second_round(self) -> None:
        for c in self.open_consumers():
            if self.sessions[str(self.consumers[c]["session"])].get("own"):
                continue
            if str(self.consumers[c]["make"].get("dest", "")).startswith("ActiveMQ.Advisory"):  # type: ignore[union-attr]
                continue
            for _ in range(self.r.choice([1, 1, 2])):
                self.receive(c)
            self.settle(c)
        for s in self.open_sessions():
            if self.mode(s) == "TRANSACTED" and self.r.random() < 0.5:
                self.op(op=self.r.choice(["commit", "rollback"]), session=s)

    def checks(self) -> None:
        for q in self.queues:
            self.op(op="stats", dest=q)
        for t in self.durables:
            self.op(op="durable_subs", dest=t)
        for t in self.topics[:2]:
            self.op(op="stats", dest=t, topic=True)
        if self.queues:
            self.op(op="browse", dest=self.r.choice(self.queues))
        dlqs = [self.dlq] if self.dlq else []
        if not self.dlq:  # individual strategy: one DLQ per queue
            dlqs = [f"DLQ.{q}" for q in self.queues if not q.startswith("Consumer.")][:2]
        for d in dlqs:
            self.op(op="dlq", dest=d)

    def script(self) -> dict[str, object]:
        s: dict[str, object] = {"name": self.name, "ops": self.ops}
        if self.broker:
            s["broker"] = self.broker
        return s


def generate(seed: int, index: int, avoid_races: bool = False) -> dict[str, object]:
    rng = random.Random(seed * 100_003 + index)
    app = App(rng, f"mixed_{seed}_{index:03d}", avoid_races)
    kinds = rng.sample(KINDS, rng.randint(2, 4))
    app.build(kinds)
    script = app.script()
    script["blocks"] = kinds
    return script


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--avoid-races", action="store_true", help="leave out what record_mixed.py would drop as racy")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for i in range(args.count):
        script = generate(args.seed, i, args.avoid_races)
        with open(os.path.join(args.out, f"{script['name']}.json"), "w") as f:
            json.dump(script, f, indent=1)


if __name__ == "__main__":
    main()
