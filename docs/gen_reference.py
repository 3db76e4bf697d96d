"""Render the generated reference pages under docs/reference/ from the code itself.

    .venv/bin/python docs/gen_reference.py          # rewrite the generated pages
    .venv/bin/python docs/gen_reference.py --check  # exit 1 if a page is stale or a public name is undocumented

Why generated: a reference written by hand drifts from the code the day after; these pages are the docstrings,
signatures, argparse options and pytest options as they are, and tests/test_reference.py fails when a page is stale
or when a public name has no docstring. ``config.md`` and ``spark.md`` are written by hand (their keys are parsed,
not declared) and checked against the parsers by the same test.
"""

from __future__ import annotations

import argparse
import enum
import importlib
import inspect
import re
import sys
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO / "docs" / "reference"

#: module -> what a reader finds there (the order of the API page)
API_MODULES = {
    "minibroker": "The broker, its clock, and the values it hands out.",
    "minibroker.client": "The asyncio client, in JMS's shape (connections, sessions, producers, consumers).",
    "minibroker.testing": "Helpers for tests: dead letters, delivery histories, waiting without sleeping.",
    "minibroker.filters": "Broker plugins: the `BrokerFilter` chain every edge goes through.",
    "minibroker.transport.commands": "The requests a client's link carries to its connection, as values "
    "(`BrokerLink.request`, `BrokerConnection.dispatch`).",
    "minibroker.plugins.auth": "Users, groups and authorization entries (ActiveMQ's simple authentication plugin).",
    "minibroker.plugins.redelivery": "ActiveMQ's broker redelivery plugin.",
    "minibroker.plugins.capture": "Capturing what any client publishes to topics (the `minibroker_capture` fixture).",
    "minibroker.plugins.stomp": "The STOMP 1.0-1.2 listener, with ActiveMQ's header and destination mapping.",
    "minibroker.config": "Reading `broker.toml` from Python (the keys: [config.md](config.md)).",
    "minibroker.tls": "TLS settings and the server `ssl.SSLContext` of the `ssl://` and `stomp+ssl://` listeners.",
}


class Undocumented(Exception):
    """A public name without a docstring: the reference would have a hole."""


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    text = inspect.cleandoc(doc)
    return text.split("\n\n", 1)[0].replace("\n", " ")


def _doc(obj: object) -> str:
    return inspect.cleandoc(obj.__doc__) if obj.__doc__ else ""


def _signature(obj: Callable[..., Any]) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"
    # postponed annotations are strings: show them as the code spells them
    return re.sub(r"(: |-> |\[|, )'([^']*)'", r"\1\2", text)


def _own_doc(cls: type) -> str | None:
    """A class's own docstring (attrs and enum give classes generated ones; those do not count)."""
    doc = cls.__dict__.get("__doc__")
    if not doc or (isinstance(cls, enum.EnumMeta) and doc.startswith("An enumeration")):
        return None
    return doc


def _private_bases(cls: type) -> list[type]:
    """The private mixins a class is assembled from (bases named ``_...``, as Broker's views and reads): their
    members are the class's own, documented with it."""
    return [base for base in cls.__mro__[1:] if base.__name__.startswith("_") and base is not object]


def _members(cls: type) -> Iterator[tuple[str, Any]]:
    """Public methods and properties defined on the class itself or its private mixins (not inherited from object
    or attrs)."""
    for klass in (cls, *_private_bases(cls)):
        for name, value in klass.__dict__.items():
            if name.startswith("_"):
                continue
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if inspect.isfunction(value) or isinstance(value, property):
                yield name, value


#: members that the edges (listeners, links, the connections clients log in as) call, listed apart from what tests
#: and embedders use: by class, the member names (each must exist)
EDGE_MEMBERS = {
    "minibroker.Broker": {
        "admit",
        "browse_page",
        "client_connected",
        "connect",
        "incarnation",
        "link",
        "on_close",
        "principal",
        "purge_targets",
        "readable_as",
        "register_dropper",
        "register_probe",
        "report_listener_error",
        "select_range",
        "temporary_owner",
    },
}


