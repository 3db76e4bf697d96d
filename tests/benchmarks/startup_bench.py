#!/usr/bin/env python3
"""What a user feels first (issue 45): import cost, the first test of a session, a realistic test, ``serve`` start-up.

    .venv/bin/python tests/benchmarks/startup_bench.py [--only import,first,collect,test,serve] [--runs 7]

Each row is printed with the baseline measured in the same run and pass/fail:

* ``import``: CPU instructions (callgrind) of ``from minibroker import Broker; import minibroker.client`` against
  ``import asyncio, attrs``, bytecode cached for both; target <= 1.4x.
* ``first``: a pytest session of one test on ``minibroker_connection`` against one on an ``asyncio.Queue`` fixture,
  as in a CI image with PYTHONDONTWRITEBYTECODE=1 (installed modules compiled once, plainly, as pip does; nothing
  written, so whatever pytest rewrites is parsed and compiled again every session), wall time, best of ``--runs`` in
  turns; target <= +60 ms.
* ``collect``: instructions of collecting that minibroker test file (``--collect-only``: the plugin and the test
  module's ``from minibroker.client import AckMode``) over collecting the Queue one, the same bytecode; target
  <= +0.3G.
* ``test``: a realistic test (the fixture, connect, send 10, receive 10, teardown) over the same test on an
  asyncio.Queue fixture: the instructions one more such test adds to a session (sessions of 1 and 201 tests), bytecode
  cached; target <= +1.2M.
* ``serve``: instructions of ``minibroker serve --port 0 --stomp-port 0`` from spawn to its first STOMP CONNECTED,
  against coilmq (a pure-Python STOMP broker) from spawn to its first CONNECTED, counted up to that frame with
  ``callgrind_control --dump``; target <= 1.2x. coilmq comes from ``--coilmq PATH`` (its ``coilmq`` script), or a
  throwaway venv this script creates once under the system's temporary directory.

Instructions, not seconds, wherever the figure allows: the machine is shared, and a count does not move with its load.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

IMPORT_CODE = "from minibroker import Broker; from minibroker.client import AckMode, connect"
IMPORT_BASELINE = "import asyncio, attrs"

INI = """[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
"""

MINIBROKER_TEST = '''"""A realistic test on the minibroker fixtures."""
import pytest

from minibroker.client import AckMode


@pytest.mark.parametrize("i", range({n}))
async def test_ten_messages(i, minibroker_connection):
    session = await minibroker_connection.create_session(AckMode.AUTO_ACKNOWLEDGE)
    producer = await session.create_producer("orders")
    consumer = await session.create_consumer("orders")
    for k in range(10):
        await producer.send(f"m{{k}}")
    bodies = [(await consumer.receive(timeout=1)).body for _ in range(10)]
    assert bodies == [f"m{{k}}" for k in range(10)]
'''

QUEUE_TEST = '''"""The same test on a bare asyncio.Queue fixture."""
import asyncio

import pytest
import pytest_asyncio


@pytest_asyncio.fixture
async def queue():
    yield asyncio.Queue()


@pytest.mark.parametrize("i", range({n}))
async def test_ten_messages(i, queue):
    for k in range(10):
        await queue.put(f"m{{k}}")
    bodies = [await asyncio.wait_for(queue.get(), 1) for _ in range(10)]
    assert bodies == [f"m{{k}}" for k in range(10)]
'''

#: the tests a session has beyond its first in the ``test`` row: enough that a full collection of pytest's heap more
#: or less (tens of millions of instructions) moves the figure per test by under 1M
EXTRA_TESTS = 200

CONNECT = b"CONNECT\naccept-version:1.0,1.1,1.2\nhost:localhost\n\n\x00"
_TOTAL = re.compile(rb"^(?:summary|totals):\s*(\d+)", re.MULTILINE)
_COLLECTED = re.compile(r"Collected : (\d+)")


def _bin(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def _env(cache: Path, *, write: bool = True) -> dict[str, str]:
    """Bytecode under the pycache prefix ``cache``; ``write=False``: read there, none written (a CI image with
    PYTHONDONTWRITEBYTECODE: pip compiled the installed modules, pytest's rewritten ones are compiled every run)."""
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(cache), PYTHONHASHSEED="0")  # the same set orders every run
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def instructions(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> int:
    """CPU instructions of one process, from callgrind's total."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{argv} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return int(found.group(1))


def _row(name: str, value: str, baseline: str, figure: str, target: str, ok: bool) -> bool:
    print(f"{name:<44} {value:>16}  {baseline:<34} {figure:>10}  {target:<12} {'pass' if ok else 'FAIL'}")
    return ok


def import_row(cache: Path) -> bool:
    env = _env(cache)
    python = [sys.executable, "-P", "-c"]
    for code in (IMPORT_CODE, IMPORT_BASELINE):  # warm the cache
        subprocess.run([*python, code], env=env, check=True)
    ours = instructions([*python, IMPORT_CODE], env)
    base = instructions([*python, IMPORT_BASELINE], env)
    ratio = ours / base
    return _row(
        "import Broker + minibroker.client",
        f"{ours / 1e6:,.0f}M instr",
        f"asyncio+attrs {base / 1e6:,.0f}M",
        f"{ratio:.2f}x",
        "<= 1.4x",
        ratio <= 1.4,
    )


def _project(directory: Path, n: int) -> None:
    (directory / "pytest.ini").write_text(INI)
    (directory / "test_minibroker.py").write_text(MINIBROKER_TEST.format(n=n))
    (directory / "test_queue.py").write_text(QUEUE_TEST.format(n=n))


def _pytest(*args: str) -> list[str]:
    return [sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *args]


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return elapsed


def _warm(directory: Path, cache: Path) -> None:
    """Compile what both sessions import into ``cache`` as an installer would: plainly, no assert rewriting."""
    for name in ("test_minibroker.py", "test_queue.py"):
        subprocess.run(_pytest("--assert=plain", name), cwd=directory, env=_env(cache), capture_output=True, check=True)


def first_row(cache: Path, runs: int) -> bool:
    env = _env(cache, write=False)
    with tempfile.TemporaryDirectory(prefix="minibroker-first-") as tmp:
        directory = Path(tmp)
        _project(directory, 1)
        _warm(directory, cache)
        ours: list[float] = []
        base: list[float] = []
        for _ in range(runs):  # in turns: a slow spell of the machine touches both sides
            base.append(_timed(_pytest("test_queue.py"), directory, env))
            ours.append(_timed(_pytest("test_minibroker.py"), directory, env))
    added = (min(ours) - min(base)) * 1000
    return _row(
        "first test of a session (no bytecode)",
        f"{min(ours) * 1000:,.0f} ms",
        f"Queue test {min(base) * 1000:,.0f} ms",
        f"{added:+.0f} ms",
        "<= +60 ms",
        added <= 60,
    )


def collect_row(cache: Path) -> bool:
    env = _env(cache, write=False)
    with tempfile.TemporaryDirectory(prefix="minibroker-collect-") as tmp:
        directory = Path(tmp)
        _project(directory, 1)
        _warm(directory, cache)
        ours = instructions(_pytest("--collect-only", "test_minibroker.py"), env, directory)
        base = instructions(_pytest("--collect-only", "test_queue.py"), env, directory)
    added = ours - base
    return _row(
        "collect a minibroker test (no bytecode)",
        f"{ours / 1e9:.2f}G instr",
        f"Queue test's {base / 1e9:.2f}G",
        f"+{added / 1e9:.2f}G",
        "<= +0.3G",
        added <= 0.3e9,
    )


def test_row(cache: Path) -> bool:
    env = _env(cache)
    per_test: dict[str, float] = {}
    for name in ("test_minibroker.py", "test_queue.py"):
        counts = []
        for n in (1, 1 + EXTRA_TESTS):
            with tempfile.TemporaryDirectory(prefix="minibroker-test-") as tmp:
                directory = Path(tmp)
                _project(directory, n)
                subprocess.run(_pytest(name), cwd=directory, env=env, capture_output=True, check=True)  # warm
                counts.append(instructions(_pytest(name), env, directory))
        per_test[name] = (counts[1] - counts[0]) / EXTRA_TESTS
    ours, base = per_test["test_minibroker.py"], per_test["test_queue.py"]
    added = ours - base
    return _row(
        "a realistic test (fixture, 10 in, 10 out)",
        f"{ours / 1e6:.2f}M instr",
        f"Queue test {base / 1e6:.2f}M",
        f"+{added / 1e6:.2f}M",
        "<= +1.2M",
        added <= 1.2e6,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _connected(port: int, deadline: float) -> bytes:
    """Connect (retrying until the server listens), send CONNECT, return the first frame's bytes."""
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=60)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)  # the server under callgrind is still starting; it does not see these attempts
    with sock:
        sock.sendall(CONNECT)
        data = b""
        while b"\x00" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    return data


