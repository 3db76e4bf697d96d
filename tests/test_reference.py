"""docs/reference/ says what the code does: the generated pages are current and complete, and the hand-written
pages (broker.toml keys, Spark options) list exactly what the parsers accept, with the parsers' defaults."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import pytest

from minibroker import DestinationPolicy
from minibroker.client import RedeliveryPolicy
from minibroker.config import BrokerConfig, ConfigError, ServerConfig, load_config, parse_config, parse_size

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "docs" / "reference"


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", REPO / "docs" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rendered() -> tuple[dict[str, str], list[str]]:
    result: tuple[dict[str, str], list[str]] = load_generator().render_all()
    return result


def test_every_public_name_has_a_docstring(rendered: tuple[dict[str, str], list[str]]) -> None:
    _, missing = rendered
    assert missing == [], f"public names without a docstring (the reference would have a hole): {missing}"


@pytest.mark.parametrize("page", ["api.md", "errors.md", "cli.md", "pytest.md"])
def test_generated_page_is_current(rendered: tuple[dict[str, str], list[str]], page: str) -> None:
    pages, _ = rendered
    path = REFERENCE / page
    assert path.exists(), f"docs/reference/{page} is missing: run .venv/bin/python docs/gen_reference.py"
    assert path.read_text() == pages[page], (
        f"docs/reference/{page} is stale: run .venv/bin/python docs/gen_reference.py"
    )


def test_every_error_class_is_in_the_errors_page(rendered: tuple[dict[str, str], list[str]]) -> None:
    import minibroker.errors as errors

    page = rendered[0]["errors.md"]
    for name in errors.__all__:
        if isinstance(getattr(errors, name), type):
            assert f"## {name}\n" in page, name


def test_every_cli_command_is_in_the_cli_page(rendered: tuple[dict[str, str], list[str]]) -> None:
    from minibroker.plugins.server.cli import build_parser

    page = rendered[0]["cli.md"]
    text = build_parser().format_help()
    commands = re.search(r"\{([a-z,-]+)\}", text)
    assert commands is not None
    for command in commands.group(1).split(","):
        assert f"## minibroker {command}\n" in page, command


# -- broker.toml ----------------------------------------------------------------------------------------------------


def documented_tables() -> dict[str, dict[str, str]]:
    """``## [table]`` heading -> {key: default text} from docs/reference/config.md."""
    tables: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in (REFERENCE / "config.md").read_text().splitlines():
        heading = re.match(r"^## (\[.*\])$", line)
        if heading:
            current = tables.setdefault(heading.group(1), {})
            continue
        if line.startswith("## "):
            current = None
            continue
        row = re.match(r"^\| `([a-z_]+)` \| [^|]+ \| ([^|]+) \|", line)
        if row and current is not None:
            current[row.group(1)] = row.group(2).strip()
    return tables


#: a documented table -> a document whose only mistake is one unknown key in that table
PROBES: dict[str, Any] = {
    "[broker]": lambda k: {"broker": {k: 1}},
    "[server]": lambda k: {"server": {k: 1}},
    "[tls]": lambda k: {"tls": {"cert": "c", k: 1}},
    "[virtual_topics]": lambda k: {"virtual_topics": {k: 1}},
    "[limits]": lambda k: {"limits": {k: 1}},
    '[destinations."PATTERN"]': lambda k: {"destinations": {">": {k: 1}}},
    "[redelivery]": lambda k: {"redelivery": {k: 1}},
    '[redelivery.destinations."PATTERN"]': lambda k: {"redelivery": {"destinations": {">": {k: 1}}}},
    "[security]": lambda k: {"security": {k: 1}},
    "[users.NAME]": lambda k: {"users": {"u": {k: 1}}},
    "[[authorization]]": lambda k: {"authorization": [{k: 1}]},
}
#: keys of [redelivery] that belong to the plugin, not to its RedeliveryPolicy (the parser reports them apart)
REDELIVERY_PLUGIN_KEYS = {"send_to_dlq_if_max_retries_exceeded", "fallback_to_dead_letter", "destinations"}


def accepted_keys(document: dict[str, Any]) -> set[str]:
    """The keys the parser accepts in a table: it names them when it refuses an unknown one."""
    with pytest.raises(ConfigError) as info:
        parse_config(document)
    match = re.search(r"known keys: ([^)]*)\)", str(info.value))
    assert match is not None, str(info.value)
    return set(match.group(1).split(", "))


def test_config_page_lists_every_table() -> None:
    documented = set(documented_tables())
    top = accepted_keys({"no_such_table": {}})
    tables = {h.strip("[]").split(".")[0] for h in documented}
    assert tables == top, f"tables the parser accepts but config.md does not document, or the reverse: {top ^ tables}"
    assert documented == set(PROBES)


