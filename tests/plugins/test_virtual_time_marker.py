"""``@pytest.mark.minibroker_virtual_time``: the whole test's event loop on the broker's clock, tested as users run it
(inner pytest sessions). No timing asserts: virtual time is read from the loop, wall time only bounded from above by a
margin far below the virtual delay (the wall-time comparison itself is in tests/benchmarks/)."""

from __future__ import annotations

import pytest

STRICT = ("-o", "asyncio_mode=strict", "-o", "asyncio_default_fixture_loop_scope=function", "-W", "error")
STRICT += ("-p", "no:cacheprovider")

CLAIMS = """
import asyncio, threading, time
import pytest

@pytest.mark.asyncio
@pytest.mark.minibroker_virtual_time
async def test_the_applications_timers_are_virtual(minibroker, manual_clock):
    loop = asyncio.get_running_loop()
    assert loop.time() == manual_clock.elapsed          # one time for the loop and the broker
    started = manual_clock.elapsed
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(2):
            await asyncio.Event().wait()
    assert manual_clock.elapsed - started == 2.0
    await asyncio.sleep(30)                              # an application's back-off
    assert await asyncio.wait_for(asyncio.sleep(5, "late"), 10) == "late"
    fired = loop.create_future()
    loop.call_later(60, fired.set_result, "call_later")
    assert await fired == "call_later"
    assert manual_clock.elapsed - started == 97.0

@pytest.mark.asyncio
@pytest.mark.minibroker_virtual_time
async def test_advance_moves_the_loops_timers_in_order(minibroker, manual_clock):
    order = []
    loop = asyncio.get_running_loop()
    loop.call_later(3, order.append, "loop at 3")
    manual_clock.call_at(manual_clock.now() + 2, lambda: order.append("clock at 2"))
    loop.call_later(1, order.append, "loop at 1")
    await manual_clock.advance(5)
    assert order == ["loop at 1", "clock at 2", "loop at 3"]

@pytest.mark.asyncio
@pytest.mark.minibroker_virtual_time
async def test_wall_clock_reads_and_threads_stay_real(minibroker, manual_clock):
    wall = time.monotonic()
    await asyncio.sleep(3600)
    assert time.monotonic() - wall < 60                  # an hour of virtual time, no hour of wall time
    done = threading.Event()
    threading.Thread(target=lambda: (time.sleep(0.05), done.set())).start()
    assert await asyncio.to_thread(done.wait, 5)         # a real thread's real sleep still ends

@pytest.mark.asyncio
@pytest.mark.minibroker_virtual_time
async def test_the_testing_helpers_wait_in_virtual_time(minibroker, manual_clock):
    from minibroker.testing import wait_for_queue_size
    started = manual_clock.elapsed
    with pytest.raises(AssertionError, match="not 1, after 5"):
        await wait_for_queue_size(minibroker, "nothing.comes", 1, timeout=5)
    assert 5.0 <= manual_clock.elapsed - started < 6.0

@pytest.mark.asyncio
async def test_without_the_marker_the_loop_is_real(minibroker, manual_clock):
    loop = asyncio.get_running_loop()
    assert type(loop).__name__ != "VirtualTimeLoop"
    before = loop.time()
    await asyncio.sleep(0.05)
    assert loop.time() - before > 0.04                   # the loop's own clock moved with real time
    assert manual_clock.elapsed < 1.0                    # while the broker's is virtual
"""


def test_each_documented_claim(pytester: pytest.Pytester) -> None:
    """asyncio.timeout, sleep, wait_for and call_later are virtual with the marker; time.monotonic and threads stay
    real; advance() fires loop and clock timers in order; minibroker.testing's waits time out in virtual time;
    without the marker the loop's time is real."""
    pytester.makepyfile(CLAIMS)
    pytester.runpytest(*STRICT).assert_outcomes(passed=5)


