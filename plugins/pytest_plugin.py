"""The minibroker pytest plugin, registered through the ``pytest11`` entry point (nothing to configure).

Fixtures:

* ``minibroker``: a fresh in-process broker per test, on virtual time unless the test says otherwise;
* ``manual_clock``: the :class:`~minibroker.ManualClock` that broker runs on;
* ``minibroker_connection``: a client connected to it;
* ``minibroker_factory``: builds more brokers with custom settings, all stopped after the test;
* ``minibroker_server`` / ``minibroker_url``: a broker listening on a random TCP port, for code that takes a URL;
  ``minibroker_session_url``: one ``minibroker serve`` process for the whole session (per xdist worker).
* ``minibroker_spark`` / ``threaded_minibroker``: a local SparkSession and a broker on TCP in its own thread, for
  Spark jobs (see :mod:`minibroker.plugins.spark.testing`).

Configure one test with ``@pytest.mark.minibroker(...)``: ``virtual_time`` (True), ``autojump`` (True: virtual time
jumps to the next timer whenever everything waits), ``redelivery_policy``, ``policies``, ``scheduler_support``,
``plugins``, ``history_limit``, ``allow_dead_letters`` (False), ``allow_listener_errors`` (False).

On teardown a test fails, with a report, when messages were dead-lettered or dropped, when a message listener
raised, or when an exception escaped into the event loop, unless the marker allows it.
"""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any

import attrs
import pytest

from minibroker import Broker, ManualClock, RealClock
from minibroker.client import Connection, RedeliveryPolicyMap, RetryPolicy, connect
from minibroker.filters import BrokerPlugin
from minibroker.testing import delivery_history

MISSING_ASYNCIO = (
    "the minibroker fixtures need pytest-asyncio: pip install 'minibroker[pytest]' (or pytest-asyncio itself)"
)


def _unavailable(func: Callable[..., Any]) -> Any:
    """Without pytest-asyncio the async fixtures cannot run: each becomes a fixture that says what to install.

    Why not fail at import: the plugin loads in every pytest run of an environment that has minibroker, and a
    project that never asks for these fixtures must not break.
    """

    @functools.wraps(func)
    def fixture(*args: Any, **kwargs: Any) -> Any:
        raise pytest.UsageError(MISSING_ASYNCIO)

    return pytest.fixture(fixture)


try:
    import pytest_asyncio

    async_fixture: Callable[[Callable[..., Any]], Any] = pytest_asyncio.fixture
except ImportError:  # pragma: no cover - installed without the "pytest" extra
    async_fixture = _unavailable


__all__ = ["BrokerOptions", "minibroker_spark", "threaded_minibroker"]

MARKER = "minibroker"


@attrs.frozen
class BrokerOptions:
    """What ``@pytest.mark.minibroker(...)`` can set."""

    virtual_time: bool = True
    autojump: bool = True
    redelivery_policy: RetryPolicy | RedeliveryPolicyMap | None = None
    policies: Any = None
    scheduler_support: bool = False
    plugins: Sequence[BrokerPlugin] = ()
    history_limit: int = 10_000
    allow_dead_letters: bool = False
    allow_listener_errors: bool = False


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "minibroker(virtual_time=True, autojump=True, redelivery_policy=None, policies=None, scheduler_support=False, "
        "plugins=(), history_limit=10000, allow_dead_letters=False, allow_listener_errors=False): "
        "configure the minibroker fixtures of this test",
    )


def _options(request: pytest.FixtureRequest) -> BrokerOptions:
    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        return BrokerOptions()
    if marker.args:
        raise pytest.UsageError("@pytest.mark.minibroker takes keyword arguments only")
    try:
        return BrokerOptions(**marker.kwargs)
    except TypeError as exc:
        raise pytest.UsageError(f"@pytest.mark.minibroker: {exc}") from None


def _make_broker(options: BrokerOptions) -> Broker:
    clock = ManualClock(autojump=options.autojump) if options.virtual_time else RealClock()
    return Broker(
        clock=clock,
        policies=options.policies,
        scheduler_support=options.scheduler_support,
        plugins=options.plugins,
        history_limit=options.history_limit,
    )


