"""ActiveMQ's REST message API (``/api/message/``, its ``MessageServlet``): POST sends a text message, GET (or DELETE)
consumes one.

What it reproduces of ActiveMQ 5.17's ``MessageServlet`` and ``MessageServletSupport``:

* the destination is the path after ``/api/message/`` with ``/`` read as ``.`` (or the ``destination`` parameter); a
  ``queue://`` or ``topic://`` prefix decides its kind, else ``type=queue`` makes it a queue and anything else (no
  ``type`` included) a **topic**, the servlet's default;
* the body is the ``body`` parameter; without one, and only when the request has a ``Content-Type``, the request
  body read line by line, each line ending in ``\\n``, at most 100,000 characters (``maxMessageSize``). A form post
  (``curl -d``) is read as parameters first, so its body is empty unless it has ``body=...``, as with Jetty;
* ``JMSCorrelationID``, ``JMSType`` and ``JMSReplyTo`` set those headers; ``JMSPriority`` (default 5),
  ``JMSTimeToLive`` (ms, default 0: never) and ``JMSDeliveryMode`` (``persistent``, the default, or anything else:
  non-persistent) the send's options; every other parameter given once, ``type`` and ``body`` excepted, is a string
  property (so ``clientId`` is one too); the answer is ``Message sent`` with a ``messageID`` header;
* GET waits up to ``readTimeout`` ms (none, a negative one or one above 20,000: 20,000, the servlet's
  ``maximumReadTimeout``) for a message: 200 with the text (an ``<?xml ...?>`` declaration cut), ``destination``,
  ``id`` and one header per property, ``text/plain`` or ``application/xml`` for a body starting with ``<`` (for a
  browser asking for a page, always ``text/plain``; every answer is a sandboxed document, see ``app.py``); 204 when
  none came. The message is acked once its answer is written to a client still there: when the client went away
  during the wait (or before the answer could be written), nothing is acked and the message goes back to the queue,
  redelivered (issue 41; ActiveMQ's servlet acks as it receives). A ``selector`` header filters. With
  ``clientId`` the consumer stays open between requests (its prefetched message waits for the next GET of that
  client), unless ``oneShot=true``; ``action=unsubscribe`` with ``clientId`` (POST) closes it. Without
  ``clientId`` each request is a one-shot consumer (ActiveMQ keeps one per HTTP session cookie instead: a fidelity
  row).
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from minibroker import AckType, ConsumerInfo, Dispatch, MessageAck
from minibroker._ids import PROCESS_ID_PREFIX
from minibroker.errors import InvalidDestination, MinibrokerError
from minibroker.message import Destination, Message

from .listener import Response

if TYPE_CHECKING:
    from minibroker import Broker, BrokerConnection

__all__ = ["DEFAULT_PRIORITY", "MAXIMUM_READ_TIMEOUT", "MAX_MESSAGE_SIZE", "RestClients", "parse_destination"]

#: the servlet's defaults (MessageServletSupport, MessageServlet)
DEFAULT_PRIORITY = 5
MAXIMUM_READ_TIMEOUT = 20_000
MAX_MESSAGE_SIZE = 100_000
#: parameters that are not message properties
_NOT_PROPERTIES = frozenset({"destination", "type", "body", "JMSDeliveryMode", "JMSPriority", "JMSTimeToLive"})
#: REST clients (``clientId``) kept at most; past this the oldest is closed
MAX_CLIENTS = 1000
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_ids = itertools.count(1)

Params = dict[str, list[str]]


class RestProblem(MinibrokerError):
    """A request the servlet would answer with an error page (``status``)."""

    code = "rest"
    status: int | None = None


def parse_destination(path: str, params: Params) -> Destination:
    """The destination a request names (see the module notes)."""
    name = _one(params, "destination") or path.strip("/").replace("/", ".")
    if not name:
        raise RestProblem("No destination supplied", status=500)
    if name.startswith("topic://"):
        topic = True
    elif name.startswith(("queue://", "channel://")):
        topic = False
    else:
        kind = _one(params, "type")
        topic = kind is None or kind.lower() == "topic"
    if "://" in name:
        name = name[name.index("://") + 3 :]
    return Destination.topic(name) if topic else Destination.queue(name)


def _one(params: Params, name: str) -> str | None:
    values = params.get(name)
    return values[0] if values else None


def message_from_request(
    params: Params, body: bytes, content_type: str | None, destination: Destination, now: float
) -> Message:
    """The text message a POST sends (see the module notes)."""
    text = _one(params, "body")
    if text is None and content_type is not None:
        raw = body.decode("utf-8", errors="replace")[:MAX_MESSAGE_SIZE]
        text = "".join(line + "\n" for line in raw.splitlines())
    properties: dict[str, str] = {}
    for name, values in params.items():
        if name in _NOT_PROPERTIES or name in ("JMSCorrelationID", "JMSExpiration", "JMSReplyTo", "JMSType"):
            continue
        if len(values) == 1:
            properties[name] = values[0]
    try:
        priority = int(_one(params, "JMSPriority") or DEFAULT_PRIORITY)
        ttl = int(_one(params, "JMSTimeToLive") or 0)
    except ValueError as exc:
        raise RestProblem(f"Could not post JMS message: {exc}", status=500) from None
    if not 0 <= priority <= 9:
        raise RestProblem(f"Could not post JMS message: priority {priority} is not 0-9", status=500)
    mode = _one(params, "JMSDeliveryMode")
    reply = _one(params, "JMSReplyTo")
    seq = next(_ids)
    return Message(
        f"ID:{PROCESS_ID_PREFIX}-http-{seq}:1:1:1:1",
        destination,
        text if text is not None else "",
        properties,
        priority,
        True if mode is None else mode.strip().lower() == "persistent",
        now,
        now + ttl / 1000 if ttl > 0 else 0.0,
        correlation_id=_one(params, "JMSCorrelationID"),
        reply_to=Destination.parse(reply) if reply else None,
        type=_one(params, "JMSType"),
        producer_id=f"ID:{PROCESS_ID_PREFIX}-http-{seq}:1:1",
    )


def message_response(message: Message, params: Params, as_text: bool = False) -> tuple[list[tuple[str, str]], bytes]:
    """The headers and body of a consumed message's answer (``as_text``: ``text/plain`` whatever the body)."""
    body = message.body
    text = body if isinstance(body, str) else None
    if as_text:
        content_type = "text/plain"
    elif _flag(params, "xml"):
        content_type = "application/xml"
    elif _flag(params, "json"):
        content_type = "application/json"
    elif text is not None and text.startswith("<"):
        content_type = "application/xml"
    else:
        content_type = "text/plain"
    headers = [
        ("Cache-Control", "no-cache, no-store, must-revalidate"),
        ("Pragma", "no-cache"),
        ("Expires", "Thu, 01 Jan 1970 00:00:00 GMT"),
        ("Content-Type", f"{content_type};charset=utf-8"),
        ("destination", _header_value(str(message.destination))),
        ("id", _header_value(message.message_id)),
    ]
    for name, value in message.properties.items():
        if _HEADER_NAME.fullmatch(name) and value is not None:
            headers.append((name, _header_value(str(value).lower() if isinstance(value, bool) else str(value))))
    if text is not None and text.startswith("<?"):
        end = text.find("?>")
        text = text[end + 2 :] if end >= 0 else text
    return headers, (text or "").encode("utf-8")


