"""Synchronous tests and whole-test virtual time, for :mod:`minibroker.plugins.pytest_plugin` (imported on first use).

A plain ``def`` test never runs an event loop, so a broker on the test's loop (``minibroker``) never answers its
clients. :class:`SyncBroker` runs the test's broker on its own thread and loop, with the in-process assertions as
blocking calls; the async fixtures refuse a synchronous test at once and name the fixture to use instead.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pytest

from .pytest_plugin import MISSING_ASYNCIO, VIRTUAL_TIME_MARKER

if TYPE_CHECKING:
    from minibroker import Broker, Message
    from minibroker.testing import DeadLetter, DeliveryHistory

    from ._pytest_fixtures import BrokerOptions, MqttEndpoint, OpenWireEndpoint, StompEndpoint
    from .capture import Capture, Captured

__all__ = ["SyncBroker", "SyncCapture", "check_async_test", "parametrize_virtual_time"]

T = TypeVar("T")

#: async fixture -> what a synchronous test uses instead (first match in the test's fixtures wins)
SYNC_INSTEAD = {
    "minibroker_stomp": "minibroker_stomp_sync",
    "minibroker_mqtt": "minibroker_mqtt_sync",
    "minibroker_openwire": "minibroker_openwire_sync",
    "minibroker_capture": "minibroker_sync (its .capture(pattern))",
    "minibroker_connection": "minibroker_sync (connect a client to its .url)",
    "minibroker_server": "minibroker_sync (its .url)",
    "minibroker_url": "minibroker_sync (its .url)",
    "manual_clock": "minibroker_sync (its .advance(seconds))",
    "minibroker_factory": "minibroker_sync",
    "minibroker": "minibroker_sync",
}


def _is_async(node: Any) -> bool:
    function = getattr(node, "obj", None)
    return inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function)


def check_async_test(request: pytest.FixtureRequest, fixture: str) -> None:
    """Fail at once when an async fixture serves a plain ``def`` test (its broker would never run), naming the
    synchronous fixture that does the same."""
    if _is_async(request.node) or not isinstance(request.node, pytest.Function):
        return
    names = request.fixturenames
    asked = next((name for name in SYNC_INSTEAD if name in names), fixture)
    pytest.fail(
        f"{asked} is an async fixture: its broker runs on the test's event loop, which a plain `def` test never "
        f"runs, so a client would wait for ever. In a synchronous test use {SYNC_INSTEAD.get(asked, 'minibroker_sync')}"
        " (the broker on its own thread), or make the test `async def`.",
        pytrace=False,
    )


#: the loop factories handed out, by the marker's keywords
_FACTORIES: dict[tuple[tuple[str, Any], ...], Callable[[], Any]] = {}


def parametrize_virtual_time(metafunc: pytest.Metafunc, marker: pytest.Mark) -> None:
    """Give the test's loop scope a :class:`~minibroker.virtual_time.VirtualTimeLoop`: through pytest-asyncio's loop
    factory (>= 1.3: the factory its ``mark.asyncio(loop_factories=...)`` parametrizes, for this test alone), or the
    ``event_loop_policy`` fixture before it."""
    where = f"{metafunc.definition.nodeid}: @pytest.mark.{VIRTUAL_TIME_MARKER}"
    if not _is_async(metafunc.definition):
        raise pytest.UsageError(
            f"{where} is for `async def` tests (their event loop); a synchronous test's broker runs on its own "
            "thread (minibroker_sync), on virtual time already"
        )
    if "event_loop_policy" not in metafunc.fixturenames:
        raise pytest.UsageError(MISSING_ASYNCIO)
    unknown = sorted(set(marker.kwargs) - {"autojump", "autojump_threshold"})
    if marker.args or unknown:
        raise pytest.UsageError(f"{where} takes the keywords autojump and autojump_threshold, not {unknown}")
    import functools

    from pytest_asyncio import plugin

    from minibroker.virtual_time import VirtualTimeLoop, VirtualTimePolicy

    asyncio_marker = metafunc.definition.get_closest_marker("asyncio")
    scope: Any = None if asyncio_marker is None else asyncio_marker.kwargs.get("loop_scope")
    if scope is None:
        scope = metafunc.config.getini("asyncio_default_test_loop_scope") or "function"
    fixture_scope = metafunc.config.getini("asyncio_default_fixture_loop_scope") or scope
    used = sorted(name for name in SYNC_INSTEAD if name in metafunc.fixturenames)
    if used and fixture_scope != scope:
        raise pytest.UsageError(
            f"{where}: {', '.join(used)} would run on pytest-asyncio's {fixture_scope}-scoped loop and the test on "
            f'its {scope}-scoped one, each with its own time: set asyncio_default_fixture_loop_scope = "{scope}" '
            "(or give the test that loop_scope)"
        )
    hidden = getattr(pytest, "HIDDEN_PARAM", "minibroker-virtual-time")  # pytest >= 8.4 hides a lone id
    factory = getattr(plugin, "_asyncio_loop_factory", None)
    if factory is None:  # pytest-asyncio < 1.3: loops come from the event_loop_policy fixture
        metafunc.parametrize("event_loop_policy", [VirtualTimePolicy(**marker.kwargs)], ids=[hidden], scope=scope)
        return
    if metafunc.config.hook.pytest_asyncio_loop_factories.get_hookimpls():
        raise pytest.UsageError(
            f"{where}: this suite chooses its event loops with pytest_asyncio_loop_factories; add "
            "minibroker.virtual_time.VirtualTimeLoop there (a loop factory) instead of the marker"
        )
    name = factory.__name__
    if name not in metafunc.fixturenames:
        metafunc.fixturenames.append(name)
    key = tuple(sorted(marker.kwargs.items()))
    # one factory object per set of keywords: pytest caches a wider-scoped loop by its parameter's equality
    loop_factory = _FACTORIES.setdefault(key, functools.partial(VirtualTimeLoop, **marker.kwargs))
    metafunc.parametrize(name, [loop_factory], ids=[hidden], indirect=True, scope=scope)


#: protocol -> its listener's start function, and the endpoint and virtual-time hold its async fixture gives
_LISTENERS = {
    "stomp": ("minibroker.plugins.stomp", "start_stomp_server", "StompEndpoint", "_handshake_pending"),
    "mqtt": ("minibroker.plugins.mqtt", "start_mqtt_server", "MqttEndpoint", "_mqtt_handshake_pending"),
    "openwire": ("minibroker.plugins.openwire", "start_openwire_server", "OpenWireEndpoint", "_openwire_pending"),
}


class SyncBroker:
    """The test's broker on its own thread and event loop, for synchronous tests and clients (``minibroker_sync``).

    ``url`` is its native TCP address; ``minibroker_stomp_sync``, ``minibroker_mqtt_sync`` and
    ``minibroker_openwire_sync`` add listeners. The
    broker object is not thread-safe: read it through :meth:`call` (a function run on its loop) or the blocking
    helpers, which are :mod:`minibroker.testing`'s: :meth:`wait_for_queue_size`, :meth:`wait_for_consumers`,
    :meth:`dead_letters`, :meth:`assert_dead_lettered`, :meth:`delivery_history`, :meth:`browse`, :meth:`purge`,
    :meth:`advance` (virtual time) and :meth:`capture`.
    """

    def __init__(self, options: BrokerOptions, *, host: str = "127.0.0.1", timeout: float = 30.0) -> None:
        self.options = options
        self.host = host
        #: how long a blocking call waits for the broker's thread before it fails
        self.timeout = timeout
        self.url = ""
        self.loop_errors: list[dict[str, Any]] = []
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(lambda _loop, context: self.loop_errors.append(context))
        self._thread = threading.Thread(target=self._loop.run_forever, name="minibroker-sync", daemon=True)
        self._broker: Broker | None = None
        self._servers: list[Any] = []

    def __repr__(self) -> str:
        return f"<SyncBroker {self.url or 'stopped'}>"

    @property
    def broker(self) -> Broker:
        """The broker object: read it only inside :meth:`call`."""
        assert self._broker is not None, "the broker is not started"
        return self._broker

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the broker's loop and return its result (blocks this thread)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(self.timeout)

    def call(self, function: Callable[..., T], *args: Any) -> T:
        """``function(broker, *args)`` on the broker's loop; its result (blocks this thread)."""

        async def go() -> T:
            return function(self.broker, *args)

        return self.run(go())

    def start(self) -> SyncBroker:
        from minibroker.plugins.server.tcp import start_server

        from ._pytest_fixtures import _make_broker, _tls_context

        self._thread.start()

        async def open_() -> None:
            self._broker = _make_broker(self.options)
            await self._broker.start()
            server = await start_server(self._broker, self.host, 0, ssl=_tls_context(self.options))
            self._servers.append(server)
            self.url = server.url

        self.run(open_())
        return self

    def listen(self, protocol: str) -> StompEndpoint | MqttEndpoint | OpenWireEndpoint:
        """A STOMP, MQTT or OpenWire listener on this broker (``protocol``: ``"stomp"``, ``"mqtt"`` or
        ``"openwire"``), closed with it; it holds virtual time as its async fixture does."""
        import importlib

        from . import _pytest_fixtures as fixtures

        if protocol not in _LISTENERS:
            from minibroker.errors import InvalidConfiguration

            raise InvalidConfiguration(f"no listener for {protocol!r}: {', '.join(_LISTENERS)}", protocol=protocol)
        module, start_name, endpoint_name, pending_name = _LISTENERS[protocol]
        start: Any = getattr(importlib.import_module(module), start_name)  # only the protocol asked for is imported
        endpoint: Any = getattr(fixtures, endpoint_name)
        pending: Callable[[Any], Any] = getattr(fixtures, pending_name)
        _tls_context = fixtures._tls_context

        async def open_() -> Any:
            from minibroker import ManualClock

            server = await start(self.broker, self.host, 0, ssl=_tls_context(self.options))
            self._servers.insert(0, server)
            if isinstance(self.broker.clock, ManualClock):
                self.broker.clock.hold_while(pending(server))
            return endpoint(server.host, server.port, cast("Broker", self), server, tls=self.options.tls is not None)

        return cast("StompEndpoint | MqttEndpoint | OpenWireEndpoint", self.run(open_()))

    def stop(self) -> None:
        async def close() -> None:
            for server in self._servers:
                await server.close()
            if self._broker is not None:
                await self._broker.stop()

        try:
            if self._thread.is_alive():
                self.run(close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(self.timeout)
            if not self._thread.is_alive():
                self._loop.close()

    # -- the in-process assertions, blocking -------------------------------------------------------------------------

    def wait_for_queue_size(self, queue: str, size: int, *, timeout: float = 10.0) -> None:
        """:func:`minibroker.testing.wait_for_queue_size`, from this thread."""
        from minibroker.testing import wait_for_queue_size

        self.run(wait_for_queue_size(self.broker, queue, size, timeout=timeout))

    def wait_for_consumers(self, queue: str, count: int, *, timeout: float = 10.0) -> None:
        """:func:`minibroker.testing.wait_for_consumers`, from this thread."""
        from minibroker.testing import wait_for_consumers

        self.run(wait_for_consumers(self.broker, queue, count, timeout=timeout))

    def dead_letters(self, queue: str | None = None) -> list[DeadLetter]:
        """:func:`minibroker.testing.dead_letters`."""
        from minibroker.testing import dead_letters

        return self.call(dead_letters, queue)

    def assert_dead_lettered(self, message_id: str, *, cause_contains: str | None = None) -> DeadLetter:
        """:func:`minibroker.testing.assert_dead_lettered`."""
        from minibroker.testing import assert_dead_lettered

        return self.call(lambda broker: assert_dead_lettered(broker, message_id, cause_contains=cause_contains))

    def delivery_history(self, message_id: str) -> DeliveryHistory:
        """:func:`minibroker.testing.delivery_history`."""
        from minibroker.testing import delivery_history

        return self.call(delivery_history, message_id)

    def browse(self, queue: str) -> list[Message]:
        """The messages of ``queue``, oldest first, taking none."""
        return self.call(lambda broker: broker.queue(queue).browse())

    def size(self, queue: str) -> int:
        """How many messages ``queue`` holds (in flight included)."""
        size: int = self.call(lambda broker: broker.queue(queue).size)
        return size

    def purge(self, queue: str = ">") -> int:
        """Empty ``queue`` (a wildcard: ``>`` is every queue) as an operator; how many messages went."""
        count: int = self.call(lambda broker: broker.purge(queue))
        return count

    def advance(self, seconds: float) -> None:
        """Move the broker's virtual clock ``seconds`` ahead, firing its timers (needs virtual time)."""
        from minibroker import ManualClock

        clock = self.call(lambda broker: broker.clock)
        if not isinstance(clock, ManualClock):
            raise pytest.UsageError("advance needs virtual time: remove @pytest.mark.minibroker(virtual_time=False)")
        self.run(clock.advance(seconds))

    def capture(self, pattern: str, *, include_advisories: bool = False) -> SyncCapture:
        """What any client publishes to ``pattern`` from now on (:func:`minibroker.plugins.capture.start_capture`)."""
        from .capture import start_capture

        return SyncCapture(self, self.run(start_capture(self.broker, pattern, include_advisories=include_advisories)))


class SyncCapture:
    """A :class:`~minibroker.plugins.capture.Capture` read from a synchronous test."""

    def __init__(self, owner: SyncBroker, capture: Capture) -> None:
        self._owner = owner
        self._capture = capture

    @property
    def records(self) -> list[Captured]:
        """What came so far, in arrival order (a copy)."""
        return self._owner.call(lambda _broker: list(self._capture.records))

    def wait(self, count: int, *, timeout: float = 10.0) -> list[Captured]:
        """The first ``count`` records, once that many have come; fails after ``timeout`` seconds."""
        return self._owner.run(self._capture.wait(count, timeout=timeout))

    def publish(self, topic: str, body: str | bytes, **properties: Any) -> None:
        """:meth:`Capture.publish <minibroker.plugins.capture.Capture.publish>`, from this thread."""
        self._owner.run(self._capture.publish(topic, body, **properties))


def sync_broker(request: pytest.FixtureRequest) -> Iterator[SyncBroker]:
    """The body of ``minibroker_sync``: the broker started on its thread, checked and stopped after the test."""
    from ._pytest_fixtures import _note_broker, _options, _setting, _teardown_report

    if _is_async(request.node):
        pytest.fail(
            "minibroker_sync is for plain `def` tests; an `async def` test uses minibroker (and minibroker_stomp, "
            "minibroker_mqtt, minibroker_openwire), on its own event loop",
            pytrace=False,
        )
    options = _options(request)
    owner = SyncBroker(options, host=_setting(request.config, "host") or "127.0.0.1").start()
    _note_broker(request, "minibroker_sync", owner.broker)
    try:
        yield owner
        report = owner.call(lambda broker: _teardown_report(broker, options, owner.loop_errors))
    finally:
        owner.stop()
    if report is not None:
        pytest.fail(report, pytrace=False)
