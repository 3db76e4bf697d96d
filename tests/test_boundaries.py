"""The one door holds by construction: these tests read the source, so a new edge or operation that reaches past the
connection object fails here, not in an audit (issue 29: "grep finds no authorization call outside the connection
object and the filter chain, and no ``_core`` import outside minibroker's driver package")."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: the packages outside the broker's own: the edges, the client, the plugins
OUTSIDE = [REPO / "plugins", REPO / "client"]
#: where authorization may be asked for: the connection object, and the filter chain (the driver's end of it, the
#: filters themselves, the plugin that implements the rules)
AUTHORIZERS = {
    REPO / "minibroker" / name
    for name in ("_driver/connection.py", "_driver/operations.py", "_driver/broker.py", "filters.py")
} | {REPO / "plugins" / "filters" / "auth.py"}


def _sources(*roots: Path) -> list[Path]:
    return sorted(p for root in roots for p in root.rglob("*.py"))


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_edge_client_or_plugin_imports_the_core() -> None:
    offenders = {
        str(path.relative_to(REPO)): sorted(m for m in _imports(path) if m.startswith("minibroker._core"))
        for path in _sources(*OUTSIDE)
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert len(offenders) > 40  # the scan sees the plugins and the client


def _calls(path: Path, names: set[str]) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names:
            lines.append(node.lineno)
    return lines


def test_authorization_is_asked_for_only_by_the_connection_and_the_filter_chain() -> None:
    asked = {
        str(path.relative_to(REPO)): _calls(path, {"authorize", "on_authorize", "may_see", "may"})
        for path in _sources(REPO / "minibroker", *OUTSIDE)
        if path not in AUTHORIZERS
    }
    assert {k: v for k, v in asked.items() if v} == {}
    assert _calls(REPO / "minibroker" / "_driver" / "connection.py", {"authorize"})  # not vacuous


def test_the_core_does_not_load_the_fidelity_table(tmp_path: Path) -> None:
    """The broker sends messages without importing the 1,200-line documentation table: the checks it needs are in
    minibroker.refusals, and the table is read only to word a refusal."""
    code = (
        "import sys, asyncio\n"
        "from minibroker import Broker\n"
        "from minibroker.client import connect\n"
        "async def main():\n"
        "    async with Broker() as broker, await connect(broker) as conn:\n"
        "        s = await conn.create_session()\n"
        "        await (await s.create_producer('q')).send('x')\n"
        "        assert (await (await s.create_consumer('q')).receive(1)).body == 'x'\n"
        "asyncio.run(main())\n"
        "print('minibroker.features' in sys.modules)\n"
    )
    # in another directory: from the checkout's root, ``minibroker`` would be the bare source folder
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert done.stdout.strip() == "False"