def _class_section(qual: str, cls: type, missing: list[str]) -> list[str]:
    doc = _own_doc(cls)
    if doc is None:
        missing.append(qual)
    bases = [b.__name__ for b in cls.__bases__ if b is not object and not b.__name__.startswith("_")]
    head = f"### class `{qual}`" + (f" ({', '.join(bases)})" if bases else "")
    lines = [head, ""]
    if doc:
        lines += [inspect.cleandoc(doc), ""]
    if isinstance(cls, enum.EnumMeta):
        lines.append("Members: " + ", ".join(f"`{m.name}`" for m in cls) + ".")
        lines.append("")
        return lines
    if attrs.has(cls):
        fields = [f for f in attrs.fields(cls) if not f.name.startswith("_")]
        if fields:
            lines += ["| field | type | default |", "|---|---|---|"]
            for f in fields:
                lines.append(f"| `{f.name}` | `{_type_text(f.type)}` | {_default_text(f.default)} |")
            lines.append("")
    else:
        init = cls.__dict__.get("__init__")
        if init is not None and inspect.isfunction(init):
            lines += [f"`{cls.__name__}{_signature(init).replace('(self, ', '(').replace('(self)', '()')}`", ""]
    for_edges = EDGE_MEMBERS.get(qual, set())
    members = dict(_members(cls))
    unknown = for_edges - members.keys()
    if unknown:
        raise SystemExit(f"EDGE_MEMBERS names what {qual} does not have: {sorted(unknown)}")
    edge_lines: list[str] = []
    for name, member in members.items():
        if isinstance(member, property):
            summary = _first_paragraph(member.__doc__)
            line = f"- property `{name}`" + (f": {summary}" if summary else "")
        else:
            signature = _signature(member).replace("(self, ", "(").replace("(self)", "()")
            prefix = "async " if inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member) else ""
            summary = _first_paragraph(member.__doc__)
            line = f"- {prefix}`{name}{signature}`" + (f": {summary}" if summary else "")
        (edge_lines if name in for_edges else lines).append(line)
    if edge_lines:
        lines += [
            "",
            "For edges (the listeners, the in-process link and the connections their clients log in as; a test or an "
            "embedder does not need these):",
            "",
            *edge_lines,
        ]
    if lines[-1] != "":
        lines.append("")
    return lines


def _type_text(kind: Any) -> str:
    if kind is None:
        return ""
    if isinstance(kind, str):
        text = kind
    elif typing.get_origin(kind) is not None:
        text = repr(kind).replace("typing.", "").replace("collections.abc.", "")
        text = re.sub(r"minibroker\.[\w.]*\.(\w+)", r"\1", text)
    else:
        text = getattr(kind, "__name__", repr(kind))
    return str(text).replace("|", "\\|")


def _default_text(default: Any) -> str:
    if default is attrs.NOTHING:
        return "required"
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        factory = default.factory
        return f"`{getattr(factory, '__name__', 'factory')}()`"
    text = repr(default)
    if len(text) > 60:
        text = type(default).__name__ + "(...)"
    return f"`{text}`".replace("|", "\\|")


def _function_section(qual: str, func: Callable[..., Any], missing: list[str]) -> list[str]:
    if not func.__doc__:
        missing.append(qual)
    prefix = "async " if inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func) else ""
    lines = [f"### {prefix}`{qual}{_signature(func)}`", ""]
    if func.__doc__:
        lines += [_doc(func), ""]
    return lines


def _value_section(qual: str, value: object) -> list[str]:
    text = repr(value)
    if len(text) > 80:
        text = type(value).__name__
    return [f"### `{qual}`", "", f"`{text}`", ""]


def _public(module: Any) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        raise Undocumented(f"{module.__name__} has no __all__")
    return sorted(names)


def render_api(missing: list[str]) -> str:
    out = [
        "# API reference",
        "",
        "Generated by `docs/gen_reference.py` from the docstrings and signatures (do not edit; a test checks it is",
        "current). Every public name of each module is here; names not listed are private.",
        "",
    ]
    out += [f"- [`{m}`](#{m.replace('.', '')}): {what}" for m, what in API_MODULES.items()]
    out.append("")
    errors = importlib.import_module("minibroker.errors")
    for module_name, what in API_MODULES.items():
        module = importlib.import_module(module_name)
        out += [f"## {module_name}", "", what, ""]
        for name in _public(module):
            value = getattr(module, name)
            qual = f"{module_name}.{name}"
            if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == errors.__name__:
                out += [f"### `{qual}`", "", f"An error class: see [errors.md](errors.md#{name.lower()}).", ""]
            elif typing.get_origin(value) is not None:
                out += [f"### type `{qual}`", "", f"`{_type_text(value)}`", ""]
            elif isinstance(value, type):
                out += _class_section(qual, value, missing)
            elif callable(value):
                out += _function_section(qual, value, missing)
            else:
                out += _value_section(qual, value)
    return "\n".join(out).rstrip() + "\n"


