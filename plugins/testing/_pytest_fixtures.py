"""The bodies of the minibroker pytest fixtures and the plugin's helpers (``start_broker_process``,
``BrokerProcess``, the process fixture factories), imported on first use by :mod:`minibroker.plugins.pytest_plugin`,
the entry point, which registers the options, the marker and the fixtures themselves (see there)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar, TypeVar

import attrs
import pytest

from minibroker import Broker, ManualClock, RealClock
from minibroker.client import Connection, RedeliveryPolicy, RedeliveryPolicyMap, RetryPolicy, connect
from minibroker.clock import DEFAULT_AUTOJUMP_THRESHOLD
from minibroker.filters import BrokerPlugin

from . import factories
from .pytest_plugin import BROKERS_KEY, MARKER, report_path
from .pytest_plugin import _async_fixture as async_fixture  # one home for the pytest-asyncio fallback

if TYPE_CHECKING:
    from minibroker.tls import TlsSettings  # an annotation only: the TLS fixtures import it when asked

__all__ = [
    "BrokerOptions",
    "BrokerProcess",
    "OpenWireEndpoint",
    "StompEndpoint",
    "minibroker_noproc_factory",
    "minibroker_proc_factory",
    "minibroker_spark",
    "threaded_minibroker",
]


@attrs.frozen
class BrokerOptions:
    """What ``@pytest.mark.minibroker(...)`` can set."""

    virtual_time: bool = True
    autojump: bool = True
    autojump_threshold: float = DEFAULT_AUTOJUMP_THRESHOLD
    redelivery_policy: RetryPolicy | RedeliveryPolicyMap | None = None
    policies: Any = None
    scheduler_support: bool = False
    plugins: Sequence[BrokerPlugin] = ()
    history_limit: int = 10_000
    allow_dead_letters: bool = False
    allow_listener_errors: bool = False
    #: TLS for the listeners of ``minibroker_stomp`` and ``minibroker_server`` (``stomp+ssl://``, ``ssl://``)
    tls: TlsSettings | None = None


#: the options of a test without the marker, and its connection's redelivery policy: both frozen, built once (each
#: built per test cost about 0.1M instructions of every test's set-up, issue 45)
_DEFAULT_OPTIONS = BrokerOptions()
_DEFAULT_REDELIVERY_POLICY = RedeliveryPolicy()


def _setting(config: pytest.Config, name: str) -> str | None:
    """An option from the command line, else the ini file, else None."""
    value = config.getoption("minibroker_" + name, default=None)
    if value is None:
        value = config.getini("minibroker_" + name) or None
    return None if value is None else str(value)


def _options(request: pytest.FixtureRequest) -> BrokerOptions:
    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        return _DEFAULT_OPTIONS
    if marker.args:
        raise pytest.UsageError("@pytest.mark.minibroker takes keyword arguments only")
    known = [field.name for field in attrs.fields(BrokerOptions)]
    unknown = sorted(set(marker.kwargs) - set(known))
    if unknown:
        import difflib

        hints = [f"{name!r}" + _did_you_mean(difflib.get_close_matches(name, known, 1)) for name in unknown]
        raise pytest.UsageError(
            f"@pytest.mark.minibroker: unknown keyword {', '.join(hints)}; the keywords are {', '.join(known)}"
        )
    try:
        return BrokerOptions(**marker.kwargs)
    except TypeError as exc:
        raise pytest.UsageError(f"@pytest.mark.minibroker: {exc}") from None


def _did_you_mean(matches: list[str]) -> str:
    return f" (did you mean {matches[0]!r}?)" if matches else ""


def _make_broker(options: BrokerOptions, loop_clock: ManualClock | None = None) -> Broker:
    """The broker the options describe; on ``loop_clock``, the clock of a virtual-time event loop, when given."""
    clock: ManualClock | RealClock = RealClock()
    if loop_clock is not None:
        clock = loop_clock
    elif options.virtual_time:
        clock = ManualClock(autojump=options.autojump, autojump_threshold=options.autojump_threshold)
    return Broker(
        clock=clock,
        policies=options.policies,
        scheduler_support=options.scheduler_support,
        plugins=options.plugins,
        history_limit=options.history_limit,
    )


def _note_broker(request: pytest.FixtureRequest, label: str, broker: Broker) -> None:
    """With ``--minibroker-report``: ``broker`` is one of this test's, drawn in the report if the test fails."""
    if report_path(request.config) is not None:
        request.node.stash.setdefault(BROKERS_KEY, []).append((label, broker))


