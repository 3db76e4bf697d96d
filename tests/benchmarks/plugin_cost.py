#!/usr/bin/env python3
"""What having minibroker installed costs a pytest run that never uses it (issue 32, item 1): the same one-test suite,
run with the plugin and with ``-p no:minibroker``, in turns, best of each; target <= 15 ms added.

    .venv/bin/python tests/benchmarks/plugin_cost.py [--runs 15] [--no-bytecode]

``--no-bytecode`` sets PYTHONDONTWRITEBYTECODE=1 (common in CI images: every import compiles again).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 15.0


def one_run(directory: Path, extra: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "test_nothing.py"],
        cwd=directory,
        env=env,
        capture_output=True,
        check=True,
    )
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15, help="runs of each (default 15)")
    parser.add_argument("--no-bytecode", action="store_true", help="PYTHONDONTWRITEBYTECODE=1")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    if args.no_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "test_nothing.py").write_text("def test_nothing():\n    assert True\n")
        with_plugin, without = [], []
        for _ in range(args.runs):  # in turns: a slow spell of a shared machine touches both sides
            with_plugin.append(one_run(directory, [], env))
            without.append(one_run(directory, ["-p", "no:minibroker"], env))
    added = (min(with_plugin) - min(without)) * 1000
    verdict = "pass" if added <= TARGET_MS else "FAIL"
    print(
        f"pytest, one test, no minibroker fixture: {min(without) * 1000:.0f} ms without the plugin (baseline), "
        f"{min(with_plugin) * 1000:.0f} ms with it: {added:+.0f} ms (ratio {min(with_plugin) / min(without):.3f}); "
        f"target <= {TARGET_MS:.0f} ms added: {verdict}"
    )
    return 0 if verdict == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
