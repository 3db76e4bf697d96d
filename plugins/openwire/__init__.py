"""OpenWire, ActiveMQ's own protocol: the edge ActiveMQ's JMS client (and NMS, and Spring/Camel over it) connects
to. See README.md in this folder for what it does and what it refuses."""

from .listener import OpenWireServer, start_openwire_server

__all__ = ["OpenWireServer", "start_openwire_server"]
