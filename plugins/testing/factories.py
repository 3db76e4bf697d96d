"""Fixture factories for broker processes, as pytest-redis's ``factories``: build fixtures of your own in a conftest.

::

    from minibroker.plugins import factories

    orders_broker = factories.minibroker_proc(config="tests/orders-broker.toml", scope="session")
    orders = factories.minibroker_clean("orders_broker")          # emptied after each test
    ci_broker = factories.minibroker_noproc(port=61616)           # a broker CI started (or a real ActiveMQ)

    def test_orders(orders):
        ...  # orders.url, orders.stomp_url, orders.host_and_ports

Every argument left out comes from the plugin's options (``--minibroker-config``, ``--minibroker-host``,
``--minibroker-port``, ``--minibroker-stomp-port``, ``--minibroker-mqtt-port``, ``--minibroker-user``,
``--minibroker-password``, or their ini keys). The plugin's own ``minibroker_proc``, ``minibroker_noproc`` and
``minibroker_clean`` fixtures are these factories' fixtures with every argument left out. Importing this module does
not import the broker: the fixtures do, when they run.

Under ``--minibroker-external stomp=HOST:PORT,mqtt=HOST:PORT`` (the same suite against a real ActiveMQ), the fixtures
of :func:`minibroker_proc` and :func:`minibroker_noproc` hand out that broker instead, and a test that takes a
:func:`minibroker_clean` fixture is skipped as minibroker-only (cleaning speaks minibroker's own protocol).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

import pytest

if TYPE_CHECKING:
    from ._pytest_fixtures import BrokerProcess

__all__ = ["Scope", "minibroker_clean", "minibroker_noproc", "minibroker_proc"]

Scope = Literal["session", "package", "module", "class", "function"]


def minibroker_proc(
    config: str | os.PathLike[str] | None = None,
    *,
    host: str | None = None,
    port: int | None = None,
    stomp_port: int | None = None,
    mqtt_port: int | None = None,
    scope: Scope = "session",
) -> Any:
    """A fixture that runs one ``minibroker serve`` process for its ``scope`` and stops it (SIGTERM) at the end
    (pytest-redis's ``factories.redis_proc``); its value is a :class:`~minibroker.plugins.pytest_plugin.BrokerProcess`
    (``.url``, ``.stomp_url``, ``.mqtt_url``, ``.host_and_ports``, ``.clean()``).

    ``config``: a broker.toml (users, policies, limits); ``host`` (127.0.0.1); ``port``, ``stomp_port``,
    ``mqtt_port`` (0: a free one); ``scope``: pytest's fixture scope."""

    def proc_fixture(request: pytest.FixtureRequest) -> Iterator[BrokerProcess]:
        """A ``minibroker serve`` process for the scope (``.url``, ``.stomp_url``, ``.host``, ``.port``), configured
        by ``--minibroker-config``/``minibroker_config`` and the host and port options; stopped at the end."""
        import attrs

        from ._pytest_fixtures import _port, _setting, start_broker_process

        external = _external(request)
        if external is not None:
            yield external
            return
        settings = request.config
        broker = start_broker_process(
            config if config is not None else _setting(settings, "config"),
            host=host or _setting(settings, "host") or "127.0.0.1",
            port=port if port is not None else _port(_setting(settings, "port"), 0),
            stomp_port=stomp_port if stomp_port is not None else _port(_setting(settings, "stomp_port"), 0),
            mqtt_port=mqtt_port if mqtt_port is not None else _port(_setting(settings, "mqtt_port"), 0),
        )
        broker = attrs.evolve(broker, user=_setting(settings, "user"), password=_setting(settings, "password"))
        try:
            yield broker
        finally:
            broker.stop()

    setattr(proc_fixture, _KIND, "endpoint")  # what it is under --minibroker-external
    return pytest.fixture(scope=scope)(proc_fixture)


def minibroker_noproc(
    *,
    host: str | None = None,
    port: int | None = None,
    stomp_port: int | None = None,
    mqtt_port: int | None = None,
    user: str | None = None,
    password: str | None = None,
    scope: Scope = "session",
) -> Any:
    """A fixture for a broker that is already running (started by CI, docker, another tool, or a real ActiveMQ):
    its addresses as a :class:`~minibroker.plugins.pytest_plugin.BrokerProcess` (pytest-redis's
    ``factories.redis_noproc``); the test fails at once when nothing listens there.

    ``host`` (127.0.0.1), ``port`` (61616), ``stomp_port`` (61613), ``mqtt_port`` (1883); ``user`` and ``password``:
    an administrator, for ``minibroker_clean`` on a broker with users."""

    def noproc_fixture(request: pytest.FixtureRequest) -> BrokerProcess:
        """The addresses of a broker that is already running (``--minibroker-host``/``-port``/``-stomp-port``),
        in the shape of ``minibroker_proc``; the test fails at once when nothing listens there."""
        from ._pytest_fixtures import BrokerProcess, _port, _setting

        external = _external(request)
        if external is not None:
            return external
        settings = request.config
        address = host or _setting(settings, "host") or "127.0.0.1"
        tcp = port if port is not None else _port(_setting(settings, "port"), 61616)
        stomp = stomp_port if stomp_port is not None else _port(_setting(settings, "stomp_port"), 61613)
        mqtt = mqtt_port if mqtt_port is not None else _port(_setting(settings, "mqtt_port"), 1883)
        try:
            socket.create_connection((address, tcp), timeout=5).close()
        except OSError as exc:
            pytest.fail(
                f"minibroker_noproc: no broker listens on {address}:{tcp} ({exc}); start one with "
                f"`minibroker serve --port {tcp} --stomp-port {stomp}` or set --minibroker-port",
                pytrace=False,
            )
        return BrokerProcess(
            address,
            tcp,
            stomp,
            mqtt_port=mqtt,
            user=user if user is not None else _setting(settings, "user"),
            password=password if password is not None else _setting(settings, "password"),
        )

    setattr(noproc_fixture, _KIND, "endpoint")  # what it is under --minibroker-external
    return pytest.fixture(scope=scope)(noproc_fixture)


def minibroker_clean(process_fixture_name: str = "minibroker_proc", *, scope: Scope = "function") -> Any:
    """A fixture that hands out the broker of the fixture named ``process_fixture_name`` (one made by
    :func:`minibroker_proc` or :func:`minibroker_noproc`) and empties it after each test (pytest-redis's
    ``factories.redisdb``): messages, offline durable subscriptions, scheduled jobs, as its administrator
    (``--minibroker-user``/``--minibroker-password`` on a broker with users)."""

    def clean_fixture(request: pytest.FixtureRequest) -> Iterator[BrokerProcess]:
        """The broker process, emptied after each test (:meth:`BrokerProcess.clean`)."""
        if _external(request) is not None:
            pytest.skip(f"minibroker-only: {_CLEANS} ({request.fixturename})")
        process: BrokerProcess = request.getfixturevalue(process_fixture_name)
        yield process
        process.clean()

    setattr(clean_fixture, _KIND, _CLEANS)  # what it is under --minibroker-external
    return pytest.fixture(scope=scope)(clean_fixture)


#: under ``--minibroker-external``, what a factory's fixture is: its kind (minibroker._pytest_external.KIND_ATTRIBUTE)
_KIND = "_minibroker_external_kind"
_CLEANS = "cleans through minibroker's native protocol"


def _external(request: pytest.FixtureRequest) -> BrokerProcess | None:
    """Under ``--minibroker-external``: that broker, in the shape of a broker process (its fixtures point there)."""
    mode = request.config.pluginmanager.get_plugin("minibroker-external")
    if mode is None:
        return None
    broker: BrokerProcess = mode.broker.process()
    return broker
