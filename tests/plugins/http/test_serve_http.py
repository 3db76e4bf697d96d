"""``minibroker serve --http-port``: the URL is printed, Jolokia and the REST API answer, off unless asked, and
``[server] http_port`` in the config does the same."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

from support.servekit import MINIBROKER, run, serve


def fetch(url: str, data: bytes | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(req, timeout=10) as answer:
        return answer.status, answer.read()


async def test_serve_with_http(tmp_path: Path) -> None:
    served = await serve(tmp_path, "--http-port", "0")
    try:
        assert served.proc.stdout is not None
        http = (await asyncio.wait_for(served.proc.stdout.readline(), 10)).decode().strip()
        assert http.startswith("http://127.0.0.1:")
        status, body = await asyncio.to_thread(fetch, f"{http}/api/message/orders?type=queue", b"body=hello")
        assert (status, body) == (200, b"Message sent")
        mbean = "org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=orders"
        _, body = await asyncio.to_thread(fetch, f"{http}/api/jolokia/read/{mbean}/QueueSize")
        assert json.loads(body)["value"] == 1
        _, body = await asyncio.to_thread(fetch, f"{http}/")
        assert b"minibroker" in body
    finally:
        assert await served.stop() == 0


async def test_http_is_off_unless_asked_and_the_config_turns_it_on(tmp_path: Path) -> None:
    code, out, _ = await run(MINIBROKER, "serve", "--help", cwd=tmp_path)
    assert code == 0 and "--http-port" in out and "off unless given" in " ".join(out.split())
    config = tmp_path / "broker.toml"
    config.write_text("[server]\nport = 0\nhttp_port = 0\n")
    served = await serve(tmp_path, "--config", str(config))
    try:
        assert served.proc.stdout is not None
        http = (await asyncio.wait_for(served.proc.stdout.readline(), 10)).decode().strip()
        _, body = await asyncio.to_thread(fetch, f"{http}/api/jolokia/version")
        assert json.loads(body)["value"]["agent"] == "1.7.1"
    finally:
        assert await served.stop() == 0
