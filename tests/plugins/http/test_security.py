"""The HTTP side holds the same line as the other edges (issue 41): operations on one named queue, a message's
history only for its queue, bodies that never run in the console's origin, the Host check against DNS rebinding,
cross-site requests that never consume, REST long polls that ack only what was written, HTTP sockets with their own
limit and deadlines, the console's files behind the login, rights before answers, other connections' temporary
queues, Jolokia bulk requests in turns, and the pytest report with a lone surrogate. The browser cases run in the
real chromium of test_browser.py (conftest.py's ``browser``)."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from pathlib import Path
from typing import Any

import pytest
from support.http_helpers import Answer, read_answer, request, secured_broker
from support.waiting import until

from minibroker import Broker, BrokerConnection, Destination, Message
from minibroker.client import connect
from minibroker.errors import AccessDenied, InvalidDestination
from minibroker.plugins.auth import AuthorizationEntry, AuthPlugin, User
from minibroker.plugins.http import HttpApp, HttpServer, Request, start_http_server
from minibroker.plugins.http.jolokia import MAX_BULK, MAX_POST_SIZE, Jolokia
from minibroker.plugins.http.mbeans import MBeans
from minibroker.plugins.http.parser import RequestHead
from minibroker.plugins.report import failed_test_section, write_report
from minibroker.plugins.server.tcp import start_server

from .conftest import REBOUND_NAME, Served  # type: ignore[import-not-found]

PASSWORD = "pw"
#: ``orders`` administers orders.> (and its dead letters) only; ``admin`` everything; ``writer`` may only write
USERS = {
    "orders": User(PASSWORD, {"orders"}),
    "admin": User(PASSWORD, {"admins"}),
    "writer": User(PASSWORD, {"writers"}),
    "reader": User(PASSWORD, {"readers"}),
}
ENTRIES = [
    AuthorizationEntry(">", read="admins", write="admins", admin="admins"),
    AuthorizationEntry("orders.>", read="orders,readers", write="orders", admin="orders"),
    AuthorizationEntry("DLQ.orders.>", read="orders", write="orders", admin="orders"),
    AuthorizationEntry("inbox", read="admins", write="writers,admins", admin="admins"),
    AuthorizationEntry("topic://ActiveMQ.Advisory.>", read="*", write="*", admin="admins,orders"),
]
QUEUE = "org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName="


def guarded() -> Broker:
    return Broker(plugins=[AuthPlugin(USERS, ENTRIES)])


def basic(user: str, password: str = PASSWORD) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


async def send(broker: Broker, queue: str, *bodies: str) -> list[str]:
    async with await connect(broker) as conn:
        producer = await (await conn.create_session()).create_producer(queue)
        return [str(await producer.send(body)) for body in bodies]


async def raw(server: HttpServer, head: str, body: bytes = b"") -> Answer:
    """One request written as given (its own Host line), on a fresh connection."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        writer.write(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        await writer.drain()
        return await asyncio.wait_for(read_answer(reader), 10)
    finally:
        writer.close()


def get_head(target: str, host: str, *extra: str) -> str:
    return "\n".join([f"GET {target} HTTP/1.1", f"Host: {host}", "Connection: close", *extra, ""])


async def console_post(server: HttpServer, app: HttpApp, user: str, action: str, body: dict[str, Any]) -> Answer:
    headers = {"X-Minibroker-Csrf": app.csrf_token, "Authorization": basic(user)}
    return await request(server, "POST", f"/console/api/{action}", json.dumps(body).encode(), headers)


# -- operations on one named queue (the table's wildcard row) ---------------------------------------------------------