def _teardown_report(broker: Broker, options: BrokerOptions, loop_errors: list[dict[str, Any]]) -> str | None:
    """What the test did not expect: dead letters, listener exceptions, exceptions in the event loop."""
    sections = []
    unobserved = () if options.allow_dead_letters else broker.unobserved_dead_letters()
    if unobserved:
        seen = len(broker.dead_letters()) - len(unobserved)
        lines = [
            f"messages were dead-lettered or dropped and the test never looked at them ({seen} it looked at "
            "are expected: browsed with broker.queue(DLQ).browse(), listed by dead_letters() or "
            "assert_dead_lettered(), or taken from the DLQ; allow the rest with "
            "@pytest.mark.minibroker(allow_dead_letters=True)):"
        ]
        from minibroker.testing import delivery_history  # only a failing teardown reads histories

        for record in unobserved[:20]:
            where = record.dead_letter_queue or "dropped"
            lines.append(f"  {record.message_id} from {record.destination} -> {where}: {record.body!r}")
            lines.append(f"    cause: {record.cause}")
            lines.extend("    " + line for line in str(delivery_history(broker, record.message_id)).splitlines())
        sections.append("\n".join(lines))
    if not options.allow_listener_errors and broker.listener_errors:
        lines = ["message listeners raised (allow with @pytest.mark.minibroker(allow_listener_errors=True)):"]
        for failure in broker.listener_errors[:20]:
            lines.append(
                f"  consumer {failure.consumer}, message {failure.message_id} {failure.body!r}: "
                f"{type(failure.error).__name__}: {failure.error}"
            )
        sections.append("\n".join(lines))
    if loop_errors:
        lines = ["exceptions escaped into the event loop (broker or client tasks):"]
        for context in loop_errors[:20]:
            exc = context.get("exception")
            lines.append(f"  {context.get('message', '')}: {type(exc).__name__ if exc else ''} {exc or ''}")
        sections.append("\n".join(lines))
    return "\n\n".join(sections) or None


#: the connection the ``minibroker`` fixture made for a test that asks for ``minibroker_connection``
CONNECTION_KEY = pytest.StashKey[Connection]()


@async_fixture
async def minibroker(request: pytest.FixtureRequest) -> AsyncIterator[Broker]:
    """A fresh in-process broker for this test (virtual time by default), checked on teardown. When the test asks
    for ``minibroker_connection`` too, its connection is made here, and closed here before the checks: one async
    fixture where there were two, each of which costs a test about 0.8M instructions in pytest-asyncio (issue 45)."""
    options = _options(request)
    loop = asyncio.get_running_loop()
    broker = _make_broker(options, _loop_clock(loop, options, request))
    _note_broker(request, "minibroker", broker)
    loop_errors: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: loop_errors.append(context))
    try:
        async with broker:
            conn = None
            if "minibroker_connection" in request.fixturenames:
                conn = await connect(broker, redelivery_policy=options.redelivery_policy or _DEFAULT_REDELIVERY_POLICY)
                request.node.stash[CONNECTION_KEY] = conn
            try:
                yield broker
            finally:
                if conn is not None:
                    await conn.close()
            await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    report = _teardown_report(broker, options, loop_errors)
    if report is not None:
        pytest.fail(report, pytrace=False)


def _loop_clock(
    loop: asyncio.AbstractEventLoop, options: BrokerOptions, request: pytest.FixtureRequest
) -> ManualClock | None:
    """The clock of the test's loop under ``@pytest.mark.minibroker_virtual_time``: the broker shares it."""
    from minibroker.virtual_time import clock_of

    from .pytest_plugin import VIRTUAL_TIME_MARKER

    clock = clock_of(loop)
    if clock is None and request.node.get_closest_marker(VIRTUAL_TIME_MARKER) is not None:
        raise pytest.UsageError(
            "@pytest.mark.minibroker_virtual_time: the minibroker fixtures run on another event loop than the test "
            "(pytest-asyncio's fixture loop scope is wider than the test's): set asyncio_default_fixture_loop_scope "
            'to the test\'s loop scope ("function" unless the test says loop_scope=...)'
        )
    if clock is not None and not options.virtual_time:
        raise pytest.UsageError(
            "@pytest.mark.minibroker(virtual_time=False) contradicts @pytest.mark.minibroker_virtual_time"
        )
    return clock


