"""The HTTP listener's fixtures: a broker without users and its listener on a free port; for the browser tests
(test_browser.py, test_security.py), a broker served from a thread of its own and one headless chromium per module."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

import pytest
import pytest_asyncio

from minibroker import Broker
from minibroker.client import connect
from minibroker.plugins.http import HttpServer, start_http_server

T = TypeVar("T")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
#: a name the browser resolves to this machine, as a DNS-rebinding page's name would be (test_security.py)
REBOUND_NAME = "rebind.attacker.test"


@pytest_asyncio.fixture
async def http() -> AsyncIterator[tuple[Broker, HttpServer]]:
    """A broker without users and its HTTP listener."""
    async with Broker() as broker:
        server = await start_http_server(broker)
        async with server:
            yield broker, server


class Served:
    """A broker and its HTTP listener on an event loop in a background thread (the browser's calls block)."""

    def __init__(self, make_broker: Callable[[], Broker] | None = None) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._make_broker = make_broker or (lambda: Broker(scheduler_support=True))
        self.broker: Broker = self.run(self._start_broker())
        self.server: HttpServer = self.run(start_http_server(self.broker))

    async def _start_broker(self) -> Broker:
        broker = self._make_broker()
        await broker.__aenter__()
        return broker

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout=30)

    def send(self, queue: str, *bodies: str, properties: dict[str, Any] | None = None) -> None:
        async def go() -> None:
            async with await connect(self.broker) as conn:
                producer = await (await conn.create_session()).create_producer(queue)
                for body in bodies:
                    await producer.send(body, properties=properties or {})

        self.run(go())

    def close(self) -> None:
        async def stop() -> None:
            await self.server.close()
            await self.broker.__aexit__(None, None, None)

        self.run(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def served() -> Iterator[Served]:
    running = Served()
    try:
        yield running
    finally:
        running.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless chromium; :data:`REBOUND_NAME` resolves to 127.0.0.1 in it (a rebinding attacker's name)."""
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,800",
        f"--host-resolver-rules=MAP {REBOUND_NAME} 127.0.0.1",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
