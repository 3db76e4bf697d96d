"""The STOMP 1.0/1.1/1.2 connector (ActiveMQ's ``stomp://`` transport): ``await start_stomp_server(broker)``.

``codec`` frames bytes (sans I/O), ``converter`` maps frames to broker operations the way ActiveMQ 5.17 does (sans
I/O), ``listener`` is the asyncio server around them.
"""

from .codec import StompDecoder, StompFrame, encode_frame
from .converter import Authenticator, StompConverter, StompError
from .listener import StompServer, start_stomp_server

__all__ = [
    "Authenticator",
    "StompConverter",
    "StompDecoder",
    "StompError",
    "StompFrame",
    "StompServer",
    "encode_frame",
    "start_stomp_server",
]