@pytest.fixture
def manual_clock(minibroker: Broker) -> ManualClock:
    """The virtual clock the ``minibroker`` fixture runs on (``await manual_clock.advance(seconds)``)."""
    clock = minibroker.clock
    if not isinstance(clock, ManualClock):
        raise pytest.UsageError("manual_clock needs virtual time: remove @pytest.mark.minibroker(virtual_time=False)")
    return clock


@pytest.fixture
def minibroker_connection(minibroker: Broker, request: pytest.FixtureRequest) -> Connection:
    """A client connection to the ``minibroker`` broker, with the marker's redelivery policy: made and closed by the
    ``minibroker`` fixture, which sees that the test asks for it."""
    conn: Connection | None = request.node.stash.get(CONNECTION_KEY, None)
    if conn is None:
        raise pytest.UsageError(
            "minibroker_connection is made with the minibroker fixture, for a test that names it (as an argument, "
            "in usefixtures or in a fixture it uses): asked for later (request.getfixturevalue), connect to the "
            "minibroker fixture's broker instead: await minibroker.client.connect(minibroker)"
        )
    return conn


BrokerFactory = Callable[..., Awaitable[Broker]]


@async_fixture
async def minibroker_factory(request: pytest.FixtureRequest) -> AsyncIterator[BrokerFactory]:
    """``await minibroker_factory(clock=..., policies=..., ...)`` builds and starts another broker (the arguments of
    :class:`~minibroker.Broker`); all are stopped after the test."""
    brokers: list[Broker] = []

    async def make(**kwargs: Any) -> Broker:
        broker = Broker(**kwargs)
        await broker.start()
        brokers.append(broker)
        _note_broker(request, f"minibroker_factory, broker {len(brokers)}", broker)
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

    loop_clock = _loop_clock(asyncio.get_running_loop(), _options(request), request)  # minibroker_virtual_time
    options = attrs.evolve(_options(request), virtual_time=loop_clock is not None)
    broker = _make_broker(options, loop_clock)
    _note_broker(request, "minibroker_server", broker)
    async with broker:
        server = await start_server(broker, "127.0.0.1", 0, ssl=_tls_context(options))
        try:
            yield server
        finally:
            await server.close()


def _tls_context(options: BrokerOptions) -> ssl.SSLContext | None:
    if options.tls is None:
        return None
    from minibroker.tls import server_context

    return server_context(options.tls)


@pytest.fixture
def minibroker_url(minibroker_server: Any) -> str:
    """``tcp://127.0.0.1:PORT`` of ``minibroker_server``."""
    return str(minibroker_server.url)


# -- real clients: a STOMP listener on the test's own broker -------------------------------------------------------


@attrs.frozen
class _Endpoint:
    """Where a client of one protocol reaches the test's broker; ``broker`` is that broker, to inspect."""

    #: the URL scheme (``+ssl`` is added with TLS)
    scheme: ClassVar[str] = ""
    host: str
    port: int
    broker: Broker
    server: Any
    #: the listener speaks TLS (the marker's ``tls``): clients connect to the ``+ssl`` scheme
    tls: bool = False

    @property
    def url(self) -> str:
        """``SCHEME://HOST:PORT`` (``SCHEME+ssl://HOST:PORT`` with TLS)."""
        host = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 literal
        return f"{self.scheme}{'+ssl' if self.tls else ''}://{host}:{self.port}"


@attrs.frozen
class StompEndpoint(_Endpoint):
    """Where a STOMP client (stomp.py, ...) reaches the test's broker: ``url`` is ``stomp://`` or ``stomp+ssl://``."""

    scheme: ClassVar[str] = "stomp"

    @property
    def host_and_ports(self) -> list[tuple[str, int]]:
        """What ``stomp.Connection12(host_and_ports=...)`` takes."""
        return [(self.host, self.port)]


