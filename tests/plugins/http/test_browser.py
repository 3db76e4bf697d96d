"""The web console in a real browser (Debian's chromium and chromium-driver, driven by selenium): a queue fills
live, a dead-lettered message's timeline and its retry, purge, send, hostile names and bodies shown as text, the
connections, consumers, producers and scheduled jobs, and the keyboard alone.

The broker and its HTTP listener run on an event loop in a thread of their own, so the browser's blocking calls
never stop them (``served`` and ``browser``, in conftest.py). Waits are selenium's (a condition polled until it
holds, with a timeout), never fixed sleeps."""

from __future__ import annotations

from typing import Any

from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from minibroker import Broker
from minibroker.client import AckMode, Connection, RedeliveryPolicy, connect
from minibroker.plugins.auth import AuthorizationEntry, AuthPlugin, User
from minibroker.plugins.server.tcp import start_server

from .conftest import Served  # type: ignore[import-not-found]

HOSTILE = "<img src=x onerror=alert(1)>"


def wait(driver: Any, condition: Any, timeout: float = 10.0) -> Any:
    """Until ``condition`` holds; an element the page's live redraw replaced meanwhile is looked for again."""
    from selenium.common.exceptions import StaleElementReferenceException

    return WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(condition)


def click(driver: Any, element_id: str) -> None:
    """Click the element of that id, found again if the page redrew it between finding and clicking."""
    from selenium.common.exceptions import StaleElementReferenceException

    def clicked(d: Any) -> bool:
        try:
            d.find_element(By.ID, element_id).click()
        except StaleElementReferenceException:
            return False
        return True

    wait(driver, clicked)


def text_of(driver: Any, css: str) -> str:
    found = driver.find_elements(By.CSS_SELECTOR, css)
    return str(found[0].text) if found else ""


def confirm(driver: Any) -> None:
    wait(driver, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is not None)
    driver.find_element(By.ID, "confirm-ok").click()


def no_alert(driver: Any) -> bool:
    try:
        driver.switch_to.alert  # noqa: B018
    except NoAlertPresentException:
        return True
    return False


def test_a_queue_fills_live_and_is_purged(served: Any, browser: Any) -> None:
    browser.get(served.server.url)
    wait(browser, lambda d: d.find_elements(By.ID, "no-queues") or d.find_elements(By.ID, "queues"))
    served.send("orders", "a", "b", "c")
    # the page polls: the row appears and counts three without a reload
    wait(browser, lambda d: text_of(d, 'tr[data-queue="orders"] td.size') == "3")
    browser.find_element(By.LINK_TEXT, "orders").click()
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#messages tbody tr")) == 3)
    browser.find_element(By.ID, "purge").click()
    confirm(browser)
    wait(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "#messages tbody tr"))
    assert served.broker.queue("orders").size == 0


def test_cancel_leaves_the_queue_alone(served: Any, browser: Any) -> None:
    served.send("keep", "x")
    browser.get(f"{served.server.url}#/queue/keep")
    wait(browser, lambda d: d.find_elements(By.ID, "purge"))
    browser.find_element(By.ID, "purge").click()
    wait(browser, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is not None)
    browser.find_element(By.ID, "confirm-cancel").click()
    wait(browser, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is None)
    assert served.broker.queue("keep").size == 1


def test_send_from_the_form(served: Any, browser: Any) -> None:
    browser.get(f"{served.server.url}#/send")
    wait(browser, lambda d: d.find_elements(By.ID, "send-form"))
    browser.find_element(By.ID, "send-destination").send_keys("from-form")
    browser.find_element(By.ID, "send-body").send_keys("typed in a browser")
    browser.find_element(By.ID, "send-properties").send_keys("colour=green")
    browser.find_element(By.ID, "send-submit").click()
    wait(browser, lambda d: "sent" in text_of(d, "#status"))
    [message] = served.broker.queue("from-form").browse()
    assert message.body == "typed in a browser" and message.properties == {"colour": "green"}


def test_hostile_names_and_bodies_are_text(served: Any, browser: Any) -> None:
    served.send(HOSTILE, HOSTILE, properties={"p": HOSTILE})
    browser.get(served.server.url)
    wait(browser, lambda d: HOSTILE in text_of(d, "#queues"))
    assert not browser.find_elements(By.CSS_SELECTOR, "main img") and no_alert(browser)
    browser.find_element(By.LINK_TEXT, HOSTILE).click()
    wait(browser, lambda d: text_of(d, "#queue-name") == HOSTILE)
    assert HOSTILE in text_of(browser, "#messages")
    browser.find_element(By.CSS_SELECTOR, "#messages tbody td.mono a").click()
    wait(browser, lambda d: text_of(d, "#body") == HOSTILE)
    assert HOSTILE in text_of(browser, "#properties")
    assert not browser.find_elements(By.CSS_SELECTOR, "main img") and no_alert(browser)


