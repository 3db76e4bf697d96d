"""``pytest --minibroker-report=report.html``, as its users run it: inner pytest sessions (``pytester``) whose failed
tests' brokers are drawn in one self-contained HTML file, each message's journey as the web console's timeline."""

from __future__ import annotations

import html
from html.parser import HTMLParser
from pathlib import Path

import pytest

from minibroker import Broker, HistoryRecord, ManualClock
from minibroker.client import AckMode, RedeliveryPolicy, connect
from minibroker.plugins.report import MESSAGES_PER_BROKER, broker_section
from minibroker.plugins.timeline import outcome, timeline_html, timeline_rows

pytest_plugins = ()

# The broker is imported here, outside the inner sessions: pytester's in-process runs forget the modules they import,
# and zoneinfo's C part does not survive an import a second time.

ARGS = ("-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function", "-p", "no:cacheprovider")

REDELIVERY = """
import pytest
from minibroker.client import AckMode, RedeliveryPolicy

POLICY = RedeliveryPolicy(maximum_redeliveries=2, initial_redelivery_delay=1.5)


@pytest.mark.minibroker(redelivery_policy=POLICY, allow_dead_letters=True)
async def test_payment_is_retried(minibroker, minibroker_connection):
    producer = await (await minibroker_connection.create_session()).create_producer("payments")
    await producer.send("pay 42")
    session = await minibroker_connection.create_session(AckMode.SESSION_TRANSACTED)
    consumer = await session.create_consumer("payments")
    while await consumer.receive(timeout=5) is not None:
        await session.rollback()
    assert minibroker.queue("payments").size == 1, "the payment should still wait for its retry"


async def test_passes(minibroker, minibroker_connection):
    producer = await (await minibroker_connection.create_session()).create_producer("quiet")
    await producer.send("fine")


def test_fails_without_a_broker():
    assert 1 == 2, "no broker here"
"""


class Page(HTMLParser):
    """The report's tags, attributes and text, as a browser's parser reads them."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def values(self, tag: str, attribute: str) -> list[str | None]:
        return [attributes.get(attribute) for name, attributes in self.tags if name == tag and attribute in attributes]

    @property
    def all_text(self) -> str:
        return "".join(self.text)


def run(pytester: pytest.Pytester, source: str, *extra: str) -> tuple[pytest.RunResult, str]:
    pytester.makepyfile(test_inner=source)
    result = pytester.runpytest(*ARGS, "--minibroker-report=out/report.html", *extra)
    report = pytester.path / "out" / "report.html"
    return result, report.read_text("utf-8")


def test_a_failing_redelivery_test_shows_its_message_journey(pytester: pytest.Pytester) -> None:
    """The failed test's message is drawn: sent, dispatched, each rollback and redelivery delay, the dead letter
    with its cause; the passing test and the test without a broker are not in the report."""
    result, report = run(pytester, REDELIVERY)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*minibroker report (1 failed test(s)): *report.html*"])
    page = Page(report)
    assert page.values("section", "data-test") == ["test_inner.py::test_payment_is_retried"]
    assert page.values("details", "data-outcome") == ["dead-lettered"]
    events = page.values("li", "data-event")
    assert events[:2] == ["sent", "dispatched"]
    assert events.count("rolled-back") == 3 and events[-1] == "dead-lettered"
    text = page.all_text
    assert "the payment should still wait for its retry" in text  # how the test failed
    assert "redelivery delay 1.5 s" in text and "to consumer" in text
    assert "Delivery[3] exceeds redelivery policy limit" in text
    assert "pay 42" in text  # the body, from the dead-letter queue
    assert "ActiveMQ.DLQ" in text
    # drawn as the console draws it: its stylesheet inlined, the timeline's classes; nothing else to fetch or run
    assert "ol.timeline li.bad::before" in report
    assert [name for name, _ in page.tags if name in ("script", "link", "img", "iframe")] == []
    # rollbacks and the dead letter red, the redelivery delays amber, nothing consumed green
    assert set(page.values("li", "class")) == {"bad", "wait"}


def test_passing_tests_write_an_empty_report(pytester: pytest.Pytester) -> None:
    """A run without failures still writes the file (a CI artifact is always there), saying nothing failed."""
    result, report = run(pytester, REDELIVERY.split("@pytest.mark.minibroker")[0] + REDELIVERY.split("\n\n\n")[2])
    result.assert_outcomes(passed=1)
    page = Page(report)
    assert page.values("section", "data-test") == [] and ("p", {"class": "note", "id": "no-failures"}) in page.tags


def test_hostile_ids_bodies_names_and_failures_are_text(pytester: pytest.Pytester) -> None:
    """A destination name, a body, a property and a failure message made of markup are written as text: the
    report holds no tag of theirs."""
    hostile = '<script>alert(1)</script><img src=x onerror=alert(2)>"&'
    source = f"""
