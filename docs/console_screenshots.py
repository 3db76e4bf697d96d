"""Render the screenshots of docs/console.md: a broker with a few queues, a dead-lettered message, a client with
consumers and producers, a scheduled job, and the console in headless chromium at 1280x800 (Debian's chromium and
chromium-driver, selenium from the ``test`` extra); then the same dead letter in a ``--minibroker-report`` page.

Run from the checkout: ``.venv/bin/python docs/console_screenshots.py`` writes ``docs/images/console-*.png``.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

OUT = Path(__file__).resolve().parent / "images"


async def _fill(broker: object) -> None:
    from minibroker.client import AckMode, RedeliveryPolicy, connect

    policy = RedeliveryPolicy(maximum_redeliveries=2, initial_redelivery_delay=0.0)
    async with await connect(broker, redelivery_policy=policy) as conn:  # type: ignore[arg-type]
        session = await conn.create_session()
        orders = await session.create_producer("orders")
        for i in range(12):
            await orders.send(f'{{"order": {1000 + i}, "amount": {17 * i + 3}}}', properties={"region": "eu"})
        await (await session.create_producer("invoices")).send("invoice 1")
        await (await session.create_producer("payments")).send("card declined", properties={"attempt": 1})
        tx = await conn.create_session(AckMode.SESSION_TRANSACTED)
        consumer = await tx.create_consumer("payments")
        for _ in range(3):
            assert await consumer.receive(timeout=5) is not None
            await tx.rollback()
        await consumer.close()


async def _client(broker: object) -> Any:
    """A client that stays connected while the pages are shot: consumers, producers, a job in the scheduler."""
    from minibroker.client import connect

    conn = await connect(broker, client_id="billing-service")  # type: ignore[arg-type]
    session = await conn.create_session()
    await session.create_consumer("invoices", selector="total > 100")
    await session.create_durable_subscriber("topic://prices.eu", "price-watch")
    reminders = await session.create_producer("reminders")
    await session.create_producer("invoices")
    await reminders.send(
        "send the monthly statement",
        properties={"AMQ_SCHEDULED_DELAY": 3_600_000, "AMQ_SCHEDULED_PERIOD": 86_400_000, "AMQ_SCHEDULED_REPEAT": 30},
    )
    return conn


def _report_page(broker: Any) -> str:
    """A ``--minibroker-report`` page for a failed test that used ``broker``, written to a temporary file."""
    from minibroker.plugins.report import failed_test_section, render_report

    failure = (
        "    async def test_a_declined_card_is_retried(minibroker, minibroker_connection):\n"
        "        ...\n"
        '>       assert minibroker.queue("payments").size == 1\n'
        "E       assert 0 == 1"
    )
    section = failed_test_section(
        "tests/test_payments.py::test_a_declined_card_is_retried", [("call", failure)], [("minibroker", broker)]
    )
    with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False, encoding="utf-8") as out:
        out.write(render_report([section]))
    return out.name


def _shoot(url: str, report: str) -> None:
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,800"):
        options.add_argument(argument)
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(options=options, service=service)
    wait = WebDriverWait(driver, 10)
    try:
        driver.get(url)
        wait.until(lambda d: d.find_elements(By.ID, "queues"))
        driver.save_screenshot(str(OUT / "console-destinations.png"))
        driver.get(f"{url}#/queue/orders")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#messages tbody tr"))
        driver.save_screenshot(str(OUT / "console-queue.png"))
        driver.get(f"{url}#/queue/ActiveMQ.DLQ")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#messages tbody td.mono a"))
        driver.find_element(By.CSS_SELECTOR, "#messages tbody td.mono a").click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#timeline li"))
        driver.execute_script("document.getElementById('body').scrollIntoView()")
        driver.save_screenshot(str(OUT / "console-timeline.png"))
        driver.get(f"{url}#/consumers")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#consumers tbody tr"))
        driver.save_screenshot(str(OUT / "console-consumers.png"))
        driver.get(f"{url}#/scheduled")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#scheduled tbody tr"))
        driver.save_screenshot(str(OUT / "console-scheduled.png"))
        driver.get(Path(report).as_uri())
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "details.journey"))
        driver.execute_script("document.querySelector('details.journey').scrollIntoView()")
        driver.save_screenshot(str(OUT / "pytest-report.png"))
    finally:
        driver.quit()


async def main() -> int:
    from minibroker import Broker
    from minibroker.plugins.http import start_http_server

    OUT.mkdir(exist_ok=True)
    async with Broker(name="localhost", scheduler_support=True) as broker:
        server = await start_http_server(broker)
        async with server:
            await _fill(broker)
            report = _report_page(broker)
            client = await _client(broker)
            try:
                await asyncio.to_thread(_shoot, server.url, report)
            finally:
                await client.close()
                Path(report).unlink()
    shots = sorted(p.name for p in OUT.glob("*.png") if p.name.startswith(("console-", "pytest-")))
    print(f"wrote {', '.join(shots)} in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
