"""The checker: a finished crash run (its ledger, model.py) held to the broker's promises.

* **lost**: a confirmed send that is not rolled back reaches every sink it was meant for: it is acked there (the
  final drain acks everything it gets), or purged. An ack or purge that a kill cut may or may not have happened,
  so a message it covers counts as arrived either way.
* **delivered after ack**: nothing is delivered to a sink after its ack there (or a purge of it) was confirmed.
* **repeats**: within one lifetime, a sink gets a message twice only as a redelivery (marked redelivered). One
  exception is ActiveMQ's own rule: a consumer that closes without acking gives back what it held, and only what
  the broker dispatched up to the last message the application was handed (its ``lastDeliveredSequenceId``, by
  broker sequence id) comes back marked; a message numbered later returns unmarked (``Queue.removeSubscription``,
  ``DurableTopicSubscription.deactivate``; recorded, ``tests/differential/features/durable_close_after_*``). A
  transacted send takes its number when it arrives, so it can be dispatched after messages numbered above it.
  Where the edge tells the broker sequence id (native), such a return is counted apart (``returned unmarked``),
  not as a repeat.
* **order**: within one consumer's lifetime, each producer's messages come in the order they were sent (first
  deliveries only: a redelivery comes back where the broker puts it).
* **invented**: nothing arrives that was never sent, was rolled back, or was meant for another sink.
* **early**: a scheduled message does not arrive before its delay.
* **retained**: a new subscriber gets a topic's last confirmed retained publish of the same lifetime (or one
  attempted after it); after a restart, none (ActiveMQ 5.17 keeps retained messages in memory only).

Each promise is counted per feature, so a run prints what it held to and where it failed.
"""

from __future__ import annotations

from collections import defaultdict

import attrs

from .model import Delivery, Ledger, RetainedRead, RetainedWrite, split_body

__all__ = ["Figures", "Verdict", "check"]

#: a scheduled message may arrive this much (seconds) before its due time (clock granularity of two processes)
EARLY_SLACK = 0.05


@attrs.define(slots=True)
class Figures:
    """What one feature of a run did and how it held up."""

    confirmed: int = 0
    unconfirmed: int = 0
    deliveries: int = 0
    lost: int = 0
    delivered_after_ack: int = 0
    repeats: int = 0
    #: unmarked returns ActiveMQ makes too (numbered after the closing consumer's last delivered message)
    returned_unmarked: int = 0
    out_of_order: int = 0
    invented: int = 0
    early: int = 0
    retained_wrong: int = 0

    def bad(self) -> int:
        return (
            self.lost
            + self.delivered_after_ack
            + self.repeats
            + self.out_of_order
            + self.invented
            + self.early
            + self.retained_wrong
        )


@attrs.define(slots=True)
class Verdict:
    """The figures per feature, and a few examples of each failure (for the report and FINDINGS.md)."""

    features: dict[str, Figures] = attrs.Factory(lambda: defaultdict(Figures))
    examples: list[str] = attrs.Factory(list)
    errors: list[str] = attrs.Factory(list)

    @property
    def ok(self) -> bool:
        return not self.errors and not any(f.bad() for f in self.features.values())

    def total(self) -> Figures:
        out = Figures()
        for figures in self.features.values():
            for field in attrs.fields(Figures):
                setattr(out, field.name, getattr(out, field.name) + getattr(figures, field.name))
        return out

    def note(self, text: str) -> None:
        if len(self.examples) < 40:
            self.examples.append(text)

    def summary(self) -> str:
        lines = []
        for name, f in sorted(self.features.items()):
            lines.append(
                f"  {name:<10} confirmed {f.confirmed:>6}  unconfirmed {f.unconfirmed:>3}  deliveries {f.deliveries:>6}"
                f"  lost {f.lost}  after-ack {f.delivered_after_ack}  repeats {f.repeats}  order {f.out_of_order}"
                f"  invented {f.invented}  early {f.early}  retained {f.retained_wrong}"
                + (f"  returned unmarked {f.returned_unmarked}" if f.returned_unmarked else "")
            )
        return "\n".join(lines)


def last_broker_seq_handed(deliveries: list[Delivery]) -> dict[str, int | None]:
    """Each consumer instance's last delivered message's broker sequence id (the ActiveMQ client's
    ``lastDeliveredSequenceId``: the last one handed to the application, not the highest)."""
    return {d.consumer: d.broker_seq for d in deliveries}


def returned_after_last_delivered(before: Delivery, again: Delivery, last_handed: dict[str, int | None]) -> bool:
    """Whether ``again`` is a message its first consumer gave back on closing, numbered after the last message that
    consumer handed out: ActiveMQ returns it without the redelivered mark (see "repeats" above)."""
    if before.consumer == again.consumer or before.broker_seq is None:
        return False
    last = last_handed.get(before.consumer)
    return last is not None and before.broker_seq > last