def render_errors(missing: list[str]) -> str:
    errors = importlib.import_module("minibroker.errors")
    out = [
        "# Errors",
        "",
        "Generated by `docs/gen_reference.py` from `minibroker.errors` (do not edit). Every error the broker, the",
        "client and the plugins raise is one of these classes; each carries the offending value as attributes (the",
        "fields listed), and `str(error)` is the one-line message shown to users. Over STOMP an error becomes an",
        "`ERROR` frame whose `message` header is that line; over the native protocol the client raises the same class",
        "with the same fields.",
        "",
    ]
    classes = [getattr(errors, n) for n in _public(errors)]
    classes = [c for c in classes if isinstance(c, type) and issubclass(c, BaseException)]
    for cls in sorted(classes, key=lambda c: (len(c.__mro__), c.__name__)):
        doc = _own_doc(cls)
        if doc is None:
            missing.append(f"minibroker.errors.{cls.__name__}")
        parents = ", ".join(b.__name__ for b in cls.__bases__)
        out += [f"## {cls.__name__}", "", f"Subclass of `{parents}`; code `{cls.code}`.", ""]
        if doc:
            out += [inspect.cleandoc(doc), ""]
        fields = getattr(cls, "FIELDS", None) or _declared_fields(cls)
        if fields:
            out += ["Fields: " + ", ".join(f"`{f}`" for f in fields) + ".", ""]
    return "\n".join(out).rstrip() + "\n"


def _declared_fields(cls: type) -> list[str]:
    """The attributes an error declares as ``name: type = None`` on its class (the values it carries)."""
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        for name in getattr(klass, "__annotations__", {}):
            if not name.startswith("_") and name not in names:
                names.append(name)
    return names


def render_cli() -> str:
    from minibroker.plugins.server.cli import build_parser

    parser = build_parser()
    out = [
        "# The command line",
        "",
        "Generated by `docs/gen_reference.py` from the argument parser (do not edit). `minibroker` is installed with",
        "the package; `python -m minibroker.plugins.server` is the same program.",
        "",
        "```text",
        _help(parser),
        "```",
        "",
    ]
    for action in parser._actions:  # argparse keeps its subcommands here, with no public accessor
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += [f"## minibroker {name}", "", "```text", _help(sub), "```", ""]
    return "\n".join(out).rstrip() + "\n"


def _help(parser: argparse.ArgumentParser) -> str:
    import os

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: fix the width so the page is the same anywhere
    try:
        text = parser.format_help()
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    return re.sub(r"[ \t]+\n", "\n", text).rstrip()


class _RecordingGroup:
    def __init__(self, options: list[tuple[str, str, Any]]) -> None:
        self.options = options

    def addoption(self, *flags: str, **kwargs: Any) -> None:
        self.options.append((", ".join(flags), kwargs.get("help", ""), kwargs.get("default")))


class _RecordingParser:
    """Stands in for pytest's parser: records the plugin's command-line and ini options."""

    def __init__(self) -> None:
        self.options: list[tuple[str, str, Any]] = []
        self.ini: list[tuple[str, str, Any]] = []

    def getgroup(self, *args: Any, **kwargs: Any) -> _RecordingGroup:
        return _RecordingGroup(self.options)

    def addoption(self, *flags: str, **kwargs: Any) -> None:
        self.options.append((", ".join(flags), kwargs.get("help", ""), kwargs.get("default")))

    def addini(self, name: str, help: str, type: Any = None, default: Any = None) -> None:
        self.ini.append((name, help, default))


class _RecordingConfig:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def addinivalue_line(self, name: str, line: str) -> None:
        self.lines.append((name, line))


