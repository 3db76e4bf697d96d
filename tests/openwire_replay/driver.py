"""The Python side of the oracle's minibroker mode: a fresh minibroker per script, and its state on request.

``ScriptOracle --minibroker HOST:PORT`` (``tests/differential/oracle/``) opens one control connection per script to
the address this driver listens on, and speaks one JSON line per request, one per answer:

=================================================  ==================================================================
request                                            answer
=================================================  ==================================================================
``{"op": "start", "broker": {...}}``               a fresh ``Broker`` (real clock: the Java client lives in real
                                                   time) with the script's broker options, as the in-process
                                                   replayer applies them, and an OpenWire listener on a free port:
                                                   ``{"url": "tcp://127.0.0.1:P?...", "brokerName": ...}``;
                                                   options minibroker refuses: ``{"startError": <the exception
                                                   event, where broker.start>}`` and the oracle runs no ops
``{"op": "stats", "dest", "topic"}``               ``{"event": <queue_stats or topic_stats event>}``
``{"op": "exists", "dest"}``                       ``{"exists": bool}``: does the broker hold this queue
``{"op": "queues"}``                               ``{"event": <queues event>}``
``{"op": "dlq_queues"}``                           ``{"event": <dlq_queues event>}``
``{"op": "temp_exists", "temp", "dest"}``          ``{"event": <temp_exists event>}`` (``dest``: the qualified name)
``{"op": "durable_subs", "dest"}``                 ``{"event": <durable_subs event>}``
``{"op": "stop"}``                                 ``{}``, the broker stopped (also when the connection closes)
=================================================  ==================================================================

A failed request answers ``{"error": "..."}``. These are the embedded broker's internals the Java oracle reads
(``DestinationStatistics``, the destination map, the temporary regions, ``DurableTopicSubscription``), read here
through minibroker's operator API (``Broker.queue``, ``topic_statistics``, ``durable_subscriptions``, ...).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from contextlib import AsyncExitStack
from typing import Any

from support.scriptrunner import broker_options, java_type, norm, stats_event

from minibroker import Broker, Destination
from minibroker.errors import MinibrokerError
from minibroker.plugins.openwire import start_openwire_server

Event = dict[str, Any]

#: options on every script connection's URL. ``alwaysSyncSend``: the embedded broker's vm:// connections hand each
#: send to the broker before the next op, and over TCP only a response guarantees that (the in-process replayer's
#: ``always_sync_send=True`` for the same reason); it changes no semantics the scripts read.
URL_OPTIONS = "?jms.alwaysSyncSend=true"

_NAMES = itertools.count(1)


def make_broker(cfg: dict[str, Any]) -> Broker:
    """A broker with the script's broker options (``support.scriptrunner.broker_options``, as the in-process
    replayer builds its brokers), on the real clock. Its name is unique, as the oracle's embedded ``script<N>``
    (events normalise it away)."""
    return Broker(name=f"mbscript{next(_NAMES)}", **broker_options(cfg))


class ScriptBroker:
    """One script's broker and listener, and the answers about its state."""

    def __init__(self) -> None:
        self.stack = AsyncExitStack()
        self.broker: Broker | None = None

    async def start(self, cfg: dict[str, Any]) -> dict[str, Any]:
        try:
            made = make_broker(cfg)
        except MinibrokerError as exc:  # the options are refused: the oracle records this and runs no ops
            kind = java_type(exc).replace("javax.jms.", "java.lang.")  # as the in-process replayer records it
            error = {"event": "exception", "where": "broker.start", "type": kind, "message": norm(str(exc))}
            return {"startError": error}
        broker = await self.stack.enter_async_context(made)
        server = await self.stack.enter_async_context(await start_openwire_server(broker))
        self.broker = broker
        return {"url": server.url + URL_OPTIONS, "brokerName": broker.name}

    async def stop(self) -> None:
        self.broker = None
        await self.stack.aclose()

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        broker = self.broker
        if broker is None:
            raise RuntimeError(f"no broker started for {request}")
        op = request["op"]
        dest = request.get("dest")
        if op == "stats":
            if request.get("topic"):
                return {"event": stats_event("topic", dest, broker.topic_statistics(dest))}
            view = broker.queue(dest)
            return {"event": stats_event("queue", dest, view.statistics() if view.exists else None)}
        if op == "exists":
            return {"exists": broker.queue(dest).exists}
        if op == "queues":  # not temporary ones (the oracle's destination map walk leaves them out)
            names = [n for n in broker.queue_names() if broker.temporary_owner(Destination.queue(n)) is None]
            return {"event": {"event": "queues", "names": names}}
        if op == "dlq_queues":  # extension (tests/conformance/EXTENSIONS.md): the queues whose names contain DLQ
            return {"event": {"event": "dlq_queues", "names": [n for n in broker.queue_names() if "DLQ" in n]}}
        if op == "temp_exists":
            kind, _, name = dest.partition("://")  # minibroker's temporary destinations are named as the client's
            temp = Destination.queue(name) if kind == "temp-queue" else Destination.topic(name)
            exists = broker.temporary_owner(temp) is not None
            return {"event": {"event": "temp_exists", "temp": request["temp"], "exists": exists}}
        if op == "durable_subs":
            if dest not in broker.topic_names():  # the oracle looks the topic up by name
                return {"event": {"event": "durable_subs", "topic": dest, "exists": False}}
            subs = [
                {"clientId": d.client_id, "name": d.name, "active": d.active, "pending": d.pending}
                for d in sorted(broker.durable_subscriptions(dest), key=lambda d: (d.client_id, d.name))
            ]
            return {"event": {"event": "durable_subs", "topic": dest, "subs": subs}}
        raise RuntimeError(f"unknown request {op!r}")


async def serve_script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One control connection: one script's broker, from ``start`` to ``stop`` (or the connection's end)."""
    script = ScriptBroker()
    try:
        while line := await reader.readline():
            request = json.loads(line)
            try:
                if request["op"] == "start":
                    answer = await script.start(request.get("broker") or {})
                elif request["op"] == "stop":
                    await script.stop()
                    answer = {}
                else:
                    answer = script.answer(request)
            except Exception as exc:  # the Java side records it as the script's error
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            writer.write(json.dumps(answer).encode() + b"\n")
            await writer.drain()
    finally:
        await script.stop()
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


@contextlib.asynccontextmanager
async def control_server() -> Any:
    """The driver's control address (``HOST:PORT``, for ``--minibroker``) while the block runs."""
    server = await asyncio.start_server(serve_script, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()
