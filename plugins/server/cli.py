"""``minibroker``: the command line (``serve``, ``stat``, ``purge``, ``browse``, ``redelivery-plan``, ``doctor``).

A mistake the user can fix (a bad option value, a refused login, a port in use, a broken data directory) ends the
command with one line on stderr, ``minibroker COMMAND: what is wrong``, and exit status 1 (2 for a usage error); the
traceback is printed too under ``--log-level debug``. Anything else is a bug and keeps its traceback.

``minibroker serve`` binds its listening sockets and prints their URLs before it imports the broker (asyncio, attrs
and the broker are most of a launch): a client that connects at once waits in the kernel's backlog and is served as
soon as the event loop runs. So this module imports only what that needs; the rest is imported where it is used.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import socket
import sys

from minibroker._defaults import (
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_HOST,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_FRAME_SIZE,
    DEFAULT_MAX_TRANSFORMATION_ENTRIES,
    DEFAULT_PORT,
    check_limits,
)

from . import admin
from .binding import Listeners, close_all, listen, url_of

TYPE_CHECKING = False  # not typing's: importing typing costs a few ms of every launch
if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Sequence
    from typing import Any, TypeVar

    from minibroker.config import BrokerConfig
    from minibroker.tls import TlsSettings

    T = TypeVar("T")

__all__ = ["build_parser", "main"]

#: where a served broker differs from ``Broker()`` (``BrokerConfig()`` says the same): no delivery history, which
#: ``minibroker.testing`` reads from an in-process broker and nothing outside the process can read
SERVED_HISTORY_LIMIT = 0
#: with the web console on (--http-port), the messages whose histories are kept for its timelines (the config's
#: ``[broker] history_limit`` when it gives one)
CONSOLE_HISTORY_LIMIT = 10_000


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="minibroker", description="An ActiveMQ-faithful broker for tests.")
    parser.add_argument("--version", action=_PrintVersion)
    sub = parser.add_subparsers(dest="command", required=True)
    plan = sub.add_parser(
        "redelivery-plan",
        help="print the redelivery schedule of a policy",
        description="Print attempt, delay, cumulative time and final destination for an ActiveMQ redelivery policy. "
        "Options take ActiveMQ's names and units (milliseconds), e.g. initialRedeliveryDelay=1 is one millisecond.",
    )
    plan.add_argument(
        "options",
        nargs="*",
        metavar="NAME=VALUE",
        help="ActiveMQ RedeliveryPolicy options, e.g. maximumRedeliveries=3 useExponentialBackOff=true",
    )
    plan.add_argument("--dlq", default="ActiveMQ.DLQ", help="dead-letter queue name shown in the last row")
    _log_level_option(plan)
    serve = sub.add_parser(
        "serve",
        help="run a broker that clients reach over TCP",
        description="Run a broker on real time, listening for minibroker clients "
        '(connect("tcp://HOST:PORT")). The first line printed is the URL to connect to. In memory unless '
        "--data-dir (or the config's broker.data_dir) names a directory for persistent messages; then the URL is "
        "printed once its store is open and converted from an older version, and a store that cannot be used (a "
        "newer version, a directory in the database file's place, a file that is not a database or is damaged) is "
        "one line on stderr naming the file, no URL, exit status 1. SIGTERM or SIGINT "
        "stops it cleanly: no new connections, clients disconnected, the store flushed and closed, exit status 0. "
        "Options given here override the --config file.",
    )
    _serve_options(serve)
    doctor = sub.add_parser(
        "doctor",
        help="check that serve can start with these settings, or that the broker at --url answers",
        description="Check, without starting anything, what `minibroker serve` with the same options would need: "
        "the --config file, the limits, the ports free, the data directory usable and its stored messages "
        "readable. With --url, check instead that the broker there answers the login. One line per check (ok or "
        "FAIL); exit status 1 when one failed.",
    )
    _serve_options(doctor)
    doctor.add_argument(
        "--url", default=None, help="check the broker at this URL (reachable, login accepted) instead of the settings"
    )
    _login_options(doctor)
    stat = sub.add_parser(
        "stat",
        help="print the queues of a running broker with their statistics",
        description="Connect to a running broker and print its queues, one row each: size (messages held, in flight "
        "included), in flight (dispatched, not acked), enqueued and dequeued (since the broker started), consumers, "
        "and dlq depth (how many of the queue's messages sit in dead-letter queues, by their original "
        "destination). Then its topics (enqueued: published; dequeued: acked by any subscriber; consumers, offline "
        "durable subscriptions included), its durable subscriptions (client id, topic, whether a subscriber is "
        "active, pending: messages not dispatched yet) and how many messages wait in the scheduler.",
    )
    _client_options(stat)
    purge = sub.add_parser(
        "purge",
        help="remove every message of a queue",
        description="Connect to a running broker and remove every message of QUEUE, in-flight ones included "
        "(nothing is dead-lettered). QUEUE may be a wildcard ('orders.>'; '>' for every queue). Needs the admin "
        "right on each queue when the broker has users.",
    )
    purge.add_argument("queue", metavar="QUEUE", help="the queue to purge")
    _client_options(purge)
    browse = sub.add_parser(
        "browse",
        help="print the messages of a queue without consuming them",
        description="Connect to a running broker and print the messages of QUEUE not yet acked (in-flight ones "
        "included), oldest first, without consuming them: one row per message with its id, priority, delivery "
        "mode, properties and the start of its body. Needs the read right on the queue when the broker has users.",
    )
    browse.add_argument("queue", metavar="QUEUE", help="the queue to browse")
    browse.add_argument("--limit", type=int, default=None, metavar="N", help="print at most N messages")
    _client_options(browse)
    return parser


class _PrintVersion(argparse.Action):
    """``--version``: the installed distribution's version, looked up only when asked (importlib.metadata is not
    cheap, and every launch of ``serve`` would pay for it)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(
            option_strings,
            dest=argparse.SUPPRESS,
            default=argparse.SUPPRESS,
            nargs=0,
            help="print the installed minibroker's version and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        from importlib.metadata import version

        print(f"minibroker {version('minibroker')}")
        parser.exit()


def _serve_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="a broker.toml: destinations, redelivery, limits, users (see the README)",
    )
    parser.add_argument(
        "--data-dir",
        default=None,
        metavar="DIR",
        help="keep persistent messages in DIR (SQLite); restarting on the same DIR brings back every "
        "unacked persistent message",
    )
    parser.add_argument(
        "--wait-for-lock",
        action="store_true",
        default=None,
        help="when another broker holds --data-dir, wait for it as ActiveMQ's shared-storage slave does (no port "
        "is bound, no URL printed until the lock is ours: the master stopped) instead of refusing to start",
    )
    parser.add_argument(
        "--lock-retry-interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how often a waiting slave tries the lock (default: 10, ActiveMQ's lockAcquireSleepInterval)",
    )
    parser.add_argument("--host", default=None, help=f"address to listen on (default: {DEFAULT_HOST})")
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help="port of the native protocol and of ActiveMQ's JMS client (OpenWire), told apart by each client's first "
        f"bytes; 0 picks a free one (default: {DEFAULT_PORT}, as ActiveMQ's)",
    )
    _log_level_option(parser)
    parser.add_argument(
        "--max-frame-size",
        type=_size,
        default=None,
        metavar="SIZE",
        help=f"largest frame (of any protocol) accepted from a client (default: {DEFAULT_MAX_FRAME_SIZE // 2**20} MiB)",
    )
    parser.add_argument(
        "--stomp-port",
        type=int,
        default=None,
        metavar="PORT",
        help="also serve STOMP 1.0-1.2 on this port (0 picks a free one; its URL is printed on the second line)",
    )
    parser.add_argument(
        "--mqtt-port",
        type=int,
        default=None,
        metavar="PORT",
        help="also serve MQTT 3.1/3.1.1 on this port, mapped as ActiveMQ maps it (0 picks a free one)",
    )
    parser.add_argument(
        "--mqtt-ssl-port",
        type=int,
        default=None,
        metavar="PORT",
        help="also serve MQTT over TLS (mqtt+ssl://) on this port (needs --tls-cert)",
    )
    parser.add_argument(
        "--openwire-port",
        type=int,
        default=None,
        metavar="PORT",
        help="also serve OpenWire, ActiveMQ's own protocol, alone on this port (0 picks a free one; tcp://HOST:PORT in "
        "the JMS client's URL). Not needed for ActiveMQ's JMS client: --port (61616, as ActiveMQ) and --ssl-port "
        "serve it beside the native protocol, told apart by each client's first bytes",
    )
    parser.add_argument(
        "--http-port",
        type=int,
        default=None,
        metavar="PORT",
        help="also serve the web console (/), Jolokia (/api/jolokia) and the REST message API (/api/message) on "
        "this port, as ActiveMQ's web module does on 8161 (0 picks a free one); off unless given. Requests log in "
        "with HTTP basic authentication as the broker's users; the broker then keeps the last "
        f"{CONSOLE_HISTORY_LIMIT:,} messages' histories for the console's timelines",
    )
    parser.add_argument(
        "--http-allowed-host",
        action="append",
        default=None,
        metavar="NAME",
        dest="http_allowed_hosts",
        help="a name the web console may be reached by besides localhost, IP addresses and this machine's name "
        "(the Host header is checked against DNS rebinding; repeat it for several, '*' for any)",
    )
    parser.add_argument(
        "--https-port",
        type=int,
        default=None,
        metavar="PORT",
        help="the same over TLS (https://); needs --tls-cert",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=None,
        metavar="N",
        help=f"client connections accepted at once (default: {DEFAULT_MAX_CONNECTIONS})",
    )
    parser.add_argument(
        "--ssl-port",
        type=int,
        default=None,
        metavar="PORT",
        help="also serve the native protocol and OpenWire over TLS (ssl://; ActiveMQ uses 61617); needs --tls-cert",
    )
    parser.add_argument(
        "--stomp-ssl-port",
        type=int,
        default=None,
        metavar="PORT",
        help="also serve STOMP over TLS (stomp+ssl://; ActiveMQ uses 61612); needs --tls-cert",
    )
    parser.add_argument("--tls-cert", default=None, metavar="FILE", help="the server certificate chain (PEM)")
    parser.add_argument(
        "--tls-key", default=None, metavar="FILE", help="the server's private key (PEM; default: in --tls-cert)"
    )
    parser.add_argument(
        "--tls-ca",
        default=None,
        metavar="FILE",
        help="CA certificates (PEM) that client certificates are checked against",
    )
    parser.add_argument(
        "--tls-client-auth",
        choices=("none", "want", "need"),
        default=None,
        help="ask TLS clients for a certificate: need (ActiveMQ's needClientAuth), want, or none (default)",
    )