def _flag(params: Params, name: str) -> bool:
    value = _one(params, name)
    return value is not None and value.lower() == "true"


def _header_value(value: str) -> str:
    """A value that cannot split the response (a property may hold anything)."""
    return "".join(c if c >= " " and c != "\x7f" else " " for c in value).encode("latin-1", "replace").decode("latin-1")


def read_timeout(params: Params) -> float:
    """Seconds to wait for a message (the servlet's ``getReadDeadline``)."""
    text = _one(params, "readTimeout")
    try:
        millis = -1 if text is None else int(text)
    except ValueError:
        raise RestProblem(f"readTimeout {text!r} is not a number", status=500) from None
    if millis < 0 or millis > MAXIMUM_READ_TIMEOUT:
        millis = MAXIMUM_READ_TIMEOUT
    return millis / 1000


class _Consumer:
    """One REST consumer: a prefetch-1 subscription whose dispatches wait here for a GET."""

    def __init__(self, connection: BrokerConnection, destination: Destination, selector: str | None) -> None:
        self.connection = connection
        self.destination = destination
        self.selector = selector
        self.arrived: list[Dispatch] = []
        self._wake = asyncio.Event()
        self.busy = False
        info = ConsumerInfo(destination, prefetch=1, selector=selector)
        self.consumer_id = connection.add_consumer(info, self._route)

    def _route(self, dispatch: Dispatch) -> None:
        if dispatch.message is not None:
            self.arrived.append(dispatch)
            self._wake.set()

    async def receive(self, timeout: float, gone: asyncio.Event | None = None) -> Message | None:
        """The next message (not acked: see :meth:`ack`), or None after ``timeout`` or once ``gone`` is set."""
        try:
            async with asyncio.timeout(timeout):
                while not self.arrived:
                    if gone is not None and gone.is_set():
                        return None
                    self._wake.clear()
                    if gone is None:
                        await self._wake.wait()
                        continue
                    waits = [asyncio.ensure_future(self._wake.wait()), asyncio.ensure_future(gone.wait())]
                    try:
                        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        for waiting in waits:
                            waiting.cancel()
        except TimeoutError:
            return None
        message = self.arrived.pop(0).message
        assert message is not None
        return message

    def ack(self, message: Message) -> None:
        """AUTO_ACKNOWLEDGE, as the servlet's session, once the message's answer is written."""
        if self.connection.open:
            self.connection.ack(
                MessageAck(self.consumer_id, AckType.STANDARD, message.message_id, message.message_id, 1)
            )

    def close(self) -> None:
        if self.connection.open:
            self.connection.remove_consumer(self.consumer_id)