def _handshake_pending(server: Any) -> Callable[[], str | None]:
    """A hold for the virtual clock: a STOMP peer that is connected but has not finished CONNECT.

    Why: its 30 s CONNECT deadline runs on the broker's clock; jumping to it while the client is only a few real
    milliseconds slow would close a healthy connection."""

    def check() -> str | None:
        return "a STOMP peer is mid-handshake" if server.handshakes_pending else None

    return check


E = TypeVar("E")


@contextlib.asynccontextmanager
async def _listener(
    minibroker: Broker,
    request: pytest.FixtureRequest,
    start: Callable[..., Awaitable[Any]],
    pending: Callable[[Any], Callable[[], str | None]],
    endpoint: Callable[..., E],
) -> AsyncIterator[E]:
    """A protocol listener on the test's broker (a free port of ``minibroker_host``, TLS when the marker asks), with
    the virtual clock held while a peer is mid-handshake (``pending``), closed after the test."""
    host = _setting(request.config, "host") or "127.0.0.1"
    options = _options(request)
    server = await start(minibroker, host, 0, ssl=_tls_context(options))
    release = None
    if isinstance(minibroker.clock, ManualClock):
        release = minibroker.clock.hold_while(pending(server))
    try:
        yield endpoint(server.host, server.port, minibroker, server, tls=options.tls is not None)
    finally:
        if release is not None:
            release()
        await server.close()


@async_fixture
async def minibroker_stomp(minibroker: Broker, request: pytest.FixtureRequest) -> AsyncIterator[StompEndpoint]:
    """A STOMP listener on the ``minibroker`` broker (a free port of ``minibroker_host``): real STOMP clients and the
    test share one broker, its state (``minibroker.queue(...)``, history, dead letters) and its virtual time."""
    from minibroker.plugins.stomp import start_stomp_server

    async with _listener(minibroker, request, start_stomp_server, _handshake_pending, StompEndpoint) as endpoint:
        yield endpoint


@attrs.frozen
class MqttEndpoint(_Endpoint):
    """Where an MQTT client (paho-mqtt, aiomqtt, ...) reaches the test's broker: ``url`` is ``mqtt://`` or
    ``mqtt+ssl://``."""

    scheme: ClassVar[str] = "mqtt"


@async_fixture
async def minibroker_mqtt(minibroker: Broker, request: pytest.FixtureRequest) -> AsyncIterator[MqttEndpoint]:
    """An MQTT listener on the ``minibroker`` broker (a free port of ``minibroker_host``): MQTT clients, JMS-style
    clients and STOMP clients share one broker and its topics (``sensors/temp`` is ``topic://sensors.temp``)."""
    from minibroker.plugins.mqtt import start_mqtt_server

    async with _listener(minibroker, request, start_mqtt_server, _mqtt_handshake_pending, MqttEndpoint) as endpoint:
        yield endpoint


@async_fixture
async def minibroker_capture(minibroker: Broker) -> AsyncIterator[Callable[..., Awaitable[Any]]]:
    """``await minibroker_capture("sensors/#")`` captures what any client publishes to those topics from then on
    (:mod:`minibroker.plugins.capture`); every capture stops after the test."""
    from minibroker.plugins.capture import Capture, start_capture

    captures: list[Capture] = []

    async def start(pattern: str, *, include_advisories: bool = False) -> Capture:
        capture = await start_capture(minibroker, pattern, include_advisories=include_advisories)
        captures.append(capture)
        return capture

    yield start
    for capture in captures:
        await capture.close()


def _mqtt_handshake_pending(server: Any) -> Callable[[], str | None]:
    """A hold for the virtual clock while an MQTT peer has not sent CONNECT (its deadline), or is connected with a
    keep-alive: its PINGREQs come in real time, and a jump over its read check would drop a healthy client."""

    def check() -> str | None:
        if server.handshakes_pending:
            return "an MQTT peer is mid-handshake"
        if server.keep_alive_clients:
            return "an MQTT client with a keep-alive is connected (its PINGREQs come in real time)"
        return None

    return check


