"""The runner: ``minibroker serve --data-dir`` as a subprocess, stopped at seeded points and restarted on the same
directory, lifetime after lifetime, with the plan's actors running against it; then a last restart, the drain, and
the checker.

A kill point is a count, not a time: a lifetime ends once its actors have had ``kill_after`` operations confirmed
(sends, acks, purges), which the ledger counts as they happen. A count is what a seed can fix; the instant the
signal lands among the operations in flight is up to the machine, and the checker accepts any such instant.
SIGKILL is a crash; SIGTERM is a clean stop (the broker disconnects its clients and closes the store), which must
keep the same promises.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import signal
import time
from pathlib import Path

import attrs
from support.servekit import MINIBROKER

from .actors import READERS, Context, Urls, drain, read_retained, run_actor, setup
from .checker import Verdict, check
from .model import Ledger
from .workload import Lifetime, Plan

__all__ = ["CONFIG", "Outcome", "run_plan"]

#: the broker of every run: the scheduler on, STOMP and MQTT listeners beside the native one, all on free ports
CONFIG = """\
[broker]
scheduler_support = true

[server]
stomp_port = 0
mqtt_port = 0
"""
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
#: a lifetime whose actors get nothing confirmed for this long is a stall (an error of the run), then killed anyway
LIFETIME_TIMEOUT = 60.0
#: after the signal, how long the actors get to notice that the broker is gone before they are cancelled
WIND_DOWN = 10.0


@attrs.define(slots=True)
class Outcome:
    """A finished run: its plan, its ledger and the checker's verdict, with the figures a report prints."""

    plan: Plan
    ledger: Ledger
    verdict: Verdict
    seconds: float
    kills: int
    restarts: int


@attrs.define(slots=True, eq=False)
class Server:
    proc: asyncio.subprocess.Process
    urls: Urls


def _die_with_parent() -> None:
    """In the child: SIGKILL when the harness dies (Linux's PR_SET_PDEATHSIG), so no broker outlives a run."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


async def start(workdir: Path, index: int) -> Server:
    """Start ``minibroker serve`` on the run's data directory and wait for its three URLs; its log goes to a file."""
    log = open(workdir / f"serve-{index}.log", "wb")  # noqa: SIM115 (the child writes it; closed below)
    try:
        proc = await asyncio.create_subprocess_exec(
            MINIBROKER,
            "serve",
            "--port",
            "0",
            "--config",
            str(workdir / "broker.toml"),
            "--data-dir",
            str(workdir / "data"),
            cwd=workdir,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
            preexec_fn=_die_with_parent,
        )
    finally:
        log.close()
    assert proc.stdout is not None
    urls: dict[str, str] = {}
    try:
        async with asyncio.timeout(START_TIMEOUT):
            while len(urls) < 3:
                line = (await proc.stdout.readline()).decode().strip()
                if not line:
                    raise RuntimeError(f"serve exited before its URLs (see serve-{index}.log)")
                urls[line.split("://")[0]] = line
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise
    return Server(proc, Urls(urls["tcp"], urls["stomp"], urls["mqtt"]))


async def stop(server: Server, sig: int, ledger: Ledger) -> None:
    server.proc.send_signal(sig)
    code = await asyncio.wait_for(server.proc.wait(), STOP_TIMEOUT)
    expected = -signal.SIGKILL if sig == signal.SIGKILL else 0
    if code != expected:
        ledger.error(f"serve exited with {code} on {signal.Signals(sig).name}")
    ledger.kills.append(signal.Signals(sig).name)


async def live(plan: Plan, life: Lifetime, server: Server, ledger: Ledger) -> None:
    """One lifetime: the actors run until ``kill_after`` confirmed operations, then the broker gets its signal."""
    ledger.lifetime = life.index
    ledger.progress.clear()
    ledger.operations = 0
    enough = asyncio.Event()
    bulk = [a.name for a in plan.actors if a.kind == "bulk"]

    def on_progress() -> None:
        if ledger.operations >= life.kill_after and ledger.progress["paging"] >= life.bulk * len(bulk):
            enough.set()

    ledger.on_progress = on_progress
    began = time.monotonic()
    ctx = Context(plan, ledger, server.urls, life)
    tasks = [asyncio.create_task(run_actor(ctx, actor)) for actor in plan.actors]
    try:
        await asyncio.wait_for(enough.wait(), LIFETIME_TIMEOUT)
    except TimeoutError:
        ledger.error(f"stalled: {ledger.operations} of {life.kill_after} operations confirmed in {LIFETIME_TIMEOUT} s")
    ctx.stopping.set()
    ledger.on_progress = None
    await stop(server, life.signal, ledger)
    ledger.timings.append((f"lifetime {life.index}", time.monotonic() - began))
    began = time.monotonic()
    _, pending = await asyncio.wait(tasks, timeout=WIND_DOWN)
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    ledger.timings.append((f"wind-down {life.index}", time.monotonic() - began))


async def run_plan(plan: Plan, workdir: Path) -> Outcome:
    """Run ``plan`` in ``workdir`` (its config, data directory and the servers' logs) and check it."""
    run_began = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "broker.toml").write_text(CONFIG)
    ledger = Ledger()
    server = await start(workdir, 0)
    restarts = 0
    try:
        await setup(Context(plan, ledger, server.urls, plan.lifetimes[0]))
        for life in plan.lifetimes:
            await live(plan, life, server, ledger)
            server = await start(workdir, life.index + 1)
            restarts += 1
        ledger.lifetime = len(plan.lifetimes)
        ctx = Context(plan, ledger, server.urls, plan.lifetimes[-1])
        began = time.monotonic()
        # every sink at once (each has its own connection): a drain's waits overlap
        await asyncio.gather(
            *(drain(ctx, actor) for actor in plan.actors if actor.kind in READERS),
            *(read_retained(ctx, actor) for actor in plan.actors if actor.kind == "retainer"),
        )
        ledger.timings.append(("drain", time.monotonic() - began))
        await stop(server, signal.SIGTERM, ledger)
        ledger.kills.pop()  # the last stop is the end of the run, not one of its kills
    finally:
        if server.proc.returncode is None:
            server.proc.kill()
            await server.proc.wait()
    return Outcome(plan, ledger, check(ledger), time.monotonic() - run_began, len(plan.lifetimes), restarts)
