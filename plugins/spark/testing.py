"""Testing Spark jobs against minibroker: a broker on TCP in its own thread, and a session-wide local SparkSession.

Why a thread: Spark runs data sources in other processes, which reach the broker over TCP only, and Spark's calls
(``collect()``, ``awaitTermination()``) block the calling thread, so a broker on the test's own event loop would
never get to answer. :class:`ThreadedBroker` runs a :class:`~minibroker.Broker` and its TCP server on an event loop
of its own, in a daemon thread; tests talk to it with plain, blocking calls.

Fixtures (registered by minibroker's pytest plugin; nothing here imports pyspark until a fixture runs):

* ``minibroker_spark``: one local SparkSession for the whole test session (``local[2,2]``: two cores, one retry per
  failed task as on a cluster; UTC; no UI; quiet logs), with the ``minibroker`` format registered and the Python
  workers warmed up. Skipped, with the reason, when ``java`` or pyspark/pyarrow are missing.
* ``threaded_minibroker``: a fresh :class:`ThreadedBroker` per test (``.url`` for Spark's ``url`` option).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import itertools
import os
import shutil
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import pytest

from minibroker import Broker, BrokerInfo, EpochSource, PublishResult, RangeEntry, RealClock
from minibroker.message import Destination, Message, PropertyValue

__all__ = [
    "SPARK_CONF",
    "ThreadedBroker",
    "build_spark_session",
    "minibroker_spark",
    "spark_unavailable",
    "threaded_minibroker",
]

T = TypeVar("T")

#: the session settings for tests (measured in the project's Spark notes): small, local, quiet, UTC
SPARK_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "2",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
    "spark.log.level": "ERROR",
    "spark.sql.streaming.stopTimeout": "10s",
}


class ThreadedBroker:
    """A broker listening on ``host:port`` (0: a free port), driven by an event loop in its own daemon thread.

    ``with ThreadedBroker() as tb:`` starts and stops it. Reach the broker only through :meth:`call` (a function run
    on the broker's loop) or :meth:`run` (a coroutine), or the helpers built on them; the broker is not thread-safe.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        epoch_source: EpochSource | None = None,
        name: str = "minibroker",
        history_limit: int = 10_000,
        timeout: float = 30.0,
        idle_timeout: float | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.epoch_source = epoch_source
        self.name = name
        self.history_limit = history_limit
        self.timeout = timeout
        #: the listener's idle timeout (None: its default), for tests of clients that go quiet
        self.idle_timeout = idle_timeout
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._broker: Broker | None = None
        self._server: Any = None
        self._ids = itertools.count(1)

    def __repr__(self) -> str:
        return f"<ThreadedBroker {self.url or 'stopped'}>"

    # -- lifecycle --------------------------------------------------------------------------------------------------

    def start(self) -> ThreadedBroker:
        if self._loop is not None:
            return self
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name="minibroker-thread", daemon=True)
        self._thread.start()
        self.run(self._open())
        return self

    def _run_loop(self) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _open(self) -> None:
        from minibroker.plugins.server.tcp import start_server

        broker = Broker(clock=RealClock(), name=self.name, history_limit=self.history_limit)
        broker.epoch_source = self.epoch_source
        await broker.start()
        self._broker = broker
        if self.idle_timeout is None:
            self._server = await start_server(broker, self.host, self.port)
        else:
            self._server = await start_server(broker, self.host, self.port, idle_timeout=self.idle_timeout)
        self.url = self._server.url

    async def _close(self) -> None:
        if self._server is not None:
            await self._server.close()
        if self._broker is not None:
            await self._broker.stop()

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            self.run(self._close())
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(self.timeout)
            self._loop = self._thread = None

    def __enter__(self) -> ThreadedBroker:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- reaching the broker ----------------------------------------------------------------------------------------

    @property
    def broker(self) -> Broker:
        """The broker object: use it only inside :meth:`call` or :meth:`run`."""
        if self._broker is None:
            raise RuntimeError("the threaded broker is not started")
        return self._broker

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the broker's loop and return its result (blocking this thread)."""
        if self._loop is None:
            coro.close()
            raise RuntimeError("the threaded broker is not started")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self.timeout)

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call ``fn(*args, **kwargs)`` on the broker's loop and return its result."""
        if self._loop is None:
            raise RuntimeError("the threaded broker is not started")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def go() -> None:
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:
                future.set_exception(exc)

        self._loop.call_soon_threadsafe(go)
        return future.result(self.timeout)

    # -- helpers ----------------------------------------------------------------------------------------------------

    def send(
        self,
        queue: str,
        bodies: Sequence[str | bytes],
        *,
        properties: Sequence[Mapping[str, PropertyValue]] | Mapping[str, PropertyValue] | None = None,
        priority: int = 4,
        persistent: bool = True,
    ) -> list[str]:
        """Send ``bodies`` to ``queue`` (``properties``: one mapping for all, or one per body); their ids."""
        dest = Destination.parse(queue)
        if properties is None or isinstance(properties, Mapping):
            per = [dict(properties or {})] * len(bodies)
        else:
            per = [dict(p) for p in properties]
        ids = [f"ID:threaded:{next(self._ids)}" for _ in bodies]

        def publish() -> PublishResult:
            now = self.broker.clock.now()
            messages = [
                Message(mid, dest, body, props, priority, persistent, now, producer_id="threaded")
                for mid, body, props in zip(ids, bodies, per, strict=True)
            ]
            return self.broker.publish(messages)

        self.call(publish)
        return ids

    def read(self, queue: str, from_seq: int = 0, to_seq: int | None = None) -> list[RangeEntry]:
        """The messages of ``queue`` not yet acked (non-destructive), as ``(seq, message, redelivery_counter)``."""
        return list(self.call(lambda: self.broker.read_range(queue, from_seq, to_seq).entries))

    def size(self, queue: str) -> int:
        return self.call(lambda: self.broker.queue(queue).size)

    def info(self, queues: Sequence[str] | None = None, cursor: str | None = None) -> BrokerInfo:
        return self.call(self.broker.broker_info, queues, cursor)

    @property
    def epoch(self) -> str:
        return self.call(lambda: self.broker.epoch)

    def restart(self) -> None:
        """Restart the broker (as a process restart: every message is lost, a new epoch); the URL stays."""
        self.run(self.broker.restart())