def _log_level_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level",
        default="warning",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        help="logging level (default: warning); debug also prints the traceback of an error",
    )


def _client_options(parser: argparse.ArgumentParser) -> None:
    url = f"tcp://{DEFAULT_HOST}:{DEFAULT_PORT}"
    parser.add_argument("--url", default=url, help=f"the broker to ask (default: {url})")
    _login_options(parser)
    _log_level_option(parser)


def _login_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--user",
        default=os.environ.get("MINIBROKER_USER"),
        help="user name, when the broker has users (default: $MINIBROKER_USER)",
    )
    parser.add_argument(
        "--password",
        default=os.environ.get("MINIBROKER_PASSWORD"),
        help="password (default: $MINIBROKER_PASSWORD, which keeps it out of the process list)",
    )


class ServeSettings:
    """What ``serve`` runs with (and ``doctor`` checks): the --config file's values, each overridden by its option
    when given. A plain class (attrs is not imported yet on the launch path of ``serve``)."""

    __slots__ = (
        "config",
        "data_dir",
        "host",
        "http_port",
        "https_port",
        "lock_retry_interval",
        "max_connections",
        "max_frame_size",
        "mqtt_port",
        "mqtt_ssl_port",
        "openwire_port",
        "port",
        "ssl_port",
        "stomp_port",
        "stomp_ssl_port",
        "tls",
        "wait_for_lock",
    )

    def __init__(self, args: argparse.Namespace) -> None:
        config: BrokerConfig | None = None
        if args.config is not None:  # host and port can come from the file: read it first
            from minibroker.config import load_config

            config = load_config(args.config)
        self.config = config
        if config is not None:
            c = config.server
            host, port, stomp_port, max_frame_size, max_connections = (
                c.host,
                c.port,
                c.stomp_port,
                c.max_frame_size,
                c.max_connections,
            )
        else:
            host, port, stomp_port, max_frame_size, max_connections = (
                DEFAULT_HOST,
                DEFAULT_PORT,
                None,
                DEFAULT_MAX_FRAME_SIZE,
                DEFAULT_MAX_CONNECTIONS,
            )
        self.host: str = args.host if args.host is not None else host
        self.port: int = args.port if args.port is not None else port
        self.stomp_port: int | None = args.stomp_port if args.stomp_port is not None else stomp_port
        # 0 is a value like any other (refused by check_limits), not "the default"
        self.max_frame_size: int = args.max_frame_size if args.max_frame_size is not None else max_frame_size
        self.max_connections: int = args.max_connections if args.max_connections is not None else max_connections
        self.data_dir: str | os.PathLike[str] | None = (
            args.data_dir if args.data_dir is not None else config.data_dir if config is not None else None
        )
        server = config.server if config is not None else None
        self.ssl_port: int | None = _given(args.ssl_port, server.ssl_port if server is not None else None)
        self.stomp_ssl_port: int | None = _given(
            args.stomp_ssl_port, server.stomp_ssl_port if server is not None else None
        )
        self.mqtt_port: int | None = _given(args.mqtt_port, server.mqtt_port if server is not None else None)
        self.openwire_port: int | None = _given(
            args.openwire_port, server.openwire_port if server is not None else None
        )
        self.mqtt_ssl_port: int | None = _given(
            args.mqtt_ssl_port, server.mqtt_ssl_port if server is not None else None
        )
        self.http_port: int | None = _given(args.http_port, server.http_port if server is not None else None)
        self.https_port: int | None = _given(args.https_port, server.https_port if server is not None else None)
        self.tls: TlsSettings | None = _tls_settings(args, server.tls if server is not None else None)
        self.wait_for_lock: bool = args.wait_for_lock or (server is not None and server.wait_for_lock)
        self.lock_retry_interval: float = _given_float(
            args.lock_retry_interval, server.lock_retry_interval if server is not None else 10.0
        )
        if self.lock_retry_interval <= 0:
            raise _UsageProblem(f"--lock-retry-interval {self.lock_retry_interval} must be above 0")
        if self.tls is None and any(p is not None for p in (self.ssl_port, self.stomp_ssl_port, self.mqtt_ssl_port)):
            raise _UsageProblem(
                "--ssl-port, --stomp-ssl-port and --mqtt-ssl-port need --tls-cert (or a [tls] table in the config)"
            )
        if self.tls is None and self.https_port is not None:
            raise _UsageProblem("--https-port needs --tls-cert (or a [tls] table in the config)")


