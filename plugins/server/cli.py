"""``minibroker``: the command line (``serve``, ``redelivery-plan``, ...)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence

from minibroker.redelivery import RedeliveryPolicy, format_plan

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="minibroker", description="An ActiveMQ-faithful broker for tests.")
    sub = parser.add_subparsers(dest="command", required=True)
    plan = sub.add_parser(
        "redelivery-plan",
        help="print the redelivery schedule of a policy",
        description="Print attempt, delay, cumulative time and final destination for an ActiveMQ redelivery policy. "
        "Options take ActiveMQ's names and units (milliseconds), e.g. initialRedeliveryDelay=1 is one millisecond.",
    )
    plan.add_argument("options", nargs="*", metavar="NAME=VALUE",
                      help="ActiveMQ RedeliveryPolicy options, e.g. maximumRedeliveries=3 useExponentialBackOff=true")
    plan.add_argument("--dlq", default="ActiveMQ.DLQ", help="dead-letter queue name shown in the last row")
    serve = sub.add_parser(
        "serve",
        help="run a broker (in memory) that clients reach over TCP",
        description="Run an in-memory broker on real time, listening for minibroker clients "
        "(connect(\"tcp://HOST:PORT\")). The first line printed is the URL to connect to. SIGTERM or SIGINT stops "
        "it cleanly: no new connections, clients disconnected, exit status 0.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=61616, help="port to listen on; 0 picks a free one (default: 61616)")
    serve.add_argument("--log-level", default="warning", type=str.upper,
                       choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
                       help="logging level (default: warning)")
    serve.add_argument("--max-frame-size", type=int, default=None, metavar="BYTES",
                       help="largest frame accepted from a client (default: 64 MiB)")
    serve.add_argument("--stomp-port", type=int, default=None, metavar="PORT",
                       help="also serve STOMP 1.0-1.2 on this port (0 picks a free one; its URL is printed on the "
                            "second line)")
    serve.add_argument("--max-connections", type=int, default=None, metavar="N",
                       help="client connections accepted at once (default: 1000)")
    stat = sub.add_parser(
        "stat",
        help="print the queues of a running broker with their statistics",
        description="Connect to a running broker and print one row per queue: messages held (size), in flight, "
        "enqueued, dequeued and consumers.",
    )
    stat.add_argument("--url", default="tcp://127.0.0.1:61616",
                      help="the broker to ask (default: tcp://127.0.0.1:61616)")
    return parser


async def _serve(args: argparse.Namespace) -> int:
    from minibroker import Broker, RealClock

    from .tcp import DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_FRAME_SIZE, start_server

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    async with Broker(clock=RealClock()) as broker:
        try:
            server = await start_server(
                broker, args.host, args.port,
                max_frame_size=args.max_frame_size or DEFAULT_MAX_FRAME_SIZE,
                max_connections=args.max_connections or DEFAULT_MAX_CONNECTIONS,
            )
        except (OSError, ValueError) as exc:
            print(f"minibroker serve: {exc}", file=sys.stderr)
            return 1
        stomp = None
        if args.stomp_port is not None:
            from minibroker.plugins.stomp import start_stomp_server

            try:
                stomp = await start_stomp_server(broker, args.host, args.stomp_port)
            except OSError as exc:
                await server.close()
                print(f"minibroker serve: STOMP: {exc}", file=sys.stderr)
                return 1
        signals = (signal.SIGTERM, signal.SIGINT)
        for sig in signals:
            loop.add_signal_handler(sig, stop.set)
        try:
            print(server.url, flush=True)
            if stomp is not None:
                print(stomp.url, flush=True)
            await stop.wait()
            logging.getLogger("minibroker.server").info("stopping")
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)
            if stomp is not None:
                await stomp.close()
            await server.close()
    return 0


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns sized to their widest cell; the first column left-aligned, numbers right-aligned."""
    cells = [list(map(str, header)), *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for row in cells:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths,
                                                                                                   strict=True))))
    return "\n".join(lines)


async def _stat(url: str) -> int:
    from minibroker.errors import MinibrokerError
    from minibroker.transport.tcp import TcpLink

    try:
        link = await TcpLink.open_url(url)
        await link.open(None)
        try:
            queues = await link.list_queues()
        finally:
            await link.close(-1)
    except MinibrokerError as exc:
        print(f"minibroker stat: {exc}", file=sys.stderr)
        return 1
    rows = [(q.name, q.size, q.inflight, q.enqueued, q.dequeued, q.consumers) for q in queues]
    print(format_table(("queue", "size", "in flight", "enqueued", "dequeued", "consumers"), rows))
    if not rows:
        print("(no queues)")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "redelivery-plan":
        options: dict[str, object] = {}
        for item in args.options:
            name, sep, value = item.partition("=")
            if not sep:
                print(f"minibroker: expected NAME=VALUE, got {item!r}", file=sys.stderr)
                return 2
            options[name] = value
        policy = RedeliveryPolicy.from_activemq(options)
        print(format_plan(policy.explain(dead_letter_queue=args.dlq)))
        return 0
    if args.command == "serve":
        logging.basicConfig(level=args.log_level, stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        return asyncio.run(_serve(args))
    if args.command == "stat":
        return asyncio.run(_stat(args.url))
    return 2  # pragma: no cover - argparse enforces the choices