# -- Spark ----------------------------------------------------------------------------------------------------------


def spark_unavailable() -> str | None:
    """Why a local Spark cannot run here (None: it can)."""
    for module in ("pyspark", "pyarrow"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install 'minibroker[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "java is not installed (Spark needs Java 17 or 21)"
    return None


def build_spark_session(
    app_name: str = "minibroker-tests", master: str = "local[2,2]", conf: Mapping[str, str] | None = None
) -> Any:
    """A local SparkSession with :data:`SPARK_CONF` (plus ``conf``) whose Python workers use this interpreter, with
    the ``minibroker`` format registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from . import register

    # the workers start in this directory: without PYTHONSAFEPATH, a source folder named like an installed package
    # (as in minibroker's own repository) would shadow it. Given to the workers alone: set in this process's
    # environment, every later subprocess of the test run inherited it, and a script's sibling imports broke
    builder = SparkSession.builder.master(master).appName(app_name).config("spark.executorEnv.PYTHONSAFEPATH", "1")
    for key, value in {**SPARK_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark


@pytest.fixture(scope="session")
def minibroker_spark() -> Iterator[Any]:
    """One local SparkSession for the test session, ``minibroker`` format registered, workers warmed up."""
    reason = spark_unavailable()
    if reason is not None:
        pytest.skip(reason)
    spark = build_spark_session()
    try:
        with ThreadedBroker() as tb:  # pay the Python workers' cold start once, not in the first test
            tb.send("warm.up", ["x"])
            spark.read.format("minibroker").option("url", tb.url).option("destinations", "warm.up").load().collect()
        yield spark
    finally:
        spark.stop()


@pytest.fixture
def threaded_minibroker() -> Iterator[ThreadedBroker]:
    """A broker on a free TCP port of 127.0.0.1, in its own thread: ``.url`` for Spark, ``.send()``, ``.read()``."""
    with ThreadedBroker() as tb:
        yield tb
