"""``--minibroker-external``: the same tests against a broker that is already running, a real ActiveMQ above all.

Why: a faithful fake is worth what its tests are worth on the real broker. Under the option the protocol fixtures
(``minibroker_stomp``, ``minibroker_stomp_sync``, ``minibroker_mqtt``, ``minibroker_mqtt_sync``,
``minibroker_openwire``, ``minibroker_openwire_sync``, ``minibroker_proc``, ``minibroker_noproc`` and the fixtures
:mod:`minibroker.plugins.factories` builds) hand out that broker's addresses with the attributes they always have
(OpenWire, ActiveMQ's own protocol, at ``tcp://HOST:61616`` unless the option names it: where ActiveMQ serves it by
default), and a test that needs minibroker itself (the in-process broker, virtual time, the native client, captures,
cleaning) is skipped as *minibroker-only*, with its reason, before it starts. The session ends with the count of both
kinds. Imported only when the option is given.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import pytest

if TYPE_CHECKING:
    from ._pytest_fixtures import BrokerProcess

__all__ = [
    "MINIBROKER_ONLY",
    "PLUGIN_NAME",
    "ExternalBroker",
    "ExternalEndpoint",
    "ExternalMode",
    "ExternalOpenWireEndpoint",
    "ExternalStompEndpoint",
    "parse",
    "register",
]

#: the name the mode is registered under (``config.pluginmanager.get_plugin(PLUGIN_NAME)``)
PLUGIN_NAME = "minibroker-external"
#: the prefix of every skip reason this mode gives, which the count at the end looks for
PREFIX = "minibroker-only: "
#: the explicit marker
ONLY_MARKER = "minibroker_only"

#: the plugin's fixtures a test cannot have on another broker, and why
MINIBROKER_ONLY = {
    "minibroker": "reads the in-process broker (minibroker)",
    "minibroker_sync": "reads the in-process broker (minibroker_sync)",
    "manual_clock": "virtual time (manual_clock)",
    "minibroker_connection": "the native client (minibroker_connection)",
    "minibroker_server": "the native client (minibroker_server)",
    "minibroker_url": "the native client (minibroker_url)",
    "minibroker_session_url": "the native client (minibroker_session_url)",
    "minibroker_factory": "builds in-process brokers (minibroker_factory)",
    "minibroker_capture": "captures through the in-process broker (minibroker_capture)",
    "minibroker_clean": "cleans through minibroker's native protocol (minibroker_clean)",
    "minibroker_processes": "starts minibroker serve processes (minibroker_processes)",
    "threaded_minibroker": "Spark's source reads minibroker's native protocol (threaded_minibroker)",
    "minibroker_spark": "Spark's source reads minibroker's native protocol (minibroker_spark)",
}
#: what ``@pytest.mark.minibroker(...)`` sets that configures minibroker's broker (the external one is configured
#: by whoever runs it)
_BROKER_SETTINGS = ("redelivery_policy", "policies", "scheduler_support", "plugins", "tls")
#: the fixtures that reach the external broker
ENDPOINTS = frozenset(
    {"minibroker_stomp", "minibroker_stomp_sync", "minibroker_mqtt", "minibroker_mqtt_sync"}
    | {"minibroker_openwire", "minibroker_openwire_sync"}
    | {"minibroker_proc", "minibroker_noproc"}
)
#: the attribute the factories put on the fixtures they build: the fixture's kind under this mode
KIND_ATTRIBUTE = "_minibroker_external_kind"
#: the protocols the option names
PROTOCOLS = ("stomp", "mqtt", "openwire")
#: ActiveMQ's OpenWire port (its default ``tcp://0.0.0.0:61616`` connector): where OpenWire is when the option names
#: no ``openwire=`` address
OPENWIRE_PORT = 61616


@attrs.frozen
class ExternalBroker:
    """Where the external broker listens, as ``--minibroker-external stomp=HOST:PORT,mqtt=HOST:PORT,openwire=...``
    says (``openwire_tls``: the option gave ``openwire=ssl://HOST:PORT``)."""

    stomp: tuple[str, int] | None = None
    mqtt: tuple[str, int] | None = None
    openwire: tuple[str, int] | None = None
    openwire_tls: bool = False

    def __str__(self) -> str:
        parts = [f"{name}={_address(value)}" for name, value in (("stomp", self.stomp), ("mqtt", self.mqtt)) if value]
        if self.openwire is not None:
            parts.append(f"openwire={'ssl://' if self.openwire_tls else ''}{_address(self.openwire)}")
        return ",".join(parts)

    def process(self) -> BrokerProcess:
        """The broker in the shape of ``minibroker_proc`` (``.host_and_ports``, ``.stomp_url``, ``.mqtt_url``,
        ``.openwire_url``); ``port`` is 0: minibroker's native protocol is not there."""
        from ._pytest_fixtures import BrokerProcess

        host = (self.stomp or self.mqtt or ("127.0.0.1", 0))[0]
        stomp = None if self.stomp is None else self.stomp[1]
        mqtt = None if self.mqtt is None else self.mqtt[1]
        openwire = self.endpoint("openwire")
        assert isinstance(openwire, ExternalOpenWireEndpoint)
        return BrokerProcess(host, 0, stomp, mqtt_port=mqtt, external_openwire_url=openwire.url)

    def endpoint(self, protocol: str) -> ExternalEndpoint:
        """The ``stomp``, ``mqtt`` or ``openwire`` address as the fixtures of that protocol give it. OpenWire not
        named: ``tcp://HOST:61616``, HOST the other protocols' (ActiveMQ serves its JMS clients there unless its
        ``activemq.xml`` says otherwise, and a test suite moving to a real broker rarely says more)."""
        if protocol == "openwire":
            host = (self.openwire or self.stomp or self.mqtt or ("127.0.0.1", 0))[0]
            port = OPENWIRE_PORT if self.openwire is None else self.openwire[1]
            return ExternalOpenWireEndpoint(host, port, tls=self.openwire_tls)
        address = self.stomp if protocol == "stomp" else self.mqtt
        if address is None:
            pytest.fail(f"--minibroker-external names no {protocol} address ({protocol}=HOST:PORT)", pytrace=False)
        kind = ExternalStompEndpoint if protocol == "stomp" else ExternalEndpoint
        return kind(*address)


def _address(address: tuple[str, int]) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse(text: str) -> ExternalBroker:
    """``stomp=HOST:PORT,mqtt=HOST:PORT,openwire=HOST:PORT`` (any may be left out, not all; ``[::1]:61613`` for
    IPv6). OpenWire's address may be given as ActiveMQ's client takes it: ``tcp://HOST:PORT`` or, for its TLS
    connector, ``ssl://HOST:PORT``."""
    found: dict[str, tuple[str, int]] = {}
    tls = False
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, equals, address = part.partition("=")
        scheme, slashes, rest = address.partition("://")
        if name == "openwire" and slashes and scheme in ("tcp", "ssl"):
            address, tls = rest, scheme == "ssl"
        host, colon, port = address.rpartition(":")
        malformed = not colon or not port.isdigit() or "/" in host  # a host with a scheme left in it
        if not equals or name not in PROTOCOLS or malformed or name in found:
            raise pytest.UsageError(
                f"--minibroker-external: {part!r} is not PROTOCOL=HOST:PORT with PROTOCOL stomp, mqtt or openwire "
                "(given once; openwire=tcp://HOST:PORT and ssl://HOST:PORT too), "
                "e.g. --minibroker-external stomp=127.0.0.1:61613,mqtt=127.0.0.1:1883,openwire=127.0.0.1:61616"
            )
        found[name] = (host.strip("[]") or "127.0.0.1", int(port))
    if not found:
        raise pytest.UsageError("--minibroker-external needs stomp=HOST:PORT, mqtt=HOST:PORT, openwire=HOST:PORT")
    return ExternalBroker(**found, openwire_tls=tls)


@attrs.frozen
class ExternalEndpoint:
    """An MQTT address of the external broker, with the attributes of :class:`MqttEndpoint` (``.host``, ``.port``,
    ``.url``); ``.broker`` fails, the in-process broker being elsewhere."""

    scheme: ClassVar[str] = "mqtt"
    host: str
    port: int
    tls: bool = False

    @property
    def url(self) -> str:
        """``SCHEME://HOST:PORT``."""
        return f"{self.scheme}://{_address((self.host, self.port))}"

    @property
    def broker(self) -> Any:
        """Fails the test: a test that reads the in-process broker is minibroker-only (why it is not skipped: the
        plugin cannot see an attribute read before the test runs)."""
        pytest.fail(
            f"{PREFIX}the test reads .broker, the in-process broker, which --minibroker-external has not: mark it "
            f"@pytest.mark.{ONLY_MARKER}(reason=...) or assert through the protocol",
            pytrace=False,
        )


@attrs.frozen
class ExternalStompEndpoint(ExternalEndpoint):
    """A STOMP address of the external broker, with the attributes of :class:`StompEndpoint`."""

    scheme: ClassVar[str] = "stomp"

    @property
    def host_and_ports(self) -> list[tuple[str, int]]:
        """What ``stomp.Connection12(host_and_ports=...)`` takes."""
        return [(self.host, self.port)]


@attrs.frozen
class ExternalOpenWireEndpoint(ExternalEndpoint):
    """The external broker's OpenWire address, with the attributes of :class:`OpenWireEndpoint`: ``url`` is what
    ActiveMQ's ``ActiveMQConnectionFactory`` takes."""

    scheme: ClassVar[str] = "tcp"

    @property
    def url(self) -> str:
        """``tcp://HOST:PORT``, or ``ssl://HOST:PORT`` for a TLS connector."""
        return f"{'ssl' if self.tls else 'tcp'}://{_address((self.host, self.port))}"


def minibroker_only_reason(item: pytest.Item) -> str | None:
    """Why ``item`` cannot run on the external broker (None: it can): the explicit marker, the whole-test
    virtual-time marker, a broker setting of ``@pytest.mark.minibroker``, or a fixture only minibroker has."""
    marker = item.get_closest_marker(ONLY_MARKER)
    if marker is not None:
        reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "marked minibroker_only")
        return str(reason)
    from .pytest_plugin import MARKER, VIRTUAL_TIME_MARKER

    if item.get_closest_marker(VIRTUAL_TIME_MARKER) is not None:
        return "virtual time for the whole test (minibroker_virtual_time)"
    settings = item.get_closest_marker(MARKER)
    configured = [key for key in _BROKER_SETTINGS if settings is not None and key in settings.kwargs]
    if configured:
        return f"configures minibroker's broker ({', '.join(configured)})"
    names = getattr(item, "fixturenames", ())
    for name in names:
        if name in MINIBROKER_ONLY:
            return MINIBROKER_ONLY[name]
    for name, definitions in _definitions(item):
        kind = getattr(definitions[-1].func, KIND_ATTRIBUTE, None)
        if isinstance(kind, str) and kind != "endpoint":
            return f"{kind} ({name})"
    return None


