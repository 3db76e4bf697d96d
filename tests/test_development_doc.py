"""The commands of docs/development.md are real: each benchmark command line names a script that exists and options
its argument parser knows (checked with ``--help``, since the runs themselves take minutes and belong to
tests/benchmarks, not to the suite)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "development.md"


def commands() -> list[list[str]]:
    found = []
    for block in re.findall(r"```sh\n(.*?)```", PAGE.read_text(), re.S):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                found.append(shlex.split(line))
    return found


def test_the_page_has_commands() -> None:
    assert len(commands()) >= 5


@pytest.mark.parametrize("command", commands(), ids=lambda c: " ".join(c[1:]))
def test_each_command_is_accepted(command: list[str]) -> None:
    assert command[0] == ".venv/bin/python", command
    script = REPO / command[1]
    assert script.exists(), script
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    for option in command[2:]:
        if option.startswith("--"):
            assert option in done.stdout, f"{option} is not an option of {command[1]}"


def test_how_it_is_built_names_every_package() -> None:
    """docs/development.md's "How it is built" stays current: every package (and the plugins' subpackages) is named
    there, so a new one cannot land without its line."""
    section = PAGE.read_text().split("## How it is built", 1)[1].split("\n## ", 1)[0]
    packages = [
        f"{root}/{path.parent.relative_to(REPO / root).as_posix()}/".replace("/./", "/")
        for root in ("minibroker", "plugins", "client")
        for path in sorted((REPO / root).rglob("__init__.py"))
    ]
    missing = [p for p in packages if f"`{p}`" not in section and f"`{p.split('/', 1)[1]}`" not in section]
    assert len(packages) > 10
    assert missing == []
