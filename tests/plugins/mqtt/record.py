#!/usr/bin/env python3
"""Record the MQTT scenarios (tests/support/mqtt_scenarios.py) on ActiveMQ 5.17.2's MQTT connector, twice
each, into recordings/.

    .venv/bin/python tests/plugins/mqtt/record.py [NAME ...]

Needs Java 17 and Debian's activemq, libactivemq-java and libmqtt-client-java (oracle/build.sh compiles the small
broker it runs). Scenarios whose two runs differ are reported and not written. The test suite never runs this file.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from support.mqtt_scenarios import SCENARIOS, Event  # noqa: E402

RECORDINGS = HERE / "recordings"


class ActiveMQWorld:
    """An embedded ActiveMQ with an MQTT connector (oracle/MqttOracle.java) and its JMS side over stdin/stdout."""

    def __init__(self, classpath: str) -> None:
        self.classpath = classpath
        self.events: list[Event] = []
        self.port = 0

    async def __aenter__(self) -> ActiveMQWorld:
        self.proc = await asyncio.create_subprocess_exec(
            "java", "-cp", self.classpath, "MqttOracle", stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.port = json.loads(await self._line())["port"]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._ask({"op": "quit"}, answer=False)
        await self.proc.wait()

    async def _line(self) -> str:
        assert self.proc.stdout is not None
        return (await self.proc.stdout.readline()).decode()

    async def _ask(self, op: dict[str, Any], answer: bool = True) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(op) + "\n").encode())
        await self.proc.stdin.drain()
        if not answer:
            return {}
        reply: dict[str, Any] = json.loads(await self._line())
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    async def jms_consumer(self, label: str, topic: str) -> None:
        await self._ask({"op": "jms_consumer", "label": label, "topic": topic})

    async def jms_receive(self, label: str, timeout: float = 5.0) -> dict[str, Any] | None:
        message: dict[str, Any] | None = (
            await self._ask({"op": "jms_receive", "label": label, "timeout_ms": int(timeout * 1000)})
        ).get("message")
        return message

    async def jms_send(self, topic: str, body: str, persistent: bool = True) -> None:
        await self._ask({"op": "jms_send", "topic": topic, "body": body, "persistent": persistent})

    async def durable_subs(self) -> list[dict[str, Any]]:
        subs: list[dict[str, Any]] = (await self._ask({"op": "durable_subs"}))["subs"]
        return subs


async def run(name: str, classpath: str) -> list[Event]:
    async with ActiveMQWorld(classpath) as world:
        await SCENARIOS[name](world)
        return world.events


def main(names: list[str]) -> int:
    build = subprocess.run([str(HERE / "oracle" / "build.sh")], check=True, capture_output=True, text=True)
    classpath = build.stdout.strip().splitlines()[-1]
    RECORDINGS.mkdir(exist_ok=True)
    unstable = 0
    for name in names or list(SCENARIOS):
        first, second = asyncio.run(run(name, classpath)), asyncio.run(run(name, classpath))
        if first != second:
            print(f"{name}: the two runs differ:\n{first}\n{second}", file=sys.stderr)
            unstable += 1
            continue
        record = {
            "scenario": name,
            "origin": "recorded on ActiveMQ 5.17.2's MQTT connector (tests/plugins/mqtt/oracle) with paho-mqtt, "
            "run twice, identical",
            "events": first,
        }
        (RECORDINGS / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
        print(f"{name}: {len(first)} events")
    return 1 if unstable else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
