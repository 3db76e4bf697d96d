"""A message's journey as a timeline: how each :class:`~minibroker.HistoryRecord` is named and drawn, in one place.

The web console (its JSON, which ``static/console.js`` draws with DOM nodes) and the pytest plugin's
``--minibroker-report`` (HTML written here, every text escaped) both draw a history through :func:`timeline_rows`:
the same offsets, the same words for each event, the same colour for each step (``kind``: ``good`` for the ack or
commit that consumes a message, ``bad`` for one lost or given up on, ``wait`` for a redelivery delay, ``""``
otherwise), and the same markup (``<ol class="timeline">``, styled by ``static/console.css``).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from minibroker import HistoryRecord

__all__ = ["TimelineRow", "outcome", "timeline_html", "timeline_rows"]

#: the events that end a message's journey badly (the message is gone, or given up on)
BAD_EVENTS = frozenset({"dead-lettered", "dropped", "expired", "rolled-back", "purged", "discarded"})
#: the ack types that consume a message (an ack outside a transaction, or a committed one)
CONSUMING_ACKS = frozenset({"STANDARD", "INDIVIDUAL"})


@attrs.frozen(slots=True)
class TimelineRow:
    """One step of a journey as the timeline draws it."""

    #: seconds since the journey's first record
    offset: float
    #: the record's event (``sent``, ``dispatched``, ``ack``, ...; ``data-event`` on the page)
    event: str
    #: the step's colour: ``good``, ``bad``, ``wait`` or ``""``
    kind: str
    #: what else is known, in words (``to consumer 3``, ``ack POISON``, ``redelivery delay 1 s``, ...)
    parts: tuple[str, ...]

    @property
    def when(self) -> str:
        """The offset as the timeline prints it: ``+1.500 s``."""
        return f"+{self.offset:.3f} s"

    @property
    def text(self) -> str:
        """The parts, one line."""
        return ", ".join(self.parts)

    def as_json(self) -> dict[str, Any]:
        """What the console's JSON carries for the row (``console.js`` draws it as :func:`timeline_html` does)."""
        return {"when": self.when, "kind": self.kind, "text": self.text}


def _kind(record: HistoryRecord) -> str:
    if record.ack_type == "POISON" or record.event in BAD_EVENTS:
        return "bad"
    if record.event == "committed" or _consumes(record):
        return "good"
    if record.delay is not None or record.event == "redelivery-scheduled":
        return "wait"
    return ""


def _consumes(record: HistoryRecord) -> bool:
    """An ack that consumes the message by itself (outside a transaction: a transacted one waits for the commit)."""
    return record.event == "ack" and record.ack_type in CONSUMING_ACKS and record.transaction_id is None


def _parts(record: HistoryRecord) -> tuple[str, ...]:
    parts = []
    if record.consumer_id is not None:
        parts.append(f"{'to ' if record.event == 'dispatched' else ''}consumer {record.consumer_id}")
    if record.ack_type:
        parts.append(f"ack {record.ack_type}")
    if record.transaction_id is not None:
        parts.append(f"transaction {record.transaction_id}")
    if record.redelivery_counter:
        parts.append(f"redelivery {record.redelivery_counter}")
    if record.delay is not None:
        parts.append(f"redelivery delay {record.delay:g} s")
    if record.destination:
        parts.append(f"to {record.destination}")
    if record.detail:
        parts.append(f"cause: {record.detail}" if record.event == "dead-lettered" else record.detail)
    return tuple(parts)


def timeline_rows(records: Sequence[HistoryRecord]) -> list[TimelineRow]:
    """The rows of a message's timeline, oldest first (offsets from its first record)."""
    if not records:
        return []
    start = records[0].time
    return [TimelineRow(r.time - start, r.event, _kind(r), _parts(r)) for r in records]