class RestClients:
    """The REST API's state: clients named by ``clientId`` (a connection each, one consumer per destination)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        #: (user, clientId) -> (connection, destination -> consumer)
        self._clients: dict[tuple[str | None, str], tuple[BrokerConnection, dict[tuple[str, str | None], _Consumer]]]
        self._clients = {}

    async def send(
        self, connection: BrokerConnection, path: str, params: Params, request_body: bytes, ctype: str | None
    ) -> Response:
        if _one(params, "action") == "unsubscribe" and _one(params, "clientId") is not None:
            self._close_client(connection, _one(params, "clientId") or "")
            return Response(200, [("Content-Type", "text/plain;charset=utf-8")])
        destination = parse_destination(path, params)
        message = message_from_request(params, request_body, ctype, destination, self.broker.clock.now())
        await connection.send_when_admitted(message)
        return Response(
            200,
            [("messageID", message.message_id), ("Content-Type", "text/plain;charset=utf-8")],
            b"Message sent",
        )

    async def consume(
        self,
        connection: BrokerConnection,
        user: str | None,
        path: str,
        params: Params,
        selector: str | None,
        login: Callable[[], BrokerConnection],
        *,
        gone: asyncio.Event | None = None,
        as_text: bool = False,
    ) -> Response:
        """A GET's message: acked when its answer is settled as written (:attr:`Response.settle`), else given back
        (the consumer holding it closes, so it is redelivered to the next one)."""
        destination = parse_destination(path, params)
        client_id = _one(params, "clientId")
        one_shot = client_id is None or _flag(params, "oneShot")
        timeout = read_timeout(params)
        key = (str(destination), selector)
        if client_id is None:
            # its own connection: the request's closes as soon as the answer is made, before it is written
            own = login()
            try:
                consumer = _Consumer(own, destination, selector)
            except BaseException:
                own.close()  # refused (no right to read): the connection goes with the request
                raise
        else:
            owner = (user, client_id)
            if owner not in self._clients:
                if len(self._clients) >= MAX_CLIENTS:
                    self._drop(next(iter(self._clients)))
                self._clients[owner] = (login(), {})
            client_connection, consumers = self._clients[owner]
            if key not in consumers:
                consumers[key] = _Consumer(client_connection, destination, selector)
            consumer = consumers[key]
            if consumer.busy:
                raise RestProblem("Concurrent access to consumer is not supported", status=500)
        consumer.busy = True

        def retire() -> None:
            consumer.close()
            if client_id is None:
                consumer.connection.close()
            else:
                entry = self._clients.get((user, client_id))
                if entry is not None and entry[1].get(key) is consumer:
                    del entry[1][key]

        try:
            message = await consumer.receive(timeout, gone)
        except BaseException:
            consumer.busy = False
            retire()  # what it held goes back
            raise
        if message is None:
            consumer.busy = False
            if one_shot:
                retire()
            return Response(204, [("Cache-Control", "no-cache, no-store, must-revalidate")])

        def settle(written: bool) -> None:
            consumer.busy = False
            if written:
                consumer.ack(message)
            if one_shot or not written:
                retire()  # not written: the consumer holding the message closes, the message goes back

        headers, body = message_response(message, params, as_text)
        return Response(200, headers, body, settle=settle)

    def _close_client(self, connection: BrokerConnection, client_id: str) -> None:
        user = getattr(connection.principal, "user", None)
        self._drop((user, client_id))

    def _drop(self, owner: tuple[str | None, str]) -> None:
        entry = self._clients.pop(owner, None)
        if entry is not None:
            connection, consumers = entry
            for consumer in consumers.values():
                consumer.close()
            connection.close()

    def close(self) -> None:
        for owner in list(self._clients):
            self._drop(owner)


def check_destination(text: str) -> Destination:
    try:
        return Destination.parse(text)
    except InvalidDestination as exc:
        raise RestProblem(str(exc), status=400) from None