@pytest.mark.parametrize("named", ["*.q", "*.*", "DLQ.*.*", "orders.q,secret.q"])
async def test_remove_message_names_one_queue(named: str) -> None:
    """A user who administers orders.> only names a wildcard or a composite: refused, and secret.q keeps its
    message (today it was authorized as a whole, then expanded over every queue)."""
    async with guarded() as broker:
        [secret] = await send(broker, "secret.q", "salary")
        [dead] = await send(broker, "DLQ.secret.q", "dead salary")
        await send(broker, "orders.q", "mine")
        conn = broker.connect(user="orders", password=PASSWORD, remote=True)
        try:
            for message_id in (secret, dead):
                with pytest.raises(InvalidDestination) as refused:
                    conn.remove_message(named, message_id)
                assert refused.value.destination == named
                with pytest.raises(InvalidDestination):
                    conn.move_message(named, message_id, Destination.queue("orders.loot"))
                with pytest.raises(InvalidDestination):
                    conn.copy_message(named, message_id, Destination.queue("orders.loot"))
                with pytest.raises(InvalidDestination):
                    conn.retry_messages(named, message_id)
        finally:
            conn.close()
        assert broker.queue("secret.q").size == 1 and broker.queue("DLQ.secret.q").size == 1
        assert not broker.has_queue("orders.loot")


async def test_retry_is_authorized_for_where_messages_go_back() -> None:
    """A dead letter whose original destination is secret.q, in a dead-letter queue the user administers: its retry
    is refused (the user may not administer secret.q) and nothing moves."""
    async with guarded() as broker:
        trusted = broker.connect()
        trusted.send(
            Message(
                "ID:dead-1:1:1:1:1",
                Destination.queue("DLQ.orders.x"),
                "salary",
                original_destination=Destination.queue("secret.q"),
            )
        )
        trusted.close()
        conn = broker.connect(user="orders", password=PASSWORD, remote=True)
        try:
            with pytest.raises(AccessDenied):
                conn.retry_messages("DLQ.orders.x")
        finally:
            conn.close()
        assert broker.queue("DLQ.orders.x").size == 1 and not broker.has_queue("secret.q")


async def test_the_console_and_jolokia_name_one_queue() -> None:
    """The same through the console's delete, move, copy and retry, and a wildcard target of a move: 400, nothing
    moves; the named queue itself still works."""
    async with guarded() as broker:
        app = HttpApp(broker)
        server = await start_http_server(broker, handler=app)
        async with server:
            [secret] = await send(broker, "secret.q", "salary")
            [mine] = await send(broker, "orders.q", "mine")
            for action, extra in (("delete", {}), ("move", {"to": "orders.loot"}), ("copy", {"to": "orders.loot"})):
                answer = await console_post(server, app, "orders", action, {"queue": "*.q", "id": secret, **extra})
                assert answer.status == 400 and b"*.q" in answer.body
            answer = await console_post(server, app, "orders", "move", {"queue": "orders.q", "id": mine, "to": "*.q"})
            assert answer.status == 400
            assert broker.queue("secret.q").size == 1 and broker.queue("orders.q").size == 1
            answer = await console_post(server, app, "orders", "delete", {"queue": "orders.q", "id": mine})
            assert answer.status == 200 and answer.json() == {"done": True}


async def test_a_message_history_only_for_the_queue_it_is_on() -> None:
    """A reader of orders.> asks for secret.q's message through a queue it may read, a missing queue or a wildcard:
    nothing of it is shown (today: its whole history). The same user sees its own queue's message."""
    async with guarded() as broker:
        server = await start_http_server(broker)
        async with server:
            [secret] = await send(broker, "secret.q", "salary")
            [mine] = await send(broker, "orders.q", "mine")
            auth = {"Authorization": basic("reader")}
            for queue in ("orders.q", "orders.missing"):
                answer = await request(server, "GET", f"/console/api/message?queue={queue}&id={secret}", b"", auth)
                assert answer.status in (403, 404) and b"salary" not in answer.body and b"sent" not in answer.body
            answer = await request(server, "GET", f"/console/api/message?queue=*.q&id={secret}", b"", auth)
            assert answer.status in (400, 403) and b"sent" not in answer.body
            answer = await request(server, "GET", f"/console/api/message?queue=orders.q&id={mine}", b"", auth)
            assert answer.status == 200 and [h["event"] for h in answer.json()["history"]] == ["sent"]
            conn = broker.connect(user="reader", password=PASSWORD, remote=True)
            try:
                assert conn.message_history("orders.q", secret) == ()
                assert conn.message_history("orders.q", mine) != ()
            finally:
                conn.close()


# -- the authorization matrix's HTTP rows ----------------------------------------------------------------------------

