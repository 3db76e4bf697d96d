"""``--minibroker-external``: which fixtures point at the external broker, which tests are minibroker-only and why,
and the count at the end. The external broker here is a ``minibroker serve`` process (no Java needed); the run on a
real ActiveMQ is test_on_activemq.py."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest

PROJECT = {
    "pyproject.toml": """
[tool.pytest.ini_options]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
""",
    "conftest.py": """
from minibroker.plugins import factories

ci_broker = factories.minibroker_noproc(port=1)
ci_clean = factories.minibroker_clean("ci_broker")
""",
    "test_suite.py": """
import pytest
import stomp

from minibroker.plugins.redelivery import RedeliveryPlugin


def round_trip(host_and_ports, queue):
    conn = stomp.Connection12(host_and_ports)
    conn.connect(wait=True)
    conn.send(queue, "hello", headers={"receipt": "sent"})
    conn.disconnect()


def test_sync_stomp(minibroker_stomp_sync):
    round_trip(minibroker_stomp_sync.host_and_ports, "/queue/a")
    assert minibroker_stomp_sync.url.startswith("stomp://")


async def test_async_mqtt(minibroker_mqtt):
    assert minibroker_mqtt.url == f"mqtt://{minibroker_mqtt.host}:{minibroker_mqtt.port}"


def test_factory_noproc(ci_broker):
    round_trip(ci_broker.host_and_ports, "/queue/b")
    assert ci_broker.mqtt_url is not None


def test_plugin_proc(minibroker_proc):
    round_trip(minibroker_proc.host_and_ports, "/queue/c")


async def test_in_process(minibroker, minibroker_stomp):
    assert minibroker.queue("a").size == 0


def test_sync_in_process(minibroker_sync):
    assert minibroker_sync.size("a") == 0


async def test_clock(minibroker_stomp, manual_clock):
    await manual_clock.advance(1)


@pytest.mark.minibroker_virtual_time
async def test_virtual_time(minibroker_stomp):
    assert minibroker_stomp.port


@pytest.mark.minibroker(plugins=[RedeliveryPlugin()])
def test_configured(minibroker_stomp_sync):
    assert minibroker_stomp_sync.port


@pytest.mark.minibroker_only(reason="drops the client's connection")
def test_marked(minibroker_stomp_sync):
    assert minibroker_stomp_sync.port


def test_cleaned(ci_clean):
    assert ci_clean.port


def test_reads_the_broker(minibroker_stomp_sync):
    minibroker_stomp_sync.broker


def test_no_broker():
    assert True
""",
}


async def bodies(url: str, queues: list[str]) -> list[list[bytes]]:
    """What each queue of the broker at ``url`` holds."""
    from minibroker.client import connect

    async with await connect(url) as conn:
        session = await conn.create_session()
        found = []
        for queue in queues:
            browser = await session.create_browser(queue)
            found.append([message.body for message in await browser.messages()])
            await browser.close()
        return found


def write(pytester: pytest.Pytester) -> None:
    for name, text in PROJECT.items():
        (pytester.path / name).write_text(text)


def test_the_fixtures_point_at_the_external_broker_and_the_rest_is_minibroker_only(
    pytester: pytest.Pytester, minibroker_processes: Callable[..., Any]
) -> None:
    broker = minibroker_processes(stomp_port=0, mqtt_port=0)
    write(pytester)
    external = f"stomp={broker.host}:{broker.stomp_port},mqtt={broker.host}:{broker.mqtt_port}"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs", "--minibroker-external", external)
    output = result.stdout.str()
    assert result.parseoutcomes() == {"passed": 5, "failed": 1, "skipped": 7}, output
    assert "test_reads_the_broker" in output and "minibroker-only: the test reads .broker" in output
    count = f"minibroker external broker {external}: 5 ran on it (1 failed, 4 passed), 7 minibroker-only, 1 used"
    assert count in output
    # the external broker got what the tests sent through the plugin's and the factories' fixtures
    assert asyncio.run(bodies(broker.url, ["a", "b", "c"])) == [[b"hello"]] * 3
    reasons = dict(
        (reason, int(count)) for count, reason in re.findall(r"^  minibroker-only: (\d+) (.+)$", output, re.M)
    )
    assert reasons == {
        "reads the in-process broker (minibroker)": 1,
        "reads the in-process broker (minibroker_sync)": 1,
        "virtual time (manual_clock)": 1,
        "virtual time for the whole test (minibroker_virtual_time)": 1,
        "configures minibroker's broker (plugins)": 1,
        "drops the client's connection": 1,
        "cleans through minibroker's native protocol (ci_clean)": 1,
    }, output


def test_without_the_option_the_marker_changes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.minibroker_only(reason="why")
        def test_runs():
            assert True
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=1)
    assert "minibroker external broker" not in result.stdout.str()


@pytest.mark.parametrize(
    ("value", "url"),
    [
        ("stomp=10.1.2.3:61613", "tcp://10.1.2.3:61616"),  # not named: ActiveMQ's default port, the others' host
        ("mqtt=[::1]:1883,openwire=[::1]:61626", "tcp://[::1]:61626"),
        ("openwire=tcp://broker.example:61616", "tcp://broker.example:61616"),
        ("stomp=127.0.0.1:61613,openwire=ssl://127.0.0.1:61617", "ssl://127.0.0.1:61617"),
    ],
)
def test_the_openwire_fixtures_give_the_external_brokers_url(pytester: pytest.Pytester, value: str, url: str) -> None:
    """Both OpenWire fixtures, and the broker in a process's shape, hand out the URL ActiveMQ's JMS client takes,
    for a broker nothing here connects to."""
    pytester.makepyfile(f"""
def test_sync(minibroker_openwire_sync):
    assert minibroker_openwire_sync.url == {url!r}

def test_proc(minibroker_proc):
    assert minibroker_proc.openwire_url == {url!r}

async def test_async(minibroker_openwire):
    assert minibroker_openwire.url == {url!r} and minibroker_openwire.port == {int(url.rsplit(":", 1)[1])}
""")
    (pytester.path / "pyproject.toml").write_text(PROJECT["pyproject.toml"])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--minibroker-external={value}")
    result.assert_outcomes(passed=3)
    shown = value.replace("tcp://", "")  # the count names the addresses as the mode reads them
    assert f"minibroker external broker {shown}: 3 ran on it (3 passed)" in result.stdout.str()


@pytest.mark.parametrize(
    "value", ["stomp", "stomp=localhost", "amqp=127.0.0.1:5672", "stomp=a:1,stomp=b:2", ",", "openwire=http://a:1"]
)
def test_a_malformed_address_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--minibroker-external={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--minibroker-external" in result.stderr.str()
