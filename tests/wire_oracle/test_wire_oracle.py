"""The wire corpus replayed against ``minibroker serve`` over real sockets: every script in ``corpus/`` (recorded on
ActiveMQ 5.17.2 by ``record.py``, three runs agreeing) is run again with the same real clients (stomp.py, paho-mqtt,
a raw STOMP socket) against one ``serve`` with STOMP and MQTT ports, and what each client received must equal the
recording, event for event, after the same normalisation (README.md).

The scripts run ``PARALLEL`` at a time in one module-scoped replay (each uses names of its own); each test then
compares one script. Where minibroker does not yet behave as ActiveMQ does, the script is listed under its cause in
``KNOWN_DIFFERENCES`` and is a strict xfail: a fix shows up as an unexpected pass.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.servekit import serve

from wire_oracle import runner

CORPUS = Path(__file__).parent / "corpus"
NAMES = sorted(p.stem for p in CORPUS.glob("*.json") if p.name != "MANIFEST.json")
PARALLEL = 8
#: the whole replay's budget on a 2-core machine
BUDGET = 120.0

#: cause -> the scripts whose replay differs from ActiveMQ's recording for that cause (issue 42)
KNOWN_DIFFERENCES: dict[str, list[str]] = {
    # new (not in the table): ActiveMQ answers SUBSCRIBE with SUBACK, then sends the retained messages;
    # minibroker writes the retained messages first
    "retained message before SUBACK": ["basic-mqtt"],
}

_CAUSE = {name: cause for cause, names in KNOWN_DIFFERENCES.items() for name in names}


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CORPUS / f"{name}.json").read_text())
    return data


async def _replay(tmp: Path, recordings: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], float]:
    served = await serve(tmp, "--stomp-port", "0", "--mqtt-port", "0")
    try:
        assert served.proc.stdout is not None and served.proc.stderr is not None
        stomp = (await asyncio.wait_for(served.proc.stdout.readline(), 10)).decode().strip()
        mqtt = (await asyncio.wait_for(served.proc.stdout.readline(), 10)).decode().strip()
        stderr = served.proc.stderr

        async def drain() -> None:  # a full stderr pipe would stop the server
            while await stderr.read(65536):
                pass

        draining = asyncio.ensure_future(drain())
        started = time.monotonic()
        results = await asyncio.to_thread(
            runner.run_many,
            [recordings[name]["script"] for name in NAMES],
            "127.0.0.1",
            int(stomp.rsplit(":", 1)[1]),
            int(mqtt.rsplit(":", 1)[1]),
            {name: recordings[name]["transcript"] for name in NAMES},
            PARALLEL,
        )
        elapsed = time.monotonic() - started
        assert await served.stop() == 0
        await draining
        return results, elapsed
    finally:
        await served.kill()


@pytest.fixture(scope="module")
def replays(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    recordings = {name: load(name) for name in NAMES}
    results, elapsed = asyncio.run(_replay(tmp_path_factory.mktemp("wire"), recordings))
    print(f"\nwire corpus: {len(NAMES)} scripts replayed in {elapsed:.1f} s")
    assert elapsed < BUDGET, f"the replay took {elapsed:.0f} s"
    yield results


def describe(recorded: dict[str, list[Any]], replayed: dict[str, list[Any]] | str) -> str:
    if isinstance(replayed, str):
        return f"the replay raised {replayed}"
    lines = []
    for client in sorted(set(recorded) | set(replayed)):
        want, got = recorded.get(client, []), replayed.get(client, [])
        if want == got:
            continue
        i = next((i for i, (w, g) in enumerate(zip(want, got, strict=False)) if w != g), min(len(want), len(got)))
        lines.append(f"client {client} differs from event {i}:")
        lines.append(
            "  ActiveMQ:    " + "\n               ".join(json.dumps(e, sort_keys=True) for e in want[i : i + 3])
        )
        lines.append(
            "  minibroker:  " + "\n               ".join(json.dumps(e, sort_keys=True) for e in got[i : i + 3])
        )
    return "\n".join(lines)


def _param(name: str) -> Any:
    if name in _CAUSE:
        return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=_CAUSE[name]))
    return name


@pytest.mark.parametrize("name", [_param(name) for name in NAMES])
def test_replay(name: str, replays: dict[str, Any]) -> None:
    recorded = load(name)["transcript"]
    replayed = replays[name]
    assert replayed == recorded, describe(recorded, replayed)


def test_known_differences_name_recorded_scripts() -> None:
    """Every script the table lists exists, and under one cause only."""
    listed = [name for names in KNOWN_DIFFERENCES.values() for name in names]
    assert sorted(set(listed) - set(NAMES)) == []
    assert len(listed) == len(set(listed))
