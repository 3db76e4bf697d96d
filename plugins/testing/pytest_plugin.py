"""The minibroker pytest plugin, registered through the ``pytest11`` entry point (nothing to configure).

This module is what every pytest run of an environment with minibroker imports: it registers the options, the
marker and the fixtures, and imports the broker only when a test asks for a fixture (the fixtures' bodies are in
:mod:`minibroker.plugins.testing._pytest_fixtures`), so a suite that never uses minibroker pays a few milliseconds.

Fixtures:

* ``minibroker``: a fresh in-process broker per test, on virtual time unless the test says otherwise;
* ``manual_clock``: the :class:`~minibroker.ManualClock` that broker runs on;
* ``minibroker_connection``: a client connected to it;
* ``minibroker_factory``: builds more brokers with custom settings, all stopped after the test;
* ``minibroker_server`` / ``minibroker_url``: a broker listening on a random TCP port, for code that takes a URL;
* ``minibroker_stomp``: a STOMP listener on the test's own ``minibroker`` (virtual time still applies), for real
  STOMP clients such as stomp.py (``.host``, ``.port``, ``.url``, ``.host_and_ports``, ``.broker``);
* ``minibroker_mqtt``: an MQTT listener on the test's own ``minibroker``, for paho-mqtt, aiomqtt or gmqtt
  (``.host``, ``.port``, ``.url``, ``.broker``), mapped onto topics as ActiveMQ maps MQTT;
* ``minibroker_openwire``: an OpenWire listener on the test's own ``minibroker``, for ActiveMQ's JMS client
  (``.url``, ``tcp://HOST:PORT``; ``.host``, ``.port``, ``.broker``);
* ``minibroker_capture``: captures what any client (native, STOMP, MQTT) publishes to a topic pattern, advisories
  left out, with a publish helper that returns once the message is delivered (:mod:`minibroker.plugins.capture`);
* ``minibroker_proc``: one ``minibroker serve`` process for the whole session (per xdist worker), configured by the
  ``minibroker_config`` option (``.url``, ``.stomp_url``); ``minibroker_session_url`` is its URL.
  ``minibroker_noproc`` points at a broker already running at ``minibroker_host``/``minibroker_port``/
  ``minibroker_stomp_port``; ``minibroker_clean`` empties ``minibroker_proc`` after each test. Build more with
  :mod:`minibroker.plugins.factories` (``factories.minibroker_proc(config=...)``, ``factories.minibroker_noproc``,
  ``factories.minibroker_clean``, as pytest-redis's ``factories``), or start processes inside a test with
  ``minibroker_processes``.
* ``minibroker_sync``, ``minibroker_stomp_sync``, ``minibroker_mqtt_sync``, ``minibroker_openwire_sync``: for plain
  ``def`` tests, the broker on its own thread and loop, its assertions as blocking calls
  (:mod:`minibroker.plugins.testing._pytest_sync`); the async fixtures fail at once in a plain ``def`` test, naming
  these.
* ``minibroker_spark`` / ``threaded_minibroker``: a local SparkSession and a broker on TCP in its own thread, for
  Spark jobs (see :mod:`minibroker.plugins.spark.testing`).

Configure one test with ``@pytest.mark.minibroker(...)``: ``virtual_time`` (True), ``autojump`` (True: virtual time
jumps to the next timer whenever everything waits), ``autojump_threshold`` (real seconds of idleness first),
``redelivery_policy``, ``policies``, ``scheduler_support``,
``plugins``, ``history_limit``, ``allow_dead_letters`` (False), ``allow_listener_errors`` (False), ``tls``.
``@pytest.mark.minibroker_virtual_time`` runs an async test's whole event loop on the broker's clock
(:mod:`minibroker.virtual_time`).

Options, on the command line or in the ini file (underscores): ``--minibroker-host`` (127.0.0.1),
``--minibroker-port``, ``--minibroker-stomp-port`` and ``--minibroker-mqtt-port`` (0: a free port for processes;
61616, 61613 and 1883 for noproc),
``--minibroker-config`` (a broker.toml for ``minibroker_proc``),
``--minibroker-report=report.html`` (for each failed test that used an in-process broker, its messages' journeys drawn
as the web console draws them, in one HTML file: :mod:`minibroker.plugins.report`),
``--minibroker-external stomp=HOST:PORT,mqtt=HOST:PORT,openwire=HOST:PORT`` (the same tests against a broker
already running, a real ActiveMQ: the protocol fixtures and ``minibroker_proc``/``minibroker_noproc`` point there,
the tests that need minibroker itself are skipped as minibroker-only, ``@pytest.mark.minibroker_only(reason=...)``
marks more, and the counts are printed at the end: :mod:`minibroker.plugins.testing._pytest_external`).

On teardown a test fails, with a report, when messages were dead-lettered or dropped and the test never looked at
them (browsed the DLQ, listed them with ``minibroker.testing.dead_letters`` or ``assert_dead_lettered``, or consumed
them), when a message listener raised, or when an exception escaped into the event loop, unless the marker allows it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

TYPE_CHECKING = False  # not typing's: nothing more to import on the way of every pytest run
if TYPE_CHECKING:
    from ._pytest_fixtures import (
        BrokerOptions,
        BrokerProcess,
        StompEndpoint,
        minibroker_noproc_factory,
        minibroker_proc_factory,
        start_broker_process,
    )

__all__ = [
    "BrokerOptions",
    "BrokerProcess",
    "StompEndpoint",
    "minibroker_noproc_factory",
    "minibroker_proc_factory",
    "minibroker_spark",
    "start_broker_process",
    "threaded_minibroker",
]

MARKER = "minibroker"
#: the marker that runs a whole async test (its event loop, fixtures and application) on virtual time
VIRTUAL_TIME_MARKER = "minibroker_virtual_time"
MISSING_ASYNCIO = (
    "the minibroker fixtures need pytest-asyncio: pip install pytest-asyncio "
    "(from a minibroker checkout: pip install '.[pytest]')"
)

#: the address options (command line ``--minibroker-NAME``, ini ``minibroker_NAME``) and their help
_ADDRESS_OPTIONS = (
    ("host", "host of the minibroker processes and of a noproc broker (default 127.0.0.1)"),
    ("port", "TCP port of minibroker_proc (default 0: a free one) or of a noproc broker (default 61616)"),
    ("stomp_port", "STOMP port of minibroker_proc (default 0: a free one) or of a noproc broker (default 61613)"),
    ("mqtt_port", "MQTT port of minibroker_proc (default 0: a free one) or of a noproc broker (default 1883)"),
    ("user", "an administrator of the minibroker_proc or noproc broker, when it has users (for minibroker_clean)"),
    ("password", "that administrator's password"),
)

_EXTERNAL_HELP = (
    "run against a broker already running (a real ActiveMQ): stomp=HOST:PORT,mqtt=HOST:PORT,openwire=HOST:PORT "
    "(OpenWire: tcp://HOST:61616 unless named; openwire=ssl://HOST:PORT for TLS); the protocol fixtures point "
    "there and the tests that need minibroker itself are skipped as minibroker-only, counted at the end"
)

_REPORT_HELP = (
    "write an HTML report to PATH: for each failed test that used an in-process broker (minibroker, "
    "minibroker_server, minibroker_factory), the journeys of its messages, drawn as the web console draws them"
)


#: the modules pytest rewrites the asserts of: the entry point (pytest rewrote it while loading it), not the whole
#: distribution; not the fixtures' bodies either, whose few asserts are invariants no user reads (rewriting them cost
#: 178M instructions of each session without bytecode, against about 3M to load their compiled code)
_REWRITTEN = ("minibroker.plugins.testing.pytest_plugin",)
#: what pytest marks for a ``pytest11`` distribution: its top-level packages (``client``/``plugins``: editable)
_MARKED_BY_PYTEST = ("minibroker", "client", "plugins")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Narrow pytest's assert rewriting to the plugin's entry point.

    Why: pytest marks every top-level package of a plugin's distribution, so each of the ~80 broker modules a test
    imports was parsed and rewritten: about 1.6G instructions in every session without cached bytecode (issue 45).
    pytest has no public call to unmark a name; without its ``_must_rewrite`` set everything stays as pytest does.
    """
    hook = getattr(pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    if hook is None or not isinstance(marked, set) or "minibroker" not in marked:
        return
    marked.difference_update(_MARKED_BY_PYTEST)
    import sys

    hook.mark_rewrite(*(name for name in _REWRITTEN if name not in sys.modules))  # clears pytest's decisions


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("minibroker")
    for name, help_text in _ADDRESS_OPTIONS:
        flag = "--minibroker-" + name.replace("_", "-")
        group.addoption(flag, dest="minibroker_" + name, default=None, help=help_text)
        parser.addini("minibroker_" + name, help_text, default=None)
    help_config = "a broker.toml (users, policies, limits) for the minibroker_proc process"
    group.addoption("--minibroker-config", dest="minibroker_config", default=None, help=help_config)
    parser.addini("minibroker_config", help_config, default=None)
    group.addoption(
        "--minibroker-external", dest="minibroker_external", default=None, metavar="ADDRESSES", help=_EXTERNAL_HELP
    )
    parser.addini("minibroker_external", _EXTERNAL_HELP, default=None)
    group.addoption("--minibroker-report", dest="minibroker_report", default=None, metavar="PATH", help=_REPORT_HELP)
    parser.addini("minibroker_report", _REPORT_HELP, default=None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "minibroker(virtual_time=True, autojump=True, autojump_threshold=0.01, redelivery_policy=None, "
        "policies=None, scheduler_support=False, "
        "plugins=(), history_limit=10000, allow_dead_letters=False, allow_listener_errors=False): "
        "configure the minibroker fixtures of this test",
    )
    config.addinivalue_line(
        "markers",
        f"{VIRTUAL_TIME_MARKER}(autojump=True, autojump_threshold=0.01): run this async test's event loop on the "
        "broker's virtual clock: asyncio.sleep, asyncio.timeout, wait_for and call_later in the application's code "
        "are virtual timers (minibroker.virtual_time)",
    )
    config.addinivalue_line(
        "markers",
        "minibroker_only(reason): this test needs minibroker itself (its in-process state, virtual time, fault "
        "injection, the native client): under --minibroker-external it is skipped with that reason",
    )
    # the Spark guide's test marks itself so (it runs a real local Spark): known wherever the plugin is
    config.addinivalue_line("markers", "spark: runs a real local Spark (the minibroker_spark fixture)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``@pytest.mark.minibroker_virtual_time``: the test's pytest-asyncio loop is a
    :class:`~minibroker.virtual_time.VirtualTimeLoop`, for the test's loop scope."""
    marker = metafunc.definition.get_closest_marker(VIRTUAL_TIME_MARKER)
    if marker is not None:
        from ._pytest_sync import parametrize_virtual_time

        parametrize_virtual_time(metafunc, marker)


# -- --minibroker-report: the brokers each test made, the failed tests' sections, the file ---------------------------

#: the in-process brokers a test's fixtures made, as (fixture, broker), noted only with ``--minibroker-report``
BROKERS_KEY = pytest.StashKey[list[tuple[str, Any]]]()
#: the test's failed phases so far, as (phase, text)
_FAILURES_KEY = pytest.StashKey[list[tuple[str, str]]]()
#: the attribute of a failed test's teardown report that carries its section of the report (pytest-xdist sends a
#: report's attributes from the worker to the controller, which writes the file)
REPORT_ATTRIBUTE = "minibroker_journeys"
#: the attribute carrying the same test's journeys as records (minibroker.plugins.timeline.journey_records)
RECORDS_ATTRIBUTE = "minibroker_records"


def report_path(config: pytest.Config) -> str | None:
    """``--minibroker-report`` (or the ini's ``minibroker_report``), None when not asked for."""
    value = config.getoption("minibroker_report", default=None) or config.getini("minibroker_report") or None
    return None if value is None else str(value)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report_path(item.config) is None:
        return report
    failures = item.stash.setdefault(_FAILURES_KEY, [])
    if report.failed:
        failures.append((report.when, report.longreprtext))
    if report.when == "teardown":
        brokers = item.stash.get(BROKERS_KEY, [])
        if failures and brokers:
            from .report import failed_test_section
            from .timeline import journey_records

            setattr(report, REPORT_ATTRIBUTE, failed_test_section(item.nodeid, failures, brokers))
            records = [r for label, broker in brokers for r in _records(item.nodeid, label, broker, journey_records)]
            setattr(report, RECORDS_ATTRIBUTE, records)
        item.stash[BROKERS_KEY] = []  # the brokers go with the test
        item.stash[_FAILURES_KEY] = []
    return report


def _records(nodeid: str, label: str, broker: Any, make: Callable[..., list[dict[str, Any]]]) -> list[dict[str, Any]]:
    try:
        return make(nodeid, label, broker)
    except Exception:  # the HTML section says what could not be read; the records go without that broker
        return []


class _ReportWriter:
    """Collects the failed tests' sections (from this process's tests, or from pytest-xdist's workers) and writes
    the report when the session ends. ``records``: the same journeys as plain records, one per message
    (``config.pluginmanager.get_plugin("minibroker-report").records``; also written beside the report as JSON)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sections: list[str] = []
        self.records: list[dict[str, Any]] = []

    @property
    def records_path(self) -> Path:
        """``report.json`` beside ``report.html``."""
        return self.path.with_suffix(".json")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        section = getattr(report, REPORT_ATTRIBUTE, None)
        if isinstance(section, str):
            self.sections.append(section)
        records = getattr(report, RECORDS_ATTRIBUTE, None)
        if isinstance(records, list):
            self.records.extend(records)

    def pytest_sessionfinish(self) -> None:
        import json

        from .report import write_report

        write_report(self.path, self.sections)
        if self.records_path != self.path:
            self.records_path.write_text(json.dumps(self.records, indent=1, default=str) + "\n", encoding="utf-8")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_sep("-", f"minibroker report ({len(self.sections)} failed test(s)): {self.path}")


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    external = config.getoption("minibroker_external", default=None) or config.getini("minibroker_external")
    if external:  # registered after the plugin's fixtures: its own take their place
        from ._pytest_external import register

        register(config, str(external))
    path = report_path(config)
    if path is not None and not hasattr(config, "workerinput"):  # an xdist worker's sections go to the controller
        config.pluginmanager.register(_ReportWriter(config.invocation_params.dir / path), "minibroker-report")


def _check_async(request: Any, fixture: str) -> None:
    """An async fixture in a plain ``def`` test fails at once, naming the synchronous fixture to use."""
    from ._pytest_sync import check_async_test

    check_async_test(request, fixture)


def _impl() -> ModuleType:
    """The fixtures' bodies, imported with the broker on first use."""
    from . import _pytest_fixtures

    return _pytest_fixtures


def _body(name: str) -> Callable[..., Any]:
    """The function behind the fixture ``name`` of the bodies' module."""
    body: Callable[..., Any] = inspect.unwrap(getattr(_impl(), name))
    return body


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

    _async_fixture: Callable[[Callable[..., Any]], Any] = pytest_asyncio.fixture
except ImportError:  # pragma: no cover - installed without the "pytest" extra
    _async_fixture = _unavailable


@_async_fixture
async def minibroker(request: Any) -> AsyncIterator[Any]:
    """A fresh in-process broker for this test (virtual time by default), checked on teardown. For ``async def``
    tests (a plain ``def`` test uses ``minibroker_sync``)."""
    _check_async(request, "minibroker")
    async for value in _body("minibroker")(request):
        yield value


@pytest.fixture
def manual_clock(minibroker: Any) -> Any:
    """The virtual clock the ``minibroker`` fixture runs on (``await manual_clock.advance(seconds)``)."""
    return _body("manual_clock")(minibroker)


@pytest.fixture
def minibroker_connection(minibroker: Any, request: Any) -> Any:
    """A client connection to the ``minibroker`` broker, with the marker's redelivery policy (made and closed by the
    ``minibroker`` fixture, which sees that the test asks for it)."""
    return _body("minibroker_connection")(minibroker, request)


@_async_fixture
async def minibroker_factory(request: Any) -> AsyncIterator[Any]:
    """``await minibroker_factory(clock=..., policies=..., ...)`` builds and starts another broker (the arguments of
    :class:`~minibroker.Broker`); all are stopped after the test."""
    _check_async(request, "minibroker_factory")
    async for value in _body("minibroker_factory")(request):
        yield value


@_async_fixture
async def minibroker_server(request: Any) -> AsyncIterator[Any]:
    """An in-process broker on real time, also listening on a random TCP port of 127.0.0.1 (``.url``,
    ``.broker``), for code under test that takes a URL (on the loop's virtual time under
    ``minibroker_virtual_time``)."""
    _check_async(request, "minibroker_server")
    async for value in _body("minibroker_server")(request):
        yield value


@pytest.fixture
def minibroker_url(minibroker_server: Any) -> Any:
    """``tcp://127.0.0.1:PORT`` of ``minibroker_server``."""
    return _body("minibroker_url")(minibroker_server)


@_async_fixture
async def minibroker_stomp(minibroker: Any, request: Any) -> AsyncIterator[Any]:
    """A STOMP listener on the ``minibroker`` broker (a free port of ``minibroker_host``): real STOMP clients and the
    test share one broker, its state (``minibroker.queue(...)``, history, dead letters) and its virtual time. Under
    ``--minibroker-external``: that broker's STOMP address (``.host_and_ports``, ``.url``; no ``.broker``)."""
    async for value in _body("minibroker_stomp")(minibroker, request):
        yield value


@_async_fixture
async def minibroker_mqtt(minibroker: Any, request: Any) -> AsyncIterator[Any]:
    """An MQTT listener on the ``minibroker`` broker (a free port of ``minibroker_host``): MQTT clients, JMS-style
    clients and STOMP clients share one broker and its topics (``sensors/temp`` is ``topic://sensors.temp``). Under
    ``--minibroker-external``: that broker's MQTT address (``.host``, ``.port``, ``.url``; no ``.broker``)."""
    async for value in _body("minibroker_mqtt")(minibroker, request):
        yield value


@_async_fixture
async def minibroker_openwire(minibroker: Any, request: Any) -> AsyncIterator[Any]:
    """An OpenWire listener on the ``minibroker`` broker (a free port of ``minibroker_host``; TLS with the marker's
    ``tls``): ActiveMQ's JMS client (a Java program, Spring, Camel) connects to ``.url`` (``tcp://HOST:PORT``) and
    shares the test's broker. A JMS client checks inactivity on the JVM's clock (KeepAliveInfo every 10 s): while
    one is connected with that check (its default) or is logging in, virtual time flows at real speed instead of
    jumping; ``?wireFormat.maxInactivityDuration=0`` on the client's URL lets it jump. Under
    ``--minibroker-external``: that broker's OpenWire URL (``tcp://HOST:61616`` unless the option names one)."""
    async for value in _body("minibroker_openwire")(minibroker, request):
        yield value


@_async_fixture
async def minibroker_capture(minibroker: Any) -> AsyncIterator[Any]:
    """``await minibroker_capture("sensors/#")`` (an MQTT filter or ``topic://sensors.>``): what any client publishes
    there from then on, ``.messages``, ``await .wait(n)``, ``await .publish(topic, body)`` (returns once delivered);
    advisory topics left out unless ``include_advisories=True``."""
    async for value in _body("minibroker_capture")(minibroker):
        yield value


@pytest.fixture
def minibroker_sync(request: Any) -> Iterator[Any]:
    """For plain ``def`` tests: the test's broker on its own thread and event loop (``.url``; virtual time and the
    marker's settings as for ``minibroker``), with the in-process assertions as blocking calls
    (``.wait_for_queue_size``, ``.dead_letters()``, ``.assert_dead_lettered``, ``.delivery_history``, ``.browse``,
    ``.purge``, ``.advance``, ``.capture(pattern)``), checked on teardown as ``minibroker`` is."""
    from ._pytest_sync import sync_broker

    yield from sync_broker(request)


@pytest.fixture
def minibroker_stomp_sync(minibroker_sync: Any) -> Any:
    """For plain ``def`` tests: a STOMP listener on ``minibroker_sync`` (``.host_and_ports``, ``.url``; ``.broker``
    is ``minibroker_sync``), for stomp.py's blocking clients. Under ``--minibroker-external``: that broker's STOMP
    address."""
    return minibroker_sync.listen("stomp")


@pytest.fixture
def minibroker_mqtt_sync(minibroker_sync: Any) -> Any:
    """For plain ``def`` tests: an MQTT listener on ``minibroker_sync`` (``.host``, ``.port``, ``.url``;
    ``.broker`` is ``minibroker_sync``), for paho-mqtt's blocking clients. Under ``--minibroker-external``: that
    broker's MQTT address."""
    return minibroker_sync.listen("mqtt")


@pytest.fixture
def minibroker_openwire_sync(minibroker_sync: Any) -> Any:
    """For plain ``def`` tests: an OpenWire listener on ``minibroker_sync`` (``.url``, ``tcp://HOST:PORT``;
    ``.broker`` is ``minibroker_sync``), for ActiveMQ's JMS client started from the test (a Java process), holding
    virtual time as ``minibroker_openwire`` does. Under ``--minibroker-external``: that broker's OpenWire URL."""
    return minibroker_sync.listen("openwire")


@pytest.fixture(scope="session")
def minibroker_session_url(minibroker_proc: Any) -> Any:
    """``tcp://HOST:PORT`` of ``minibroker_proc``: one broker process for the session (per xdist worker); state is
    shared between the tests of the session."""
    return _body("minibroker_session_url")(minibroker_proc)


@pytest.fixture
def minibroker_clean(minibroker_proc: Any) -> Iterator[Any]:
    """``minibroker_proc``, emptied after each test (:meth:`BrokerProcess.clean`: messages, offline durable
    subscriptions, scheduled jobs), as pytest-redis's ``redisdb``: one process for the session, a clean broker for
    every test."""
    yield from _body("minibroker_clean")(minibroker_proc)


@pytest.fixture
def minibroker_processes(tmp_path: Any) -> Iterator[Any]:
    """``minibroker_processes(config=..., stomp_port=0, data_dir=...)`` starts another ``minibroker serve`` (the
    arguments of :func:`start_broker_process`); all are stopped after the test. ``config_text="..."``: a broker.toml
    given inline."""
    yield from _body("minibroker_processes")(tmp_path)


@pytest.fixture(scope="session")
def minibroker_proc(request: Any) -> Iterator[Any]:
    """A ``minibroker serve`` process for the scope (``.url``, ``.stomp_url``, ``.host``, ``.port``), configured
    by ``--minibroker-config``/``minibroker_config`` and the host and port options; stopped at the end. Under
    ``--minibroker-external``: that broker, in the same shape (``.host_and_ports``, ``.stomp_url``, ``.mqtt_url``)."""
    yield from _body("minibroker_proc")(request)


@pytest.fixture(scope="session")
def minibroker_noproc(request: Any) -> Any:
    """The addresses of a broker that is already running (``--minibroker-host``/``-port``/``-stomp-port``),
    in the shape of ``minibroker_proc``; the test fails at once when nothing listens there."""
    return _body("minibroker_noproc")(request)


@pytest.fixture(scope="session")
def minibroker_spark() -> Iterator[Any]:
    """One local SparkSession for the test session, ``minibroker`` format registered, workers warmed up."""
    from ..spark import testing

    yield from inspect.unwrap(testing.minibroker_spark)()


@pytest.fixture
def threaded_minibroker() -> Iterator[Any]:
    """A broker on a free TCP port of 127.0.0.1, in its own thread: ``.url`` for Spark, ``.send()``, ``.read()``."""
    from ..spark import testing

    yield from inspect.unwrap(testing.threaded_minibroker)()


#: the plugin's helpers that live with the fixtures' bodies, imported when first asked for
_LAZY = frozenset(
    {
        "BrokerOptions",
        "BrokerProcess",
        "MqttEndpoint",
        "OpenWireEndpoint",
        "StompEndpoint",
        "minibroker_noproc_factory",
        "minibroker_proc_factory",
        "start_broker_process",
    }
)


def __getattr__(name: str) -> Any:
    """``start_broker_process``, ``minibroker_proc_factory``, ``BrokerProcess``, ...: from the bodies' module, on
    first use. Only these names: pytest and pluggy probe a plugin for many others, which must not import the broker."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_impl(), name)