#: one right each on the mx destinations, as in tests/test_authorization_matrix.py
MATRIX_USERS = {
    "none": User(PASSWORD, {"nobody"}),
    "read": User(PASSWORD, {"readers"}),
    "write": User(PASSWORD, {"writers"}),
    "admin": User(PASSWORD, {"admins"}),
}
MATRIX_ENTRIES = [
    AuthorizationEntry(">", read="root", write="root", admin="root"),
    AuthorizationEntry("mx.>", read="readers,admins", write="writers,admins", admin="admins"),
    AuthorizationEntry("topic://ActiveMQ.Advisory.>", read="*", write="*", admin="*"),
]
#: operation -> (the right it needs, the destination forms it is tried on)
HTTP_OPERATIONS = {
    "rest_send": ("write", ("plain", "temporary_other")),
    "rest_consume": ("read", ("plain", "wildcard", "temporary_other")),
    "jolokia_read": ("read", ("plain", "temporary_other")),
    "jolokia_purge": ("admin", ("plain", "temporary_other")),
    "jolokia_add_queue": ("admin", ("plain", "wildcard", "temporary_other")),
    "jolokia_remove_queue": ("admin", ("plain", "wildcard", "temporary_other")),
    "console_browse": ("read", ("plain", "temporary_other")),
    "console_history": ("read", ("plain", "wildcard", "temporary_other")),
    "console_delete": ("admin", ("plain", "wildcard", "temporary_other")),
}


def http_expected(operation: str, form: str, right: str) -> bool:
    """What each user may do: the right itself (or admin, which the entries give read and write too) on a plain
    queue; a wildcard only where ActiveMQ reads one (a consumer), never for an operation on one named queue; another
    connection's temporary queue is anyone's to send to and nobody else's to read or administer here."""
    action = HTTP_OPERATIONS[operation][0]
    if form == "temporary_other":
        return operation == "rest_send"
    if form == "wildcard" and operation != "rest_consume":
        return False
    return right in (action, "admin")


async def try_http(server: HttpServer, app: HttpApp, operation: str, name: str, message_id: str, right: str) -> bool:
    auth = {"Authorization": basic(right)}
    if operation == "rest_send":
        form = {**auth, "Content-Type": "application/x-www-form-urlencoded"}
        return (await request(server, "POST", f"/api/message/{name}?type=queue", b"body=x", form)).status == 200
    if operation == "rest_consume":
        answer = await request(server, "GET", f"/api/message/{name}?type=queue&readTimeout=200", b"", auth)
        return answer.status in (200, 204)
    if operation in ("jolokia_read", "jolokia_purge"):
        path = f"read/{QUEUE}{name}/QueueSize" if operation == "jolokia_read" else f"exec/{QUEUE}{name}/purge()"
        return bool((await request(server, "GET", f"/api/jolokia/{path}", b"", auth)).json()["status"] == 200)
    if operation in ("jolokia_add_queue", "jolokia_remove_queue"):
        verb = "addQueue" if operation == "jolokia_add_queue" else "removeQueue"
        path = f"exec/org.apache.activemq:type=Broker,brokerName=localhost/{verb}/{name}"
        return bool((await request(server, "GET", f"/api/jolokia/{path}", b"", auth)).json()["status"] == 200)
    if operation == "console_browse":
        return (await request(server, "GET", f"/console/api/messages?queue={name}", b"", auth)).status == 200
    if operation == "console_history":
        answer = await request(server, "GET", f"/console/api/message?queue={name}&id={message_id}", b"", auth)
        return answer.status == 200 and bool(answer.json()["history"])
    answer = await console_post(server, app, right, "delete", {"queue": name, "id": message_id})
    return answer.status == 200 and answer.json() == {"done": True}


