"""The distribution as a user gets it: the sdist and the wheel build without a warning, and the wheel, installed into a
fresh virtual environment, runs ``minibroker --version`` and carries a message over TCP.

Network-free: the build runs setuptools' PEP 517 hooks in this environment (as ``pip wheel --no-build-isolation``
does), the wheel is installed with ``--no-deps --no-index``, and the fresh environment reaches this environment's
attrs, and nothing else of it, through a ``.pth`` file.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import attr
import attrs
import pytest

import minibroker

ROOT = Path(__file__).resolve().parent.parent
#: what the build reads (a copy keeps the build's scratch files out of the source tree)
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in", "minibroker", "client", "plugins")
TIMEOUT = 120

pytestmark = pytest.mark.packaging


def _version(distribution: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in importlib.metadata.version(distribution).split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return (0,)


def _run(*argv: str | Path, cwd: Path) -> str:
    """Run a command to completion; its stdout and stderr together (the test fails with them on a non-zero exit)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    proc = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout
    return proc.stdout


def _check_contents(wheel: Path, sdist: Path) -> None:
    """issue 32, item 5: the license in both, the changelog in the sdist, the metadata users and indexes read."""
    import tarfile
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = archive.read(metadata).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    assert "minibroker/py.typed" in names
    assert "License-Expression: Apache-2.0" in text
    for classifier in ("Framework :: Pytest", "Framework :: AsyncIO", "Typing :: Typed", "Python :: 3.11"):
        assert f"Classifier: Programming Language :: {classifier}" in text or f"Classifier: {classifier}" in text
    with tarfile.open(sdist) as archive:
        members = {Path(m.name).name for m in archive.getmembers()}
    assert {"LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml"} <= members


SMOKE = """
import asyncio, sys
from pathlib import Path

import minibroker
from minibroker import Broker, RealClock
from minibroker.client import AckMode, connect
from minibroker.plugins.server.tcp import start_server

assert Path(minibroker.__file__).is_relative_to(sys.prefix), minibroker.__file__


async def main() -> None:
    async with Broker(clock=RealClock()) as broker:
        server = await start_server(broker, port=0)
        try:
            async with await connect(server.url) as conn:
                session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
                await (await session.create_producer("smoke")).send("hello from the wheel")
                msg = await (await session.create_consumer("smoke")).receive(timeout=10)
                print(msg.body)
        finally:
            await server.close()


asyncio.run(main())
"""


@pytest.mark.skipif(_version("setuptools") < (77,), reason="building offline needs setuptools >= 77 here")
@pytest.mark.skipif(_version("pip") < (22, 3), reason="installing into another venv needs pip --python (22.3)")
def test_the_wheel_installs_and_runs(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, source / name)
    dist = tmp_path / "dist"
    # -W error: a deprecation warning from the project's packaging (the license table was one) fails the build
    _run(
        sys.executable,
        "-W",
        "error",
        "-c",
        textwrap.dedent(f"""
        from setuptools import build_meta
        build_meta.build_sdist({str(dist)!r})
        build_meta.build_wheel({str(dist)!r})
    """),
        cwd=source,
    )
    (wheel,) = dist.glob("minibroker-*.whl")
    (sdist,) = dist.glob("minibroker-*.tar.gz")
    assert wheel.name == f"minibroker-{minibroker.__version__}-py3-none-any.whl" and sdist.stat().st_size > 0
    _check_contents(wheel, sdist)

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--no-deps",
        "--no-index",
        "--quiet",
        wheel,
        cwd=tmp_path,
    )
    # attrs (the one dependency) from this environment: a folder holding only it, named in a .pth file
    deps = tmp_path / "deps"
    deps.mkdir()
    for module in (attr, attrs):
        package = Path(module.__file__ or "").parent
        (deps / package.name).symlink_to(package)
    site_packages = Path(
        _run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=tmp_path).strip()
    )
    (site_packages / "test-deps.pth").write_text(f"{deps}\n")

    version = _run(venv / "bin" / "minibroker", "--version", cwd=tmp_path)
    assert version == f"minibroker {minibroker.__version__}\n"
    (tmp_path / "smoke.py").write_text(SMOKE)
    assert _run(python, "-I", "smoke.py", cwd=tmp_path) == "hello from the wheel\n"