def uses_external(item: pytest.Item) -> bool:
    """The test reaches the external broker through one of the plugin's fixtures or a factory's."""
    if ENDPOINTS & set(getattr(item, "fixturenames", ())):
        return True
    return any(getattr(defs[-1].func, KIND_ATTRIBUTE, None) == "endpoint" for _, defs in _definitions(item))


def _definitions(item: pytest.Item) -> Iterator[tuple[str, Any]]:
    info = getattr(item, "_fixtureinfo", None)
    for name, definitions in getattr(info, "name2fixturedefs", {}).items():
        if definitions:
            yield name, definitions


class ExternalMode:
    """The minibroker-only skips and the count at the end (the fixtures are this module's, registered beside it)."""

    def __init__(self, broker: ExternalBroker) -> None:
        self.broker = broker
        #: outcome -> count, for the tests that ran on the external broker
        self.ran: collections.Counter[str] = collections.Counter()
        #: reason -> count, for the minibroker-only tests
        self.skipped: collections.Counter[str] = collections.Counter()
        #: tests that used none of the fixtures (they ran, on nothing of the plugin's)
        self.neither = 0

    # -- the skips and the count -------------------------------------------------------------------------------------

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            reason = minibroker_only_reason(item)
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=PREFIX + reason))
            elif uses_external(item):
                item.user_properties.append(("minibroker_external", True))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and isinstance(report.longrepr, tuple):
            reason = str(report.longrepr[2]).removeprefix("Skipped: ")
            if reason.startswith(PREFIX):
                self.skipped[reason.removeprefix(PREFIX)] += 1
                return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if ("minibroker_external", True) in report.user_properties:
                self.ran[report.outcome] += 1
            else:
                self.neither += 1

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        ran = sum(self.ran.values())
        outcomes = ", ".join(f"{count} {outcome}" for outcome, count in sorted(self.ran.items()))
        terminalreporter.write_sep(
            "-",
            f"minibroker external broker {self.broker}: {ran} ran on it ({outcomes or 'none'}), "
            f"{sum(self.skipped.values())} minibroker-only, {self.neither} used neither",
        )
        for reason, count in sorted(self.skipped.items(), key=lambda pair: (-pair[1], pair[0])):
            terminalreporter.write_line(f"  minibroker-only: {count} {reason}")


