"""Every place that builds a minibroker error names only fields its class declares.

Error classes refuse undeclared field names at run time (``MinibrokerError.__init__``), and an error path is the one
a test suite is least likely to walk: this checks every call in the source instead, statically.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from minibroker import errors

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for d in ("minibroker", "client", "plugins") for p in (ROOT / d).rglob("*.py"))
CLASSES = {name: getattr(errors, name) for name in errors.__all__ if isinstance(getattr(errors, name), type)}


def _calls(path: Path) -> list[tuple[int, str, list[str]]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            name = (
                node.func.id
                if isinstance(node.func, ast.Name)
                else (node.func.attr if isinstance(node.func, ast.Attribute) else None)
            )
            if name in CLASSES:
                found.append((node.lineno, name, [k.arg for k in node.keywords if k.arg is not None]))
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_error_calls_name_declared_fields(path: Path) -> None:
    wrong = []
    for line, name, keywords in _calls(path):
        cls = CLASSES[name]
        if issubclass(cls, errors.InvalidConfiguration):
            continue  # its short form names the option by keyword (InvalidConfiguration(text, window=0))
        declared = set(cls.fields())
        wrong.extend(f"line {line}: {name}(..., {k}=...)" for k in keywords if k not in declared)
    assert not wrong, f"{path.relative_to(ROOT)}: undeclared error fields:\n" + "\n".join(wrong)


def test_the_sources_are_found() -> None:
    """The check above runs over the package's sources (a moved test file once made it check nothing)."""
    assert len(SOURCES) > 50 and any(p.name == "broker.py" and p.parent.name == "_driver" for p in SOURCES)
