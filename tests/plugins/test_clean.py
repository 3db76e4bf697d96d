"""A clean broker per test with a session process (issue 32, item 2): ``BrokerProcess.clean()`` and the
``minibroker_clean`` fixture empty ``minibroker serve`` as pytest-redis's ``redisdb`` flushes its server."""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker.client import connect
from minibroker.plugins.pytest_plugin import start_broker_process
from minibroker.transport.tcp_link import TcpLink


async def test_clean_empties_queues_durable_subscriptions_and_scheduled_jobs(tmp_path: Path) -> None:
    config = tmp_path / "broker.toml"
    config.write_text("[broker]\nscheduler_support = true\n")
    server = start_broker_process(config, stomp_port=None)
    try:
        async with await connect(server.url, client_id="audit") as owner:
            await (await (await owner.create_session()).create_durable_subscriber("topic://prices", "all")).close()
        async with await connect(server.url) as conn:
            session = await conn.create_session()
            await (await session.create_producer("orders")).send("o1")
            await (await session.create_producer("DLQ.orders")).send("dead")
            await (await session.create_producer("topic://prices")).send("p1")
            await (await session.create_producer("later")).send("job", properties={"AMQ_SCHEDULED_DELAY": 60_000})
        server.clean()
        async with await connect(server.url) as conn:
            link = conn._link
            assert isinstance(link, TcpLink)
            assert {q.name: q.size for q in await link.list_queues()} == {"orders": 0, "DLQ.orders": 0}
            _, durables, scheduled = await link.list_topics()
            assert (durables, scheduled) == ([], 0)
    finally:
        server.stop()


def test_the_fixture_cleans_after_each_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from minibroker.client import connect

        @pytest.mark.parametrize("n", [1, 2])
        async def test_each_sees_an_empty_queue(minibroker_clean, n):
            async with await connect(minibroker_clean.url) as conn:
                session = await conn.create_session()
                consumer = await session.create_consumer("shared")
                assert await consumer.receive(timeout=0.2) is None
                await consumer.close()
                await (await session.create_producer("shared")).send(f"left by test {n}")
        """
    )
    result = pytester.runpytest(
        "-p", "asyncio", "-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function"
    )
    result.assert_outcomes(passed=2)


async def test_clean_on_a_broker_with_users_uses_the_administrator_s_credentials(tmp_path: Path) -> None:
    """``--minibroker-user``/``--minibroker-password`` (here: the fields they fill) let ``clean()`` log in."""
    import attrs

    from minibroker.errors import AccessDenied

    config = tmp_path / "broker.toml"
    config.write_text('[users.ops]\npassword = "pw"\ngroups = ["admins"]\n')
    server = start_broker_process(config, stomp_port=None)
    try:
        async with await connect(server.url, user="ops", password="pw") as conn:
            await (await (await conn.create_session()).create_producer("orders")).send("o1")
        with pytest.raises(AccessDenied):
            server.clean()
        attrs.evolve(server, user="ops", password="pw").clean()
        async with await connect(server.url, user="ops", password="pw") as conn:
            link = conn._link
            assert isinstance(link, TcpLink)
            assert [(q.name, q.size) for q in await link.list_queues()] == [("orders", 0)]
    finally:
        server.stop()


ADMIN = '[broker]\nscheduler_support = true\n[users.admin]\npassword = "pw"\ngroups = ["admins"]\n'
GRANTS = 'read = ["admins"]\nwrite = ["admins"]\nadmin = ["admins"]\n'


def test_clean_as_an_administrator_granted_queues_and_topics(tmp_path: Path) -> None:
    """The local-broker guide's administrator (``queue = ">"`` and ``topic = ">"``) cleans a broker with users,
    scheduled jobs included; with queues alone (``destination = ">"``) the refusal says what to grant."""
    import attrs

    from minibroker.errors import AccessDenied

    both = tmp_path / "both.toml"
    both.write_text(ADMIN + '[[authorization]]\nqueue = ">"\ntopic = ">"\n' + GRANTS)
    queues_only = tmp_path / "queues.toml"
    queues_only.write_text(ADMIN + '[[authorization]]\ndestination = ">"\n' + GRANTS)
    for config in (both, queues_only):
        server = attrs.evolve(start_broker_process(config, stomp_port=None), user="admin", password="pw")
        try:
            if config is both:
                server.clean()
                continue
            with pytest.raises(AccessDenied) as refused:
                server.clean()
            assert "topic://ActiveMQ.Scheduler.Management" in str(refused.value)
            assert 'queue = ">" and topic = ">"' in str(refused.value)
        finally:
            server.stop()


async def test_clean_with_the_local_broker_guide_s_configuration(tmp_path: Path) -> None:
    """The guide's broker.toml, as written, and its administrator: ``minibroker_clean`` empties queues and scheduled
    jobs there (it failed on every test when the guide's admin entry granted queues only)."""
    import re

    import attrs

    guide = Path(__file__).resolve().parents[2] / "docs" / "guides" / "local-broker.md"
    [text] = re.findall(r"```toml broker.toml\n(.*?)```", guide.read_text(), re.S)
    config = tmp_path / "broker.toml"
    config.write_text(text)
    server = attrs.evolve(start_broker_process(config, port=0, stomp_port=0), user="admin", password="admin")
    try:
        async with await connect(server.url, user="orders-service", password="orders") as conn:
            await (await (await conn.create_session()).create_producer("orders.in")).send("o1")
        server.clean()
        async with await connect(server.url, user="admin", password="admin") as conn:
            link = conn._link
            assert isinstance(link, TcpLink)
            assert [(q.name, q.size) for q in await link.list_queues()] == [("orders.in", 0)]
    finally:
        server.stop()
