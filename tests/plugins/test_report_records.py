"""``--minibroker-report`` exposes what it drew as records (issue 43, item 7): ``.records`` on the report's plugin and
``report.json`` beside ``report.html``, one record per message of each failed test, with MQTT's QoS and retain."""

from __future__ import annotations

import json

import pytest

ARGS = ("-p", "no:cacheprovider", "-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function")

TESTS = """
from minibroker.client import AckMode

async def test_fails_after_a_retained_reading(minibroker, minibroker_connection):
    session = await minibroker_connection.create_session(AckMode.AUTO_ACKNOWLEDGE)
    readings = await session.create_producer("topic://meters.7")
    await readings.send(b"42.5", properties={"ActiveMQ.MQTT.QoS": 1, "ActiveMQ.Retain": True})
    await (await session.create_producer("orders")).send("o1")
    assert False, "the gateway never answered"

async def test_passes(minibroker, minibroker_connection):
    session = await minibroker_connection.create_session(AckMode.AUTO_ACKNOWLEDGE)
    await (await session.create_producer("orders")).send("fine")
"""

CONFTEST = """
def pytest_terminal_summary(config):
    plugin = config.pluginmanager.get_plugin("minibroker-report")
    print("records seen by a conftest:", len(plugin.records))
"""


def test_failed_tests_messages_as_records(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_records=TESTS)
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest_subprocess(*ARGS, "--minibroker-report=out/report.html")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*records seen by a conftest: 2*"])
    records = json.loads((pytester.path / "out" / "report.json").read_text())
    assert {r["test"] for r in records} == {"test_records.py::test_fails_after_a_retained_reading"}
    by_body = {r["body"]: r for r in records}
    reading, order = by_body["42.5"], by_body["o1"]
    assert (reading["qos"], reading["retain"]) == (1, True)
    assert (order["qos"], order["retain"], order["now_in"], order["outcome"]) == (None, False, "orders", "pending")
    assert order["broker"] == "minibroker" and order["events"][0]["event"] == "sent"
