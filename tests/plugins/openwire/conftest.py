"""The OpenWire tests' Java programs, compiled once per session against Debian's activemq-client 5.17.2 (and its
broker, for the comparison with a real ActiveMQ)."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import pytest
from support.openwire_java import compile_openwire_java

CERTS = Path(__file__).resolve().parents[2] / "certs"


@pytest.fixture(scope="session")
def openwire_java(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The classpath of the compiled Java programs (java/*.java) against Debian's activemq-client 5.17.2."""
    return compile_openwire_java(tmp_path_factory.mktemp("openwire-java"))


async def run_java(classpath: str, main: str, *args: str, timeout: float = 120.0, jvm: Sequence[str] = ()) -> list[str]:
    """Run a Java program to its end (``jvm``: options for the JVM); its output lines (AssertionError with its
    output when it fails)."""
    proc = await asyncio.create_subprocess_exec(
        "java", *jvm, "-cp", classpath, main, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    text = out.decode()
    assert proc.returncode == 0, f"{main} {' '.join(args)} failed ({proc.returncode}):\n{text}"
    return text.splitlines()


@pytest.fixture
def java_run(openwire_java: str) -> Callable[..., Awaitable[list[str]]]:
    """``await java_run("OpenWireClient", url, scenario)``: the program's output lines."""

    async def run(main: str, *args: str, timeout: float = 120.0, jvm: Sequence[str] = ()) -> list[str]:
        return await run_java(openwire_java, main, *args, timeout=timeout, jvm=jvm)

    return run


@pytest.fixture
def trusting_jvm(tmp_path: Path) -> list[str]:
    """JVM options by which the Java client trusts the test certificate (``tests/certs/server.crt``, in a PKCS12
    trust store keytool makes), for its ``ssl://`` URLs."""
    store = tmp_path / "trust.p12"
    subprocess.run(
        ["keytool", "-importcert", "-noprompt", "-alias", "minibroker", "-file", str(CERTS / "server.crt"),
         "-keystore", str(store), "-storetype", "PKCS12", "-storepass", "changeit"],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, timeout=120, check=True,
    )  # fmt: skip
    return [f"-Djavax.net.ssl.trustStore={store}", "-Djavax.net.ssl.trustStorePassword=changeit"]