def _until_connected(argv: list[str], env: dict[str, str], port_of: Callable[[subprocess.Popen[str]], int]) -> int:
    """Instructions of the server process ``argv`` from spawn to its first CONNECTED frame."""
    with tempfile.TemporaryDirectory(prefix="minibroker-serve-") as tmp:
        out = Path(tmp) / "callgrind.out"
        process = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", f"--log-file={Path(tmp) / 'log'}", *argv],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            frame = _connected(port_of(process), time.monotonic() + 300)
            subprocess.run(["callgrind_control", "--dump", str(process.pid)], capture_output=True, check=True)
            if not frame.startswith(b"CONNECTED"):
                raise RuntimeError(f"{argv[0]} answered {frame!r}")
        finally:
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=120)
        dumps = sorted(p for p in Path(tmp).glob("callgrind.out.*") if p.suffix != ".out")
        found = _TOTAL.search(dumps[0].read_bytes()) if dumps else None
        if found is None:
            raise RuntimeError("callgrind_control wrote no dump")
        return int(found.group(1))


def _coilmq(given: str | None) -> str:
    if given:
        return given
    venv = Path(tempfile.gettempdir()) / "minibroker-bench-coilmq"
    script = venv / "bin" / "coilmq"
    if not script.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "coilmq"], check=True)
    return str(script)