def test_a_dead_letter_timeline_and_its_retry(served: Any, browser: Any) -> None:
    """A message rolled back past its redeliveries lands on the DLQ; its page draws the journey, Retry sends it
    back to its queue."""

    async def poison() -> str:
        policy = RedeliveryPolicy(maximum_redeliveries=1, initial_redelivery_delay=0.0)
        async with await connect(served.broker, redelivery_policy=policy) as conn:
            producer = await (await conn.create_session()).create_producer("payments")
            await producer.send("poison")
            session = await conn.create_session(AckMode.SESSION_TRANSACTED)
            consumer = await session.create_consumer("payments")
            message_id = ""
            for _ in range(2):
                got = await consumer.receive(timeout=5)
                assert got is not None
                message_id = got.message_id
                await session.rollback()
            await consumer.close()
            await served.broker.settled()
            return message_id

    message_id = served.run(poison())
    assert served.broker.queue("ActiveMQ.DLQ").size == 1
    browser.get(f"{served.server.url}#/queue/ActiveMQ.DLQ")
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#messages tbody td.mono a"))
    browser.find_element(By.CSS_SELECTOR, "#messages tbody td.mono a").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#timeline li"))
    events = [li.get_attribute("data-event") for li in browser.find_elements(By.CSS_SELECTOR, "#timeline li")]
    assert events[0] == "sent" and "dispatched" in events and "dead-lettered" in events
    assert text_of(browser, "#message-id") == message_id
    browser.find_element(By.ID, "retry").click()
    confirm(browser)
    wait(browser, lambda d: "/queue/ActiveMQ.DLQ" in d.current_url and not d.find_elements(By.ID, "timeline"))
    assert served.broker.queue("ActiveMQ.DLQ").size == 0
    assert [m.body for m in served.broker.queue("payments").browse()] == ["poison"]


def test_readable_on_a_narrow_window(served: Any, browser: Any) -> None:
    served.send("narrow", "x")
    browser.set_window_size(420, 800)
    try:
        browser.get(served.server.url)
        wait(browser, lambda d: text_of(d, 'tr[data-queue="narrow"] td.size') == "1")
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= 440  # no sideways scrolling of the page itself
    finally:
        browser.set_window_size(1280, 800)


def test_connections_consumers_producers_and_scheduled_jobs(served: Any, browser: Any) -> None:
    """A client's connection, its consumers and producers with their destinations, and a job waiting in the
    scheduler each have a page; a hostile destination name and body are shown as text there too."""

    async def open_client() -> Connection:
        conn = await connect(served.broker, client_id="billing-app")
        session = await conn.create_session()
        await session.create_consumer("invoices", selector="total > 100")
        await session.create_consumer(HOSTILE)
        await session.create_durable_subscriber("topic://prices", "ticker")
        producer = await session.create_producer("invoices")
        await session.create_producer()
        await producer.send(HOSTILE, properties={"AMQ_SCHEDULED_DELAY": 3_600_000, "AMQ_SCHEDULED_REPEAT": 3})
        return conn

    conn = served.run(open_client())
    try:
        browser.get(f"{served.server.url}#/connections")
        wait(browser, lambda d: "billing-app" in text_of(d, "#connections"))
        assert browser.find_element(By.CSS_SELECTOR, 'nav a[href="#/connections"]').get_attribute("aria-current")

        browser.find_element(By.LINK_TEXT, "Consumers").click()
        wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#consumers tbody tr")) == 3)
        consumers = text_of(browser, "#consumers")
        assert "total > 100" in consumers and "durable ticker" in consumers and "topic://prices" in consumers
        assert f"queue://{HOSTILE}" in consumers
        assert not browser.find_elements(By.CSS_SELECTOR, "main img") and no_alert(browser)

        browser.find_element(By.LINK_TEXT, "Producers").click()
        wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#producers tbody tr")) == 2)
        assert "anonymous" in text_of(browser, "#producers")
        # a queue's name is a link to its page
        browser.find_element(By.LINK_TEXT, "queue://invoices").click()
        wait(browser, lambda d: text_of(d, "#queue-name") == "invoices")

        browser.find_element(By.LINK_TEXT, "Scheduled").click()
        wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#scheduled tbody tr")) == 1)
        scheduled = text_of(browser, "#scheduled")
        assert "3600000" in scheduled and "queue://invoices" in scheduled and HOSTILE in scheduled
        assert not browser.find_elements(By.CSS_SELECTOR, "main img") and no_alert(browser)
    finally:
        served.run(conn.close())
    # the page follows the broker: the client is gone on the next poll
    browser.find_element(By.LINK_TEXT, "Connections").click()
    wait(browser, lambda d: d.find_elements(By.ID, "no-connections"))


def test_the_keyboard_reaches_the_navigation_and_purge_and_escape_cancels(served: Any, browser: Any) -> None:
    """Tab goes through the navigation to the Purge button, Enter opens the confirmation, Escape closes it and
    nothing is purged."""
    served.send("kbd", "x")
    browser.get(f"{served.server.url}#/queue/kbd")
    wait(browser, lambda d: d.find_elements(By.ID, "purge"))
    # a fresh load: the focus is on the document, before the first link
    reached: list[str] = []
    for _ in range(30):
        ActionChains(browser).send_keys(Keys.TAB).perform()
        focused = browser.switch_to.active_element
        reached.append(focused.get_attribute("id") or focused.get_attribute("href") or focused.tag_name)
        if focused.get_attribute("id") == "purge":
            break
    assert reached[-1] == "purge", reached
    nav = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "nav a")]
    assert set(nav) <= set(reached), reached
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    wait(browser, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is not None)
    assert browser.switch_to.active_element.get_attribute("id") == "confirm-cancel"
    ActionChains(browser).send_keys(Keys.ESCAPE).perform()
    wait(browser, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is None)
    assert served.broker.queue("kbd").size == 1


