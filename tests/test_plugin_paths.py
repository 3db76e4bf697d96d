"""plugins/ is grouped by kind (issue 44, item 7) and every public import path of before still works: each old
name is the very module object of its new home, so a monkeypatch, an isinstance check or a registry sees one
module, not two."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

#: public name -> where the module lives now
MOVED = {
    "minibroker.plugins.auth": "minibroker.plugins.filters.auth",
    "minibroker.plugins.redelivery": "minibroker.plugins.filters.redelivery",
    "minibroker.plugins.pytest_plugin": "minibroker.plugins.testing.pytest_plugin",
    "minibroker.plugins.factories": "minibroker.plugins.testing.factories",
    "minibroker.plugins.capture": "minibroker.plugins.testing.capture",
    "minibroker.plugins.report": "minibroker.plugins.testing.report",
    "minibroker.plugins.timeline": "minibroker.plugins.testing.timeline",
}


@pytest.mark.parametrize(("public", "home"), sorted(MOVED.items()))
def test_the_public_name_is_the_same_module(public: str, home: str) -> None:
    module = importlib.import_module(public)
    assert module is importlib.import_module(home)
    assert module.__name__ == home
    for name in module.__all__:
        assert getattr(module, name) is getattr(sys.modules[home], name)


@pytest.mark.parametrize("public", sorted(MOVED))
def test_the_public_name_works_first_in_a_fresh_interpreter(public: str) -> None:
    """Imported first by its public name (nothing else loaded the new home yet), ``from ... import`` works."""
    names = importlib.import_module(public).__all__
    code = f"from {public} import {', '.join(names)}; import {public} as m; print(m.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == MOVED[public]
