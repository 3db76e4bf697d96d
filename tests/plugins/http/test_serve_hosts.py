"""``minibroker serve`` takes the names its web console may be reached by (issue 41: the Host check guards against
DNS rebinding; a console behind a name needs that name allowed): ``--http-allowed-host`` and the config's
``[server] http_allowed_hosts``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.servekit import serve


async def status_for(url: str, host: str) -> int:
    address = url.removeprefix("http://").rstrip("/")
    name, port = address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(name, int(port))
    writer.write(f"GET /api/jolokia/version HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    line = await asyncio.wait_for(reader.readline(), 10)
    writer.close()
    return int(line.split()[1])


@pytest.mark.parametrize("how", ["option", "config"])
async def test_a_name_given_to_serve_is_allowed_and_others_are_not(tmp_path: Path, how: str) -> None:
    if how == "option":
        options = ["--http-allowed-host", "broker.test"]
    else:
        (tmp_path / "broker.toml").write_text('[server]\nhttp_allowed_hosts = ["broker.test"]\n')
        options = ["--config", str(tmp_path / "broker.toml")]
    served = await serve(tmp_path, "--http-port", "0", *options)
    try:
        assert served.proc.stdout is not None
        http = (await asyncio.wait_for(served.proc.stdout.readline(), 10)).decode().strip()
        assert await status_for(http, "broker.test:8161") == 200
        assert await status_for(http, "localhost") == 200
        assert await status_for(http, "rebound.example") == 403
    finally:
        await served.kill()
