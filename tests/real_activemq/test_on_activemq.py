"""The guides' and examples' tests, run a second time against a real ActiveMQ 5.17.2 (issue 43, item 6).

Each project (a guide whose files use stomp.py, paho-mqtt or aiomqtt, written out as tests/test_guides.py does; the
examples in place) runs with ``pytest --minibroker-external stomp=...,mqtt=...,openwire=...`` against a fresh
embedded ActiveMQ (Debian's ``activemq`` and ``libactivemq-java``, started by java/ExternalActiveMQ.java with its
default OpenWire connector, a STOMP and an MQTT connector on free loopback ports): the tests that reach the broker
through a protocol must pass there, the others are skipped as minibroker-only, and the counts of both are printed at
the end of the run. A fresh broker per project: the guides' tests share destination names such as
``/queue/orders``, and the real broker keeps state between tests. ActiveMQ's own JMS client goes through
``minibroker_openwire`` and ``minibroker_openwire_sync`` to the same broker (``JMS_PROJECT``).
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.openwire_java import MESSAGES, compile_openwire_java
from test_guides import GUIDES, blocks, free_port, with_ports

REPO = Path(__file__).resolve().parents[2]
#: the wire oracle's build gives the class path of ActiveMQ's broker with its STOMP and MQTT connectors
LAUNCHER = REPO / "tests" / "wire_oracle" / "oracle" / "build.sh"
#: the broker the runs go to: the same class path, with ActiveMQ's default OpenWire connector too
EXTERNAL_ACTIVEMQ = Path(__file__).resolve().parent / "java" / "ExternalActiveMQ.java"
ACTIVEMQ_JAR = Path("/usr/share/java/activemq-broker.jar")
#: the guides whose projects speak a real client's protocol
CLIENTS = re.compile(r"^(?:import|from) (?:stomp|paho|aiomqtt)\b", re.M)
PROTOCOL_GUIDES = [g for g in GUIDES if any(CLIENTS.search(text) for _, name, text in blocks(g) if name)]
#: the count line of the plugin's external mode
COUNT = re.compile(r"minibroker external broker \S+: (\d+) ran on it \(([^)]*)\), (\d+) minibroker-only, (\d+) used")
#: the examples run as CI runs them, but for test_scripts.py: it runs the example scripts, each with its own broker
EXAMPLES_LEFT_OUT = ("examples/test_scripts.py",)


@pytest.fixture(scope="module")
def classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The launcher compiled (a second or two) into this run's scratch space: its class path."""
    if shutil.which("javac") is None or not ACTIVEMQ_JAR.exists():
        pytest.skip("needs Java 17 and Debian's activemq and libactivemq-java (.ci/run installs them)")
    build = tmp_path_factory.mktemp("activemq-launcher")
    done = subprocess.run(
        ["sh", str(LAUNCHER)], env={**os.environ, "WIRE_ORACLE_BUILD": str(build)}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    jars = done.stdout.strip().splitlines()[-1]
    launcher = build / "external"
    subprocess.run(["javac", "-nowarn", "-d", str(launcher), "-cp", jars, str(EXTERNAL_ACTIVEMQ)], check=True)
    return f"{launcher}:{jars}"


@pytest.fixture
def activemq(classpath: str) -> Iterator[str]:
    """A fresh embedded ActiveMQ 5.17.2 (not persistent):
    ``stomp=127.0.0.1:N,mqtt=127.0.0.1:M,openwire=127.0.0.1:K``."""
    process = subprocess.Popen(
        ["java", "-cp", classpath, "ExternalActiveMQ"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        ready, _, _ = select.select([process.stdout], [], [], 60)
        line = process.stdout.readline() if ready else ""
        assert line.startswith("{"), f"ActiveMQ did not start within 60 s: {line!r}"
        ports = json.loads(line)
        yield f"stomp=127.0.0.1:{ports['stomp']},mqtt=127.0.0.1:{ports['mqtt']},openwire=127.0.0.1:{ports['openwire']}"
    finally:
        try:
            process.stdin.write("quit\n")
            process.stdin.close()
            process.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
        process.stdout.close()


def run_on(where: Path, targets: list[str], external: str) -> tuple[subprocess.CompletedProcess[str], re.Match[str]]:
    command = [sys.executable, "-m", "pytest", *targets, "-p", "no:cacheprovider", "-W", "error::DeprecationWarning"]
    done = subprocess.run(
        [*command, "--minibroker-external", external],
        cwd=where,
        env={**os.environ, "PYTHONSAFEPATH": "1"},  # the installed minibroker, not the checkout's directory
        capture_output=True,
        text=True,
        timeout=240,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    count = COUNT.search(output)
    assert count is not None, output
    return done, count


def reasons(output: str) -> str:
    """The plugin's lines ``  minibroker-only: N reason``, joined."""
    return "; ".join(re.findall(r"^  minibroker-only: (.+)$", output, re.M))


@pytest.mark.parametrize("guide", PROTOCOL_GUIDES, ids=[g.stem for g in PROTOCOL_GUIDES])
def test_the_guide_passes_on_activemq(guide: Path, tmp_path: Path, activemq: str, activemq_counts: list[str]) -> None:
    ports = {"61616": str(free_port()), "61613": str(free_port())}
    files = {name: text for _, name, text in blocks(guide) if name is not None and "/" not in name}
    for name, text in files.items():
        (tmp_path / name).write_text(with_ports(text, ports))
    tests = sorted(name for name in files if name.startswith("test_") and name.endswith(".py"))
    done, count = run_on(tmp_path, tests, activemq)
    ran, outcomes, only, neither = int(count[1]), count[2], int(count[3]), int(count[4])
    activemq_counts.append(
        f"{guide.stem}: {ran} ran on ActiveMQ ({outcomes}), {only} minibroker-only ({reasons(done.stdout)})"
    )
    assert ran >= 1 and outcomes == f"{ran} passed", done.stdout  # each of these guides has portable tests
    assert neither == 0, done.stdout


def test_the_examples_pass_on_activemq(activemq: str, activemq_counts: list[str]) -> None:
    ignore = [f"--ignore={path}" for path in EXAMPLES_LEFT_OUT]
    done, count = run_on(REPO, ["examples", *ignore], activemq)
    ran, outcomes, only = int(count[1]), count[2], int(count[3])
    activemq_counts.append(
        f"examples: {ran} ran on ActiveMQ ({outcomes}), {only} minibroker-only ({reasons(done.stdout)})"
    )
    assert only >= 1 and ran == sum(int(n) for n in re.findall(r"(\d+) passed", outcomes)), done.stdout


#: a project whose tests start ActiveMQ's JMS client (tests/plugins/openwire/java/OpenWireClient.java) on the
#: fixtures' URLs, a plain ``def`` test and an ``async def`` one beside a STOMP client; CLASSPATH and MESSAGES filled in
JMS_PROJECT = {
    "pyproject.toml": """
[tool.pytest.ini_options]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
""",
    "test_jms.py": """
import asyncio
import subprocess

import stomp

CLASSPATH = "@CLASSPATH@"
#: what the client prints in its "messages" scenario, on minibroker as on ActiveMQ (tests/support/openwire_java.py)
MESSAGES = @MESSAGES@


def test_the_jms_client_in_a_plain_test(minibroker_openwire_sync):
    assert minibroker_openwire_sync.url.startswith("tcp://127.0.0.1:")
    command = ["java", "-cp", CLASSPATH, "OpenWireClient", minibroker_openwire_sync.url, "messages"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[0].startswith("CONNECTED ID:"), done.stdout + done.stderr
    assert lines[1:] == [*MESSAGES, "DONE"]


def send_over_stomp(host_and_ports, queue, body):
    conn = stomp.Connection12(host_and_ports)
    conn.connect(wait=True)
    conn.send(queue, body, headers={"receipt": "sent"})
    conn.disconnect()


async def test_the_jms_client_takes_what_stomp_sent(minibroker_openwire, minibroker_stomp):
    # stomp.py blocks: off the event loop, which serves minibroker's listeners when the broker is in-process
    await asyncio.to_thread(send_over_stomp, minibroker_stomp.host_and_ports, "/queue/ow.mixed", "from stomp")
    java = await asyncio.create_subprocess_exec(
        "java", "-cp", CLASSPATH, "OpenWireClient", minibroker_openwire.url, "receive", "ow.mixed",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(java.communicate(), 120)
    lines = out.decode().splitlines()
    assert java.returncode == 0, lines
    # ActiveMQ's rule: a STOMP frame with content-length (stomp.py adds it) is a BytesMessage to a JMS client
    assert lines[1:] == ["RECEIVED bytes:10", "DONE"]
""",
}


def test_the_jms_client_goes_through_the_openwire_fixtures_to_activemq(
    tmp_path: Path, activemq: str, activemq_counts: list[str]
) -> None:
    """``minibroker_openwire`` and ``minibroker_openwire_sync`` under ``--minibroker-external``: ActiveMQ's JMS
    client reaches the real broker's default OpenWire connector through them and sees there what it sees on
    minibroker."""
    classpath = compile_openwire_java(tmp_path / "classes")
    for name, text in JMS_PROJECT.items():
        (tmp_path / name).write_text(text.replace("@CLASSPATH@", classpath).replace("@MESSAGES@", repr(MESSAGES)))
    done, count = run_on(tmp_path, ["test_jms.py"], activemq)
    ran, outcomes, only = int(count[1]), count[2], int(count[3])
    activemq_counts.append(f"ActiveMQ's JMS client through the OpenWire fixtures: {ran} ran on ActiveMQ ({outcomes})")
    assert (ran, outcomes, only) == (2, "2 passed", 0), done.stdout