@pytest.mark.parametrize("table", sorted(PROBES))
def test_config_page_lists_exactly_the_accepted_keys(table: str) -> None:
    accepted = accepted_keys(PROBES[table]("no_such_key"))
    if table == "[redelivery]":
        accepted |= REDELIVERY_PLUGIN_KEYS
    documented = set(documented_tables()[table])
    assert documented == accepted, (
        f"{table}: undocumented {accepted - documented}, not accepted {documented - accepted}"
    )


def defaults_in_code() -> dict[str, dict[str, Any]]:
    broker, server, policy, retry = BrokerConfig(), ServerConfig(), DestinationPolicy(), RedeliveryPolicy()
    fields = {
        "[broker]": {f.name: getattr(broker, f.name) for f in attrs.fields(BrokerConfig)},
        "[server]": {f.name: getattr(server, f.name) for f in attrs.fields(ServerConfig)},
        "[limits]": {f.name: getattr(server, f.name) for f in attrs.fields(ServerConfig)}
        | {"max_consumers_per_connection": 1000, "max_transactions_per_connection": 1000},
        '[destinations."PATTERN"]': {f.name: getattr(policy, f.name) for f in attrs.fields(DestinationPolicy)},
        "[redelivery]": {f.name: getattr(retry, f.name) for f in attrs.fields(RedeliveryPolicy)}
        | {"send_to_dlq_if_max_retries_exceeded": True, "fallback_to_dead_letter": True},
        "[security]": {"anonymous_access_allowed": False},
        "[tls]": {"client_auth": "none"},
        "[virtual_topics]": {"enabled": True, "name": "VirtualTopic.>", "prefix": "Consumer.*."},
    }
    fields['[redelivery.destinations."PATTERN"]'] = fields["[redelivery]"]
    return fields


def parse_default(text: str) -> Any:
    if text == "-":
        return None
    return tomllib.loads(f"v = {text.strip('`')}")["v"]


@pytest.mark.parametrize("table", sorted(defaults_in_code()))
def test_config_page_defaults_are_the_parsers(table: str) -> None:
    code = defaults_in_code()[table]
    for key, text in documented_tables()[table].items():
        if key not in code:
            continue
        expected = code[key]
        if key == "data_dir" or key == "destinations":
            assert text == "-"
            continue
        value = parse_default(text)
        if key in ("memory_limit", "max_frame_size") and value is not None:
            value = parse_size(value)
        if isinstance(expected, tuple):  # a TOML array, kept immutable
            expected = list(expected)
        assert value == expected, f"{table} {key}: config.md says {text}, the code {expected!r}"


def test_config_page_example_loads(tmp_path: Path) -> None:
    text = (REFERENCE / "config.md").read_text().split("## Example", 1)[1]
    match = re.search(r"```toml\n(.*?)```", text, re.S)
    assert match is not None
    path = tmp_path / "broker.toml"
    path.write_text(match.group(1))
    config = load_config(path)
    assert config.server.stomp_port == 61613
    assert config.data_dir == tmp_path / "data"


# -- Spark options ----------------------------------------------------------------------------------------------------


def spark_options_in_code() -> tuple[set[str], set[str]]:
    """The option keys SourceOptions.parse and WriterOptions.parse read (lower-cased, as Spark's options are)."""
    source = (REPO / "plugins" / "spark" / "_options.py").read_text()
    reader_part, writer_part = source.split("class WriterOptions", 1)
    pattern = re.compile(r'(?:o|options)(?:\.get\(|, )"([a-z]+)"')
    reader = set(pattern.findall(reader_part)) | {"url"}
    writer = set(pattern.findall(writer_part)) | {"url"}
    return reader, writer


def spark_options_documented() -> tuple[set[str], set[str]]:
    page = (REFERENCE / "spark.md").read_text()
    reader_part, writer_part = page.split("## Writing", 1)
    reader_part = reader_part.split("## Reading", 1)[1]
    row = re.compile(r"^\| `([A-Za-z]+)` \|", re.M)
    reader = {name.lower() for name in row.findall(reader_part)}
    writer = {name.lower() for name in row.findall(writer_part)}
    # other spellings a row mentions in its text
    reader |= {"destination", "path"}
    writer |= {"path"}
    return reader, writer


def test_spark_page_lists_exactly_the_options_the_parser_reads() -> None:
    code_reader, code_writer = spark_options_in_code()
    doc_reader, doc_writer = spark_options_documented()
    assert doc_reader == code_reader, (
        f"read options: undocumented {code_reader - doc_reader}, unknown {doc_reader - code_reader}"
    )
    assert doc_writer == code_writer, (
        f"write options: undocumented {code_writer - doc_writer}, unknown {doc_writer - code_writer}"
    )


def test_spark_page_names_every_public_name() -> None:
    import minibroker.plugins.spark as spark

    page = (REFERENCE / "spark.md").read_text()
    for name in spark.__all__:
        assert f"`{name}" in page, name
