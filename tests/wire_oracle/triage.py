"""Replay the corpus against ``minibroker serve`` once and sort the differences by cause, for maintaining
``KNOWN_DIFFERENCES``: ``.venv/bin/python tests/wire_oracle/triage.py [--show CAUSE]``. Prints, per guessed cause,
the scripts and (with ``--show``) each one's first differing events. The guesses read the first differing events
of every client; ``unclassified`` needs a person."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from wire_oracle import test_wire_oracle as replay  # noqa: E402


def first_differences(recorded: dict[str, list[Any]], replayed: Any) -> list[tuple[str, Any, Any]]:
    if isinstance(replayed, str):
        return [("*", None, replayed)]
    out = []
    for client in sorted(set(recorded) | set(replayed)):
        want, got = recorded.get(client, []), replayed.get(client, [])
        if want == got:
            continue
        i = next((i for i, (w, g) in enumerate(zip(want, got, strict=False)) if w != g), min(len(want), len(got)))
        out.append((client, want[i] if i < len(want) else None, got[i] if i < len(got) else None))
    return out


def guess(diffs: list[tuple[str, Any, Any]]) -> str:
    text = json.dumps(diffs)
    causes = []
    for _client, want, got in diffs:
        w = want or {}
        g = got or {}
        wh, gh = w.get("h", {}), g.get("h", {})
        if "suback" in w and "publish" in g and g.get("retain"):
            causes.append("retained message before SUBACK")
        elif w.get("suback") == [0] and g.get("suback") == [128]:
            causes.append("MQTT subscription to an advisory topic refused")
        elif "original-destination" in wh and "original-destination" not in gh:
            causes.append("original-destination")
        elif "originalExpiration" in wh and "originalExpiration" not in gh:
            causes.append("originalExpiration")
        elif "Advisory" in json.dumps(w) or "Advisory" in json.dumps(g):
            causes.append("STOMP advisories")
        elif "Durable consumer is in use" in json.dumps(w):
            causes.append("durable UNSUBSCRIBE while open")
        elif wh.get("redelivered") != gh.get("redelivered") and w.get("b") == g.get("b"):
            causes.append("redelivered")
        elif "ActiveMQ.MQTT.QoS" in text or ("publish" in w and "publish" in g and w["qos"] != g["qos"]):
            causes.append("ActiveMQ.MQTT.QoS")
        elif "There already is a subscription" in json.dumps(w):
            causes.append("subscription id reuse")
        elif "DestinationDoesNotExist" in json.dumps(w) and "never" in text:
            causes.append("SEND to a temporary queue that never existed")
        elif w.get("f") == "ERROR" and g.get("f") == "ERROR":
            causes.append("ERROR texts")
        else:
            causes.append("unclassified")
    return " + ".join(sorted(set(causes)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", nargs="*", default=[], help="print the differences of these causes")
    parser.add_argument("--json", help="write {name: [cause, differences]} here")
    args = parser.parse_args()
    recordings = {name: replay.load(name) for name in replay.NAMES}
    with tempfile.TemporaryDirectory() as tmp:
        results, elapsed = asyncio.run(replay._replay(Path(tmp), recordings))
    by_cause: dict[str, list[str]] = {}
    report = {}
    for name in replay.NAMES:
        if results[name] == recordings[name]["transcript"]:
            continue
        diffs = first_differences(recordings[name]["transcript"], results[name])
        cause = guess(diffs)
        by_cause.setdefault(cause, []).append(name)
        report[name] = [cause, diffs]
    same = len(replay.NAMES) - len(report)
    print(f"{same} / {len(replay.NAMES)} identical, replayed in {elapsed:.1f} s")
    for cause, names in sorted(by_cause.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(names):4d}  {cause}: {' '.join(names)}")
        if cause in args.show or "all" in args.show:
            for name in names:
                for client, want, got in report[name][1]:
                    print(f"      {name} {client}")
                    print(f"        AMQ  {json.dumps(want)[:300]}\n        MINI {json.dumps(got)[:300]}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
