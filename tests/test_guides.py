"""Every guide in docs/guides/ runs as written: what a user copies from it must work.

A guide's fenced blocks say what they are in their info string:

- ```` ```python test_orders.py ```` or ```` ```toml broker.toml ````: a file of the user's project; all are written to
  one scratch directory per guide, and its ``test_*.py`` files are run with pytest there (all must pass, none skip).
- ```` ```python examples/spark_pipeline.py ````: a whole file of this repository (CI runs that file's tests), which
  must be that file exactly, so the guide cannot drift from the example and a reader gets the complete project.
- ```` ```console ````: ``$ command`` lines, run in order in the scratch directory after the files are written, each
  of which must exit 0. A command ending in `` &`` keeps running (``minibroker serve``): it is started, the test waits
  for its first line, and stops it at the end. Ports 61616 and 61613 (in commands and files) are replaced by free
  ones, so a guide can show the defaults.

Blocks without a name (a "before" snippet of another tool) are prose. A guide that needs more than Python says so
in an HTML comment, ``<!-- needs: javac /usr/share/java/activemq-client.jar -->`` (commands on the PATH, files): it
is skipped, naming what is missing, where they are absent.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GUIDES = sorted((REPO / "docs" / "guides").glob("*.md"))
BLOCK = re.compile(r"^```(\w+)(?: +(\S+))?\n(.*?)^```", re.S | re.M)
BIN = Path(sys.executable).parent
NEEDS = re.compile(r"<!-- needs: (.*?) -->")


def missing(guide: Path) -> list[str]:
    """What the guide needs (its ``needs:`` comment) that this machine lacks."""
    needs = [item for m in NEEDS.finditer(guide.read_text()) for item in m.group(1).split()]
    return [item for item in needs if not (Path(item).exists() if "/" in item else shutil.which(item))]


def blocks(guide: Path) -> list[tuple[str, str | None, str]]:
    return [(m.group(1), m.group(2), m.group(3)) for m in BLOCK.finditer(guide.read_text())]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_there_are_guides() -> None:
    names = {g.stem for g in GUIDES}
    assert {
        "testing-a-stomp-py-service",
        "redelivery-and-the-dlq",
        "spark-pipeline",
        "from-activemq",
        "local-broker",
    } <= names


@pytest.mark.parametrize("guide", GUIDES, ids=[g.stem for g in GUIDES])
def test_repository_files_are_whole(guide: Path) -> None:
    for _, name, text in blocks(guide):
        if name is not None and "/" in name:
            source = (REPO / name).read_text()
            assert text == source, f"{guide.name}: the block for {name} is not that file, whole, any more"


@pytest.mark.parametrize("guide", GUIDES, ids=[g.stem for g in GUIDES])
def test_guide_runs(guide: Path, pytester: pytest.Pytester) -> None:
    if missing(guide):
        pytest.skip(f"{guide.name} needs {', '.join(missing(guide))}")
    files = {name: text for _, name, text in blocks(guide) if name is not None and "/" not in name}
    commands = [
        line[2:]
        for lang, _, text in blocks(guide)
        if lang == "console"
        for line in text.splitlines()
        if line.startswith("$ ")
    ]
    assert files or commands or any(n for _, n, _ in blocks(guide)), f"{guide.name} has nothing to run"
    ports = {"61616": str(free_port()), "61613": str(free_port())}
    for name, text in files.items():
        (pytester.path / name).write_text(with_ports(text, ports))
    tests = [name for name in files if name.startswith("test_") and name.endswith(".py")]
    if tests:
        result = pytester.runpytest_subprocess(*tests, "-p", "no:cacheprovider", "-W", "error::DeprecationWarning")
        outcomes = result.parseoutcomes()
        assert outcomes.get("passed", 0) >= len(tests), result.stdout.str()
        assert not {"failed", "errors", "error", "skipped", "xfailed"} & set(outcomes), result.stdout.str()
    if commands:
        run_commands([with_ports(c, ports) for c in commands], pytester.path)


def with_ports(text: str, ports: dict[str, str]) -> str:
    for default, port in ports.items():
        text = text.replace(default, port)
    return text


def run_commands(commands: list[str], where: Path) -> None:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    background: list[subprocess.Popen[str]] = []
    try:
        for command in commands:
            if command.endswith(" &"):
                process = subprocess.Popen(
                    shlex.split(command[:-2]), cwd=where, env=env, stdout=subprocess.PIPE, text=True
                )
                background.append(process)
                assert process.stdout is not None
                first = process.stdout.readline()
                assert first.startswith(("tcp://", "ssl://")), f"{command}: {first!r}"
                continue
            done = subprocess.run(command, shell=True, cwd=where, env=env, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, f"$ {command}\n{done.stdout}{done.stderr}"
    finally:
        for process in background:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
