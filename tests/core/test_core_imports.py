"""The core's modules form a layered graph: no module imports (even only for type checking) one that imports it back.

A circle makes the import order matter, and hides which idea depends on which; ``journal.restore`` once needed the
broker it is called by. Each module must also import alone, first, in a fresh interpreter.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import minibroker._core

CORE = Path(minibroker._core.__file__).parent
MODULES = sorted(p.stem for p in CORE.glob("*.py") if p.stem != "__init__")


def core_imports(module: str) -> set[str]:
    """The ``_core`` modules ``module`` imports, at run time or under ``TYPE_CHECKING`` alike."""
    tree = ast.parse((CORE / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:  # from .queue import Queue
                found.add(node.module.split(".")[0])
            elif node.level == 1:  # from . import queue
                found.update(alias.name for alias in node.names)
            elif node.level == 0 and node.module and node.module.startswith("minibroker._core."):
                found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[2] for a in node.names if a.name.startswith("minibroker._core."))
    return found & set(MODULES)


def test_the_scan_sees_the_core_modules_and_their_imports() -> None:
    """Not vacuous: the broker imports the queue, the queue the subscription."""
    assert {"broker", "queue", "subscription", "lifecycle", "replay", "policy"} <= set(MODULES)
    assert "queue" in core_imports("broker") and "subscription" in core_imports("queue")


def test_the_core_import_graph_has_no_circle() -> None:
    graph = {m: core_imports(m) for m in MODULES}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        if module in path:
            circle = " -> ".join((*path[path.index(module) :], module))
            pytest.fail(f"import circle in minibroker._core: {circle}")
        if module in done:
            return
        for imported in sorted(graph[module]):
            visit(imported, (*path, module))
        done.add(module)

    for module in MODULES:
        visit(module, ())
    assert done == set(MODULES)


def test_each_core_module_imports_alone() -> None:
    """Imported first, in a fresh interpreter, each module loads (no hidden dependency on import order)."""
    script = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    for key in [k for k in sys.modules if k.startswith('minibroker')]:\n"
        "        del sys.modules[key]\n"
        "    importlib.import_module('minibroker._core.' + name)\n"
        "    assert 'asyncio' not in sys.modules, name\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *MODULES], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
