"""The recorded corpus replayed through ActiveMQ's own JMS client against minibroker, and compared with the recordings.

    .venv/bin/python tests/openwire_replay/replay.py [--parallel N] [--show] [NAME_OR_PREFIX ...]

runs every recording under ``tests/differential/{corpus,features,mixed}`` (or those whose name starts with one of
the given words) through the oracle's minibroker mode (``ScriptOracle --minibroker``: Debian's activemq-client
5.17.2, the same interpreter that made the recordings against an embedded ActiveMQ 5.17.2) against a fresh
minibroker per script (``driver.py``), and prints the figure: identical / total, and each difference with its
explanation from ``KNOWN_DIFFERENCES`` (or ``UNEXPLAINED``; the exit status is then 1). ``--show`` prints each
unexplained difference's first differing event.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
if str(TESTS) not in sys.path:  # run as a script: the test suite's helpers are the package ``support``
    sys.path.insert(0, str(TESTS))

from support.interleaving import per_queue_order  # noqa: E402
from support.scriptrunner import compare  # noqa: E402

from openwire_replay.driver import control_server  # noqa: E402

Event = dict[str, Any]
ORACLE = TESTS / "differential" / "oracle"
FAMILIES = ("corpus", "features", "mixed", "conformance")
CONFORMANCE = TESTS / "conformance"
JARS = Path("/usr/share/java")
NEEDED_JARS = ("activemq-broker.jar", "activemq-client.jar", "geronimo-jms_1.1_spec.jar", "hawtbuf.jar")

#: recordings whose replay through the real client against minibroker differs, and why (ideally empty)
KNOWN_DIFFERENCES: dict[str, str] = {}

#: scripts whose outcome over tcp:// is a race of ActiveMQ's own client (its runs on ActiveMQ over tcp:// differ from
#: the recording, made over vm://): a difference is reported with its explanation and not counted against the figure
TCP_RACES: dict[str, str] = {
    "gen_13_046": (
        "a race of ActiveMQ's client over tcp://, not minibroker's: consumer k1 (a listener) is closed inside a "
        "transaction, so the client defers the close to the commit; the commit's own send m2 then reaches k1's "
        "listener over tcp:// before the deferred close (over vm:// it never does, as recorded), on a session "
        "thread racing the script's next rollback. ActiveMQ 5.17.2 over tcp:// (--activemq-tcp) delivers m2 too, "
        "before the rollback; minibroker's run had the rollback first, the listener's transaction begun meanwhile"
    ),
}


def recordings(family: str) -> list[Path]:
    """The recordings of a family: a file holding its script and events (differential), or for ``conformance`` the
    script (``tests/conformance/scripts``) whose recording is ``recording_of`` it."""
    if family == "conformance":  # the STOMP scenarios are replayed over STOMP (tests/plugins/stomp)
        return sorted(p for p in CONFORMANCE.glob("scripts/*.json") if not p.stem.startswith("stomp_"))
    return sorted(p for p in (TESTS / "differential" / family).glob("*.json") if p.name != "MANIFEST.json")


def recording_of(path: Path) -> dict[str, Any]:
    """The recorded events for a script path of ``recordings``."""
    if path.parent.name == "scripts":
        recorded: dict[str, Any] = json.loads((CONFORMANCE / "recordings" / path.name).read_text())
        return recorded
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def all_recordings() -> list[Path]:
    return [p for family in FAMILIES for p in recordings(family)]


def missing_tools() -> str | None:
    """Why the replay cannot run here (None: it can)."""
    import shutil

    if shutil.which("javac") is None or shutil.which("java") is None:
        return "needs Java 17 (java, javac): apt-get install openjdk-17-jdk-headless"
    absent = [j for j in NEEDED_JARS if not (JARS / j).exists()]
    if absent:
        return f"needs Debian's ActiveMQ jars ({', '.join(absent)}): apt-get install activemq libactivemq-java"
    return None


async def build(build_dir: Path) -> None:
    """Compile the oracle into ``build_dir`` (its own build script)."""
    proc = await asyncio.create_subprocess_exec(
        "sh",
        str(ORACLE / "build-script.sh"),
        env={**os.environ, "ORACLE_BUILD": str(build_dir)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"building the oracle failed:\n{out.decode()}")


#: what ``replay`` runs the scripts against: minibroker (the oracle's minibroker mode), or the oracle's embedded
#: ActiveMQ over a tcp:// connector (``--tcp``: to tell a transport's part in a difference from minibroker's) or over
#: vm:// as it recorded (to check the recordings still reproduce); ActiveMQ one script at a time
AGAINST = ("minibroker", "activemq-tcp", "activemq-vm")


async def replay(
    build_dir: Path, paths: Sequence[Path], parallel: int = 3, *, against: str = "minibroker"
) -> dict[str, dict[str, Any]]:
    """Each recording's script through the real client against a fresh minibroker (or ``against`` another broker,
    ``AGAINST``): name -> the oracle's result (``events``, and ``error`` when the script could not run)."""
    results: dict[str, dict[str, Any]] = {}
    async with control_server() as control:
        mode = {
            "minibroker": ["--minibroker", control, "--parallel", str(parallel)],
            "activemq-tcp": ["--tcp"],
            "activemq-vm": [],
        }[against]
        proc = await asyncio.create_subprocess_exec(
            "sh",
            str(ORACLE / "run-script.sh"),
            *mode,
            *map(str, paths),
            env={**os.environ, "ORACLE_BUILD": str(build_dir)},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        stderr = proc.stderr

        async def drain() -> bytes:  # the per-script timing lines; a full pipe would stop the JVM
            tail = b""
            while chunk := await stderr.read(65536):
                tail = (tail + chunk)[-8192:]
            return tail

        draining = asyncio.ensure_future(drain())
        while line := await proc.stdout.readline():
            result = json.loads(line)
            results[result["script"]] = result
        await proc.wait()
        tail = await draining
    if len(results) != len(paths):
        raise RuntimeError(f"the oracle answered {len(results)} of {len(paths)} scripts:\n{tail.decode()}")
    return results


def over_vm(event: Event) -> Event:
    """``event`` as the client would have recorded it over ``vm://``: there its ``Message.copy()`` drops a dead
    letter's ``originalExpiration`` stamp, which arrives over ``tcp://`` (README.md; ActiveMQ 5.17.2 alike)."""
    props = event.get("properties")
    if isinstance(props, dict) and "originalExpiration" in props:
        event = {**event, "properties": {k: v for k, v in props.items() if k != "originalExpiration"}}
    return event


def difference(record: dict[str, Any], result: dict[str, Any]) -> str | None:
    """None when the real client saw against minibroker what it saw against ActiveMQ: the comparison (and its
    normalisations of ids, times and the broker's name) of ``support.scriptrunner.compare``, the order across
    queues as ``per_queue_order`` where the recording says so, what ``vm://`` hides (``over_vm``). Redelivery delays
    are the client's own timers on both brokers and are not compared here (no timing asserts outside the
    benchmarks)."""
    if "error" in result:
        return f"the script did not run: {result['error']}"
    expected, got = record["events"], [over_vm(e) for e in result["events"]]
    if record.get("order") == "per_queue":
        expected, got = per_queue_order(expected), per_queue_order(got)
    return compare(expected, got, check_gaps=False)


def selected(words: Iterable[str]) -> list[Path]:
    words = list(words)
    paths = all_recordings()
    return [p for p in paths if not words or any(p.stem.startswith(w) for w in words)]


async def run(words: Sequence[str], parallel: int, show: bool, save: str | None, against: str) -> int:
    import tempfile

    paths = selected(words)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="openwire-replay-") as tmp:
        await build(Path(tmp))
        results = await replay(Path(tmp), paths, parallel, against=against)
    if save is not None:
        Path(save).write_text(json.dumps(results))
    identical = 0
    unexplained = 0
    for path in paths:
        diff = difference(recording_of(path), results[path.stem])
        if diff is None:
            identical += 1
            if path.stem in KNOWN_DIFFERENCES:
                print(f"FIXED      {path.stem}: listed in KNOWN_DIFFERENCES, now identical")
            continue
        if path.stem in TCP_RACES:
            print(f"RACE       {path.stem}: {TCP_RACES[path.stem]}")
            continue
        why = KNOWN_DIFFERENCES.get(path.stem)
        if why is None:
            unexplained += 1
            print(f"UNEXPLAINED {path.parent.name}/{path.stem}")
            if show:
                print("   ", diff.replace("\n", "\n    "))
        else:
            print(f"KNOWN      {path.stem}: {why}")
    elapsed = time.monotonic() - started
    races = sum(1 for p in paths if p.stem in TCP_RACES)
    print(
        f"openwire replay ({against}): {identical} / {len(paths)} identical, {unexplained} unexplained"
        f" ({races} listed as races of the client over tcp://; {elapsed:.0f} s)"
    )
    return 1 if unexplained else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("words", nargs="*", help="recording names or prefixes (default: the whole corpus)")
    parser.add_argument("--parallel", type=int, default=3, help="scripts at a time, each on its own broker")
    parser.add_argument("--show", action="store_true", help="print each unexplained difference")
    parser.add_argument("--save", metavar="FILE", help="write every script's events there (JSON)")
    parser.add_argument(
        "--against",
        choices=AGAINST,
        default="minibroker",
        help="the broker: minibroker, or the oracle's embedded ActiveMQ over tcp:// (triage) or vm:// (as recorded)",
    )
    args = parser.parse_args(argv)
    why = missing_tools()
    if why is not None:
        print(why, file=sys.stderr)
        return 2
    return asyncio.run(run(args.words, args.parallel, args.show, args.save, args.against))


if __name__ == "__main__":
    raise SystemExit(main())
