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

    def turn(self, actor: str) -> Turn:
        return next(t for t in self.turns if t.actor == actor)


@attrs.frozen(slots=True)
class Plan:
    seed: int
    actors: tuple[Actor, ...]
    lifetimes: tuple[Lifetime, ...]

    def actor(self, name: str) -> Actor:
        return next(a for a in self.actors if a.name == name)

    def sinks(self) -> list[str]:
        return sorted({s for a in self.actors if a.kind not in ("producer", "scheduler", "bulk") for s in a.sinks})

    def describe(self) -> str:
        """The plan in a few lines: for a report or a finding's reproduction."""
        lines = [f"seed {self.seed}: " + ", ".join(f"{a.name}={a.kind}/{a.edge}" for a in self.actors)]
        for life in self.lifetimes:
            sig = "SIGKILL" if life.signal == signal.SIGKILL else "SIGTERM"
            turns = " ".join(
                f"{t.actor}:{t.mode}" + ("" if t.presence == "online" else f"/{t.presence}") for t in life.turns
            )
            lines.append(f"  lifetime {life.index}: {sig} after {life.kill_after} confirmed; {turns}")
        return "\n".join(lines)


def actor_rng(seed: int, lifetime: int, actor: str) -> random.Random:
    """The random source of one actor in one lifetime (a string seed: stable across processes)."""
    return random.Random(f"{seed}/{lifetime}/{actor}")


def _actors(features: Iterable[str]) -> list[Actor]:
    chosen = set(features)
    actors: list[Actor] = []
    if "queue" in chosen:
        q = "crash.q.native"
        actors += [
            Actor("qprod", "queue", "producer", "native", q, (f"queue:{q}",)),
            Actor("qcons", "queue", "consumer", "native", q, (f"queue:{q}",)),
        ]
    if "durable" in chosen:
        t = "crash.t.native"
        subs = [("d1", "cd1", "sub1"), ("d2", "cd2", "sub2")]
        sinks = tuple(f"durable:{cid}:{name}" for _, cid, name in subs)
        actors.append(Actor("tprod", "durable", "producer", "native", f"topic://{t}", sinks))
        for actor, cid, name in subs:
            actors.append(
                Actor(actor, "durable", "durable", "native", f"topic://{t}", (f"durable:{cid}:{name}",), cid, name)
            )
    return actors


def generate(
    seed: int,
    *,
    features: Iterable[str] = FEATURES,
    lifetimes: int | None = None,
    kill_after: tuple[int, int] = (150, 600),
) -> Plan:
    """The plan of ``seed``: 3 to 5 lifetimes (so 3 to 5 stops and restarts) unless ``lifetimes`` is given."""
    rng = random.Random(seed)
    actors = _actors(features)
    count = lifetimes if lifetimes is not None else rng.randint(3, 5)
    lives: list[Lifetime] = []
    for index in range(count):
        turns: list[Turn] = []
        for actor in actors:
            if actor.kind == "producer":
                turns.append(Turn(actor.name, rng.choice(("plain", "plain", "transacted"))))
            elif actor.kind == "consumer":
                turns.append(Turn(actor.name, rng.choice(ACK_MODES), rng.choice(("online", "online", "away"))))
            elif actor.kind == "durable":
                turns.append(Turn(actor.name, rng.choice(ACK_MODES), rng.choice(PRESENCES)))
            else:
                turns.append(Turn(actor.name, "plain"))
        sig = rng.choice((signal.SIGKILL, signal.SIGKILL, signal.SIGTERM))
        lives.append(Lifetime(index, sig, rng.randint(*kill_after), tuple(turns)))
    return Plan(seed, tuple(actors), tuple(lives))
