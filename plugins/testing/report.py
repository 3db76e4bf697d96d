"""``pytest --minibroker-report=report.html`` (or ``minibroker_report = "report.html"`` in the ini file) writes, for
each failed test (failed in its setup, its call or its teardown) that used an in-process broker (``minibroker``,
``minibroker_server``, the brokers ``minibroker_factory`` made), the journeys of that broker's messages, drawn as
the web console draws a message's delivery history: sent, dispatched to which consumer, acked or rolled back, each
redelivery delay, expiry, the dead-letter queue with its cause. Each message says how its journey ended, where it
is now and the start of its body when the broker still has it; each test says how it failed.

Up to 50 messages per broker are drawn, those with a troubled journey (rolled back, redelivered, dead-lettered,
expired, still pending) first. Passing tests add nothing, and neither do tests without an in-process broker; a run
without such failures writes a report that says so. The file is one HTML page with its style inlined, no script and
nothing to fetch: open it from a CI run's artifacts as it is. Names, ids, bodies and failure messages are written as
text. Under pytest-xdist the workers draw their failed tests and the controller writes the one file.

The same journeys are records too, for a script or a conftest to read: ``report.json`` beside ``report.html``, and
``config.pluginmanager.get_plugin("minibroker-report").records``, one dict per message of each failed test's brokers
(``test``, ``broker``, ``message_id``, ``destination``, ``outcome``, ``now_in``, ``body``, ``qos`` and ``retain``
for what MQTT clients published, ``events``: :func:`minibroker.plugins.timeline.journey_records`). The
``minibroker_capture`` fixture's captures have ``.records`` in the same spirit.
"""

# How: the pytest plugin (minibroker.plugins.pytest_plugin) notes the brokers each test's fixtures make; when a test
# has failed, its teardown report carries the test's section, made here by failed_test_section() right after the
# fixtures stopped (the broker objects still hold their histories), so that pytest-xdist sends it from the worker to
# the controller; the controller writes the whole with write_report() when the session ends. The timelines come from
# minibroker.plugins.timeline (the console's own), the style from the console's stylesheet, inlined.

from __future__ import annotations

import datetime
import html
import os
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Protocol

from .timeline import outcome, timeline_html, timeline_rows

if TYPE_CHECKING:
    from minibroker import Broker, HistoryRecord, Message
    from minibroker.message import Body

__all__ = ["MESSAGES_PER_BROKER", "broker_section", "failed_test_section", "render_report", "write_report"]

#: the most messages drawn per broker (the troubled ones first); the rest are counted
MESSAGES_PER_BROKER = 50
#: characters of a body, and of a test's failure, shown
PREVIEW = 200
FAILURE = 6000

_REPORT_CSS = """
main { max-width: 1100px; }
section.test { border-top: 2px solid var(--line); margin-top: 1.5rem; }
section.test > h2 { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; word-break: break-all; }
pre.failure { white-space: pre-wrap; word-break: break-word; background: #fdf3f2; border: 1px solid #f0c8c4;
  padding: 0.6rem; max-height: 20rem; overflow: auto; font-size: 0.85rem; }
details.journey { border: 1px solid var(--line); border-radius: 6px; padding: 0.4rem 0.8rem; margin: 0.6rem 0; }
details.journey > summary { cursor: pointer; }
details.journey > summary .mono { font-weight: 600; }
.badge.good { background: #e5f3e6; color: var(--ok); }
.badge.pending { background: #eef1f4; color: var(--muted); }
"""


class _DeadLetter(Protocol):
    """What the report reads of a dead letter (``Broker.dead_letters()``'s records)."""

    @property
    def destination(self) -> str: ...
    @property
    def dead_letter_queue(self) -> str | None: ...
    @property
    def cause(self) -> str | None: ...
    @property
    def body(self) -> Body: ...


def _escape(text: object) -> str:
    return html.escape(_writable(str(text)), quote=True)


