"""Replays every scenario recorded on a real ActiveMQ 5.17.2 against minibroker, in virtual time.

``recordings/`` holds the scenarios as recorded (copied unchanged from the project's shared conformance folder);
``scripts/`` holds each one re-expressed as an oracle script, verified to reproduce its recording on the real broker
(see VERIFIED.txt and EXTENSIONS.md). A scenario passes when minibroker produces the same events: order, bodies,
flags, counters, statistics and DLQ contents exactly, redelivery gaps within the recording's tolerance.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.scriptrunner import compare, public, run_script

HERE = Path(__file__).resolve().parent
RECORDINGS = sorted(HERE.glob("recordings/*.json"))
#: the STOMP scenarios are replayed over a real STOMP connection by tests/plugins/stomp/test_recordings.py
RECORDINGS = [path for path in RECORDINGS if not path.stem.startswith("stomp_")]
PENDING: dict[str, str] = {}


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _params() -> list[Any]:
    params = []
    for path in RECORDINGS:
        marks = [pytest.mark.conformance]
        if path.stem in PENDING:
            marks.append(pytest.mark.xfail(reason=PENDING[path.stem], strict=True))
        params.append(pytest.param(path.stem, marks=marks, id=path.stem))
    return params


@pytest.mark.parametrize("transport", ["memory", "tcp"])
@pytest.mark.parametrize("name", _params())
async def test_scenario(name: str, transport: str) -> None:
    """minibroker reproduces the events the real broker produced for this scenario, in-process and over TCP."""
    recording = load(HERE / "recordings" / f"{name}.json")
    script_path = HERE / "scripts" / f"{name}.json"
    assert script_path.exists(), f"no script re-expresses {name}"
    script = load(script_path)
    late = 500 if "redeliveryPlugin" in (script.get("broker") or {}) else 60
    events = await run_script(script, transport)
    difference = compare(recording["events"], events, late_tolerance_ms=late)
    assert difference is None, f"{name}: {difference}\n\nall events:\n" + "\n".join(
        json.dumps(e) for e in public(events)
    )
