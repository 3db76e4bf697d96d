"""MQTT 3.1 / 3.1.1 for minibroker, mapped onto topics and durable subscriptions as ActiveMQ's ``mqtt://`` transport
maps them, so paho-mqtt, aiomqtt or gmqtt code tested here behaves as against ActiveMQ (see ``docs/guides/mqtt.md``).

``server = await start_mqtt_server(broker)`` listens (``server.url`` is ``mqtt://127.0.0.1:<port>``);
``minibroker serve --mqtt-port 1883`` and the pytest fixture ``minibroker_mqtt`` do it for you.
"""

from .listener import CONNECT_TIMEOUT, DEFAULT_MAX_PACKET_SIZE, MqttServer, start_mqtt_server
from .session import QOS_PROPERTY, MqttSession

__all__ = [
    "CONNECT_TIMEOUT",
    "DEFAULT_MAX_PACKET_SIZE",
    "QOS_PROPERTY",
    "MqttServer",
    "MqttSession",
    "start_mqtt_server",
]