def _fixtures(module: Any) -> list[tuple[str, Any, str]]:
    """(name, function, scope) of every fixture the plugin module defines."""
    found = []
    for name, value in vars(module).items():
        definition = getattr(value, "_fixture_function_marker", None) or getattr(value, "_pytestfixturefunction", None)
        if definition is None:
            continue
        function = getattr(value, "_fixture_function", None) or getattr(value, "__wrapped__", value)
        fixture_name = getattr(definition, "name", None) or name
        found.append((fixture_name, function, str(getattr(definition, "scope", "function"))))
    return sorted(found)


def render_pytest(missing: list[str]) -> str:
    plugin = importlib.import_module("minibroker.plugins.pytest_plugin")
    parser = _RecordingParser()
    plugin.pytest_addoption(parser)
    config = _RecordingConfig()
    plugin.pytest_configure(config)
    out = [
        "# The pytest plugin",
        "",
        "Generated by `docs/gen_reference.py` from `minibroker.plugins.pytest_plugin` (do not edit). The plugin is",
        "registered by the package (`pytest11` entry point): installing minibroker is enough.",
        "",
        "## Fixtures",
        "",
    ]
    for name, function, scope in _fixtures(plugin):
        if not function.__doc__:
            missing.append(f"fixture {name}")
        out += [f"### `{name}` ({scope} scope)", ""]
        if function.__doc__:
            out += [_doc(function), ""]
    out += ["## Markers", ""]
    for kind, line in config.lines:
        if kind == "markers":
            marker, _, text = line.partition(":")
            out += [f"- `@pytest.mark.{marker.strip()}`: {text.strip()}"]
    options_class = getattr(plugin, "BrokerOptions", None)
    if options_class is not None and attrs.has(options_class):
        out += [
            "",
            "The marker's keyword arguments (`BrokerOptions`):",
            "",
            "| keyword | type | default |",
            "|---|---|---|",
        ]
        for f in attrs.fields(options_class):
            out.append(f"| `{f.name}` | `{_type_text(f.type)}` | {_default_text(f.default)} |")
    out += ["", "## Command-line and ini options", "", "| option | default | meaning |", "|---|---|---|"]
    for flags, help_text, default in parser.options:
        out.append(f"| `{flags}` | `{default!r}` | {help_text} |")
    out += ["", "| ini key | default | meaning |", "|---|---|---|"]
    for name, help_text, default in parser.ini:
        out.append(f"| `{name}` | `{default!r}` | {help_text} |")
    out += ["", "## Virtual time for the whole test (`@pytest.mark.minibroker_virtual_time`)", ""]
    out += [_doc(importlib.import_module("minibroker.virtual_time"))]
    factories = importlib.import_module("minibroker.plugins.factories")
    out += ["", "## Fixture factories (`minibroker.plugins.factories`)", "", _doc(factories)]
    for name in factories.__all__:
        function = getattr(factories, name)
        if not callable(function) or not inspect.isfunction(function):
            continue
        if not function.__doc__:
            missing.append(f"factories.{name}")
        out += ["", f"### `factories.{name}{inspect.signature(function)}`", "", _doc(function)]
    report = importlib.import_module("minibroker.plugins.report")
    out += ["", "## The failed tests' report (`--minibroker-report`)", "", _doc(report)]
    return "\n".join(out).rstrip() + "\n"


PAGES: dict[str, Callable[[list[str]], str]] = {
    "api.md": render_api,
    "errors.md": render_errors,
    "cli.md": lambda missing: render_cli(),
    "pytest.md": render_pytest,
}


def render_all() -> tuple[dict[str, str], list[str]]:
    """Every generated page's text, and the public names that have no docstring."""
    missing: list[str] = []
    pages = {name: render(missing) for name, render in PAGES.items()}
    return pages, sorted(set(missing))


def main(argv: list[str]) -> int:
    pages, missing = render_all()
    if missing:
        print("undocumented public names (add a docstring):", *missing, sep="\n  ", file=sys.stderr)
    if "--check" in argv:
        stale = [n for n, text in pages.items() if not (REFERENCE / n).exists() or (REFERENCE / n).read_text() != text]
        if stale:
            print("stale pages (run .venv/bin/python docs/gen_reference.py):", *stale, file=sys.stderr)
        return 1 if stale or missing else 0
    REFERENCE.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (REFERENCE / name).write_text(text)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
