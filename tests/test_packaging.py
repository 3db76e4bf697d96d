"""The distribution is laid out as promised: every package folder is listed, nothing leaks to the top level."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAPPING = {"minibroker": "minibroker", "minibroker.client": "client", "minibroker.plugins": "plugins"}


def _declared() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(config["tool"]["setuptools"]["packages"])


def _on_disk() -> set[str]:
    found = set()
    for name, folder in MAPPING.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    return found


class TestPackageList:
    def test_every_package_folder_is_listed(self) -> None:
        """A subpackage missing from pyproject's list would silently be left out of the wheel."""
        missing = _on_disk() - _declared()
        assert not missing, f"add these to [tool.setuptools] packages: {sorted(missing)}"

    def test_no_listed_package_is_missing(self) -> None:
        """Every listed package exists on disk."""
        assert not (_declared() - _on_disk())


class TestImportNames:
    def test_no_top_level_client_or_plugins(self) -> None:
        """client/ and plugins/ are installed only as minibroker.client and minibroker.plugins.

        Asked of a fresh interpreter: pytest puts ``tests/`` (with its own ``client/`` and ``plugins/`` test folders)
        on this one's path for the ``support`` helpers."""
        code = "import importlib.util as u; print(u.find_spec('client'), u.find_spec('plugins'))"
        out = subprocess.run([sys.executable, "-P", "-c", code], check=True, capture_output=True, text=True).stdout
        assert out.split() == ["None", "None"]

    def test_installed_package_is_used(self) -> None:
        """The tests import the installed package, which carries the mapped subpackages."""
        import minibroker.client
        import minibroker.plugins

        assert minibroker.client.connect is not None
        assert "minibroker.plugins" in sys.modules


class TestPureCore:
    def test_core_never_imports_asyncio(self) -> None:
        """The sans-IO core reads time from its clock and does no I/O: no asyncio, socket, time or threading."""
        forbidden = (
            "import asyncio",
            "from asyncio",
            "import socket",
            "import time",
            "import threading",
            "time.time(",
            "time.monotonic(",
            "asyncio.sleep(",
        )
        core = ROOT / "minibroker" / "_core"
        offenders = [
            f"{path.name}: {word}"
            for path in sorted(core.glob("*.py"))
            for word in forbidden
            if word in path.read_text()
        ]
        assert not offenders, offenders


class TestPublicApi:
    def test_all_names_exist(self) -> None:
        """Every name in __all__ is importable (the public API is what __all__ says)."""
        import minibroker
        import minibroker.client
        import minibroker.errors

        for module in (minibroker, minibroker.client, minibroker.errors):
            for name in module.__all__:
                assert hasattr(module, name), f"{module.__name__}.{name}"