@attrs.frozen
class OpenWireEndpoint(_Endpoint):
    """Where ActiveMQ's JMS client (``activemq-client``, and NMS, Spring or Camel over it) reaches the test's broker:
    ``url`` is ``tcp://HOST:PORT`` (``ssl://HOST:PORT`` with TLS), what ``ActiveMQConnectionFactory`` takes."""

    scheme: ClassVar[str] = "tcp"

    @property
    def url(self) -> str:
        """``tcp://HOST:PORT``, or ``ssl://HOST:PORT`` with TLS."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'ssl' if self.tls else 'tcp'}://{host}:{self.port}"


@async_fixture
async def minibroker_openwire(minibroker: Broker, request: pytest.FixtureRequest) -> AsyncIterator[OpenWireEndpoint]:
    """An OpenWire listener on the ``minibroker`` broker (a free port of ``minibroker_host``): ActiveMQ's JMS client
    and the test share one broker. While a JMS client is connected with an inactivity check (its default, 30 s) or
    is logging in, virtual time flows at real speed instead of jumping (``_openwire_pending``)."""
    from minibroker.plugins.openwire import start_openwire_server

    async with _listener(minibroker, request, start_openwire_server, _openwire_pending, OpenWireEndpoint) as endpoint:
        yield endpoint


def _openwire_pending(server: Any) -> Callable[[], str | None]:
    """A hold for the virtual clock while an OpenWire peer logs in (its connect deadline) or is connected with an
    inactivity check. Why: the JMS client sends its KeepAliveInfo on the JVM's clock, so a jump over the broker's
    read check (a whole negotiated period) would drop a healthy client, and a jump of a third of it would send
    keep-alives faster than real time. A client with ``wireFormat.maxInactivityDuration=0`` holds nothing."""

    def check() -> str | None:
        if server.handshakes_pending:
            return "an OpenWire peer is logging in"
        if server.keep_alive_clients:
            return "a JMS client with an inactivity check is connected (its KeepAliveInfos come in real time)"
        return None

    return check


# -- broker processes (pytest-redis conventions: _proc starts one, _noproc points at a running one) ----------------


@attrs.frozen
class BrokerProcess:
    """A ``minibroker serve`` process (``process`` is None for a broker this session did not start)."""

    host: str
    port: int
    stomp_port: int | None
    process: subprocess.Popen[str] | None = attrs.field(default=None, eq=False, repr=False)
    #: the TLS listeners' ports (``ssl://``, ``stomp+ssl://``), when the process has them
    ssl_port: int | None = None
    stomp_ssl_port: int | None = None
    #: the MQTT listener's port, when the process has one
    mqtt_port: int | None = None
    #: where ActiveMQ's JMS client connects, when not ``port`` (a real ActiveMQ under ``--minibroker-external``)
    external_openwire_url: str | None = None
    #: an administrator's credentials (``--minibroker-user``/``--minibroker-password``), for :meth:`clean` on a
    #: broker with users
    user: str | None = None
    password: str | None = attrs.field(default=None, repr=False)

    @property
    def url(self) -> str:
        """``tcp://HOST:PORT``, for :func:`minibroker.client.connect` and ``minibroker stat --url``."""
        return f"tcp://{self.host}:{self.port}"

    def _url(self, scheme: str, port: int | None) -> str | None:
        host = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 literal
        return None if port is None else f"{scheme}://{host}:{port}"

    @property
    def stomp_url(self) -> str | None:
        """``stomp://HOST:PORT``, or None without a STOMP listener."""
        return self._url("stomp", self.stomp_port)

    @property
    def ssl_url(self) -> str | None:
        """``ssl://HOST:PORT`` (``connect(url, ssl=context)``), or None without a TLS listener."""
        return self._url("ssl", self.ssl_port)

    @property
    def stomp_ssl_url(self) -> str | None:
        """``stomp+ssl://HOST:PORT``, or None without a STOMP TLS listener."""
        return self._url("stomp+ssl", self.stomp_ssl_port)

    @property
    def mqtt_url(self) -> str | None:
        """``mqtt://HOST:PORT``, or None without an MQTT listener."""
        return self._url("mqtt", self.mqtt_port)

    @property
    def openwire_url(self) -> str:
        """``tcp://HOST:PORT`` for ActiveMQ's JMS client: ``serve``'s port serves it beside the native protocol (an
        external ActiveMQ's OpenWire port under ``--minibroker-external``)."""
        return self.url if self.external_openwire_url is None else self.external_openwire_url

    @property
    def host_and_ports(self) -> list[tuple[str, int]]:
        """The STOMP address as ``stomp.Connection12(host_and_ports=...)`` takes it."""
        if self.stomp_port is None:
            raise ValueError(f"the broker at {self.url} has no STOMP listener")
        return [(self.host, self.stomp_port)]

    def clean(self, *, user: str | None = None, password: str | None = None) -> None:
        """Empty the broker for the next test, as pytest-redis's ``redisdb`` flushes its server: every queue's
        messages purged (virtual-topic consumer queues and dead-letter queues too), every offline durable
        subscription removed, every scheduled job removed. Destinations stay (as after a purge on ActiveMQ). With
        users configured, an administrator's credentials: given here, or the process's (``user``, ``password``)."""
        import threading

        failure: list[BaseException] = []

        def run() -> None:
            try:
                if user is None:
                    asyncio.run(_clean(self.url, self.user, self.password))
                else:
                    asyncio.run(_clean(self.url, user, password))
            except BaseException as exc:  # reported in the caller's thread
                failure.append(exc)

        thread = threading.Thread(target=run, name="minibroker-clean")  # whatever event loop the caller runs
        thread.start()
        thread.join()
        if failure:
            raise failure[0]

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, as a service manager would (clean stop, store flushed); SIGKILL if it hangs."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:  # pragma: no cover - a hung server
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()


