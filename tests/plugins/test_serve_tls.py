"""TLS in ``minibroker serve``, ``broker.toml`` and the fixtures: ``ssl://`` and ``stomp+ssl://`` listeners with the
test certificates of ``tests/certs``, client certificates asked for as ActiveMQ's ``needClientAuth`` asks, and every
mistake reported in one line before a URL is printed."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import stomp

from minibroker import Broker
from minibroker.client import connect
from minibroker.config import ConfigError, parse_config
from minibroker.errors import ConnectionClosed, InvalidConfiguration
from minibroker.plugins.pytest_plugin import StompEndpoint, start_broker_process
from minibroker.tls import TlsSettings, server_context

CERTS = Path(__file__).resolve().parents[1] / "certs"
SERVER = ["--tls-cert", str(CERTS / "server.crt"), "--tls-key", str(CERTS / "server.key")]
NEED_CLIENT_CERT = [*SERVER, "--tls-ca", str(CERTS / "client.crt"), "--tls-client-auth", "need"]


def trusting(*, with_client_cert: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(CERTS / "server.crt"))
    if with_client_cert:
        context.load_cert_chain(CERTS / "client.crt", CERTS / "client.key")
    return context


async def round_trip(url: str, context: ssl.SSLContext) -> str:
    async with await connect(url, ssl=context) as conn:
        session = await conn.create_session()
        await (await session.create_producer("tls")).send("over tls")
        msg = await (await session.create_consumer("tls")).receive(timeout=10)
        assert msg is not None
        return str(msg.body)


def stomp_round_trip(port: int, *, with_client_cert: bool = False) -> str:
    received: list[str] = []
    arrived = threading.Event()

    class Listener(stomp.ConnectionListener):  # type: ignore[misc]
        def on_message(self, frame: stomp.utils.Frame) -> None:
            received.append(frame.body)
            arrived.set()

    before = set(threading.enumerate())
    conn = stomp.Connection12([("127.0.0.1", port)])
    cert = {"cert_file": str(CERTS / "client.crt"), "key_file": str(CERTS / "client.key")} if with_client_cert else {}
    conn.set_ssl(for_hosts=[("127.0.0.1", port)], ca_certs=str(CERTS / "server.crt"), **cert)
    conn.set_listener("l", Listener())
    conn.connect(wait=True)
    try:
        conn.subscribe("/queue/tls", id="s1", ack="auto")
        conn.send("/queue/tls", "stomp over tls")
        assert arrived.wait(10)
    finally:
        conn.disconnect()
        # stomp.py's disconnect does not wait for its TLS reader thread, which spins until the socket is gone; a
        # later test on virtual time would see a busy thread and (rightly) not jump: wait for it here
        for thread in set(threading.enumerate()) - before:
            thread.join(timeout=10)
    return received[0]


class TestServe:
    async def test_ssl_and_stomp_ssl_listeners(self) -> None:
        process = start_broker_process(stomp_port=0, ssl_port=0, stomp_ssl_port=0, tls=SERVER)
        try:
            assert process.ssl_url == f"ssl://127.0.0.1:{process.ssl_port}"
            assert process.stomp_ssl_url == f"stomp+ssl://127.0.0.1:{process.stomp_ssl_port}"
            assert await round_trip(process.ssl_url, trusting()) == "over tls"
            assert process.stomp_ssl_port is not None
            assert await asyncio.to_thread(stomp_round_trip, process.stomp_ssl_port) == "stomp over tls"
        finally:
            process.stop()

    async def test_client_certificate_needed(self) -> None:
        process = start_broker_process(stomp_port=None, ssl_port=0, tls=NEED_CLIENT_CERT)
        try:
            assert process.ssl_url is not None
            assert await round_trip(process.ssl_url, trusting(with_client_cert=True)) == "over tls"
            with pytest.raises(ConnectionClosed):
                await round_trip(process.ssl_url, trusting())
        finally:
            process.stop()

    async def test_tls_from_the_config_file(self, tmp_path: Path) -> None:
        config = tmp_path / "broker.toml"
        config.write_text(
            f'[server]\nssl_port = 0\n[tls]\ncert = "{CERTS / "server.crt"}"\nkey = "{CERTS / "server.key"}"\n'
        )
        process = start_broker_process(config, stomp_port=None, ssl_port=0)
        try:
            assert process.ssl_url is not None
            assert await round_trip(process.ssl_url, trusting()) == "over tls"
        finally:
            process.stop()

    @pytest.mark.parametrize(
        ("options", "problem"),
        [
            (["--ssl-port", "0"], "--ssl-port, --stomp-ssl-port and --mqtt-ssl-port need --tls-cert"),
            (["--tls-key", "x.key"], "--tls-key, --tls-ca and --tls-client-auth need --tls-cert"),
            (["--ssl-port", "0", "--tls-cert", "/no/such.crt"], "TLS certificate /no/such.crt"),
            (["--ssl-port", "0", *SERVER, "--tls-client-auth", "need"], "needs a CA file"),
        ],
    )
    def test_mistakes_are_one_line_before_any_url(self, options: list[str], problem: str) -> None:
        done = subprocess.run(
            [sys.executable, "-P", "-m", "minibroker", "serve", "--port", "0", *options],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode != 0
        assert done.stdout == ""
        assert problem in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr

    def test_doctor_checks_the_certificate(self) -> None:
        ok = subprocess.run(
            [sys.executable, "-P", "-m", "minibroker", "doctor", "--ssl-port", "0", *SERVER],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert "tls: certificate" in ok.stdout and "ssl port" in ok.stdout
        bad = subprocess.run(
            [
                sys.executable,
                "-P",
                "-m",
                "minibroker",
                "doctor",
                "--ssl-port",
                "0",
                "--tls-cert",
                str(CERTS / "README.md"),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert bad.returncode == 1 and "FAIL" in bad.stdout and "tls:" in bad.stdout


class TestConfig:
    def test_tls_table(self, tmp_path: Path) -> None:
        doc = {
            "server": {"ssl_port": 61617, "stomp_ssl_port": 61612},
            "tls": {"cert": "s.crt", "key": "s.key", "ca": "ca.crt", "client_auth": "want"},
        }
        config = parse_config(doc, path=tmp_path / "broker.toml")
        assert config.server.ssl_port == 61617 and config.server.stomp_ssl_port == 61612
        assert config.server.tls == TlsSettings(tmp_path / "s.crt", tmp_path / "s.key", tmp_path / "ca.crt", "want")

    @pytest.mark.parametrize(
        ("doc", "key"),
        [
            ({"server": {"ssl_port": 61617}}, "server.ssl_port"),
            ({"tls": {"key": "k"}}, "tls.cert"),
            ({"tls": {"cert": "c", "client_auth": "maybe"}}, "tls.client_auth"),
            ({"tls": {"cert": "c", "client_auth": "need"}}, "tls.ca"),
            ({"tls": {"cert": "c", "pasword": "x"}}, "tls.pasword"),
        ],
    )
    def test_mistakes_name_the_key(self, doc: dict[str, object], key: str) -> None:
        with pytest.raises(ConfigError) as info:
            parse_config(doc)
        assert info.value.key == key

    def test_an_unreadable_certificate_names_the_file(self) -> None:
        with pytest.raises(InvalidConfiguration, match=r"no-such\.crt"):
            server_context(TlsSettings(Path("/tmp/no-such.crt")))


TLS = TlsSettings(CERTS / "server.crt", CERTS / "server.key")


class TestFixtures:
    @pytest.mark.minibroker(tls=TLS)
    async def test_stomp_fixture_over_tls(self, minibroker: Broker, minibroker_stomp: StompEndpoint) -> None:
        assert minibroker_stomp.url == f"stomp+ssl://127.0.0.1:{minibroker_stomp.port}"
        body = await asyncio.to_thread(stomp_round_trip, minibroker_stomp.port)
        assert body == "stomp over tls"
        assert minibroker.queue("tls").enqueued == 1

    @pytest.mark.minibroker(tls=TLS)
    async def test_server_fixture_over_tls(self, minibroker_url: str) -> None:
        assert minibroker_url.startswith("ssl://")
        assert await round_trip(minibroker_url, trusting()) == "over tls"
