"""ActiveMQ's own JMS client in tests: the Java programs of ``tests/plugins/openwire/java`` compiled against Debian's
activemq-client 5.17.2. One home for the build, for the OpenWire tests, the synchronous fixtures' and the run on a
real ActiveMQ (``tests/real_activemq``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

JAVA_DIR = Path(__file__).resolve().parents[1] / "plugins" / "openwire" / "java"
CLIENT_JAR = Path("/usr/share/java/activemq-client.jar")
#: what ``OpenWireClient URL messages`` prints after CONNECTED (a send, a commit, a receive of each kind, an ack), the
#: same on minibroker and on ActiveMQ 5.17.2
MESSAGES = [
    "SENT 3",
    "COMMITTED",
    "RECEIVED text:hello, minibroker big=1099511627776(Long) flag=true(Boolean) kind=greeting(String) "
    "n=7(Integer) ratio=0.25(Double) small=3(Short)",
    "RECEIVED map:name=widget;ok=true;price=9.5;qty=3;",
    "RECEIVED text:non-persistent",
    "RECEIVED text:in a transaction",
    "ACKED",
]


def compile_openwire_java(build: Path) -> str:
    """Compile the programs (``OpenWireClient``, ...) into ``build``: the classpath to run them with. Skips the test
    on a machine without ``javac`` or the jars, saying what to install."""
    if shutil.which("javac") is None or not CLIENT_JAR.exists():
        pytest.skip(
            "needs Java 17 (javac) and Debian's libactivemq-java: "
            "apt-get install openjdk-17-jdk-headless libactivemq-java"
        )
    done = subprocess.run(
        ["sh", str(JAVA_DIR / "build.sh")],
        env={**os.environ, "OPENWIRE_JAVA_BUILD": str(build)},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]