def test_a_real_client_over_a_real_socket(pytester: pytest.Pytester) -> None:
    """The STOMP fixture's I/O is real under the marker (stomp.py in a thread), its application's timers virtual."""
    pytester.makepyfile("""
import asyncio
import pytest
import stomp

@pytest.mark.asyncio
@pytest.mark.minibroker_virtual_time
async def test_retry_after_back_off(minibroker_stomp, minibroker, manual_clock):
    def send():
        conn = stomp.Connection12(minibroker_stomp.host_and_ports)
        conn.connect(wait=True)
        conn.send("/queue/orders", "order 1", headers={"receipt": "r1"})
        conn.disconnect()

    started = manual_clock.elapsed
    for attempt in range(3):                 # the application retries every 30 s until the order is there
        if minibroker.queue("orders").size:
            break
        if attempt == 1:
            await asyncio.to_thread(send)
        await asyncio.sleep(30)
    assert minibroker.queue("orders").size == 1
    assert manual_clock.elapsed - started >= 60
""")
    pytester.runpytest_subprocess(*STRICT).assert_outcomes(passed=1)


def test_loop_scopes(pytester: pytest.Pytester) -> None:
    """The marker follows the test's pytest-asyncio loop scope: with loop_scope="module" the module's marked tests
    share one virtual loop (its time carries on), unmarked ones keep a real loop."""
    pytester.makepyfile("""
import asyncio
import pytest

pytestmark = pytest.mark.asyncio(loop_scope="module")

@pytest.mark.minibroker_virtual_time
async def test_first():
    await asyncio.sleep(100)
    assert asyncio.get_running_loop().time() == 100.0

@pytest.mark.minibroker_virtual_time
async def test_second_on_the_same_loop():
    assert asyncio.get_running_loop().time() == 100.0
    await asyncio.sleep(1)

async def test_unmarked():
    assert type(asyncio.get_running_loop()).__name__ != "VirtualTimeLoop"
""")
    pytester.runpytest(*STRICT).assert_outcomes(passed=3)


def test_misuse_is_refused_at_collection(pytester: pytest.Pytester) -> None:
    """On a synchronous test, or with an unknown keyword, the marker fails at once with a message."""
    pytester.makepyfile("""
import pytest

@pytest.mark.minibroker_virtual_time
def test_sync():
    pass
""")
    result = pytester.runpytest(*STRICT)
    result.stdout.fnmatch_lines(["*minibroker_virtual_time is for `async def` tests*"])
    assert result.ret != 0


def test_fixtures_on_another_loop_are_refused_at_collection(pytester: pytest.Pytester) -> None:
    """With the fixtures' loop scope wider than the test's, the broker would keep another loop's time: refused."""
    pytester.makepyfile("""
import pytest

@pytest.mark.asyncio
@pytest.mark.minibroker_virtual_time
async def test_on_two_loops(minibroker):
    pass
""")
    result = pytester.runpytest("-o", "asyncio_mode=strict", "-o", "asyncio_default_fixture_loop_scope=module")
    result.stdout.fnmatch_lines(["*minibroker would run on pytest-asyncio's module-scoped loop*"])
    assert result.ret != 0


def test_an_async_mqtt_client_on_the_virtual_loop(pytester: pytest.Pytester) -> None:
    """aiomqtt on the test's virtual loop: its socket is real, the issue's ``asyncio.timeout(2)`` around a read that
    never comes returns as soon as everything waits, 2 virtual seconds later (keepalive=0: see the module notes)."""
    pytester.makepyfile("""
import asyncio
import aiomqtt
import pytest

@pytest.mark.asyncio
@pytest.mark.minibroker_virtual_time
async def test_read_with_a_timeout(minibroker_mqtt, manual_clock):
    async with aiomqtt.Client(minibroker_mqtt.host, minibroker_mqtt.port, keepalive=0) as client:
        await client.subscribe("sensors/#", qos=1)
        await client.publish("sensors/kitchen", b"21.5", qos=1)
        first = await anext(client.messages)
        assert first.payload == b"21.5"
        started = manual_clock.elapsed
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(2):
                await anext(client.messages)
        assert manual_clock.elapsed - started == pytest.approx(2.0, abs=1e-6)
""")
    pytester.runpytest_subprocess(*STRICT).assert_outcomes(passed=1)