def _teardown_report(broker: Broker, options: BrokerOptions, loop_errors: list[dict[str, Any]]) -> str | None:
    """What the test did not expect: dead letters, listener exceptions, exceptions in the event loop."""
    sections = []
    if not options.allow_dead_letters and broker.dead_letters():
        lines = ["messages were dead-lettered or dropped "
                 "(allow with @pytest.mark.minibroker(allow_dead_letters=True)):"]
        for record in broker.dead_letters()[:20]:
            where = record.dead_letter_queue or "dropped"
            lines.append(f"  {record.message_id} from {record.destination} -> {where}: {record.body!r}")
            lines.append(f"    cause: {record.cause}")
            lines.extend("    " + line for line in str(delivery_history(broker, record.message_id)).splitlines())
        sections.append("\n".join(lines))
    if not options.allow_listener_errors and broker.listener_errors:
        lines = ["message listeners raised (allow with @pytest.mark.minibroker(allow_listener_errors=True)):"]
        for failure in broker.listener_errors[:20]:
            lines.append(f"  consumer {failure.consumer}, message {failure.message_id} {failure.body!r}: "
                         f"{type(failure.error).__name__}: {failure.error}")
        sections.append("\n".join(lines))
    if loop_errors:
        lines = ["exceptions escaped into the event loop (broker or client tasks):"]
        for context in loop_errors[:20]:
            exc = context.get("exception")
            lines.append(f"  {context.get('message', '')}: {type(exc).__name__ if exc else ''} {exc or ''}")
        sections.append("\n".join(lines))
    return "\n\n".join(sections) or None


@async_fixture
async def minibroker(request: pytest.FixtureRequest) -> AsyncIterator[Broker]:
    """A fresh in-process broker for this test (virtual time by default), checked on teardown."""
    options = _options(request)
    broker = _make_broker(options)
    loop = asyncio.get_running_loop()
    loop_errors: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: loop_errors.append(context))
    try:
        async with broker:
            yield broker
            await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    report = _teardown_report(broker, options, loop_errors)
    if report is not None:
        pytest.fail(report, pytrace=False)


@pytest.fixture
def manual_clock(minibroker: Broker) -> ManualClock:
    """The virtual clock the ``minibroker`` fixture runs on (``await manual_clock.advance(seconds)``)."""
    clock = minibroker.clock
    if not isinstance(clock, ManualClock):
        raise pytest.UsageError("manual_clock needs virtual time: remove @pytest.mark.minibroker(virtual_time=False)")
    return clock


@async_fixture
async def minibroker_connection(minibroker: Broker, request: pytest.FixtureRequest) -> AsyncIterator[Connection]:
    """A client connection to the ``minibroker`` broker, with the marker's redelivery policy."""
    options = _options(request)
    conn = await connect(minibroker, redelivery_policy=options.redelivery_policy)
    try:
        yield conn
    finally:
        await conn.close()


BrokerFactory = Callable[..., Awaitable[Broker]]


@async_fixture
async def minibroker_factory() -> AsyncIterator[BrokerFactory]:
    """``await minibroker_factory(clock=..., policies=..., ...)`` builds and starts another broker (the arguments of
    :class:`~minibroker.Broker`); all are stopped after the test."""
    brokers: list[Broker] = []

    async def make(**kwargs: Any) -> Broker:
        broker = Broker(**kwargs)
        await broker.start()
        brokers.append(broker)
        return broker

    try:
        yield make
    finally:
        for broker in brokers:
            await broker.stop()


@async_fixture
async def minibroker_server(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """An in-process broker on real time, also listening on a random TCP port of 127.0.0.1 (``.url``,
    ``.broker``), for code under test that takes a URL."""
    from minibroker.plugins.server.tcp import start_server

    options = attrs.evolve(_options(request), virtual_time=False)
    broker = _make_broker(options)
    async with broker:
        server = await start_server(broker, "127.0.0.1", 0)
        try:
            yield server
        finally:
            await server.close()


@pytest.fixture
def minibroker_url(minibroker_server: Any) -> str:
    """``tcp://127.0.0.1:PORT`` of ``minibroker_server``."""
    return str(minibroker_server.url)


@pytest.fixture(scope="session")
def minibroker_session_url() -> Iterator[str]:
    """One ``minibroker serve`` process for the whole session (per xdist worker): its URL. For code under test that
    runs in other processes; state is shared between the tests of the session."""
    process = subprocess.Popen(
        [sys.executable, "-m", "minibroker", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONSAFEPATH": "1"},
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        if not url.startswith("tcp://"):
            raise RuntimeError(f"minibroker serve did not print its URL (got {url!r})")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hung server
            process.kill()



# Spark: ``minibroker_spark`` (a session-wide local SparkSession) and ``threaded_minibroker`` (a broker on TCP in its
# own thread); both skip cleanly without java or pyspark, and nothing imports pyspark until they run
from minibroker.plugins.spark.testing import minibroker_spark, threaded_minibroker  # noqa: E402
