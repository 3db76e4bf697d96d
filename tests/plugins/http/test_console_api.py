"""The console's JSON API: what the page polls, and its actions behind the CSRF token and the same-origin check."""

from __future__ import annotations

import json

from support.http_helpers import request

from minibroker import Broker
from minibroker.client import connect
from minibroker.plugins.http import HttpApp, HttpServer, start_http_server


async def post(
    server: HttpServer, token: str, action: str, body: dict[str, object], **headers: str
) -> tuple[int, object]:
    answer = await request(
        server, "POST", f"/console/api/{action}", json.dumps(body).encode(), {"X-Minibroker-Csrf": token, **headers}
    )
    return answer.status, answer.json() if answer.body.startswith((b"{", b"[")) else answer.body


async def test_destinations_messages_and_a_message_with_its_history() -> None:
    async with Broker() as broker:
        app = HttpApp(broker)
        server = await start_http_server(broker, handler=app)
        async with server, await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer("orders")
            for i in range(30):
                await producer.send(f"order {i}", properties={"i": i})
            listing = (await request(server, "GET", "/console/api/destinations")).json()
            assert listing["queues"][0]["name"] == "orders" and listing["queues"][0]["size"] == 30
            page = (await request(server, "GET", "/console/api/messages?queue=orders&page=1")).json()
            assert page["size"] == 30 and [m["preview"] for m in page["messages"]] == [
                f"order {i}" for i in range(25, 30)
            ]
            first = (await request(server, "GET", "/console/api/messages?queue=orders")).json()["messages"][0]
            detail = (await request(server, "GET", f"/console/api/message?queue=orders&id={first['id']}")).json()
            assert detail["message"]["body"] == "order 0" and detail["message"]["properties"]["i"] == "0"
            assert [h["event"] for h in detail["history"]] == ["sent"]


async def test_actions_need_the_token_and_the_same_origin() -> None:
    async with Broker() as broker:
        app = HttpApp(broker)
        server = await start_http_server(broker, handler=app)
        async with server:
            token = app.csrf_token
            status, _ = await post(server, token, "send", {"destination": "orders", "body": "hi"})
            assert status == 200 and broker.queue("orders").size == 1
            assert (await post(server, "wrong", "purge", {"queue": "orders"}))[0] == 403
            assert (await post(server, token, "purge", {"queue": "orders"}, Origin="http://evil.example"))[0] == 403
            assert broker.queue("orders").size == 1
            same = f"http://{server.host}:{server.port}"
            status, value = await post(server, token, "purge", {"queue": "orders"}, Origin=same)
            assert status == 200 and value == {"purged": 1}


async def test_delete_move_copy() -> None:
    async with Broker() as broker:
        app = HttpApp(broker)
        server = await start_http_server(broker, handler=app)
        async with server, await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer("orders")
            ids = [str(await producer.send(f"m{i}")) for i in range(3)]
            token = app.csrf_token
            assert (await post(server, token, "delete", {"queue": "orders", "id": ids[0]}))[1] == {"done": True}
            assert (await post(server, token, "move", {"queue": "orders", "id": ids[1], "to": "other"}))[1] == {
                "done": True
            }
            assert (await post(server, token, "copy", {"queue": "orders", "id": ids[2], "to": "other"}))[1] == {
                "done": True
            }
            assert [m.body for m in broker.queue("other").browse()] == ["m1", "m2"]
            assert [m.body for m in broker.queue("orders").browse()] == ["m2"]
            assert (await post(server, token, "retry", {"queue": "orders"}))[0] == 400