async def test_the_http_rows_of_the_authorization_matrix() -> None:
    """Every HTTP operation (REST send and consume, Jolokia read, purge, addQueue and removeQueue, the console's
    browse, history and delete) by each of four users on a plain queue, a wildcard and another connection's
    temporary queue: what each may do, cell by cell (today a wildcard delete or history and another connection's
    temporary queue went through)."""
    async with Broker(plugins=[AuthPlugin(MATRIX_USERS, MATRIX_ENTRIES)]) as broker:
        app = HttpApp(broker)
        server = await start_http_server(broker, handler=app)
        async with server:
            owner = broker.connect()
            temporary = owner.create_temporary(Destination.queue("x").kind)
            wrong = []
            for operation, (_, forms) in HTTP_OPERATIONS.items():
                for form in forms:
                    for right in MATRIX_USERS:
                        [message_id] = await send(broker, "mx.a", "m")
                        if form == "temporary_other":
                            message_id = f"ID:temp-{operation}-{right}:1:1:1:1"
                            owner.send(Message(message_id, temporary, "t"))
                        name = {"plain": "mx.a", "wildcard": "mx.*", "temporary_other": temporary.name}[form]
                        allowed = await try_http(server, app, operation, name, message_id, right)
                        if allowed != http_expected(operation, form, right):
                            wrong.append((operation, form, right, allowed))
            owner.close()
            assert wrong == []


# -- rights before answers, and the console's files behind the login ---------------------------------------------------


async def test_retry_checks_rights_before_it_says_anything() -> None:
    """A reader asks to retry a queue that is not a dead-letter queue: refused for its rights (403), not told what
    the queue is (today: 400 "not a dead-letter queue" in the console, Jolokia's "only on Dead Letter Queues")."""
    async with guarded() as broker:
        app = HttpApp(broker)
        server = await start_http_server(broker, handler=app)
        async with server:
            await send(broker, "orders.q", "x")
            answer = await console_post(server, app, "reader", "retry", {"queue": "orders.q"})
            assert answer.status == 403 and b"dead-letter" not in answer.body
            answer = await request(
                server,
                "GET",
                f"/api/jolokia/exec/{QUEUE}orders.q/retryMessages()",
                b"",
                {"Authorization": basic("reader")},
            )
            value = answer.json()
            assert value["status"] == 403 and "Dead Letter" not in value["error"]


async def test_the_page_and_its_files_need_a_login() -> None:
    """On a broker with users, / and /static/* are 401 without credentials, as the data routes are."""
    async with secured_broker() as broker:
        server = await start_http_server(broker)
        async with server:
            for path in ("/", "/index.html", "/static/console.js", "/static/console.css"):
                answer = await request(server, "GET", path)
                assert answer.status == 401 and answer.headers["www-authenticate"].startswith("Basic")
                assert b"csrf" not in answer.body.lower()
            answer = await request(server, "GET", "/", auth=("admin", "secret"))
            assert answer.status == 200 and b"<html" in answer.body.lower()


# -- what a browser is served ------------------------------------------------------------------------------------------

#: what a user who may only write a queue sends: XHTML whose script, run in the console's origin, would read the
#: console's token and purge with the rights of whoever opened it
XHTML = (
    '<html xmlns="http://www.w3.org/1999/xhtml"><body><p>invoice</p><script>'
    "document.documentElement.setAttribute('data-ran', 'yes');"
    "fetch('/').then(function (r) { return r.text(); }).then(function (page) {"
    " var token = page.split('name=\"csrf-token\" content=\"')[1].split('\"')[0];"
    " return fetch('/console/api/purge', {method: 'POST', headers: {'X-Minibroker-Csrf': token},"
    ' body: \'{"queue": "orders.keep"}\'}); });'
    "</script></body></html>"
)


async def test_every_answer_is_sandboxed_and_not_sniffed(http: tuple[Broker, HttpServer]) -> None:
    """Every answer says nosniff and has a CSP: the console's page its strict default-src 'self', everything else
    a sandbox (a REST body, Jolokia, the JSON API, a 404, a bad request). A browser asking for a page gets a body
    starting with < as text/plain."""
    broker, server = http
    await send(broker, "inbox", XHTML, XHTML)
    page = await request(server, "GET", "/")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    body = await request(server, "GET", "/api/message/inbox?type=queue&readTimeout=1000")
    html = await request(server, "GET", "/api/message/inbox?type=queue&readTimeout=1000", b"", {"Accept": "text/html"})
    answers = [
        body,
        html,
        await request(server, "GET", "/api/jolokia/version"),
        await request(server, "GET", "/console/api/destinations"),
        await request(server, "GET", "/nowhere"),
        await raw(server, "BOGUS\n"),
    ]
    for answer in answers:
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["content-security-policy"].startswith("sandbox"), answer
    assert body.status == 200 and body.body.decode() == XHTML
    assert html.status == 200 and html.headers["content-type"].startswith("text/plain")