async def jobs_left(served: Any) -> int:
    connection = served.broker.connect()
    try:
        return len(connection.scheduled_jobs())
    finally:
        connection.close()


def visible_rows(driver: Any, table: str) -> list[str]:
    """The first cell's text of each row the filter leaves shown, in the order the page draws them."""
    rows = driver.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr")
    return [str(r.find_element(By.CSS_SELECTOR, "td").text) for r in rows if r.is_displayed()]


def test_a_url_with_credentials_lists_and_acts(browser: Any) -> None:
    """Opened as http://user:password@host:port/ (a URL a harness or a bookmark carries), the page's reads and its
    actions work: the script builds its URLs on location.origin, never on a base with credentials (issue 43)."""
    users = {"admin": User("pw", {"admins"})}
    served = Served(
        lambda: Broker(plugins=[AuthPlugin(users, [AuthorizationEntry(">", "admins", "admins", "admins")])])
    )
    try:
        served.send("orders", "a", "b", "c")
        browser.get(f"http://admin:pw@127.0.0.1:{served.server.port}/#/queue/orders")
        wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#messages tbody tr")) == 3)
        first = served.broker.queue("orders").browse()[0].message_id
        browser.find_element(By.ID, f"delete-{first}").click()  # a delete from the queue's listing
        confirm(browser)
        wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#messages tbody tr")) == 2)
        assert [m.body for m in served.broker.queue("orders").browse()] == ["b", "c"]
        assert "failed" not in text_of(browser, "#status")
    finally:
        served.close()


def test_listings_filter_and_sort(served: Any, browser: Any) -> None:
    """Each listing has a filter box and sortable headings; both hold across the page's live redraws."""
    served.send("alpha", "1", "2")
    served.send("beta", "1", "2", "3")
    served.send("gamma", "1")
    browser.get(served.server.url)
    wait(browser, lambda d: visible_rows(d, "queues") == ["alpha", "beta", "gamma"])
    browser.find_element(By.ID, "filter-queues").send_keys("MM")
    wait(browser, lambda d: visible_rows(d, "queues") == ["gamma"])
    assert "1 of 3 shown" in text_of(browser, "#count-queues")
    browser.find_element(By.ID, "filter-queues").clear()
    browser.find_element(By.ID, "filter-queues").send_keys("a")  # each name has an a
    click(browser, "sort-queues-1")
    wait(browser, lambda d: visible_rows(d, "queues") == ["gamma", "alpha", "beta"])
    click(browser, "sort-queues-1")
    wait(browser, lambda d: visible_rows(d, "queues") == ["beta", "alpha", "gamma"])
    wait(
        browser,
        lambda d: d.find_element(By.CSS_SELECTOR, "#queues th[aria-sort]").get_attribute("aria-sort") == "descending",
    )
    served.send("delta", "1", "2", "3", "4")  # the next poll redraws: the order stays the chosen one
    wait(browser, lambda d: visible_rows(d, "queues") == ["delta", "beta", "alpha", "gamma"])


def test_connections_show_protocol_and_address_and_a_job_is_removed(served: Any, browser: Any) -> None:
    """A native TCP client shows as such with its address beside the in-process one; Remove on the Scheduled page
    takes a waiting job out of the scheduler (issue 43)."""
    native = served.run(start_server(served.broker))

    async def clients() -> tuple[Connection, Connection]:
        remote = await connect(native.url, client_id="tcp-app")
        local = await connect(served.broker, client_id="local-app")
        producer = await (await local.create_session()).create_producer("later")
        await producer.send("in an hour", properties={"AMQ_SCHEDULED_DELAY": 3_600_000})
        return remote, local

    remote, local = served.run(clients())
    try:
        browser.get(f"{served.server.url}#/connections")
        wait(browser, lambda d: "tcp-app" in text_of(d, "#connections"))
        browser.find_element(By.ID, "filter-connections").send_keys("native")
        wait(browser, lambda d: len(visible_rows(d, "connections")) == 1)
        row = browser.find_element(By.CSS_SELECTOR, "#connections tbody tr:not([hidden])").text
        assert "tcp-app" in row and "native" in row and "tcp://127.0.0.1:" in row

        browser.find_element(By.LINK_TEXT, "Scheduled").click()
        wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#scheduled tbody tr")) == 1)
        browser.find_element(By.CSS_SELECTOR, "#scheduled tbody button.danger").click()
        confirm(browser)
        wait(browser, lambda d: d.find_elements(By.ID, "no-scheduled"))
        assert served.run(jobs_left(served)) == 0
    finally:
        served.run(remote.close())
        served.run(local.close())
        served.run(native.close())
