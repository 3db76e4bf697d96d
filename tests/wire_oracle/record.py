"""Re-record the wire corpus on a real ActiveMQ 5.17.2: ``.venv/bin/python tests/wire_oracle/record.py``.

Every script of ``gen.py`` is run ``--runs`` times (six; at least three) on fresh brokers (``oracle/WireOracle.java``,
embedded, STOMP and MQTT connectors, ActiveMQ's defaults), ``--batch`` scripts per broker and ``--parallel`` at a
time (each script uses names of its own). A script is kept, with its transcript, in ``corpus/<name>.json`` only when
every run produced the same normalised transcript; ``corpus/MANIFEST.json`` lists the others and where their runs
first differed. Needs Java 17 and Debian's activemq, libactivemq-java, libxstream-java, libxpp3-java,
libjettison-java, libmqtt-client-java and libhawtdispatch-java. Never run by the test suite.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from wire_oracle import gen, runner  # noqa: E402

CORPUS = HERE / "corpus"

#: run on each fresh broker before its batch and not recorded: the JVM's first advisory, STOMP and MQTT conversions
#: load classes for a good part of a second, which would otherwise land inside the first scripts' quiet spells
WARM_UP: dict[str, Any] = {
    "name": "warm-up",
    "clients": {"a": {"proto": "stomp", "version": "1.2"}, "m": {"proto": "mqtt", "client_id": "warm-up"}},
    "steps": [
        {"c": "a", "op": "connect"},
        {"c": "m", "op": "connect"},
        {"c": "m", "op": "subscribe", "topic": "warm-up/t", "qos": 1},
        {"c": "a", "op": "subscribe", "dest": "/topic/ActiveMQ.Advisory.Consumer.Queue.warm-up", "id": "adv"},
        {"c": "a", "op": "subscribe", "dest": "/queue/warm-up", "id": "q", "ack": "client"},
        {"c": "a", "op": "send", "dest": "/queue/warm-up", "body": "x", "headers": {"persistent": "true"}},
        {"c": "a", "op": "send", "dest": "/topic/warm-up.t", "body": "x", "text": True},
        {"c": "m", "op": "publish", "topic": "warm-up/t", "payload": "y", "qos": 2},
        {"op": "sync"},
        {"c": "a", "op": "disconnect"},
        {"c": "m", "op": "disconnect"},
    ],
}


def build() -> str:
    out = subprocess.run(["sh", str(HERE / "oracle" / "build.sh")], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def record_batch(classpath: str, scripts: list[dict[str, Any]], parallel: int, persistent: bool) -> dict[str, Any]:
    proc = subprocess.Popen(
        ["java", "-cp", classpath, "WireOracle", "persistent" if persistent else "memory"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        ports = json.loads(proc.stdout.readline())
        runner.run_script(WARM_UP, "127.0.0.1", ports["stomp"], ports["mqtt"])
        return runner.run_many(scripts, "127.0.0.1", ports["stomp"], ports["mqtt"], parallel=parallel)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def first_difference(a: Any, b: Any) -> str:
    """Where two transcripts of one script first differ, for the manifest."""
    if isinstance(a, str) or isinstance(b, str):
        return f"a run failed: {a if isinstance(a, str) else b}"
    for client in sorted(set(a) | set(b)):
        x, y = a.get(client, []), b.get(client, [])
        for i in range(max(len(x), len(y))):
            ex = x[i] if i < len(x) else None
            ey = y[i] if i < len(y) else None
            if ex != ey:
                return f"client {client}, event {i}: {short(ex)} / {short(ey)}"
    return "?"


#: (what the first difference between two runs shows, the race on the real broker it is), first match wins
RACES = [
    ("a run failed", "the run raised (see the text)"),
    ("Advisory", "a consumer advisory's JSON over STOMP differs run to run"),
    ('"suback"', "a SUBACK against the retained messages its SUBSCRIBE releases"),
    ("/sess", "an offline MQTT session's backlog (sent over STOMP and MQTT) in either order on reconnect"),
    ('"qos": 2', "a QoS 2 delivery's PUBREL against the next PUBLISH to the same subscriber"),
    ("-c3", "a composite consumer gets its queues' messages in either order"),
    ("-c4", "a composite consumer gets its queues' messages in either order"),
    ("RECEIPT", "a MESSAGE another connection caused (browse, publish) against this connection's own RECEIPT"),
    ("connack", "a taken-over MQTT client: when its connection is closed"),
    ('"closed"', "when the broker closes a connection after an ERROR or a takeover"),
    ("MESSAGE", "the messages a closed consumer held (prefetched or unacked) reach the next consumer in either order"),
]


NOTE = (
    "dropped: each script whose runs differed, with the race and where two runs first differed. Also seen while "
    "recording, before the generator or the normalisation took them out: a SUBACK against the retained messages it "
    "releases (normalised: runner._suback_first), a QoS 2 PUBREL against the next PUBLISH to the same subscriber "
    "(gen.mqtt_qos syncs between the two publishes)"
)


def race_of(difference: str) -> str:
    return next((race for mark, race in RACES if mark in difference), "other")


def short(event: Any) -> str:
    if event is None:
        return "(nothing)"
    if "f" in event:
        h = event["h"]
        detail = h.get("destination", h.get("receipt-id", h.get("message", "")))
        return f"{event['f']} {detail} {event['b'][:60]!r}"
    return json.dumps(event, sort_keys=True)[:120]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6, help="runs on fresh brokers; a script is kept only if all agree")
    parser.add_argument("--batch", type=int, default=100, help="scripts per fresh broker")
    parser.add_argument("--parallel", type=int, default=6, help="scripts at a time on one broker")
    parser.add_argument("--only", nargs="*", help="these scripts (names or prefixes) only; the others stay as they are")
    args = parser.parse_args()
    assert args.runs >= 3, "a script is kept only where at least three runs agree"
    scripts = gen.all_scripts()
    if args.only:
        scripts = [s for s in scripts if any(s["name"].startswith(p) for p in args.only)]
    classpath = build()
    runs: list[dict[str, Any]] = []
    for run in range(args.runs):
        started = time.monotonic()
        order = list(scripts)
        random.Random(run).shuffle(order)  # other neighbours in every run
        results: dict[str, Any] = {}
        for persistent in (False, True):
            group = [s for s in order if s.get("persistent", False) == persistent]
            for i in range(0, len(group), args.batch):
                results.update(record_batch(classpath, group[i : i + args.batch], args.parallel, persistent))
        runs.append(results)
        print(f"run {run + 1}: {len(results)} scripts in {time.monotonic() - started:.0f} s", flush=True)
    CORPUS.mkdir(exist_ok=True)
    manifest_path = CORPUS / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text()) if args.only and manifest_path.exists() else {"dropped": {}}
    kept = 0
    for script in scripts:
        name = script["name"]
        path = CORPUS / f"{name}.json"
        results = [r[name] for r in runs]
        manifest["dropped"].pop(name, None)
        if all(r == results[0] for r in results) and not isinstance(results[0], str):
            path.write_text(json.dumps({"script": script, "transcript": results[0]}, sort_keys=True) + "\n")
            kept += 1
        else:
            path.unlink(missing_ok=True)
            bad = next(r for r in results[1:] if r != results[0]) if len(set(map(str, results))) > 1 else results[0]
            where = first_difference(results[0], bad)
            manifest["dropped"][name] = {"race": race_of(where), "first difference": where}
    if not args.only:
        for stale in CORPUS.glob("*.json"):
            if stale.name != "MANIFEST.json" and stale.stem not in {s["name"] for s in scripts}:
                stale.unlink()
    manifest.update(
        {
            "broker": "ActiveMQ 5.17.2 (Debian), embedded by oracle/WireOracle.java",
            "runs": args.runs,
            "generator": gen.DESCRIPTION,
            "kept": len([p for p in CORPUS.glob("*.json") if p.name != "MANIFEST.json"]),
            "dropped_count": len(manifest["dropped"]),
            "note": NOTE,
        }
    )
    manifest["dropped"] = dict(sorted(manifest["dropped"].items()))
    races: dict[str, int] = {}
    for entry in manifest["dropped"].values():
        races[entry["race"]] = races.get(entry["race"], 0) + 1
    manifest["races"] = dict(sorted(races.items(), key=lambda kv: -kv[1]))
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"kept {kept} of {len(scripts)}; dropped: {len(scripts) - kept}")


if __name__ == "__main__":
    main()