def check(ledger: Ledger) -> Verdict:
    verdict = Verdict(errors=list(ledger.errors))
    features = verdict.features
    sends = ledger.sends

    # -- lost ------------------------------------------------------------------------------------------------------
    purged: dict[str, set[str]] = defaultdict(set)
    for purge in ledger.purges:
        purged[purge.sink] |= purge.before
    for record in sends.values():
        figures = features[record.feature]
        if record.confirmed_at is None:
            figures.unconfirmed += 1
            continue
        if record.rolled_back:
            continue
        figures.confirmed += 1
        for sink in record.sinks:
            if (sink, record.body) in ledger.acks or record.body in purged[sink]:
                continue
            figures.lost += 1
            if sink not in ledger.drained and f"sink {sink} was never drained" not in verdict.errors:
                verdict.errors.append(f"sink {sink} was never drained")
            verdict.note(f"lost: {record.body} ({record.feature}, sent in lifetime {record.lifetime}) on {sink}")

    # -- each delivery ----------------------------------------------------------------------------------------------
    confirmed_purge: dict[tuple[str, str], int] = {}
    for purge in ledger.purges:
        if purge.confirmed_at is not None:
            for body in purge.before:
                key = (purge.sink, body)
                confirmed_purge[key] = min(confirmed_purge.get(key, purge.confirmed_at), purge.confirmed_at)
    seen_in_lifetime: dict[tuple[str, str, int], Delivery] = {}
    last_handed = last_broker_seq_handed(ledger.deliveries)
    seen_by_consumer: set[tuple[str, str]] = set()
    last_seq: dict[tuple[str, str], int] = {}
    for d in ledger.deliveries:
        got = sends.get(d.body)
        feature = got.feature if got is not None else "?"
        figures = features[feature]
        figures.deliveries += 1
        if got is None or got.rolled_back or d.sink not in got.sinks:
            figures.invented += 1
            why = "never sent" if got is None else "rolled back" if got.rolled_back else "meant elsewhere"
            verdict.note(f"invented: {d.body} on {d.sink} in lifetime {d.lifetime} ({why})")
            continue
        record = got
        ack = ledger.acks.get((d.sink, d.body))
        purged_at = confirmed_purge.get((d.sink, d.body))
        if (ack is not None and ack.confirmed_at is not None and ack.confirmed_at < d.at) or (
            purged_at is not None and purged_at < d.at
        ):
            figures.delivered_after_ack += 1
            how = "purge" if purged_at is not None and purged_at < d.at else "ack"
            verdict.note(
                f"delivered after its {how} was confirmed: {d.body} on {d.sink} in lifetime {d.lifetime}"
                f" (sent in lifetime {record.lifetime})"
            )
        in_lifetime = (d.sink, d.body, d.lifetime)
        before = seen_in_lifetime.get(in_lifetime)
        if before is not None and not d.redelivered:
            if returned_after_last_delivered(before, d, last_handed):
                figures.returned_unmarked += 1
            else:
                figures.repeats += 1
                verdict.note(f"repeated without the redelivered flag: {d.body} on {d.sink} in lifetime {d.lifetime}")
        seen_in_lifetime[in_lifetime] = d
        if record.not_before is not None and d.wall < record.not_before - EARLY_SLACK:
            figures.early += 1
            verdict.note(f"early: {d.body} on {d.sink}, {record.not_before - d.wall:.3f} s before its delay")
        first = (d.consumer, d.body) not in seen_by_consumer
        seen_by_consumer.add((d.consumer, d.body))
        if first and not d.redelivered and record.not_before is None:
            producer, seq = split_body(d.body)
            stream = (d.consumer, producer)
            before = last_seq.get(stream)
            if before is not None and seq < before:
                figures.out_of_order += 1
                verdict.note(f"out of order: {d.body} after seq {before} to {d.consumer}")
            last_seq[stream] = max(seq, before or 0)

    # -- retained ---------------------------------------------------------------------------------------------------
    for read in ledger.retained_reads:
        allowed = retained_allowed(ledger.retained, read)
        if read.value not in allowed:
            features["retained"].retained_wrong += 1
            verdict.note(
                f"retained on {read.topic} in lifetime {read.lifetime}: got {read.value!r}, expected one of "
                f"{sorted(map(str, allowed))}"
            )
    return verdict


def retained_allowed(writes: list[RetainedWrite], read: RetainedRead) -> set[str | None]:
    """What a new subscriber may get as a topic's retained message: the last retained publish confirmed before the
    read (or one attempted after it and not yet confirmed) *of the same lifetime*. ActiveMQ 5.17 keeps a topic's
    retained message in memory only (``RetainedMessageSubscriptionRecoveryPolicy.retainedMessage``), so after a
    restart there is none until the next retained publish."""
    mine = [w for w in writes if w.topic == read.topic and w.lifetime == read.lifetime and w.attempted_at < read.at]
    confirmed = [i for i, w in enumerate(mine) if w.confirmed_at is not None and w.confirmed_at < read.at]
    if not confirmed:
        return {None, *(w.value for w in mine)}
    return {w.value for w in mine[confirmed[-1] :]}