def test_a_hostile_body_opened_by_an_admin_never_runs(browser: Any) -> None:
    """A user who may only write inbox sends XHTML with a script; the admin opens its REST URL in the browser: the
    script does not run (today it ran in the console's origin, read the token and purged with the admin's rights)."""
    served = Served(guarded)
    try:

        async def plant() -> None:
            trusted = served.broker.connect()  # inbox exists (empty): what writer does is a write, not a create
            trusted.send(Message("ID:made-1:1:1:1:1", Destination.queue("inbox"), "made"))
            trusted.close()
            served.broker.purge("inbox")
            conn = served.broker.connect(user="writer", password=PASSWORD, remote=True)
            try:
                conn.send(Message("ID:hostile-1:1:1:1:1", Destination.queue("inbox"), XHTML))
            finally:
                conn.close()

        served.run(plant())
        served.send("orders.keep", "precious")
        url = f"http://admin:{PASSWORD}@127.0.0.1:{served.server.port}/api/message/inbox?type=queue&readTimeout=2000"
        browser.get(url)
        wait_for(browser, lambda d: d.execute_script("return document.readyState") == "complete")
        assert browser.execute_script("return document.documentElement.getAttribute('data-ran')") is None
        assert "invoice" in browser.page_source
        assert served.broker.queue("orders.keep").size == 1
    finally:
        served.close()


def test_the_console_asks_for_a_login_and_shows_hostile_names_as_text(browser: Any) -> None:
    """On a broker with users the page itself needs a login (today it loaded without one); logged in, under its
    strict CSP, the console lists hostile queue names, properties and bodies as text, and nothing of them runs."""
    hostile = "</script><script>document.documentElement.dataset.ran='yes'</script>"
    served = Served(guarded)
    try:
        served.send("orders.<b>bold</b>", hostile, properties={"p": hostile})
        port = served.server.port
        browser.get(f"http://127.0.0.1:{port}/")
        wait_for(browser, lambda d: d.execute_script("return document.readyState") == "complete")
        assert not browser.find_elements("id", "queues") and "csrf-token" not in browser.page_source
        browser.get(f"http://admin:{PASSWORD}@127.0.0.1:{port}/")
        wait_for(browser, lambda d: "orders.<b>bold</b>" in d.find_element("id", "queues").text)
        browser.find_element("link text", "orders.<b>bold</b>").click()
        wait_for(browser, lambda d: hostile in d.find_element("id", "messages").text)
        assert browser.execute_script("return document.documentElement.dataset.ran") is None
        assert not browser.find_elements("css selector", "main b")
    finally:
        served.close()


def test_a_rebound_name_reads_nothing(browser: Any) -> None:
    """DNS rebinding: a page under another name that now resolves to the broker gets 403 for the console, the REST
    API and Jolokia (today: a broker without users served and consumed); the same page on 127.0.0.1 works."""
    served = Served()
    try:
        served.send("orders.q", "a")
        port = served.server.port
        for path in ("/", "/api/message/orders.q?type=queue&readTimeout=100", "/api/jolokia/version"):
            browser.get(f"http://{REBOUND_NAME}:{port}{path}")
            wait_for(browser, lambda d: d.execute_script("return document.readyState") == "complete")
            assert "DNS rebinding" in browser.find_element("tag name", "body").text
        assert served.broker.queue("orders.q").size == 1
        browser.get(f"http://127.0.0.1:{port}/")
        wait_for(browser, lambda d: d.find_elements("id", "queues"))
    finally:
        served.close()


def wait_for(driver: Any, condition: Any, timeout: float = 10.0) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


# -- the Host check and cross-site requests ----------------------------------------------------------------------------