class _UsageProblem(ValueError):
    """A combination of options that cannot work (reported as one line, exit status 2)."""


def _given(option: int | None, configured: int | None) -> int | None:
    return option if option is not None else configured


def _given_float(option: float | None, configured: float) -> float:
    return option if option is not None else configured


def _tls_settings(args: argparse.Namespace, configured: TlsSettings | None) -> TlsSettings | None:
    """The config's [tls] table with each --tls-* option that was given put over it."""
    if args.tls_cert is None and configured is None:
        if args.tls_key is not None or args.tls_ca is not None or args.tls_client_auth is not None:
            raise _UsageProblem("--tls-key, --tls-ca and --tls-client-auth need --tls-cert")
        return None
    from pathlib import Path

    from minibroker.tls import TlsSettings

    base = configured or TlsSettings(cert=Path(args.tls_cert))
    return TlsSettings(
        cert=Path(args.tls_cert) if args.tls_cert is not None else base.cert,
        key=Path(args.tls_key) if args.tls_key is not None else base.key,
        ca=Path(args.tls_ca) if args.tls_ca is not None else base.ca,
        client_auth=args.tls_client_auth if args.tls_client_auth is not None else base.client_auth,
    )


def _serve_main(args: argparse.Namespace) -> int:
    """``minibroker serve``: check the settings, bind, print the URLs, and only then import and start the broker.
    With a data directory the URLs come once the store is open, converted and loaded: a store that cannot be used is
    one line and no URL, and no client connects to a broker that will not start."""
    settings = ServeSettings(args)
    config, host = settings.config, settings.host
    max_frame_size, max_connections = settings.max_frame_size, settings.max_connections
    if settings.data_dir is not None and settings.wait_for_lock:  # a slave binds nothing before the lock is free
        from minibroker._data_dir_lock import wait_for_data_dir

        try:
            wait_for_data_dir(settings.data_dir, settings.lock_retry_interval, _say_waiting)
        except KeyboardInterrupt:
            return 0
    try:
        check_limits(max_frame_size, max_connections)
        socks = listen(host, settings.port)
    except (OSError, ValueError) as exc:
        return _error(args, f"minibroker serve: {exc}", exc)
    #: scheme -> the sockets of that extra listener, in the order their URLs are printed
    extra: dict[str, list[socket.socket]] = {}
    for scheme, port in (
        ("stomp", settings.stomp_port),
        ("ssl", settings.ssl_port),
        ("stomp+ssl", settings.stomp_ssl_port),
        ("mqtt", settings.mqtt_port),
        ("mqtt+ssl", settings.mqtt_ssl_port),
        ("openwire", settings.openwire_port),
        ("http", settings.http_port),
        ("https", settings.https_port),
    ):
        if port is None:
            continue
        try:
            extra[scheme] = listen(host, port)
        except (OSError, ValueError) as exc:
            close_all(socks + [s for group in extra.values() for s in group])
            return _error(args, f"minibroker serve: {scheme.upper()}: {exc}", exc)
    bound = socks + [s for group in extra.values() for s in group]
    # TLS files that cannot be used and a data directory the store could not open fail here, before a URL is
    # printed (after binding: a port in use leaves no directory behind)
    tls_context = None
    if settings.tls is not None and any(s in extra for s in ("ssl", "stomp+ssl", "mqtt+ssl", "https")):
        from minibroker.errors import InvalidConfiguration
        from minibroker.tls import server_context

        try:
            tls_context = server_context(settings.tls)
        except InvalidConfiguration as exc:
            close_all(bound)
            return _error(args, f"minibroker serve: {exc}", exc)
    for warning in config.warnings() if config is not None else ():  # allowed, probably not meant: said at start
        print(f"minibroker serve: warning: {warning}", file=sys.stderr)
    if settings.data_dir is not None:
        from minibroker._data_dir_lock import data_dir_problem

        problem = data_dir_problem(settings.data_dir)
        if problem is not None:
            close_all(bound)
            return _error(args, f"minibroker serve: {problem}")
    # SIGTERM or SIGINT from now on (while the broker is imported and started) is a clean stop once it runs
    requested: list[int] = []
    previous = {
        sig: signal.signal(sig, lambda signum, frame: requested.append(signum))
        for sig in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        urls = [url_of("tcp", socks[0])] + [url_of(scheme, group[0]) for scheme, group in extra.items()]
        if settings.data_dir is None:  # nothing to open first: clients connect (into the backlog) while it starts
            _announce(urls)
            urls = []
        # Starting makes modules, classes and functions that live as long as the process: the cyclic collector's
        # full collections over them found nothing and cost 4% of the launch (issue 45). It is off until the
        # collector policy freezes what starting made (_serve), and on again here however serve ends.
        gc.disable()
        import asyncio
        import logging

        logging.basicConfig(
            level=args.log_level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
        listeners = Listeners(socks, extra, tls_context, max_frame_size, max_connections)
        return asyncio.run(_serve(args, config, listeners, requested, urls))
    finally:
        gc.enable()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _say_waiting(line: str) -> None:
    print(f"minibroker serve: {line}", file=sys.stderr, flush=True)


def _announce(urls: list[str]) -> None:
    for url in urls:
        print(url, flush=True)


async def _serve(
    args: argparse.Namespace,
    config: BrokerConfig | None,
    listeners: Listeners,
    requested: list[int],
    urls: list[str],
) -> int:
    """Start a broker and serve on the listening sockets until SIGTERM or SIGINT (or at once if one came already).
    ``urls`` are printed once the broker is built (its store opened, converted and loaded)."""
    import asyncio
    import logging

    from minibroker import Broker, RealClock
    from minibroker.errors import MinibrokerError

    from .tcp import start_server

    console = "http" in listeners.extra or "https" in listeners.extra
    try:
        if config is None:  # BrokerConfig()'s settings: no need to import minibroker.config
            history = CONSOLE_HISTORY_LIMIT if console else SERVED_HISTORY_LIMIT
            broker = Broker(clock=RealClock(), data_dir=args.data_dir, history_limit=history)
        else:
            from pathlib import Path

            import attrs

            if args.data_dir is not None:
                config = attrs.evolve(config, data_dir=Path(args.data_dir))
            kwargs = config.broker_kwargs()
            if console and not kwargs.get("history_limit"):
                kwargs["history_limit"] = CONSOLE_HISTORY_LIMIT
            broker = Broker(clock=RealClock(), **kwargs)
    except MinibrokerError as exc:
        close_all(listeners.all())
        return _error(args, f"minibroker serve: {exc}", exc)
    _announce(urls)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    async with broker:
        handshake_timeout = config.server.handshake_timeout if config is not None else DEFAULT_HANDSHAKE_TIMEOUT
        idle_timeout = config.server.idle_timeout if config is not None else DEFAULT_IDLE_TIMEOUT
        servers: list[Any] = []
        for socks, context in ((listeners.socks, None), (listeners.extra.get("ssl"), listeners.tls_context)):
            if socks:
                server = await start_server(
                    broker,
                    sock=socks,
                    max_frame_size=listeners.max_frame_size,
                    max_connections=listeners.max_connections,
                    handshake_timeout=handshake_timeout,
                    idle_timeout=idle_timeout,
                    ssl=context,
                    openwire=True,  # ActiveMQ's JMS client on the same port, as on ActiveMQ's 61616 (issue 44)
                )
                servers.append(server)
        for scheme in ("stomp", "stomp+ssl"):
            if scheme in listeners.extra:
                from minibroker.plugins.stomp import start_stomp_server

                servers.append(
                    await start_stomp_server(
                        broker,
                        sock=listeners.extra[scheme],
                        max_connections=listeners.max_connections,
                        connect_timeout=handshake_timeout,
                        ssl=listeners.tls_context if scheme == "stomp+ssl" else None,
                        # --max-frame-size bounds STOMP frames as the native ones (it did not reach them)
                        max_frame_size=listeners.max_frame_size,
                        max_transformation_entries=(
                            DEFAULT_MAX_TRANSFORMATION_ENTRIES
                            if config is None
                            else config.server.max_transformation_entries
                        ),
                    )
                )
        for scheme in ("mqtt", "mqtt+ssl"):
            if scheme in listeners.extra:
                from minibroker.plugins.mqtt import start_mqtt_server

                servers.append(
                    await start_mqtt_server(
                        broker,
                        sock=listeners.extra[scheme],
                        # --max-frame-size bounds every protocol's frames, MQTT's packets too (issue 31)
                        max_packet_size=listeners.max_frame_size,
                        max_connections=listeners.max_connections,
                        connect_timeout=handshake_timeout,
                        ssl=listeners.tls_context if scheme == "mqtt+ssl" else None,
                        subscription_strategy=(
                            config.server.mqtt_subscription_strategy if config is not None else "default"
                        ),
                    )
                )
        if "openwire" in listeners.extra:
            from minibroker.plugins.openwire import start_openwire_server

            servers.append(
                await start_openwire_server(
                    broker,
                    sock=listeners.extra["openwire"],
                    max_frame_size=listeners.max_frame_size,
                    max_connections=listeners.max_connections,
                    connect_timeout=handshake_timeout,
                )
            )
        for scheme in ("http", "https"):
            if scheme in listeners.extra:
                from minibroker.plugins.http import start_http_server

                servers.append(
                    await start_http_server(
                        broker,
                        sock=listeners.extra[scheme],
                        max_connections=listeners.max_connections,
                        handshake_timeout=handshake_timeout,
                        idle_timeout=idle_timeout,
                        # --max-frame-size bounds a request's body as every protocol's frames
                        max_body_size=listeners.max_frame_size,
                        # the option's names, else the config's (a guard against DNS rebinding: plugins/http)
                        allowed_hosts=tuple(args.http_allowed_hosts or ())
                        or (config.server.http_allowed_hosts if config is not None else ()),
                        ssl=listeners.tls_context if scheme == "https" else None,
                    )
                )
        from .collector import GenerationalFreeze

        collector = GenerationalFreeze()  # full collections that walk what is new, not every queued message
        collector.install()
        gc.enable()  # off while starting (_serve_main); what starting made is frozen now
        signals = (signal.SIGTERM, signal.SIGINT)
        for sig in signals:
            loop.add_signal_handler(sig, stop.set)
        if requested:  # a signal came while the broker was being imported or started
            stop.set()
        try:
            await stop.wait()
            logging.getLogger("minibroker.server").info("stopping")
        finally:
            collector.remove()
            for sig in signals:
                loop.remove_signal_handler(sig)
            for running in reversed(servers):
                await running.close()
    return 0


def _redelivery_plan(args: argparse.Namespace) -> int:
    from minibroker.redelivery import RedeliveryPolicy, format_plan

    options: dict[str, object] = {}
    for item in args.options:
        name, sep, value = item.partition("=")
        if not sep:
            print(f"minibroker redelivery-plan: expected NAME=VALUE, got {item!r}", file=sys.stderr)
            return 2
        options[name] = value
    policy = RedeliveryPolicy.from_activemq(options)
    print(format_plan(policy.explain(dead_letter_queue=args.dlq)))
    return 0


def _run_client(
    command: Callable[[argparse.Namespace], Coroutine[Any, Any, int]],
) -> Callable[[argparse.Namespace], int]:
    """A command that asks a running broker, run on its own event loop (logging set up as ``--log-level`` says)."""

    def run(args: argparse.Namespace) -> int:
        import asyncio
        import logging

        logging.basicConfig(
            level=args.log_level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
        return asyncio.run(command(args))

    return run


def _doctor(args: argparse.Namespace) -> int:
    from .doctor import doctor_main

    return doctor_main(args)


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "redelivery-plan": _redelivery_plan,
    "serve": _serve_main,
    "stat": _run_client(admin.stat),
    "purge": _run_client(admin.purge),
    "browse": _run_client(admin.browse),
    "doctor": _doctor,
}

#: added to a login refusal when no user was given: the broker has users, and the command has options for them
USER_HINT = "(this broker has users: give --user and --password, or set $MINIBROKER_USER and $MINIBROKER_PASSWORD)"


def _describe(args: argparse.Namespace, exc: BaseException) -> str | None:
    """The one line that tells the user what went wrong, or None for an exception that is a bug (not the user's
    doing: its traceback is worth more than a line)."""
    from minibroker.errors import AccessDenied, MinibrokerError

    if not isinstance(exc, MinibrokerError | OSError | ValueError):
        return None
    line = f"minibroker {args.command}: {exc}"
    if isinstance(exc, AccessDenied) and "user" in args and args.user is None:
        line = f"{line} {USER_HINT}"
    return line


def _size(text: str) -> int:
    """A size on the command line as in broker.toml: ``4194304``, ``"4 MiB"``, ``"512kb"``."""
    from minibroker._sizes import parse_size

    try:
        return parse_size(int(text) if text.strip().isdigit() else text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    arguments = sys.argv[1:] if argv is None else argv
    if not arguments:  # bare ``minibroker``: what it can do, not an error
        parser.print_help()
        return 0
    args, unknown = parser.parse_known_args(arguments)
    if unknown:  # say it with the subcommand's usage, which lists the options that subcommand knows
        subcommand = _subparsers(parser).get(args.command, parser)
        subcommand.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        status = _COMMANDS[args.command](args)
        sys.stdout.flush()  # a reader that left shows here, not in the flush at exit
        return status
    except KeyboardInterrupt:  # Ctrl-C on a command waiting for a broker: the user knows why it stopped
        return 130
    except BrokenPipeError:  # `minibroker stat | head`: the reader left; end quietly (and flush nothing more) as cat
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool the pipe ended
    except Exception as exc:
        line = _describe(args, exc)
        if line is None:
            raise
        return _error(args, line, exc)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _error(args: argparse.Namespace, line: str, exc: BaseException | None = None) -> int:
    """Print ``line`` on stderr (after ``exc``'s traceback under ``--log-level debug``); the exit status, 1."""
    if exc is not None and args.log_level == "DEBUG":
        import traceback

        traceback.print_exception(exc)
    print(line, file=sys.stderr)
    return 1
