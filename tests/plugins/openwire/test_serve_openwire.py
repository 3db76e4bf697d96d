"""``minibroker serve --openwire-port`` (and ``[server] openwire_port``): ActiveMQ's own JMS client, Debian's
activemq-client 5.17.2, talks to a served broker with a plain ``tcp://host:port`` URL (issue 44)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.servekit import serve

from minibroker.client import connect

from .test_java_client import SCENARIOS, JavaRun


@pytest.mark.parametrize("how", ["option", "config"])
async def test_the_java_client_runs_against_serve(java_run: JavaRun, tmp_path: Path, how: str) -> None:
    if how == "option":
        options = ["--openwire-port", "0"]
    else:
        (tmp_path / "broker.toml").write_text("[server]\nopenwire_port = 0\n")
        options = ["--config", str(tmp_path / "broker.toml")]
    served = await serve(tmp_path, *options)
    try:
        assert served.proc.stdout is not None
        openwire = (await asyncio.wait_for(served.proc.stdout.readline(), 10)).decode().strip()
        assert openwire.startswith("openwire://127.0.0.1:")
        port = openwire.rsplit(":", 1)[1]
        scenario, _, expected = next(s for s in SCENARIOS if s[0] == "messages")
        lines = await java_run("OpenWireClient", f"tcp://127.0.0.1:{port}", scenario)
        assert lines[0].startswith("CONNECTED ID:"), lines
        assert lines[1:] == [*expected, "DONE"]
        async with await connect(served.url) as conn:  # the native protocol still answers on its own port
            assert (await conn.create_session()) is not None
    finally:
        await served.kill()