def serve_row(cache: Path, coilmq: str | None) -> bool:
    env = _env(cache)
    serve = [_bin("minibroker"), "serve", "--port", "0", "--stomp-port", "0"]

    def stomp_port(process: subprocess.Popen[str]) -> int:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("stomp://"):
                return int(line.rsplit(":", 1)[1])
        raise RuntimeError("minibroker serve printed no stomp:// URL")

    coil_port = _free_port()
    coil = [_coilmq(coilmq), "-b", "127.0.0.1", "-p", str(coil_port)]
    for argv, port_of in ((serve, stomp_port), (coil, lambda _: coil_port)):  # warm the bytecode cache
        process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        _connected(port_of(process), time.monotonic() + 60)
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    ours = _until_connected(serve, env, stomp_port)
    base = _until_connected(coil, env, lambda _: coil_port)
    ratio = ours / base
    return _row(
        "serve spawn -> first STOMP CONNECTED",
        f"{ours / 1e6:,.0f}M instr",
        f"coilmq {base / 1e6:,.0f}M",
        f"{ratio:.2f}x",
        "<= 1.2x",
        ratio <= 1.2,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="import,first,collect,test,serve", help="comma-separated rows")
    parser.add_argument("--runs", type=int, default=7, help="runs of each side of the first-test row (default 7)")
    parser.add_argument("--coilmq", default=None, help="coilmq's script (default: a throwaway venv)")
    args = parser.parse_args(argv)
    rows = args.only.split(",")
    ok = True
    with tempfile.TemporaryDirectory(prefix="minibroker-pycache-") as cache_dir:
        cache = Path(cache_dir)
        print(f"{'figure':<44} {'minibroker':>16}  {'baseline (same run)':<34} {'figure':>10}  {'target':<12}")
        if "import" in rows:
            ok &= import_row(cache)
        if "first" in rows:
            ok &= first_row(cache, args.runs)
        if "collect" in rows:
            ok &= collect_row(cache)
        if "test" in rows:
            ok &= test_row(cache)
        if "serve" in rows:
            ok &= serve_row(cache, args.coilmq)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