async def test_the_host_header_is_checked(http: tuple[Broker, HttpServer]) -> None:
    """A Host of another name is refused before anything acts (REST GET, Jolokia purge, console); loopback names,
    addresses and the names allowed by configuration are served."""
    broker, server = http
    await send(broker, "orders.q", "a", "b")
    port = server.port
    for target in (
        "/api/message/orders.q?type=queue&readTimeout=100",
        f"/api/jolokia/exec/{QUEUE}orders.q/purge()",
        "/console/api/destinations",
        "/",
    ):
        answer = await raw(server, get_head(target, f"evil.example:{port}"))
        assert answer.status == 403 and b"rebinding" in answer.body
    assert broker.queue("orders.q").size == 2
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "app.localhost"):
        assert (await raw(server, get_head("/api/jolokia/version", host))).status == 200, host
    async with Broker() as other:
        named = await start_http_server(other, allowed_hosts=["broker.lan"])
        async with named:
            assert (await raw(named, get_head("/api/jolokia/version", "broker.lan:8161"))).status == 200
            assert (await raw(named, get_head("/api/jolokia/version", "evil.example"))).status == 403


async def test_a_cross_site_get_never_consumes(http: tuple[Broker, HttpServer]) -> None:
    """A REST GET the browser marks cross-site (Fetch Metadata, a foreign Origin or Referer) is refused and the
    message stays; curl's GET (none of them) consumes."""
    broker, server = http
    await send(broker, "orders.q", "a")
    target = "/api/message/orders.q?type=queue&readTimeout=100"
    for header in (
        {"Sec-Fetch-Site": "cross-site"},
        {"Origin": "http://evil.example"},
        {"Referer": "http://evil.example/page.html"},
    ):
        answer = await request(server, "GET", target, b"", header)
        assert answer.status == 403, header
    assert broker.queue("orders.q").size == 1
    answer = await request(server, "GET", target)
    assert answer.status == 200 and answer.body == b"a"


async def test_cross_site_actions_do_nothing() -> None:
    """CSRF: a console action without the page's token or from another origin, and a Jolokia purge by GET from a
    page of another site that says so only by its Referer (an <img> on plain http sends no Fetch Metadata), do
    nothing."""
    async with guarded() as broker:
        app = HttpApp(broker)
        server = await start_http_server(broker, handler=app)
        async with server:
            await send(broker, "orders.q", "a")
            body = json.dumps({"queue": "orders.q"}).encode()
            auth = {"Authorization": basic("admin")}
            assert (await request(server, "POST", "/console/api/purge", body, auth)).status == 403
            evil = {**auth, "X-Minibroker-Csrf": app.csrf_token, "Origin": "http://evil.example"}
            assert (await request(server, "POST", "/console/api/purge", body, evil)).status == 403
            img = {**auth, "Referer": "http://evil.example/cats.html", "Accept": "image/avif,image/webp,*/*"}
            answer = await request(server, "GET", f"/api/jolokia/exec/{QUEUE}orders.q/purge()", b"", img)
            assert answer.json()["status"] == 403
            assert broker.queue("orders.q").size == 1


# -- REST long polls whose client went ---------------------------------------------------------------------------------


async def test_a_long_poll_whose_client_went_acks_nothing(http: tuple[Broker, HttpServer]) -> None:
    """Clients that close during a long poll (or half-close) are seen at once; messages sent afterwards stay in the
    queue, 5 of 5 (today all 5 were acked and lost)."""
    broker, server = http
    for i in range(5):
        queue = f"orders.q{i}"
        _, writer = await asyncio.open_connection(server.host, server.port)
        head = get_head(f"/api/message/{queue}?type=queue&readTimeout=20000", "localhost")
        writer.write(head.replace("\n", "\r\n").encode() + b"\r\n")
        await writer.drain()
        await until(lambda: broker.queue(queue).consumers == 1)  # noqa: B023 - awaited within the iteration
        if i % 2:
            writer.write_eof()
        else:
            writer.close()
        await until(lambda: broker.queue(queue).consumers == 0)  # noqa: B023
        await send(broker, queue, f"m{i}")
        writer.close()
    await broker.settled()
    assert [[m.body for m in broker.queue(f"orders.q{i}").browse()] for i in range(5)] == [[f"m{i}"] for i in range(5)]


