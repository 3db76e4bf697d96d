"""The seeded generator of persistent workloads: a :class:`Plan` is pure data drawn from one seed.

A plan names its *actors* (each one client doing one thing: a producer of a queue, a durable subscriber, an MQTT
persistent session, ...) and its *lifetimes* (each one run of ``minibroker serve`` between two stops). For every
lifetime it says how the broker dies (SIGKILL or SIGTERM), after how many confirmed operations, and what each actor
does meanwhile: which ack mode a consumer uses, whether a subscriber is connected, comes and goes, or stays away.
The combinations are the point: a subscriber connected at one kill and away at the next, with sends in between, is
exactly what the hand-written kill tests never tried (issue 41).

Everything an actor draws while it runs comes from :func:`actor_rng`, seeded by the plan's seed, the lifetime and
the actor's name, so a seed names one workload. Only the timing of the broker's answers differs between two runs
of a seed, which is why the checker holds a run to rules that any timing must keep, never to exact figures.
"""

from __future__ import annotations

import random
import signal
from collections.abc import Iterable

import attrs

__all__ = ["FEATURES", "Actor", "Lifetime", "Plan", "Turn", "actor_rng", "generate"]

#: the features a plan may cover (each names its actors below)
FEATURES = ("queue", "durable", "stomp", "mqtt", "retained", "scheduled", "purge", "paging")

#: the consumer ack modes, and the subscriber presences a lifetime may give a durable subscriber
ACK_MODES = ("auto", "client", "individual", "transacted")
#: STOMP's ``ack:auto`` is left out: ActiveMQ acks such a message as it dispatches it (StompSubscription), so what a
#: kill catches between the broker and the client is gone, as at most once allows: no promise to check
STOMP_ACK_MODES = ("client", "individual", "transacted")
PRESENCES = ("online", "online", "away", "away", "flaky")


@attrs.frozen(slots=True)
class Actor:
    """One client of the run: what it is, over which edge, on which destination, and the sinks it serves."""

    name: str
    feature: str
    #: producer, consumer (of a queue), durable (a durable subscriber, native or STOMP), mqtt-session, retainer,
    #: scheduler (delayed sends), purger, bulk (a producer of many messages, for paging)
    kind: str
    edge: str
    destination: str
    #: a consumer's sink; a producer's: the sinks each of its sends is meant for
    sinks: tuple[str, ...] = ()
    client_id: str | None = None
    subscription: str | None = None
    #: properties of every send (a JMS message to MQTT subscribers names its QoS: ActiveMQ sends a persistent one
    #: without it at QoS 0)
    properties: tuple[tuple[str, int], ...] = ()


@attrs.frozen(slots=True)
class Turn:
    """What one actor does during one lifetime: a mode (an ack mode, ``plain``/``transacted`` sends) and, for
    subscribers, a presence (``online``, ``away``, ``flaky``)."""

    actor: str
    mode: str
    presence: str = "online"


@attrs.frozen(slots=True)
class Lifetime:
    index: int
    #: how the broker is stopped at the end of this lifetime
    signal: int
    #: confirmed operations (sends, acks, purges) in this lifetime after which it is stopped
    kill_after: int
    turns: tuple[Turn, ...]
    #: messages each bulk producer must have had confirmed in this lifetime before the stop (0: none)
    bulk: int = 0

    def turn(self, actor: str) -> Turn:
        return next(t for t in self.turns if t.actor == actor)


@attrs.frozen(slots=True)
class Plan:
    seed: int
    actors: tuple[Actor, ...]
    lifetimes: tuple[Lifetime, ...]

    def actor(self, name: str) -> Actor:
        return next(a for a in self.actors if a.name == name)

    def features(self) -> list[str]:
        return sorted({a.feature for a in self.actors})

    def describe(self) -> str:
        """The plan in a few lines: for a report or a finding's reproduction."""
        lines = [f"seed {self.seed}: " + ", ".join(f"{a.name}={a.kind}/{a.edge}" for a in self.actors)]
        for life in self.lifetimes:
            sig = "SIGKILL" if life.signal == signal.SIGKILL else "SIGTERM"
            turns = " ".join(
                f"{t.actor}:{t.mode}" + ("" if t.presence == "online" else f"/{t.presence}") for t in life.turns
            )
            bulk = f" and {life.bulk} bulk" if life.bulk else ""
            lines.append(f"  lifetime {life.index}: {sig} after {life.kill_after} confirmed{bulk}; {turns}")
        return "\n".join(lines)


def actor_rng(seed: int, lifetime: int, actor: str) -> random.Random:
    """The random source of one actor in one lifetime (a string seed: stable across processes)."""
    return random.Random(f"{seed}/{lifetime}/{actor}")


