#!/usr/bin/env python3
"""Re-record the feature recordings (``features/*.json``) on the real broker, with this folder's oracle copy.

    .venv/bin/python tests/differential/record_features.py [NAME ...]

Each file holds ``{"name", "origin", "script", "events"}``. The script of every file (or of the named ones) runs
twice on ActiveMQ 5.17.2 (``oracle/run-script.sh``; needs Java 17, ``activemq`` and ``libactivemq-java``); a script
whose two runs differ (ignoring ``t_ms``) is reported and left unchanged, the others get the first run's events.
A file with ``"order": "per_queue"`` (a consumer on several queues, whose interleaving across queues is ActiveMQ's
threads' choice) compares its runs in ``support/interleaving.py``'s canonical order, and keeps the first run.
Stdlib only; the test suite never runs this file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from support.interleaving import per_queue_order  # noqa: E402

FEATURES = HERE / "features"
RUN = HERE / "oracle" / "run-script.sh"


def run(paths: list[Path]) -> dict[str, list[dict[str, object]]]:
    out = subprocess.run([str(RUN), *map(str, paths)], check=True, capture_output=True, text=True).stdout
    results = {}
    for line in out.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            results[record["script"]] = record["events"]
    return results


def untimed(events: list[dict[str, object]]) -> list[dict[str, object]]:
    return [{k: v for k, v in e.items() if k not in ("t_ms", "gap_ms")} for e in events]


def main(names: list[str]) -> int:
    files = sorted(FEATURES.glob("*.json"))
    if names:
        files = [f for f in files if f.stem in names]
    with tempfile.TemporaryDirectory() as tmp:
        scripts = []
        for f in files:
            script = json.loads(f.read_text())["script"]
            path = Path(tmp) / f.name
            path.write_text(json.dumps(script))
            scripts.append(path)
        first, second = run(scripts), run(scripts)
    unstable = 0
    for f in files:
        record = json.loads(f.read_text())
        name = record["script"].get("name", f.stem)
        canonical = per_queue_order if record.get("order") == "per_queue" else list
        if untimed(canonical(first[name])) != untimed(canonical(second[name])):
            print(f"{name}: the two runs differ; left unchanged", file=sys.stderr)
            unstable += 1
            continue
        record["events"] = first[name]
        f.write_text(json.dumps(record, indent=1) + "\n")
    print(f"{len(files) - unstable} recorded, {unstable} unstable")
    return 1 if unstable else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