async def test_an_answer_not_written_gives_its_message_back(http: tuple[Broker, HttpServer]) -> None:
    """The REST GET's answer is settled as not written (the client went as it was made): the message is not acked,
    and comes back to the queue redelivered; written, it is acked."""
    broker, _ = http
    app = HttpApp(broker)
    await send(broker, "orders.q", "first", "second")
    head = RequestHead("GET", "/api/message/orders.q?type=queue&readTimeout=1000", "HTTP/1.1", (("host", "localhost"),))
    answer = await app.handle(Request(head, b""), "test")
    assert answer.status == 200 and answer.body == b"first" and answer.settle is not None
    answer.settle(False)
    await broker.settled()
    assert [m.body for m in broker.queue("orders.q").browse()] == ["first", "second"]
    again = await app.handle(Request(head, b""), "test")
    assert again.body == b"first" and again.headers and again.settle is not None
    again.settle(True)
    await broker.settled()
    assert [m.body for m in broker.queue("orders.q").browse()] == ["second"]
    await app.close()


# -- HTTP sockets: their own limit, a deadline for the whole body ------------------------------------------------------


async def test_http_sockets_have_their_own_limit() -> None:
    """Idle HTTP sockets fill the HTTP listener's own slots, not the broker's: a native client still connects, and
    the HTTP listener refuses past its own limit."""
    async with Broker() as broker:
        native = await start_server(broker, max_connections=2)
        server = await start_http_server(broker, max_connections=3)
        async with native, server:
            idle = [await asyncio.open_connection(server.host, server.port) for _ in range(3)]
            await server.wait_connection_count(3)
            assert broker.sockets.open == 0
            async with await connect(native.url) as client:
                assert client is not None
            reader, writer = await asyncio.open_connection(server.host, server.port)
            assert await asyncio.wait_for(reader.read(), 5) == b""  # refused: closed at once
            writer.close()
            for _, w in idle:
                w.close()


async def test_https_sockets_count_in_the_listeners_own_slots() -> None:
    """Over TLS too, from the handshake on: an HTTPS client holds one of the HTTP listener's slots, none of the
    broker's, and is answered."""
    certs = Path(__file__).resolve().parents[2] / "certs"
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(certs / "server.crt", certs / "server.key")
    client_side = ssl.create_default_context(cafile=str(certs / "server.crt"))
    async with Broker() as broker:
        server = await start_http_server(broker, ssl=server_side)
        async with server:
            reader, writer = await asyncio.open_connection(server.host, server.port, ssl=client_side)
            await server.wait_connection_count(1)
            assert broker.sockets.open == 0 and server.slots.open == 1
            writer.write(get_head("/api/jolokia/version", "localhost").replace("\n", "\r\n").encode() + b"\r\n")
            answer = await asyncio.wait_for(read_answer(reader), 10)
            assert answer.status == 200 and answer.json()["value"]["agent"] == "1.7.1"
            writer.close()


async def test_a_trickled_body_meets_its_deadline() -> None:
    """A body sent a byte at a time, well within the idle timeout each, is closed when the body's deadline passes
    (today each byte re-armed the timer and the socket stayed open)."""
    async with Broker() as broker:
        server = await start_http_server(broker, idle_timeout=30, body_timeout=0.5)
        async with server:
            reader, writer = await asyncio.open_connection(server.host, server.port)
            head = "POST /api/message/q?type=queue HTTP/1.1\nHost: localhost\nContent-Length: 1000\n\n"
            writer.write(head.replace("\n", "\r\n").encode())
            closed = asyncio.ensure_future(read_answer(reader))
            for _ in range(300):  # up to 30 s of trickling, sixty times the deadline
                if closed.done():
                    break
                writer.write(b"x")
                await asyncio.wait({closed}, timeout=0.1)
            answer = await asyncio.wait_for(closed, 5)
            assert answer.status == 408
            writer.close()


# -- Jolokia bulk requests ---------------------------------------------------------------------------------------------


