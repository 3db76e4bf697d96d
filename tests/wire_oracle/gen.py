"""The wire corpus's scripts: a few written by hand and, mostly, mixed cross-protocol scripts generated from seeds.

Every script uses names of its own (destinations, client ids, subscription names start with the script's name), so
that many run at once on one broker, recorded or replayed.
"""

from __future__ import annotations

from typing import Any

Script = dict[str, Any]

DESCRIPTION = "gen.py: hand-written basics"


def basics() -> list[Script]:
    stomp_one: Script = {
        "name": "basic-stomp",
        "clients": {"a": {"proto": "stomp", "version": "1.2"}, "b": {"proto": "stomp", "version": "1.1"}},
        "steps": [
            {"c": "a", "op": "connect"},
            {"c": "b", "op": "connect"},
            {"c": "a", "op": "subscribe", "dest": "/queue/basic-stomp.q", "id": "s1", "ack": "client-individual"},
            {"c": "b", "op": "send", "dest": "/queue/basic-stomp.q", "body": "one", "headers": {"color": "red"}},
            {"c": "b", "op": "send", "dest": "/queue/basic-stomp.q", "body": "two", "text": True},
            {"op": "sync"},
            {"c": "a", "op": "ack", "msg": 1},
            {"c": "a", "op": "nack", "msg": 0},
            {
                "c": "b",
                "op": "subscribe",
                "dest": "/queue/basic-stomp.q",
                "id": "s2",
                "headers": {"selector": "a = = 1"},
            },
            {"op": "sync"},
            {"c": "a", "op": "disconnect"},
            {"c": "b", "op": "disconnect"},
        ],
    }
    mqtt_one: Script = {
        "name": "basic-mqtt",
        "clients": {
            "m": {"proto": "mqtt", "client_id": "basic-mqtt-m", "clean": True},
            "s": {"proto": "stomp", "version": "1.2"},
        },
        "steps": [
            {"c": "m", "op": "connect"},
            {"c": "s", "op": "connect"},
            {"c": "m", "op": "subscribe", "topic": "basic-mqtt/t", "qos": 1},
            {"c": "s", "op": "subscribe", "dest": "/topic/basic-mqtt.t", "id": "t"},
            {"c": "m", "op": "publish", "topic": "basic-mqtt/t", "payload": "from-mqtt", "qos": 1},
            {
                "c": "s",
                "op": "send",
                "dest": "/topic/basic-mqtt.t",
                "body": "from-stomp",
                "headers": {"persistent": "true"},
            },
            {"c": "m", "op": "publish", "topic": "basic-mqtt/r", "payload": "kept", "qos": 0, "retain": True},
            {"op": "sync"},
            {"c": "m", "op": "subscribe", "topic": "basic-mqtt/r", "qos": 2},
            {"op": "sync"},
            {"c": "m", "op": "disconnect"},
            {"c": "s", "op": "disconnect"},
        ],
    }
    return [stomp_one, mqtt_one]


def all_scripts() -> list[Script]:
    return basics()
