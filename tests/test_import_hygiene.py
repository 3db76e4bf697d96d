"""What an import pulls in (issue 45): a listener's protocol, the wire codec, the STOMP transformations, the selector
parser and the HTTP console load when first asked for, not with ``minibroker`` or its client; so do the core's
features a default broker does not use (replayable reads, the scheduler and its time zones, topic logs), the
driver's views and the client's sessions and redelivery policies. Each check runs in a fresh interpreter and reads
``sys.modules``; the costs themselves are measured by tests/benchmarks/startup_bench.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

#: loaded only by what asks for them: listeners, the codec, feature parsers, the store, the configuration
LATE = (
    "minibroker.plugins.",
    "minibroker.wire",
    "minibroker.selector",
    "minibroker.store",
    "minibroker.config",
    "minibroker.features",
    "minibroker.virtual_time",
    "sqlite3",
    "tomllib",
    "xml",
)

#: the core's features, the driver's views and the stdlib modules they need: loaded by the first use, not by a
#: default broker's import (what each one costs: docs/development.md, the start-up rows)
FEATURES = (
    "minibroker._core.replay",
    "minibroker._core.replay_reads",
    "minibroker._core.scheduler",
    "minibroker._core.cron",
    "minibroker._core.topic_log",
    "minibroker._driver.results",
    "zoneinfo",
    "datetime",
    "uuid",
)

#: what ``connect`` and a session load, not ``from minibroker.client import AckMode, connect``
CLIENT_LATE = (
    "minibroker.client._session",
    "minibroker.client._consumer",
    "minibroker.client._producer",
    "minibroker.client._audit",
    "minibroker.redelivery",
    "minibroker.typed",
    "decimal",
    "random",
)  # json too (advisories), which loaded_after itself imports to answer

#: a default broker's whole life in one process: start, connect, send, receive, close
SCENARIO = """
import asyncio
from minibroker import Broker
from minibroker.client import AckMode, connect

async def main():
    async with Broker() as broker:
        async with await connect(broker) as conn:
            session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
            producer = await session.create_producer("orders")
            consumer = await session.create_consumer("orders")
            await producer.send("m1")
            assert (await consumer.receive(timeout=1)).body == "m1"

asyncio.run(main())
"""


def loaded_after(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-P", "-c", script], capture_output=True, text=True, check=True)
    modules: list[str] = json.loads(done.stdout.splitlines()[-1])
    return modules


def matching(modules: list[str], prefixes: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == p.rstrip(".") or m.startswith(p.rstrip(".") + ".") for p in prefixes)]


class TestPackage:
    def test_import_minibroker_loads_only_itself(self) -> None:
        """``import minibroker`` (run by every ``minibroker.xxx`` import) pays for no broker, asyncio or attrs."""
        modules = loaded_after("import minibroker")
        assert [m for m in modules if m.startswith("minibroker")] == ["minibroker"]
        assert matching(modules, ("asyncio", "attr", "attrs", "typing")) == []

    def test_broker_and_client_load_no_listener(self) -> None:
        """The embedded broker and its client load no listener, codec, parser, store or configuration."""
        modules = loaded_after("from minibroker import Broker\nimport minibroker.client")
        assert matching(modules, LATE) == []

    def test_import_the_client_loads_only_itself(self) -> None:
        """``minibroker.client``'s names load on first use (PEP 562), as ``minibroker``'s do."""
        modules = loaded_after("import minibroker.client")
        assert [m for m in modules if m.startswith("minibroker")] == ["minibroker", "minibroker.client"]

    def test_broker_and_connect_load_no_feature(self) -> None:
        """What a test imports loads neither the core's features nor the client's sessions and policies."""
        modules = loaded_after("from minibroker import Broker\nfrom minibroker.client import AckMode, connect")
        assert matching(modules, FEATURES + CLIENT_LATE) == []

    def test_a_default_broker_in_use_loads_no_feature(self) -> None:
        """Starting a default broker, connecting, sending and receiving do not pull the features in either."""
        modules = loaded_after(SCENARIO)
        assert "minibroker.client._session" in modules  # the scenario ran
        assert matching(modules, FEATURES) == []

    def test_the_pytest_plugin_loads_no_broker(self) -> None:
        """The entry point every pytest run imports leaves the broker to the first fixture that asks for it."""
        modules = loaded_after("import minibroker.plugins.pytest_plugin")
        assert matching(modules, ("minibroker._core", "minibroker._driver", "minibroker.client", "attrs")) == []


class TestListeners:
    def test_stomp_loads_neither_transformations_nor_selectors(self) -> None:
        """A STOMP listener loads its transformations and the selector parser when a frame first names one."""
        modules = loaded_after("import minibroker.plugins.stomp")
        late = ("minibroker.plugins.stomp.transformations", "minibroker.selector", "minibroker.wire", "xml")
        assert matching(modules, late + FEATURES) == []

    def test_native_listener_loads_the_codec_with_its_first_client(self) -> None:
        """The native listener starts without the wire codec (its frames, encoders and parsers)."""
        modules = loaded_after("import minibroker.plugins.server.tcp")
        assert matching(modules, ("minibroker.wire",)) == ["minibroker.wire", "minibroker.wire.encoded"]
        other_edges = ("minibroker.plugins.stomp", "minibroker.plugins.mqtt", "minibroker.plugins.openwire")
        assert matching(modules, (*other_edges, "minibroker.plugins.http")) == []

    def test_serve_binds_without_the_idna_codec(self) -> None:
        """``serve`` binds 127.0.0.1 without importing Python's IDNA codec (a str host passed to getaddrinfo)."""
        modules = loaded_after(
            "from minibroker.plugins.server.binding import close_all, listen\nclose_all(listen('127.0.0.1', 0))"
        )
        assert matching(modules, ("encodings.idna", "stringprep")) == []

    def test_native_signature_is_the_handshake_frame(self) -> None:
        """The signature the shared port routes by, spelt out in tcp.py, is the codec's HANDSHAKE type and magic."""
        from minibroker.plugins.server.tcp import NATIVE_SIGNATURE
        from minibroker.wire import MAGIC, FrameType

        assert bytes([FrameType.HANDSHAKE]) + MAGIC == NATIVE_SIGNATURE


class TestAssertRewriting:
    def test_only_the_plugin_modules_are_rewritten(self, pytester: pytest.Pytester) -> None:
        """pytest marks a plugin's whole distribution for assert rewriting; the plugin narrows it to its entry point,
        so the modules a test imports are not parsed and rewritten in every session without bytecode."""
        pytester.makepyfile(
            test_loaders=textwrap.dedent(
                """
                def test_loaders():
                    import minibroker.message
                    import minibroker.client
                    import minibroker.plugins.testing._pytest_fixtures as fixtures
                    import minibroker.plugins.pytest_plugin as entry_point

                    def rewritten(module):
                        return type(module.__loader__).__name__ == "AssertionRewritingHook"

                    assert not rewritten(minibroker.message)
                    assert not rewritten(minibroker.client)
                    assert not rewritten(fixtures)
                    assert rewritten(entry_point)
                """
            )
        )
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning")
        result.assert_outcomes(passed=1)
