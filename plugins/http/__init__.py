"""ActiveMQ's HTTP face for ``minibroker serve`` (its web module on port 8161): ``await start_http_server(broker)``.

``parser`` reads HTTP/1.1 requests (sans I/O), ``listener`` is the asyncio server around it, ``app`` routes each
request to the web console (``console`` and ``static/``), Jolokia (``jolokia``, ``mbeans``) or the REST message API
(``rest``), each acting through a broker connection opened with the request's credentials.
"""

from .app import HttpApp
from .listener import HttpServer, Response, start_http_server
from .parser import BadRequest, Request, RequestParser

__all__ = ["BadRequest", "HttpApp", "HttpServer", "Request", "RequestParser", "Response", "start_http_server"]
