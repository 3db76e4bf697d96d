"""Message ids are unique across client processes (issue 15: two producer processes used to send the same ids)."""

from __future__ import annotations

import subprocess
import sys

from minibroker import Broker
from minibroker.client import connect


def _prefix_of_a_new_process() -> str:
    code = "from minibroker.client._connection import _ID_PREFIX; print(_ID_PREFIX)"
    return subprocess.run([sys.executable, "-P", "-c", code], check=True, capture_output=True, text=True).stdout.strip()


class TestMessageIds:
    def test_two_processes_never_share_a_prefix(self) -> None:
        """Host, process id and start time, as ActiveMQ's IdGenerator: every process names its ids differently."""
        from minibroker.client._connection import _ID_PREFIX

        first, second = _prefix_of_a_new_process(), _prefix_of_a_new_process()
        assert len({first, second, _ID_PREFIX}) == 3

    async def test_message_ids_carry_the_process_prefix(self) -> None:
        from minibroker.client._connection import _ID_PREFIX

        async with Broker() as broker, await connect(broker) as conn:
            session = await conn.create_session()
            producer = await session.create_producer("q")
            await producer.send("x")
            consumer = await session.create_consumer("q")
            msg = await consumer.receive(timeout=1)
            assert msg is not None and msg.message_id.startswith(f"ID:{_ID_PREFIX}:")