HOSTILE = {hostile!r}

async def test_hostile(minibroker, minibroker_connection):
    producer = await (await minibroker_connection.create_session()).create_producer(HOSTILE)
    await producer.send(HOSTILE, properties={{"p": HOSTILE}})
    assert False, HOSTILE
"""
    result, report = run(pytester, source)
    result.assert_outcomes(failed=1)
    page = Page(report)
    assert [name for name, _ in page.tags if name in ("script", "img")] == []
    assert "<script>alert" not in report and "<img" not in report
    assert html.escape(hostile) in report
    assert page.all_text.count(hostile) >= 3  # the failure, where the message waits, its body


def test_brokers_of_the_factory_and_the_server_are_drawn_and_only_failed_phases_count(
    pytester: pytest.Pytester,
) -> None:
    """minibroker_factory's and minibroker_server's brokers are the test's too; a failure in teardown (an unexpected
    dead letter) makes the test a failed one."""
    source = """
import pytest
from minibroker.client import AckMode, RedeliveryPolicy, connect


async def test_factory(minibroker_factory):
    broker = await minibroker_factory(name="second")
    async with await connect(broker) as conn:
        producer = await (await conn.create_session()).create_producer("made")
        await producer.send("from the factory")
    assert broker.queue("made").size == 0


@pytest.mark.minibroker(redelivery_policy=RedeliveryPolicy(maximum_redeliveries=0))
async def test_unexpected_dead_letter(minibroker, minibroker_connection):
    session = await minibroker_connection.create_session(AckMode.SESSION_TRANSACTED)
    producer = await session.create_producer("orders")
    await producer.send("bad order")
    await session.commit()
    consumer = await session.create_consumer("orders")
    assert (await consumer.receive(timeout=5)) is not None
    await session.rollback()
    await minibroker.settled()