# -- the fixtures: this module is registered as a plugin after the plugin's own, so these take their place -----------


def _broker(request: pytest.FixtureRequest) -> ExternalBroker:
    mode = request.config.pluginmanager.get_plugin(PLUGIN_NAME)
    assert isinstance(mode, ExternalMode)
    return mode.broker


@pytest.fixture
def minibroker_stomp(request: pytest.FixtureRequest) -> ExternalEndpoint:
    """The external broker's STOMP address."""
    return _broker(request).endpoint("stomp")


@pytest.fixture
def minibroker_stomp_sync(request: pytest.FixtureRequest) -> ExternalEndpoint:
    """The external broker's STOMP address."""
    return _broker(request).endpoint("stomp")


@pytest.fixture
def minibroker_mqtt(request: pytest.FixtureRequest) -> ExternalEndpoint:
    """The external broker's MQTT address."""
    return _broker(request).endpoint("mqtt")


@pytest.fixture
def minibroker_mqtt_sync(request: pytest.FixtureRequest) -> ExternalEndpoint:
    """The external broker's MQTT address."""
    return _broker(request).endpoint("mqtt")


@pytest.fixture
def minibroker_openwire(request: pytest.FixtureRequest) -> ExternalEndpoint:
    """The external broker's OpenWire address (``tcp://HOST:61616`` unless the option names one)."""
    return _broker(request).endpoint("openwire")


@pytest.fixture
def minibroker_openwire_sync(request: pytest.FixtureRequest) -> ExternalEndpoint:
    """The external broker's OpenWire address (``tcp://HOST:61616`` unless the option names one)."""
    return _broker(request).endpoint("openwire")


@pytest.fixture(scope="session")
def minibroker_proc(request: pytest.FixtureRequest) -> BrokerProcess:
    """The external broker in the shape of ``minibroker_proc``."""
    return _broker(request).process()


@pytest.fixture(scope="session")
def minibroker_noproc(request: pytest.FixtureRequest) -> BrokerProcess:
    """The external broker in the shape of ``minibroker_noproc``."""
    return _broker(request).process()


def register(config: pytest.Config, text: str) -> None:
    """Turn the mode on: the hooks, then this module's fixtures."""
    import sys

    config.pluginmanager.register(ExternalMode(parse(text)), PLUGIN_NAME)
    config.pluginmanager.register(sys.modules[__name__], PLUGIN_NAME + "-fixtures")