def _writable(text: str) -> str:
    """``text`` with each lone surrogate (a Java string's half pair, a body decoded with ``surrogateescape``)
    written as its escape (``\\ud800``): UTF-8 cannot encode them, and one must not cost the whole page."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _preview(body: object) -> str:
    if isinstance(body, bytes):
        text = body[:PREVIEW].decode("utf-8", "replace")
    elif isinstance(body, str):
        text = body
    else:
        text = repr(body)
    return text if len(text) <= PREVIEW else text[:PREVIEW] + "\u2026"


def _rank(records: Sequence[HistoryRecord]) -> int:
    """Which journeys come first: 0, a troubled one (a rollback, a redelivery, a poison ack, a dead letter, an expiry:
    any red or amber step); 1, a message still pending; 2, one simply consumed."""
    if any(row.kind in ("bad", "wait") for row in timeline_rows(records)):
        return 0
    return 1 if outcome(records) == "pending" else 2


def broker_section(label: str, broker: Broker) -> str:
    """One broker's messages, each with its timeline (:data:`MESSAGES_PER_BROKER` at most, the troubled first)."""
    name = _escape(broker.name)
    heading = f"<h3>Broker {name} <span class='note'>({_escape(label)})</span></h3>"
    kept = broker.history_kept
    if not kept:
        return heading + timeline_html((), kept=False)
    ids = broker.history_message_ids()
    if not ids:
        return heading + '<p class="note">No message went through this broker.</p>'
    histories = {message_id: broker.history(message_id) for message_id in ids}
    ranks = {message_id: _rank(histories[message_id]) for message_id in ids}
    # the troubled first, then the pending, then the consumed; in the order the broker saw them within each
    shown = sorted(ids, key=ranks.__getitem__)[:MESSAGES_PER_BROKER]
    chosen = set(shown)
    where: dict[str, tuple[str, Message]] = {}
    for queue in broker.queue_names():
        for message in broker.browse_all(queue):
            if message.message_id in chosen:
                where.setdefault(message.message_id, (queue, message))
    letters: dict[str, _DeadLetter] = {}
    for letter in broker.dead_letters():
        if letter.message_id in chosen:
            letters[letter.message_id] = letter
    parts = [heading]
    troubled = sum(1 for rank in ranks.values() if rank == 0)
    drawn = "all drawn" if len(shown) == len(ids) else f"the first {len(shown)} drawn"
    parts.append(
        f'<p class="note">{len(ids)} message(s) with a history, {troubled} with a troubled journey (shown first, '
        f"open); {drawn}.</p>"
    )
    for message_id in shown:
        records = histories[message_id]
        found, dead = where.get(message_id), letters.get(message_id)
        parts.append(_journey(message_id, records, found, dead, opened=ranks[message_id] == 0))
    return "".join(parts)


def _journey(
    message_id: str,
    records: Sequence[HistoryRecord],
    found: tuple[str, Message] | None,
    letter: _DeadLetter | None,
    *,
    opened: bool,
) -> str:
    ended = outcome(records)
    badge = {"consumed": "good", "pending": "pending"}.get(ended, "")
    facts: list[tuple[str, str]] = []
    if letter is not None:
        facts.append(("Sent to", letter.destination))
        facts.append(("Dead-letter queue", letter.dead_letter_queue or "none (dropped)"))
        facts.append(("Cause", letter.cause or "none given"))
    body: Body | None = None if letter is None else letter.body
    if found is not None:
        queue, message = found
        if letter is None and message.original_destination is not None:
            facts.append(("Sent to", str(message.original_destination)))
        facts.append(("Now in", queue))
        body = message.body
    if body is not None:
        facts.append(("Body", _preview(body)))
    listed = "".join(f"<dt>{_escape(k)}</dt><dd>{_escape(v)}</dd>" for k, v in facts)
    return (
        f'<details class="journey"{" open" if opened else ""} data-message="{_escape(message_id)}" '
        f'data-outcome="{_escape(ended)}">'
        f'<summary><span class="mono">{_escape(message_id)}</span> '
        f'<span class="badge {badge}">{_escape(ended)}</span></summary>'
        + (f'<dl class="headers">{listed}</dl>' if listed else "")
        + timeline_html(records)
        + "</details>"
    )


def failed_test_section(nodeid: str, failures: Sequence[tuple[str, str]], brokers: Sequence[tuple[str, Broker]]) -> str:
    """A failed test's part of the report: how it failed (``(phase, text)`` per failed phase) and its brokers."""
    parts = [f'<section class="test" data-test="{_escape(nodeid)}"><h2>{_escape(nodeid)}</h2>']
    for phase, text in failures:
        shown = text if len(text) <= FAILURE else text[:FAILURE] + "\n\u2026"
        parts.append(f'<p class="error">failed in its {_escape(phase)}</p><pre class="failure">{_escape(shown)}</pre>')
    for label, broker in brokers:
        try:
            parts.append(broker_section(label, broker))
        except Exception as exc:  # a report must not fail the run: say what could not be read
            parts.append(f'<p class="error">Could not read broker {_escape(label)}: {_escape(repr(exc))}</p>')
    parts.append("</section>")
    return "".join(parts)


def _stylesheet() -> str:
    css = resources.files("minibroker.plugins.http").joinpath("static", "console.css").read_text("utf-8")
    return css + _REPORT_CSS


def render_report(sections: Sequence[str], *, title: str = "minibroker: failed tests and their messages") -> str:
    """The whole report: the console's stylesheet inlined, then each failed test's section (or a line saying there
    is none)."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    body = "".join(sections) or '<p class="note" id="no-failures">No failed test used an in-process broker.</p>'
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_escape(title)}</title><style>{_stylesheet()}</style></head><body>"
        f"<header><h1>{_escape(title)}</h1><span id='status'>{len(sections)} failed test(s), {stamp}</span></header>"
        f'<main id="main">{body}</main></body></html>\n'
    )


def write_report(path: str | os.PathLike[str], sections: Sequence[str]) -> None:
    """Write the report to ``path`` (its directory made when missing): whatever a section holds (text the timeline
    wrote unescaped, a lone surrogate), the page is written whole, to a file beside it first and then moved into
    place, so a failure never leaves an empty page (issue 41)."""
    target = os.fspath(path)
    directory = os.path.dirname(target)
    if directory:
        os.makedirs(directory, exist_ok=True)
    page = _writable(render_report(sections))
    partial = f"{target}.partial"
    with open(partial, "w", encoding="utf-8") as out:
        out.write(page)
    os.replace(partial, target)
