"""Running the installed ``minibroker`` command in tests: one-shot commands, and ``serve`` processes."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

#: the console script of the installed package (never the source tree)
MINIBROKER = str(Path(sys.executable).parent / "minibroker")
TIMEOUT = 10.0


async def run(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run a command to completion: (exit code, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


class Served:
    """A running ``minibroker serve`` and the URL it printed."""

    def __init__(self, proc: asyncio.subprocess.Process, url: str) -> None:
        self.proc = proc
        self.url = url

    async def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        return await asyncio.wait_for(self.proc.wait(), TIMEOUT)

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()


async def serve(cwd: Path, *options: str, command: Sequence[str] = (MINIBROKER,)) -> Served:
    """Start ``minibroker serve --port 0 OPTIONS`` in ``cwd`` (not the repository, so the installed package runs)
    and wait for the URL on its first line."""
    proc = await asyncio.create_subprocess_exec(
        *command,
        "serve",
        "--port",
        "0",
        *options,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), TIMEOUT)
    except BaseException:
        proc.kill()
        await proc.wait()
        raise
    url = line.decode().strip()
    assert url.startswith("tcp://127.0.0.1:"), line
    return Served(proc, url)