async def _clean(url: str, user: str | None, password: str | None) -> None:
    """Empty the broker at ``url`` as ``user``; a refusal says which right the administrator lacks and how to grant
    it (cleaning goes through the rights the broker gives that user, as any operator's tool would)."""
    from minibroker.errors import AccessDenied

    try:
        await _clean_as(url, user, password)
    except AccessDenied as exc:
        who = "no user (give one with --minibroker-user/--minibroker-password)" if user is None else f"user {user!r}"
        raise AccessDenied(
            f"minibroker_clean cleans as the broker's administrator, here {who}: {exc}. Clean needs read and admin on "
            "every queue and write on topic://ActiveMQ.Scheduler.Management: in broker.toml, [[authorization]] "
            'queue = ">" and topic = ">" with the administrator\'s group in read, write and admin',
            user=exc.user,
            destination=exc.destination,
            action=exc.action,
        ) from exc


async def _clean_as(url: str, user: str | None, password: str | None) -> None:
    from minibroker.client import connect
    from minibroker.transport.tcp_link import TcpLink

    login: dict[str, Any] = {} if user is None else {"user": user, "password": password}
    async with await connect(url, **login) as conn:
        await conn.purge(">")
        link = conn._link
        assert isinstance(link, TcpLink)
        _, durables, _ = await link.list_topics()
        for durable in durables:
            if not durable.active:
                async with await connect(url, client_id=durable.client_id, **login) as owner:
                    await (await owner.create_session()).unsubscribe(durable.name)
        session = await conn.create_session()
        manager = await session.create_producer("topic://ActiveMQ.Scheduler.Management")
        await manager.send("", properties={"AMQ_SCHEDULER_ACTION": "REMOVEALL"})


def _read_url(process: subprocess.Popen[str], scheme: str, errors: IO[str]) -> tuple[str, int]:
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    prefix = scheme + "://"
    if not line.startswith(prefix):
        process.kill()
        process.wait()
        process.stdout.close()
        errors.seek(0)
        raise RuntimeError(f"minibroker serve did not print its {scheme} URL (got {line!r}): {errors.read().strip()}")
    host, _, port = line[len(prefix) :].rpartition(":")
    return host.strip("[]"), int(port)


