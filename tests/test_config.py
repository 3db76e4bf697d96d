"""``broker.toml`` (``minibroker.config``): what each table becomes, and a typed error naming the key for each
mistake. The local-broker guide's example is parsed as it stands."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from minibroker import Broker, DestinationPolicy, ManualClock, VirtualTopics
from minibroker.client import connect
from minibroker.config import ConfigError, load_config, parse_config, parse_size
from minibroker.errors import InvalidConfiguration
from minibroker.limits import ConnectionLimits
from minibroker.plugins.auth import AuthPlugin
from minibroker.plugins.redelivery import RedeliveryPlugin
from minibroker.redelivery import RedeliveryPolicy
from minibroker.store import SqliteStore

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "local-broker.md"

FULL = """
[broker]
name = "test-broker"
data_dir = "data"
scheduler_support = false

[server]
host = "0.0.0.0"
port = 0
stomp_port = 61613

[limits]
max_connections = 5
max_frame_size = "1 MiB"
handshake_timeout = 2.5
idle_timeout = 0
max_transformation_entries = 500

[destinations.">"]
dead_letter_strategy = "individual"
queue_prefix = "DLQ."
process_non_persistent = true

[destinations."orders.>"]
prioritized_messages = true
memory_limit = "64 kB"
send_fail_if_no_space_after_timeout = 2.5

[redelivery]
maximum_redeliveries = 2
initial_redelivery_delay = 5
use_exponential_backoff = true

[redelivery.destinations."orders.>"]
maximum_redeliveries = 10
redelivery_delay = 2.0

[security]
anonymous_access_allowed = false

[users.admin]
password = "secret"
groups = ["admins"]

[users.app]
password = "app"
groups = "apps, readers"

[[authorization]]
destination = ">"
read = ["admins"]
write = ["admins"]
admin = ["admins"]