async def test_a_jolokia_bulk_runs_in_turns_and_is_bounded(http: tuple[Broker, HttpServer]) -> None:
    """A bulk of MAX_BULK reads lets the loop run other work while it is answered; one more request than that, or a
    body past MAX_POST_SIZE, is one error answer, nothing run."""
    broker, server = http
    await send(broker, "orders.q", "a")
    conn = broker.connect()
    try:
        jolokia = Jolokia(MBeans(broker, conn, "localhost", 0), {})
        read = {"type": "read", "mbean": f"{QUEUE}orders.q", "attribute": "QueueSize"}
        turns = 0

        async def other_client() -> None:
            nonlocal turns
            while True:
                turns += 1
                await asyncio.sleep(0)

        running = asyncio.ensure_future(other_client())
        await asyncio.sleep(0)
        before = turns
        answers = await jolokia.post_in_turns(json.dumps([read] * MAX_BULK).encode())
        ran_meanwhile = turns - before
        running.cancel()
        assert len(answers) == MAX_BULK and all(a["value"] == 1 for a in answers)
        assert ran_meanwhile >= MAX_BULK // 100
    finally:
        conn.close()
    answer = await request(server, "POST", "/api/jolokia/", json.dumps([read] * (MAX_BULK + 1)).encode())
    value = answer.json()
    assert value["status"] == 400 and str(MAX_BULK) in value["error"]
    padded = json.dumps([read] * 10).encode() + b" " * MAX_POST_SIZE  # refused by its size, before it is parsed
    value = (await request(server, "POST", "/api/jolokia/", padded)).json()
    assert value["status"] == 400 and str(MAX_POST_SIZE) in value["error"]


# -- temporary destinations --------------------------------------------------------------------------------------------


async def test_another_connections_temporary_queue() -> None:
    """Only its owner and an administrator may browse or purge a temporary queue; another user is refused (today
    anyone could); creating one needs admin on the advisory topic, as ActiveMQ's advisory does."""
    async with guarded() as broker:
        owner = broker.connect(user="orders", password=PASSWORD, remote=True)
        intruder = broker.connect(user="reader", password=PASSWORD, remote=True)
        admin = broker.connect(user="admin", password=PASSWORD, remote=True)
        try:
            temp = owner.create_temporary(Destination.queue("x").kind)
            owner.send(Message("ID:t-1:1:1:1:1", temp, "private"))
            assert [m.body for m in owner.browse(temp.name)] == ["private"]
            with pytest.raises(AccessDenied):
                intruder.browse(temp.name)
            with pytest.raises(AccessDenied):
                intruder.purge(temp.name)
            assert [m.body for m in admin.browse(temp.name)] == ["private"]
            with pytest.raises(AccessDenied) as refused:
                intruder.create_temporary(temp.kind)
            assert "ActiveMQ.Advisory.TempQueue" in str(refused.value)
            assert owner.purge(temp.name) == 1
        finally:
            for conn in (owner, intruder, admin):
                conn.close()


async def test_the_connection_is_what_the_console_uses() -> None:
    """The console's browse of another connection's temporary queue goes through the same rule."""
    async with guarded() as broker:
        server = await start_http_server(broker)
        async with server:
            owner: BrokerConnection = broker.connect(user="orders", password=PASSWORD, remote=True)
            try:
                temp = owner.create_temporary(Destination.queue("x").kind)
                owner.send(Message("ID:t-2:1:1:1:1", temp, "private"))
                auth = {"Authorization": basic("reader")}
                answer = await request(server, "GET", f"/console/api/messages?queue={temp.name}", b"", auth)
                assert answer.status == 403 and b"private" not in answer.body
            finally:
                owner.close()


# -- the pytest report ------------------------------------------------------------------------------------------------


async def test_the_report_is_written_with_a_lone_surrogate(tmp_path: Path) -> None:
    """A body and a failure text holding a lone surrogate: the page is written whole (today: 0 bytes and an
    exception that cost pytest its summary)."""
    async with Broker() as broker:
        await send(broker, "odd", "half \ud800 pair")
        section = failed_test_section("test_odd[\udcff]", [("call", "assert '\ud800' == ''")], [("minibroker", broker)])
    target = tmp_path / "report.html"
    write_report(target, [section])
    text = target.read_text("utf-8")
    assert "half \\ud800 pair" in text and "test_odd[\\udcff]" in text and text.rstrip().endswith("</html>")