def start_broker_process(
    config: str | os.PathLike[str] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    stomp_port: int | None = 0,
    data_dir: str | os.PathLike[str] | None = None,
    ssl_port: int | None = None,
    stomp_ssl_port: int | None = None,
    tls: Sequence[str] = (),
    mqtt_port: int | None = None,
) -> BrokerProcess:
    """Start ``minibroker serve`` (``config``: a broker.toml with users, policies, limits) and wait for its URLs.
    Ports 0 pick free ones; ``stomp_port=None`` serves no STOMP. ``ssl_port``/``stomp_ssl_port`` add TLS listeners,
    whose certificate comes from the config's ``[tls]`` table or from ``tls`` (``serve``'s options, e.g.
    ``["--tls-cert", "server.crt", "--tls-key", "server.key"]``)."""
    command = [sys.executable, "-m", "minibroker", "serve", "--host", host, "--port", str(port)]
    if stomp_port is not None:
        command += ["--stomp-port", str(stomp_port)]
    if ssl_port is not None:
        command += ["--ssl-port", str(ssl_port)]
    if stomp_ssl_port is not None:
        command += ["--stomp-ssl-port", str(stomp_ssl_port)]
    if mqtt_port is not None:
        command += ["--mqtt-port", str(mqtt_port)]
    command += list(tls)
    if config is not None:
        command += ["--config", os.fspath(config)]
    if data_dir is not None:
        command += ["--data-dir", os.fspath(data_dir)]
    errors = tempfile.TemporaryFile("w+")  # noqa: SIM115 - lives as long as the process's stderr needs it
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=errors, text=True, env={**os.environ, "PYTHONSAFEPATH": "1"}
    )
    try:
        tcp_host, tcp_port = _read_url(process, "tcp", errors)
        stomp = _read_url(process, "stomp", errors)[1] if stomp_port is not None else None
        ssl = _read_url(process, "ssl", errors)[1] if ssl_port is not None else None
        stomp_ssl = _read_url(process, "stomp+ssl", errors)[1] if stomp_ssl_port is not None else None
        mqtt = _read_url(process, "mqtt", errors)[1] if mqtt_port is not None else None
    finally:
        errors.close()
    return BrokerProcess(tcp_host, tcp_port, stomp, process, ssl_port=ssl, stomp_ssl_port=stomp_ssl, mqtt_port=mqtt)


def _port(text: str | None, default: int) -> int:
    try:
        return default if text is None else int(text)
    except ValueError:
        raise pytest.UsageError(f"minibroker: a port must be a number, not {text!r}") from None


# the factories live in the public minibroker.plugins.factories (as pytest-redis's); these names stay for old imports
minibroker_proc_factory = factories.minibroker_proc
minibroker_noproc_factory = factories.minibroker_noproc


minibroker_proc = minibroker_proc_factory()
minibroker_noproc = minibroker_noproc_factory()


@pytest.fixture(scope="session")
def minibroker_session_url(minibroker_proc: BrokerProcess) -> str:
    """``tcp://HOST:PORT`` of ``minibroker_proc``: one broker process for the session (per xdist worker); state is
    shared between the tests of the session."""
    return minibroker_proc.url


def minibroker_clean(minibroker_proc: BrokerProcess) -> Iterator[BrokerProcess]:
    """``minibroker_proc``, emptied after each test (:meth:`BrokerProcess.clean`: messages, offline durable
    subscriptions, scheduled jobs), as pytest-redis's ``redisdb``: one process for the session, a clean broker for
    every test."""
    yield minibroker_proc
    minibroker_proc.clean()


ProcessFactory = Callable[..., BrokerProcess]


@pytest.fixture
def minibroker_processes(tmp_path: Path) -> Iterator[ProcessFactory]:
    """``minibroker_processes(config=..., stomp_port=0, data_dir=...)`` starts another ``minibroker serve`` (the
    arguments of :func:`start_broker_process`); all are stopped after the test. ``config_text="..."``: a broker.toml
    given inline."""
    started: list[BrokerProcess] = []

    def start(*, config_text: str | None = None, **kwargs: Any) -> BrokerProcess:
        if config_text is not None:
            path = tmp_path / f"broker-{len(started)}.toml"
            path.write_text(config_text)
            kwargs["config"] = path
        broker = start_broker_process(**kwargs)
        started.append(broker)
        return broker

    try:
        yield start
    finally:
        for broker in started:
            broker.stop()


# Spark: ``minibroker_spark`` (a session-wide local SparkSession) and ``threaded_minibroker`` (a broker on TCP in its
# own thread); both skip cleanly without java or pyspark, and nothing imports pyspark until they run
from minibroker.plugins.spark.testing import minibroker_spark, threaded_minibroker  # noqa: E402
