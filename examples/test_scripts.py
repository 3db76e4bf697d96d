"""Every example also runs as a script (each prints what it did and exits 0)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SCRIPTS = sorted(p for p in HERE.glob("*.py") if not p.name.startswith(("test_", "conftest")))


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_runs_as_a_script(script: Path) -> None:
    """``python examples/<name>.py`` runs to completion."""
    result = subprocess.run([sys.executable, "-P", str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
