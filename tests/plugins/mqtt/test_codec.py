"""The MQTT codec and ActiveMQ's topic name mapping, sans I/O."""

from __future__ import annotations

import pytest

from minibroker.errors import FrameTooLarge, RemoteProtocolError
from minibroker.plugins.mqtt.codec import (
    Connect,
    MqttDecoder,
    Publish,
    Subscribe,
    encode_connect,
    encode_publish,
)
from minibroker.plugins.mqtt.naming import from_activemq, to_activemq, validate_filter


def decode(data: bytes) -> list[object]:
    decoder = MqttDecoder()
    decoder.receive_data(data)
    return list(decoder)


def test_connect_round_trips_with_will_and_credentials() -> None:
    connect = Connect("MQTT", 4, "dev-1", False, 30, "status/dev-1", b"gone", 1, True, "app", b"secret")
    assert decode(encode_connect(connect)) == [connect]


def test_a_packet_arriving_in_pieces_is_one_packet() -> None:
    data = encode_publish("a/b", b"x" * 300, 1, packet_id=7)  # a two-byte remaining length
    decoder = MqttDecoder()
    for i in range(len(data)):
        decoder.receive_data(data[i : i + 1])
        packet = decoder.next_packet()
        if i < len(data) - 1:
            assert packet is None
    assert packet == Publish("a/b", b"x" * 300, 1, False, False, 7)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (bytes([0x30 | 6, 3, 0, 1, 97]), "QoS 3"),
        (bytes([0x82, 5, 0, 0, 0, 1, 97]), "identifier 0"),
        (bytes([0x80, 2, 0, 1]), "reserved flags"),
        (bytes([0x82, 2, 0, 1]), "without a topic filter"),
        (bytes([0x20, 2, 0, 0]), "not one a client sends"),
        (bytes([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 1]), "longer than four bytes"),
        (bytes([0x30, 3, 0, 5, 97]), "truncated"),
    ],
)
def test_malformed_packets_are_refused(data: bytes, match: str) -> None:
    with pytest.raises(RemoteProtocolError, match=match):
        decode(data)


def test_a_packet_over_the_limit_is_refused_before_it_is_read() -> None:
    decoder = MqttDecoder(max_packet_size=100)
    decoder.receive_data(encode_publish("t", b"x" * 200)[:5])
    with pytest.raises(FrameTooLarge):
        decoder.next_packet()


def test_subscribe_keeps_each_filter_s_qos() -> None:
    data = bytes([0x82, 14, 0, 9, 0, 3]) + b"a/#" + b"\x01" + bytes([0, 3]) + b"b/+" + b"\x02"
    assert decode(data) == [Subscribe(9, (("a/#", 1), ("b/+", 2)))]


def test_topic_names_map_as_activemq_maps_them() -> None:
    assert to_activemq("sensors/+/temp/#") == "sensors.*.temp.>"
    assert to_activemq("v1.2/x") == "v1/2.x"  # a dot and a slash trade places
    assert from_activemq(to_activemq("a/b.c/+")) == "a/b.c/+"


@pytest.mark.parametrize("bad", ["a/#/b", "a#", "a/b+", "+a", "#/#"])
def test_bad_filters_are_refused(bad: str) -> None:
    with pytest.raises(RemoteProtocolError):
        validate_filter(bad)


@pytest.mark.parametrize("good", ["#", "+", "a/+/b", "a/#", "+/+"])
def test_good_filters_pass(good: str) -> None:
    validate_filter(good)
