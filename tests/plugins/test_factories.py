"""``from minibroker.plugins import factories``: the public home of the process fixture factories (issue 43, item 3)."""

from __future__ import annotations

import subprocess
import sys

import pytest

ARGS = ("-p", "no:cacheprovider", "-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function")


def test_importing_the_factories_imports_no_broker() -> None:
    """A conftest that builds fixtures pays nothing until they run (issue 45's budget)."""
    code = "import sys, minibroker.plugins.factories; print('minibroker._driver.broker' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert done.stdout.strip() == "False"


def test_the_old_private_names_are_the_factories() -> None:
    from minibroker.plugins import factories, pytest_plugin
    from minibroker.plugins.testing import _pytest_fixtures

    assert _pytest_fixtures.minibroker_proc_factory is factories.minibroker_proc
    assert pytest_plugin.minibroker_noproc_factory is factories.minibroker_noproc


def test_fixtures_of_one_s_own(pytester: pytest.Pytester) -> None:
    """A process per module and a clean broker per test; a noproc fixture where nothing listens fails at once."""
    pytester.makeconftest("""
import socket
from minibroker.plugins import factories

orders_broker = factories.minibroker_proc(scope="module", stomp_port=0)
orders = factories.minibroker_clean("orders_broker")

with socket.socket() as probe:  # a port nothing listens on
    probe.bind(("127.0.0.1", 0))
    FREE = probe.getsockname()[1]
nowhere = factories.minibroker_noproc(port=FREE, user="ops", password="pw")
""")
    pytester.makepyfile("""
import pytest
from minibroker.client import connect
from minibroker.plugins import factories

@pytest.mark.parametrize("n", [1, 2])
async def test_each_test_starts_clean(orders, n):
    async with await connect(orders.url) as conn:
        session = await conn.create_session()
        consumer = await session.create_consumer("shared")
        assert await consumer.receive(timeout=0.2) is None
        await consumer.close()
        await (await session.create_producer("shared")).send(f"left by test {n}")

def test_nothing_listens(nowhere):
    pass
""")
    result = pytester.runpytest_subprocess(*ARGS)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*minibroker_noproc: no broker listens on 127.0.0.1:*"])
