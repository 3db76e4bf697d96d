"""An MQTT subscriber's acks (plugins/mqtt/session.py, ``MqttSession._ack``): the oldest delivery a subscription
holds is acked through the broker's one-message path, any other through the full INDIVIDUAL ack, and the session
keeps a mirror of the broker's in-flight record to tell which. Seeded runs of overlapping subscriptions at every
QoS, with deliveries of every QoS acked out of order, leave the broker exactly as the full ack alone does: the
same topic statistics and the same message histories (issue 45)."""

from __future__ import annotations

import random

import pytest

from minibroker import Broker, ManualClock
from minibroker.plugins.mqtt.codec import (
    _U16,
    Connect,
    MqttDecoder,
    Publish,
    _fixed,
    _parse,
    _text,
    encode_connect,
    encode_puback,
    encode_pubcomp,
    encode_publish,
)
from minibroker.plugins.mqtt.session import MqttSession

TOPICS = ("t/a", "t/b", "u/x")
FILTERS = (("t/#", 1), ("t/a", 2), ("u/+", 0), ("#", 1))


def subscribe(packet_id: int, topic_filter: str, qos: int) -> bytes:
    return _fixed(0x82, _U16.pack(packet_id) + _text(topic_filter) + bytes((qos,)))


class Client:
    """One session fed bytes as its listener would feed them."""

    def __init__(self, broker: Broker, client_id: str, *, reference: bool) -> None:
        self.written: list[bytes] = []
        self.session = MqttSession(broker, self.written.append, lambda: None)
        if reference:  # every ack takes the full path
            session = self.session
            session._ack = lambda sub, message_id: MqttSession._ack_reference(  # type: ignore[method-assign]
                session._door(), sub, message_id
            )
        self.send(encode_connect(Connect("MQTT", 4, client_id, True, 0)))

    def send(self, data: bytes) -> None:
        decoder = MqttDecoder()
        decoder.receive_data(data)
        for packet in decoder:
            self.session.receive(packet)

    def deliveries(self) -> list[Publish]:
        """The PUBLISH packets written to the client since the last call (CONNACK, SUBACK and the rest skipped)."""
        data = b"".join(self.written)
        self.written.clear()
        found, pos = [], 0
        while pos < len(data):
            first, length, shift, pos = data[pos], 0, 0, pos + 1
            while True:
                length |= (data[pos] & 127) << shift
                pos, shift = pos + 1, shift + 7
                if not data[pos - 1] & 128:
                    break
            if first >> 4 == 3:
                packet = _parse(3, first & 15, data[pos : pos + length])
                assert isinstance(packet, Publish)
                found.append(packet)
            pos += length
        return found


async def run(seed: int, *, reference: bool) -> tuple[list[object], list[object]]:
    rng = random.Random(seed)
    async with Broker(clock=ManualClock()) as broker:
        subscriber = Client(broker, "sub", reference=reference)
        for i, (topic_filter, qos) in enumerate(rng.sample(FILTERS, rng.randrange(1, len(FILTERS) + 1))):
            subscriber.send(subscribe(i + 1, topic_filter, qos))
        publisher = Client(broker, "pub", reference=reference)
        unacked: list[Publish] = []
        statistics: list[object] = []  # after every step: a difference may last only until the later acks come
        for n in range(400):
            qos = rng.randrange(3)
            publisher.send(
                encode_publish(rng.choice(TOPICS), b"m%d" % n, qos, False, False, n % 60000 + 1 if qos else None)
            )
            unacked += [p for p in subscriber.deliveries() if p.qos]
            if rng.random() < 0.5:
                subscriber.session.run_pending()  # the QoS 0 acks, as the listener's flush runs them
            rng.shuffle(unacked)
            while unacked and rng.random() < 0.6:
                delivery = unacked.pop()
                assert delivery.packet_id is not None
                subscriber.send((encode_puback if delivery.qos == 1 else encode_pubcomp)(delivery.packet_id))
            statistics += [broker.topic_statistics(name) for name in broker.topic_names()]
        subscriber.session.run_pending()
        for delivery in unacked:
            assert delivery.packet_id is not None
            subscriber.send((encode_puback if delivery.qos == 1 else encode_pubcomp)(delivery.packet_id))
        statistics += [broker.topic_statistics(name) for name in broker.topic_names()]
        prefix = publisher.session._producer_id
        histories = [broker.history(f"{prefix}:{k}") for k in range(1, 401)]
        assert any(r.event == "ack" for h in histories for r in h)
    return statistics, histories


@pytest.mark.parametrize("seed", range(12))
async def test_fast_acks_leave_the_broker_as_full_acks_do(seed: int) -> None:
    assert await run(seed, reference=False) == await run(seed, reference=True)