def _actors(features: Iterable[str]) -> list[Actor]:
    """The actors of the chosen features. Topic producers are meant for every durable subscription or persistent
    session of their topic (all created before the first send), whatever the edge of either."""
    chosen = set(features)
    actors: list[Actor] = []
    topic = "topic://crash.t.durable"
    if "queue" in chosen:
        q = "crash.q.native"
        actors += [
            Actor("qprod", "queue", "producer", "native", q),
            Actor("qcons", "queue", "consumer", "native", q, (f"queue:{q}",)),
        ]
    if "stomp" in chosen:
        q = "crash.q.stomp"
        actors += [
            Actor("sprod", "stomp", "producer", "stomp", q),
            Actor("qprod2", "stomp", "producer", "native", q),
            Actor("scons", "stomp", "consumer", "stomp", q, (f"queue:{q}",)),
        ]
        if "durable" in chosen:
            actors += [
                Actor("tprod2", "durable", "producer", "stomp", topic),
                Actor("d3", "durable", "durable", "stomp", topic, ("durable:cd3:sub3",), "cd3", "sub3"),
            ]
    if "durable" in chosen:
        actors.append(Actor("tprod", "durable", "producer", "native", topic))
        for who, cid, name in (("d1", "cd1", "sub1"), ("d2", "cd2", "sub2")):
            actors.append(Actor(who, "durable", "durable", "native", topic, (f"durable:{cid}:{name}",), cid, name))
    if "mqtt" in chosen:
        actors += [
            Actor("mprod", "mqtt", "producer", "mqtt", "crash/m"),
            Actor("mprod2", "mqtt", "producer", "native", "topic://crash.m", properties=(("ActiveMQ.MQTT.QoS", 1),)),
            Actor("m1", "mqtt", "mqtt-session", "mqtt", "crash/m", ("mqtt:m1",), "m1"),
            Actor("m2", "mqtt", "mqtt-session", "mqtt", "crash/m", ("mqtt:m2",), "m2"),
        ]
    if "retained" in chosen:
        actors.append(Actor("ret", "retained", "retainer", "mqtt", "crash/r"))
    if "scheduled" in chosen:
        q = "crash.q.sched"
        actors += [
            Actor("sched", "scheduled", "scheduler", "native", q),
            Actor("sched2", "scheduled", "scheduler", "stomp", q),
            Actor("schedcons", "scheduled", "consumer", "native", q, (f"queue:{q}",)),
        ]
    if "purge" in chosen:
        q = "crash.q.purge"
        actors.append(Actor("purger", "purge", "purger", "native", q, (f"queue:{q}",)))
    if "paging" in chosen:
        t, q = "topic://crash.t.paged", "crash.q.paged"
        actors += [
            Actor("bulkt", "paging", "bulk", "native", t),
            Actor("pg", "paging", "durable", "native", t, ("durable:cpg:pg",), "cpg", "pg"),
            Actor("bulkq", "paging", "bulk", "native", q),
            Actor("pgq", "paging", "consumer", "native", q, (f"queue:{q}",)),
        ]

    # each producer's sends are meant for every reader of its destination (MQTT names topics with slashes)
    def key(destination: str) -> str:
        return destination.removeprefix("topic://").replace("/", ".")

    readers = ("consumer", "durable", "mqtt-session")
    out = []
    for actor in actors:
        if actor.kind in ("producer", "scheduler", "bulk"):
            sinks = tuple(
                s for a in actors if a.kind in readers and key(a.destination) == key(actor.destination) for s in a.sinks
            )
            actor = attrs.evolve(actor, sinks=sinks)
        out.append(actor)
    return out


def generate(
    seed: int,
    *,
    features: Iterable[str] | None = None,
    lifetimes: int | None = None,
    kill_after: tuple[int, int] = (150, 600),
) -> Plan:
    """The plan of ``seed``: 3 to 5 lifetimes (so 3 to 5 stops and restarts) unless ``lifetimes`` is given.

    Without ``features``, every feature but paging, and paging in one seed of four (it sends over 20,000
    messages: seconds more). Each draw has a random source of its own (the lifetime's stop, each actor's turn), so
    a plan cut down to fewer features keeps the same stops and the same turns for the actors it keeps: that is how
    a finding is narrowed down to its smallest seed and feature set."""
    if features is None:
        with_paging = random.Random(f"{seed}/paging").random() < 0.25
        features = [f for f in FEATURES if f != "paging"] + (["paging"] if with_paging else [])
    features = list(features)
    actors = _actors(features)
    count = lifetimes if lifetimes is not None else random.Random(seed).randint(3, 5)
    lives: list[Lifetime] = []
    for index in range(count):
        turns = [_turn(random.Random(f"{seed}/{index}/{actor.name}"), actor, index) for actor in actors]
        rng = random.Random(f"{seed}/{index}")
        sig = rng.choice((signal.SIGKILL, signal.SIGKILL, signal.SIGTERM))
        bulk = 10_500 if index == 0 and "paging" in features else 0
        lives.append(Lifetime(index, sig, rng.randint(*kill_after), tuple(turns), bulk))
    return Plan(seed, tuple(actors), tuple(lives))


def _turn(rng: random.Random, actor: Actor, index: int) -> Turn:
    """What ``actor`` does in lifetime ``index``."""
    if actor.kind == "producer":
        return Turn(actor.name, rng.choice(("plain",) if actor.edge == "mqtt" else ("plain", "plain", "transacted")))
    modes = STOMP_ACK_MODES if actor.edge == "stomp" else ACK_MODES
    if actor.kind == "consumer":
        presence = rng.choice(("online", "online", "away"))
    elif actor.kind == "durable":
        presence = rng.choice(PRESENCES)
    elif actor.kind == "mqtt-session":
        modes = ("auto", "individual")
        presence = rng.choice(PRESENCES)
    else:
        return Turn(actor.name, "plain")
    if actor.feature == "paging" and index == 0:
        presence = "away"  # the topic's log and the queue grow past a page before the first restart
    return Turn(actor.name, rng.choice(modes), presence)