def outcome(records: Iterable[HistoryRecord]) -> str:
    """How the journey ended: consumed, dead-lettered, dropped, expired, purged, or pending
    (as :attr:`minibroker.testing.DeliveryHistory.outcome` reads it, a purge too)."""
    for record in reversed(list(records)):
        if record.event in ("dead-lettered", "dropped", "expired", "purged"):
            return record.event
        if record.event == "committed" and record.consumer_id is not None:
            return "consumed"
        if _consumes(record):
            return "consumed"
    return "pending"


def _row_html(row: TimelineRow) -> str:
    cls = f' class="{row.kind}"' if row.kind else ""
    text = f" \u2014 {html.escape(row.text)}" if row.parts else ""
    return (
        f'<li{cls} data-event="{html.escape(row.event)}"><span class="when">{row.when}</span>'
        f'<span class="event">{html.escape(row.event)}</span>{text}</li>'
    )


def timeline_html(records: Sequence[HistoryRecord], *, kept: bool = True, limit: int = 200) -> str:
    """The timeline as the console draws it, as HTML (every text escaped); at most ``limit`` rows (the first and
    the last ones, with a row saying how many are left out between them)."""
    if not kept:
        return '<p class="note">This broker keeps no delivery history (its history_limit is 0).</p>'
    rows = timeline_rows(records)
    if not rows:
        return '<p class="note">No history recorded for this message.</p>'
    items = [_row_html(row) for row in rows]
    if len(items) > limit:
        head, tail = items[: limit * 3 // 4], items[len(items) - limit // 4 :]
        skipped = len(items) - len(head) - len(tail)
        items = [*head, f'<li class="note" data-event="skipped">\u2026 {skipped} more events \u2026</li>', *tail]
    return '<ol class="timeline">' + "".join(items) + "</ol>"


#: the most messages per broker a failed test's records hold (the report draws fewer: report.MESSAGES_PER_BROKER)
RECORDS_PER_BROKER = 1000
_QOS_PROPERTY = "ActiveMQ.MQTT.QoS"


def journey_records(test: str, label: str, broker: Any) -> list[dict[str, Any]]:
    """The journeys of ``broker``'s messages as plain records, what ``--minibroker-report`` exposes as ``.records``
    (JSON-ready, so pytest-xdist carries them from its workers): ``test``, ``broker`` (the fixture that made it),
    ``message_id``, ``destination``, ``outcome``, ``now_in`` (the queue holding it, or None), ``body`` (its start,
    None when the broker no longer holds it), ``qos`` and ``retain`` (MQTT's: the QoS it was published with, and
    whether it is its topic's retained message; None when unknown) and ``events`` (the timeline's rows)."""
    if not broker.history_kept:
        return []
    ids = broker.history_message_ids()[:RECORDS_PER_BROKER]
    wanted = set(ids)
    held: dict[str, tuple[str, Any]] = {}
    for queue in broker.queue_names():
        for message in broker.browse_all(queue):
            if message.message_id in wanted:
                held.setdefault(message.message_id, (queue, message))
    retained: dict[str, Any] = {
        message.message_id: message for message in broker.retained_messages().values() if message.message_id in wanted
    }
    letters = {letter.message_id: letter for letter in broker.dead_letters() if letter.message_id in wanted}
    records = []
    for message_id in ids:
        history = broker.history(message_id)
        queue, message = held.get(message_id, (None, None))
        message = message if message is not None else retained.get(message_id)
        letter = letters.get(message_id)
        destination = None if message is None else str(message.original_destination or message.destination)
        if letter is not None:
            destination = letter.destination
        qos = None if message is None else message.properties.get(_QOS_PROPERTY)
        body = None if message is None else message.body
        records.append(
            {
                "test": test,
                "broker": label,
                "message_id": message_id,
                "destination": destination,
                "outcome": outcome(history),
                "now_in": queue,
                "body": None if body is None else _preview(body),
                "qos": qos if isinstance(qos, int) and not isinstance(qos, bool) else None,
                "retain": (message_id in retained) if message is not None else None,
                "events": [row.as_json() | {"event": row.event} for row in timeline_rows(history)],
            }
        )
    return records


def _preview(body: object, limit: int = 200) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    return text if len(text) <= limit else text[:limit] + "\u2026"
