"""Temporary destinations in the core: ActiveMQ's names, owned by a connection, deleted with it, refused to others.

The texts are the recordings' (tests/differential/features/temp_*.json, ActiveMQ 5.17.2).
"""

from __future__ import annotations

import pytest

from minibroker._core.broker import BrokerCore
from minibroker._core.commands import ConsumerInfo
from minibroker.errors import DestinationDoesNotExist, DestinationInUse, InvalidDestination
from minibroker.message import Destination, DestinationKind, Message

QUEUE = DestinationKind.QUEUE
TOPIC = DestinationKind.TOPIC


class _Clock:
    def now(self) -> float:
        return 1_000.0


def test_names_follow_activemq_connection_id_then_a_counter() -> None:
    core = BrokerCore(_Clock())
    conn = core.add_connection()
    first = core.create_temporary(conn, QUEUE, "ID:host-1234-1700000000000-1:1")
    second = core.create_temporary(conn, TOPIC, "ID:host-1234-1700000000000-1:1")
    assert first == Destination(QUEUE, "ID:host-1234-1700000000000-1:1:1")
    assert second == Destination(TOPIC, "ID:host-1234-1700000000000-1:1:2")
    unnamed = core.create_temporary(core.add_connection(), QUEUE)
    assert unnamed.name.startswith("ID:") and unnamed.name.endswith(":1")


def test_a_temporary_queue_carries_messages_to_its_owner() -> None:
    core = BrokerCore(_Clock())
    conn = core.add_connection()
    temp = core.create_temporary(conn, QUEUE)
    consumer = core.add_consumer(conn, ConsumerInfo(temp, 10))
    core.send(core.add_connection(), Message("m1", temp, "resp1", correlation_id="c-1"))
    [dispatch] = core.drain()
    assert dispatch.consumer_id == consumer and dispatch.message.body == "resp1"


def test_another_connections_consumer_is_refused_its_sends_are_not() -> None:
    core = BrokerCore(_Clock())
    owner, other = core.add_connection(), core.add_connection()
    temp = core.create_temporary(owner, QUEUE)
    with pytest.raises(InvalidDestination, match=r"^Cannot use a Temporary destination from another Connection$") as e:
        core.add_consumer(other, ConsumerInfo(temp, 10))
    assert e.value.destination == temp
    assert not core.subscriptions
    core.send(other, Message("m1", temp, "m1"))
    assert core.queue(temp.name).size == 1


def test_deleted_with_its_connection_then_a_send_is_refused() -> None:
    core = BrokerCore(_Clock())
    owner, other = core.add_connection(), core.add_connection()
    temp = core.create_temporary(owner, QUEUE)
    core.send(other, Message("m1", temp, "early"))
    assert core.temporaries.exists(temp)
    core.remove_connection(owner)
    assert not core.temporaries.exists(temp) and temp.name not in core.queues
    with pytest.raises(InvalidDestination, match=f"^temp-queue://{temp.name}$") as e:
        core.send(other, Message("m2", temp, "late"))
    assert e.value.destination == temp
    assert temp.name not in core.queues


def test_delete_is_refused_while_a_consumer_reads_then_allowed() -> None:
    core = BrokerCore(_Clock())
    conn = core.add_connection()
    temp = core.create_temporary(conn, QUEUE)
    consumer = core.add_consumer(conn, ConsumerInfo(temp, 10))
    with pytest.raises(DestinationInUse, match=r"^A consumer is consuming from the temporary destination$") as e:
        core.delete_temporary(conn, temp)
    assert e.value.consumer_id == consumer
    assert core.temporaries.exists(temp)
    core.remove_consumer(conn, consumer)
    core.delete_temporary(conn, temp)
    assert not core.temporaries.exists(temp)


def test_a_temporary_topic_reaches_its_owner_and_goes_with_it() -> None:
    core = BrokerCore(_Clock())
    conn = core.add_connection()
    temp = core.create_temporary(conn, TOPIC)
    core.add_consumer(conn, ConsumerInfo(temp, 10))
    core.send(conn, Message("m1", temp, "m1"))
    assert [d.message.body for d in core.drain()] == ["m1"]
    core.remove_connection(conn)
    assert temp.name not in core.topics
    with pytest.raises(InvalidDestination):
        core.send(core.add_connection(), Message("m2", temp, "m2"))


def test_a_producer_on_a_deleted_temporary_destination_is_refused_for_every_edge() -> None:
    """ActiveMQ's addProducer fails for a temporary destination that is gone (DestinationDoesNotExistException, the
    recording temp_queue_deleted_with_connection); the core refuses it, so each edge's producer gets the same."""
    core = BrokerCore(_Clock())
    owner = core.add_connection()
    temp = core.create_temporary(owner, QUEUE)
    other = core.add_connection()
    core.add_producer(other, 1, temp)  # alive: a producer is welcome
    core.remove_connection(owner)
    with pytest.raises(DestinationDoesNotExist) as refused:
        core.add_producer(other, 2, temp)
    assert refused.value.destination == temp