[[authorization]]
destination = "orders.>"
read = ["apps"]
write = "apps"
"""


def parse(text: str, path: Path | None = None) -> Any:
    return parse_config(tomllib.loads(text), path=path)


class TestValid:
    def test_every_table(self, tmp_path: Path) -> None:
        config = parse(FULL, tmp_path / "broker.toml")
        assert config.name == "test-broker" and config.data_dir == tmp_path / "data"
        assert config.server.host == "0.0.0.0" and config.server.port == 0 and config.server.stomp_port == 61613
        assert config.server.max_connections == 5 and config.server.max_frame_size == 1024 * 1024
        assert config.server.handshake_timeout == 2.5 and config.server.idle_timeout == 0
        assert config.server.max_transformation_entries == 500
        assert config.policies[">"] == DestinationPolicy(
            dead_letter_strategy="individual", queue_prefix="DLQ.", process_non_persistent=True
        )
        orders = config.policies["orders.>"]
        assert orders.prioritized_messages and orders.memory_limit == 64_000
        assert orders.send_fail_if_no_space_after_timeout == 2.5
        assert config.scheduler_support  # the redelivery plugin needs it
        assert isinstance(config.redelivery, RedeliveryPlugin)
        assert config.redelivery.policies.default == RedeliveryPolicy(
            maximum_redeliveries=2, initial_redelivery_delay=5.0, use_exponential_backoff=True
        )
        assert config.redelivery.policies.get("orders.eu").maximum_redeliveries == 10
        assert isinstance(config.auth, AuthPlugin) and set(config.auth.users) == {"admin", "app"}
        assert config.auth.users["app"].groups == {"apps", "readers"}
        assert config.auth.entries is not None and len(config.auth.entries) == 2

    def test_empty_document_is_the_default_broker(self) -> None:
        config = parse("")
        assert config.broker_kwargs() == {
            "name": "minibroker",
            "policies": None,
            "scheduler_support": False,
            "scheduler_time_zone": "UTC",
            "history_limit": 0,
            "advisory_support": True,
            "system_memory_limit": 1 << 30,
            "plugins": [],
            "virtual_topics": VirtualTopics(),
            "connection_limits": ConnectionLimits(),
        }

    async def test_a_broker_built_from_it(self, tmp_path: Path) -> None:
        config = parse(FULL, tmp_path / "broker.toml")
        kwargs = config.broker_kwargs()
        assert isinstance(kwargs["store"], SqliteStore)
        async with Broker(clock=ManualClock(autojump=True), **kwargs) as broker:
            assert broker.core.queue("orders.eu").policy.memory_limit == 64_000  # type: ignore[union-attr]
            assert broker.core.queue("other").policy.queue_prefix == "DLQ."  # type: ignore[union-attr]
            async with await connect(broker, user="app", password="app") as conn:
                producer = await (await conn.create_session()).create_producer("orders.eu")
                await producer.send("hello")
        assert (tmp_path / "data" / "minibroker.sqlite3").exists()

    def test_sizes(self) -> None:
        assert [parse_size(v) for v in (0, 10, "10", "1kb", "1 KiB", "1.5 MB", "2GiB", "64 mb")] == [
            0,
            10,
            10,
            1000,
            1024,
            1_500_000,
            2 * 1024**3,
            64_000_000,
        ]
        for bad in ("-1", "ten", "1 parsec", True, 1.5, -3):
            with pytest.raises(ValueError):
                parse_size(bad)

    def test_the_guide_example(self, tmp_path: Path) -> None:
        blocks = [b for b in re.findall(r"```toml[^\n]*\n(.*?)```", GUIDE.read_text(), re.S) if "[broker]" in b]
        assert blocks, "the local-broker guide has no broker.toml example"
        config = parse(blocks[0], tmp_path / "broker.toml")
        assert config.policies and config.auth is not None


class TestErrors:
    @pytest.mark.parametrize(
        ("text", "key", "problem"),
        [
            ("colour = 1", "colour", "unknown key"),
            ("[broker]\nnmae = 'x'", "broker.nmae", "unknown key"),
            ("[broker]\nname = 3", "broker.name", "expected a string"),
            ("broker = 3", "broker", "expected a table"),
            ("[broker]\nstore_synchronous = 'sometimes'", "broker.store_synchronous", "expected NORMAL or FULL"),
            ("[server]\nport = 70000", "server.port", "out of range"),
            ("[server]\nport = '61616'", "server.port", "expected an integer"),
            ("[limits]\nmax_connections = 0", "limits.max_connections", "out of range"),
            ("[limits]\nmax_transformation_entries = 0", "limits.max_transformation_entries", "out of range"),
            ("[limits]\nmax_frame_size = 'big'", "limits.max_frame_size", "expected a size"),
            ("[limits]\nmax_connections = true", "limits.max_connections", "expected an integer"),
            ("[limits]\nhandshake_timeout = 0", "limits.handshake_timeout", "must be above 0"),
            ("[limits]\nidle_timeout = -1", "limits.idle_timeout", "must be 0 (never) or above"),
            ('[destinations."orders.>"]\nmemroy_limit = 1', 'destinations."orders.>".memroy_limit', "unknown key"),
            (
                '[destinations."orders.>"]\nmemory_limit = "lots"',
                'destinations."orders.>".memory_limit',
                "expected a size",
            ),
            (
                '[destinations.">"]\nprioritized_messages = "yes"',
                'destinations.">".prioritized_messages',
                "expected true or false",
            ),
            (
                '[destinations.">"]\ndead_letter_strategy = "both"',
                'destinations.">".dead_letter_strategy',
                'expected "shared" or "individual"',
            ),
            (
                '[destinations.">"]\nsend_fail_if_no_space_after_timeout = 0',
                'destinations.">".send_fail_if_no_space_after_timeout',
                "must be > 0",
            ),
            ('[destinations."a.>.b"]\nprioritized_messages = true', 'destinations."a.>.b"', "may only be the last"),
            ('[destinations]\n"orders" = 3', "destinations.orders", "expected a table"),
            ("[redelivery]\nmaximum_redeliveries = -5", "redelivery.maximum_redeliveries", "must be -1"),
            (
                "[redelivery]\ninitial_redelivery_delay = 0.5",
                "redelivery.initial_redelivery_delay",
                "refuses delays under 1 second",
            ),
            ("[redelivery]\nbackoff = 2", "redelivery.backoff", "unknown key"),
            (
                '[redelivery.destinations."q"]\nredelivery_delay = "1s"',
                "redelivery.destinations.q.redelivery_delay",
                "expected a number",
            ),
            ("[users.bob]\ngroups = ['a']", "users.bob.password", "missing"),
            ("[users.bob]\npassword = 1", "users.bob.password", "expected a string"),
            ("[users.bob]\npassword = 'x'\ngroups = [1]", "users.bob.groups", "expected a list of group names"),
            ("[[authorization]]\ndestination = '>'\nread = ['a']", "authorization", "need [users]"),
            ("[users.bob]\npassword = 'x'\n[[authorization]]\nread = ['a']", "authorization.0.destination", "missing"),
            (
                "[users.bob]\npassword = 'x'\n[[authorization]]\ndestination = '>'\nowner = ['a']",
                "authorization.0.owner",
                "unknown key",
            ),
            ("[security]\nanonymous = true", "security.anonymous", "unknown key"),
        ],
    )
    def test_each_error_names_its_key(self, text: str, key: str, problem: str) -> None:
        with pytest.raises(ConfigError) as info:
            parse(text)
        assert info.value.key == key, info.value  # type: ignore[attr-defined]
        assert problem in str(info.value)
        assert isinstance(info.value, InvalidConfiguration)

    def test_files(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="cannot read it"):
            load_config(tmp_path / "missing.toml")
        bad = tmp_path / "bad.toml"
        bad.write_text("[broker\nname = 1")
        with pytest.raises(ConfigError, match="not valid TOML") as info:
            load_config(bad)
        assert info.value.path == str(bad)  # type: ignore[attr-defined]
        good = tmp_path / "good.toml"
        good.write_text("[limits]\nmax_connections = 3\n")
        assert load_config(good).server.max_connections == 3


def test_an_activemq_camel_case_key_gets_its_name_suggested() -> None:
    """issue 32, item 7: ActiveMQ's ``deadLetterStrategy`` in a broker.toml says which key it is here."""
    with pytest.raises(ConfigError, match=r"deadLetterStrategy: unknown key: did you mean `dead_letter_strategy`\?"):
        parse_config({"destinations": {">": {"deadLetterStrategy": "individual"}}})


def test_a_redelivery_delay_that_looks_like_milliseconds_gets_a_warning() -> None:
    """issue 32, item 7: 5000 (ActiveMQ's milliseconds) where broker.toml takes seconds is allowed but said."""
    config = parse_config({"redelivery": {"initial_redelivery_delay": 5000, "redelivery_delay": 5}})
    assert config.warnings() == [
        "redelivery.initial_redelivery_delay = 5000: seconds (1.4 hours); ActiveMQ's redeliveryDelay is in "
        "milliseconds: did you mean 5?"
    ]
    assert parse_config({"redelivery": {"initial_redelivery_delay": 5}}).warnings() == []