"""
    result, report = run(pytester, source)
    result.assert_outcomes(passed=1, failed=1, errors=1)
    page = Page(report)
    assert page.values("section", "data-test") == [
        "test_inner.py::test_factory",
        "test_inner.py::test_unexpected_dead_letter",
    ]
    text = page.all_text
    assert "Broker second" in text and "minibroker_factory, broker 1" in text and "from the factory" in text
    assert "failed in its teardown" in text and "messages were dead-lettered" in text
    assert page.values("details", "data-outcome") == ["pending", "dead-lettered"]


def test_xdist_workers_send_their_sections_to_the_controller(pytester: pytest.Pytester) -> None:
    """Under pytest-xdist the workers draw their failed tests and the controller writes one file."""
    pytester.makepyfile(test_inner=REDELIVERY)
    result = pytester.runpytest_subprocess(*ARGS, "-p", "xdist", "-n", "2", "--minibroker-report=report.html")
    result.assert_outcomes(passed=1, failed=2)
    page = Page((pytester.path / "report.html").read_text("utf-8"))
    assert page.values("section", "data-test") == ["test_inner.py::test_payment_is_retried"]


def test_without_the_option_nothing_is_written(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=REDELIVERY)
    pytester.runpytest(*ARGS).assert_outcomes(passed=1, failed=2)
    assert not list(Path(pytester.path).rglob("*.html"))


# -- the timeline's one home, shared with the console ------------------------------------------------------------


def test_rows_name_and_colour_each_event() -> None:
    records = (
        HistoryRecord(10.0, "sent"),
        HistoryRecord(10.0, "dispatched", consumer_id=3),
        HistoryRecord(10.5, "ack", consumer_id=3, ack_type="REDELIVERED", delay=2.0),
        HistoryRecord(12.5, "ack", consumer_id=3, ack_type="POISON", detail="too many"),
        HistoryRecord(12.5, "dead-lettered", detail="too many", destination="queue://ActiveMQ.DLQ"),
    )
    rows = timeline_rows(records)
    assert [(r.when, r.event, r.kind) for r in rows] == [
        ("+0.000 s", "sent", ""),
        ("+0.000 s", "dispatched", ""),
        ("+0.500 s", "ack", "wait"),
        ("+2.500 s", "ack", "bad"),
        ("+2.500 s", "dead-lettered", "bad"),
    ]
    assert rows[1].text == "to consumer 3"
    assert rows[2].text == "consumer 3, ack REDELIVERED, redelivery delay 2 s"
    assert rows[4].text == "to queue://ActiveMQ.DLQ, cause: too many"
    assert outcome(records) == "dead-lettered"
    consumed = (HistoryRecord(0.0, "sent"), HistoryRecord(1.0, "ack", consumer_id=1, ack_type="STANDARD"))
    assert outcome(consumed) == "consumed" and timeline_rows(consumed)[1].kind == "good"


def test_timeline_html_escapes_and_keeps_long_journeys_short() -> None:
    hostile = HistoryRecord(0.0, "dead-lettered", detail="<b>x</b>", destination="queue://<i>")
    drawn = timeline_html([hostile])
    assert "<b>" not in drawn and "&lt;b&gt;x&lt;/b&gt;" in drawn and "&lt;i&gt;" in drawn
    many = [HistoryRecord(float(i), "dispatched", consumer_id=1) for i in range(1000)]
    drawn = timeline_html(many, limit=100)
    assert drawn.count("<li") == 101 and "900 more events" in drawn
    assert "history_limit is 0" in timeline_html((), kept=False)


async def test_a_broker_without_history_says_so() -> None:
    async with Broker(history_limit=0) as broker:
        assert "history_limit is 0" in broker_section("minibroker", broker)
    async with Broker() as broker:
        assert "No message went through this broker" in broker_section("minibroker", broker)


async def test_the_troubled_journeys_come_first_and_at_most_fifty_are_drawn() -> None:
    """Sixty messages consumed, then one rolled back to the dead-letter queue: the dead letter is drawn first (its
    journey open), then forty-nine of the others (closed), and the report says how many there were."""
    async with Broker(clock=ManualClock(autojump=True)) as broker:
        policy = RedeliveryPolicy(maximum_redeliveries=0)
        async with await connect(broker, redelivery_policy=policy) as conn:
            session = await conn.create_session()
            producer = await session.create_producer("orders")
            consumer = await session.create_consumer("orders")
            for i in range(60):
                await producer.send(f"order {i}")
                assert await consumer.receive(timeout=5) is not None
            await consumer.close()
            await producer.send("poison")
            transacted = await conn.create_session(AckMode.SESSION_TRANSACTED)
            taker = await transacted.create_consumer("orders")
            assert await taker.receive(timeout=5) is not None
            await transacted.rollback()
            await broker.settled()
        page = Page(broker_section("minibroker", broker))
    assert page.values("details", "data-outcome") == ["dead-lettered"] + ["consumed"] * (MESSAGES_PER_BROKER - 1)
    opened = [attributes for name, attributes in page.tags if name == "details" and "open" in attributes]
    assert len(opened) == 1
    assert "61 message(s) with a history, 1 with a troubled journey" in page.all_text
    assert f"the first {MESSAGES_PER_BROKER} drawn" in page.all_text
