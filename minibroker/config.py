"""``broker.toml``: a broker's settings in one file (``minibroker serve --config broker.toml``).

:func:`load_config` reads the file (stdlib ``tomllib``) and :func:`parse_config` checks a parsed document; both return
a :class:`BrokerConfig` whose :meth:`~BrokerConfig.broker_kwargs` are ``Broker(...)`` arguments and whose
:attr:`~BrokerConfig.server` holds the listener's settings. Every mistake is a :class:`ConfigError` naming the
offending key as a dotted path (``destinations."orders.>".memory_limit``). Every table and key is optional::

    [broker]
    name = "minibroker"
    data_dir = "data"                  # persistence (relative to this file); absent: memory only
    store_synchronous = "NORMAL"       # or "FULL": also survive a power failure (an fsync per write)
    scheduler_support = false          # AMQ_SCHEDULED_DELAY; [redelivery] turns it on

    [server]
    host = "127.0.0.1"
    port = 61616                       # the native protocol and ActiveMQ's JMS client (OpenWire)
    stomp_port = 61613                 # absent: no STOMP listener
    ssl_port = 61617                   # absent: no ssl:// listener (needs [tls])
    stomp_ssl_port = 61612             # absent: no stomp+ssl:// listener (needs [tls])
    mqtt_port = 1883                   # absent: no MQTT listener
    openwire_port = 61626              # absent: OpenWire on `port` only (ActiveMQ's JMS client)
    mqtt_ssl_port = 8883               # absent: no mqtt+ssl:// listener (needs [tls])
    http_port = 8161                   # absent: no web console, Jolokia or REST API
    https_port = 8162                  # absent: no https:// listener (needs [tls])
    http_allowed_hosts = ["broker.example.com"]  # the console's names besides localhost, IPs, this machine's
    mqtt_subscription_strategy = "default"   # or "virtual-topic" (ActiveMQ's subscriptionStrategy)
    wait_for_lock = false              # true: a data directory another broker holds is waited for (a slave)
    lock_retry_interval = 10.0         # seconds between a waiting slave's tries (ActiveMQ's lockAcquireSleepInterval)

    [tls]                              # PEM files, relative to this file
    cert = "server.crt"
    key = "server.key"
    ca = "clients-ca.crt"              # checks client certificates
    client_auth = "none"               # or "want", "need" (ActiveMQ's wantClientAuth / needClientAuth)

    [limits]
    max_connections = 1000
    max_frame_size = "64 MiB"          # sizes: bytes, or a string with kB/KiB/MB/MiB/GB/GiB
    handshake_timeout = 30.0           # seconds from accept to HELLO (native) before the socket is closed
    max_transformation_entries = 10000 # map entries a STOMP transformation renders or parses

    [destinations.">"]                 # ActiveMQ policyEntry, keyed by destination wildcards (most specific wins)
    dead_letter_strategy = "individual"
    queue_prefix = "DLQ."
    memory_limit = "1 MiB"             # producer flow control past this many unacked bytes per queue
    send_fail_if_no_space = false      # true: a send to a full queue fails at once (LimitExceeded)
    send_fail_if_no_space_after_timeout = 30.0   # else waits; absent: waits as long as it takes

    [redelivery]                       # the broker redelivery plugin (RedeliveryPolicy fields, in seconds)
    maximum_redeliveries = 3
    initial_redelivery_delay = 5.0
    [redelivery.destinations."orders.>"]
    maximum_redeliveries = 10

    [security]
    anonymous_access_allowed = false
    [users.admin]
    password = "secret"
    groups = ["admins"]
    [[authorization]]                  # absent: every authenticated user may do anything
    destination = ">"
    read = ["admins"]
    write = ["admins"]
    admin = ["admins"]

The ``[destinations]`` keys are :class:`~minibroker.DestinationPolicy` fields, ``[redelivery]`` keys
:class:`~minibroker.client.RedeliveryPolicy` fields plus ``send_to_dlq_if_max_retries_exceeded`` and
``fallback_to_dead_letter``; users and authorization entries are those of :mod:`minibroker.plugins.auth`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from ._core.policy import DestinationPolicy
from ._core.usage import DEFAULT_SYSTEM_MEMORY_LIMIT
from ._core.virtual import DEFAULT_VIRTUAL_TOPICS, VirtualTopics
from ._defaults import (
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_HOST,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_FRAME_SIZE,
    DEFAULT_MAX_TRANSFORMATION_ENTRIES,
    DEFAULT_PORT,
    MIN_FRAME_SIZE,
)
from ._sizes import parse_size
from .errors import InvalidConfiguration, MinibrokerError
from .limits import DEFAULT_CONNECTION_LIMITS, ConnectionLimits
from .redelivery import RedeliveryPolicy
from .tls import TlsSettings

__all__ = ["BrokerConfig", "ConfigError", "ServerConfig", "load_config", "parse_config", "parse_size"]


class ConfigError(InvalidConfiguration):
    """A ``broker.toml`` mistake; ``key`` is the dotted path of the offending key, ``path`` the file (if any)."""

    key: str | None = None
    path: str | None = None
    problem: str | None = None

    def __init__(self, key: str, problem: str, path: str | None = None) -> None:
        where = f"{path}: " if path else ""
        super().__init__(f"{where}{key}: {problem}", key=key, path=path, problem=problem)


@attrs.frozen(slots=True)
class ServerConfig:
    """The TCP listener's settings (``minibroker serve`` options override them)."""

    host: str = DEFAULT_HOST
    #: the native protocol and OpenWire (ActiveMQ's JMS client), told apart by a client's first bytes
    port: int = DEFAULT_PORT
    stomp_port: int | None = None
    ssl_port: int | None = None
    stomp_ssl_port: int | None = None
    mqtt_port: int | None = None
    mqtt_ssl_port: int | None = None
    #: a port of OpenWire alone, ActiveMQ's own protocol (plugins/openwire), besides ``port``, which serves it too
    openwire_port: int | None = None
    #: the web console, Jolokia and the REST message API (plugins/http), plain and over TLS
    http_port: int | None = None
    https_port: int | None = None
    #: the names a request's ``Host`` may give the HTTP listener besides loopback names, IP addresses, this
    #: machine's name and ``host`` (a guard against DNS rebinding; ``"*"``: any)
    http_allowed_hosts: tuple[str, ...] = ()
    #: ActiveMQ's MQTT ``subscriptionStrategy``: "default" or "virtual-topic"
    mqtt_subscription_strategy: str = "default"
    tls: TlsSettings | None = None
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    #: the most map entries a STOMP ``transformation`` renders or parses (plugins/stomp/transformations.py)
    max_transformation_entries: int = DEFAULT_MAX_TRANSFORMATION_ENTRIES
    #: a data directory another broker holds is waited for, as ActiveMQ's shared-storage slave waits (False: refused,
    #: as ActiveMQ's ``failIfLocked``); tried every ``lock_retry_interval`` seconds (``lockAcquireSleepInterval``)
    wait_for_lock: bool = False
    lock_retry_interval: float = 10.0


@attrs.frozen(slots=True)
class BrokerConfig:
    """A checked ``broker.toml``: the broker's settings (:meth:`broker_kwargs`) and its listeners' (``server``)."""

    name: str = "minibroker"
    data_dir: Path | None = None
    store_synchronous: str = "NORMAL"
    scheduler_support: bool = False
    scheduler_time_zone: str = "UTC"
    #: none by default: ``minibroker.testing`` reads the history of an in-process Broker, and nothing outside the
    #: process can read a served broker's (recording it cost a served broker a tenth of its CPU per message)
    history_limit: int = 0
    advisory_support: bool = True
    system_memory_limit: int = DEFAULT_SYSTEM_MEMORY_LIMIT
    policies: Mapping[str, DestinationPolicy] = attrs.field(factory=dict)
    #: consumers and open transactions per connection ([limits])
    connection_limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS
    #: ActiveMQ's default virtual topics unless [virtual_topics] changes them (None: off)
    virtual_topics: VirtualTopics | None = DEFAULT_VIRTUAL_TOPICS
    redelivery: Any = None  # a RedeliveryPlugin, when [redelivery] is given
    auth: Any = None  # an AuthPlugin, when [users] is given
    server: ServerConfig = ServerConfig()

    def plugins(self) -> list[Any]:
        return [p for p in (self.redelivery, self.auth) if p is not None]

    def warnings(self) -> list[str]:
        """What is allowed but probably not meant: a redelivery delay of 1,000 s or more, which looks like ActiveMQ's
        milliseconds given where this file takes seconds (``serve`` prints these at start, ``doctor`` lists them)."""
        found = []
        if self.redelivery is not None:
            map_ = self.redelivery.policies
            entries = [("redelivery", map_.default), *((f'redelivery.destinations."{k}"', v) for k, v in map_.entries)]
            for where, policy in entries:
                for name in ("initial_redelivery_delay", "redelivery_delay", "maximum_redelivery_delay"):
                    value = getattr(policy, name, None) if policy is not None else None
                    if isinstance(value, int | float) and value >= 1000:
                        found.append(
                            f"{where}.{name} = {value:g}: seconds ({value / 3600:.1f} hours); ActiveMQ's "
                            f"redeliveryDelay is in milliseconds: did you mean {value / 1000:g}?"
                        )
        return found

    def broker_kwargs(self) -> dict[str, Any]:
        """Arguments for ``Broker(**config.broker_kwargs(), clock=...)``."""
        kwargs: dict[str, Any] = {
            "name": self.name,
            "policies": dict(self.policies) or None,
            "scheduler_support": self.scheduler_support,
            "scheduler_time_zone": self.scheduler_time_zone,
            "history_limit": self.history_limit,
            "advisory_support": self.advisory_support,
            "system_memory_limit": self.system_memory_limit,
            "plugins": self.plugins(),
            "virtual_topics": self.virtual_topics,
            "connection_limits": self.connection_limits,
        }
        if self.data_dir is not None:
            from .store import SqliteStore

            kwargs["store"] = SqliteStore(self.data_dir, synchronous=self.store_synchronous)
        return kwargs


# -- sizes --------------------------------------------------------------------------------------------------------


# -- checking values ----------------------------------------------------------------------------------------------


def _key(*parts: str) -> str:
    """A dotted TOML path, quoting the parts that are not bare keys."""
    return ".".join(p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else '"' + p.replace('"', '\\"') + '"' for p in parts)


class _Reader:
    def __init__(self, path: str | None) -> None:
        self.path = path

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(key, problem, self.path)

    def table(self, doc: Mapping[str, Any], name: str, *where: str) -> dict[str, Any]:
        value = doc.get(name, {})
        if not isinstance(value, dict):
            raise self.fail(_key(*where, name), f"expected a table, not {type(value).__name__}")
        return value

    def unknown(self, table: Mapping[str, Any], allowed: set[str] | frozenset[str], *where: str) -> None:
        for name in table:
            if name not in allowed:
                snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()  # ActiveMQ's deadLetterStrategy
                if snake != name and snake in allowed:
                    raise self.fail(_key(*where, name), f"unknown key: did you mean `{snake}`?")
                known = ", ".join(sorted(allowed))
                raise self.fail(_key(*where, name), f"unknown key (known keys: {known})")

    def value(self, table: Mapping[str, Any], name: str, kind: str, default: Any, *where: str) -> Any:
        if name not in table:
            return default
        return self.check(table[name], kind, _key(*where, name))

    def check(self, value: Any, kind: str, key: str) -> Any:
        optional = kind.endswith(" | None")
        kind = kind.removesuffix(" | None")
        if kind == "bool":
            if not isinstance(value, bool):
                raise self.fail(key, f"expected true or false, not {value!r}")
            return value
        if kind == "int":
            if not isinstance(value, int) or isinstance(value, bool):
                raise self.fail(key, f"expected an integer, not {value!r}")
            return value
        if kind == "float":
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise self.fail(key, f"expected a number, not {value!r}")
            return float(value)
        if kind == "str":
            if not isinstance(value, str):
                raise self.fail(key, f"expected a string, not {value!r}")
            return value
        if kind == "size":
            try:
                return parse_size(value)
            except ValueError as exc:
                raise self.fail(key, str(exc)) from None
        if kind == "names":
            if not isinstance(value, list) or not all(isinstance(n, str) and n for n in value):
                raise self.fail(key, f"expected a list of names, not {value!r}")
            return value
        if kind == "groups":
            if isinstance(value, str):
                return [g.strip() for g in value.split(",") if g.strip()]
            if not isinstance(value, list) or not all(isinstance(g, str) for g in value):
                raise self.fail(key, f"expected a list of group names, not {value!r}")
            return value
        raise AssertionError(f"unknown kind {kind} (optional={optional})")  # pragma: no cover


def _fields(cls: type, skip: frozenset[str] = frozenset()) -> dict[str, str]:
    """Field name -> kind, from an attrs class's annotations (``int``, ``float | None``...)."""
    kinds = {}
    for field in attrs.fields(cls):
        if field.name in skip:
            continue
        kind = str(field.type)
        kinds[field.name] = kind
    return kinds


_POLICY_FIELDS = _fields(DestinationPolicy) | {"memory_limit": "size"}
_REDELIVERY_FIELDS = _fields(RedeliveryPolicy, frozenset({"destination"}))
_REDELIVERY_PLUGIN_KEYS = {"send_to_dlq_if_max_retries_exceeded", "fallback_to_dead_letter", "destinations"}
_TOP = {
    "broker",
    "server",
    "tls",
    "limits",
    "destinations",
    "virtual_topics",
    "redelivery",
    "security",
    "users",
    "authorization",
}


def _build(
    reader: _Reader, factory: Callable[..., Any], table: Mapping[str, Any], kinds: Mapping[str, str], *where: str
) -> Any:
    reader.unknown(table, set(kinds), *where)
    kwargs = {name: reader.check(value, kinds[name], _key(*where, name)) for name, value in table.items()}
    try:
        return factory(**kwargs)
    except MinibrokerError as exc:
        bad = getattr(exc, "field", None) or getattr(exc, "option", None)
        key = _key(*where, bad) if isinstance(bad, str) and bad in kwargs else _key(*where)
        raise reader.fail(key, exc.message or str(exc)) from None
    except (TypeError, ValueError) as exc:
        raise reader.fail(_key(*where), str(exc)) from None


def _policy(reader: _Reader, pattern: str, table: Mapping[str, Any]) -> DestinationPolicy:
    where = ("destinations", pattern)
    policy: DestinationPolicy = _build(reader, DestinationPolicy, table, _POLICY_FIELDS, *where)
    if policy.dead_letter_strategy not in ("shared", "individual"):
        raise reader.fail(
            _key(*where, "dead_letter_strategy"),
            f'expected "shared" or "individual", not {policy.dead_letter_strategy!r}',
        )
    for name in ("memory_limit", "max_browse_page_size"):
        if getattr(policy, name) < 0:
            raise reader.fail(_key(*where, name), "cannot be negative")
    timeout = policy.send_fail_if_no_space_after_timeout
    if timeout is not None and timeout <= 0:
        raise reader.fail(_key(*where, "send_fail_if_no_space_after_timeout"), "must be > 0 seconds")
    return policy


def parse_config(doc: Mapping[str, Any], *, path: str | os.PathLike[str] | None = None) -> BrokerConfig:
    """Check a parsed ``broker.toml`` (a dict as ``tomllib`` returns) and build its :class:`BrokerConfig`.
    Relative paths (``data_dir``) are relative to ``path``'s directory (the working directory without one)."""
    reader = _Reader(None if path is None else str(path))
    base = Path(path).parent if path is not None else Path.cwd()
    reader.unknown(doc, _TOP)

    broker = reader.table(doc, "broker")
    reader.unknown(
        broker,
        {
            "name",
            "data_dir",
            "store_synchronous",
            "scheduler_support",
            "scheduler_time_zone",
            "history_limit",
            "advisory_support",
            "system_memory_limit",
        },
        "broker",
    )
    time_zone = reader.value(broker, "scheduler_time_zone", "str", "UTC", "broker")
    try:
        from zoneinfo import ZoneInfo

        ZoneInfo(time_zone)
    except Exception:  # ZoneInfoNotFoundError, ValueError: a name zoneinfo cannot find
        raise reader.fail("broker.scheduler_time_zone", f"unknown time zone {time_zone!r}") from None
    name = reader.value(broker, "name", "str", "minibroker", "broker")
    data_dir_text = reader.value(broker, "data_dir", "str", None, "broker")
    data_dir = None if data_dir_text is None else base / Path(data_dir_text).expanduser()
    synchronous = reader.value(broker, "store_synchronous", "str", "NORMAL", "broker").upper()
    if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
        raise reader.fail("broker.store_synchronous", f"expected NORMAL or FULL (or OFF, EXTRA), not {synchronous!r}")
    scheduler_support = reader.value(broker, "scheduler_support", "bool", False, "broker")
    history_limit = reader.value(broker, "history_limit", "int", 0, "broker")
    advisory_support = reader.value(broker, "advisory_support", "bool", True, "broker")
    system_memory_limit = reader.value(broker, "system_memory_limit", "size", DEFAULT_SYSTEM_MEMORY_LIMIT, "broker")
    if history_limit < 0:
        raise reader.fail("broker.history_limit", "cannot be negative")

    server = reader.table(doc, "server")
    reader.unknown(
        server,
        {
            "host",
            "port",
            "stomp_port",
            "ssl_port",
            "stomp_ssl_port",
            "mqtt_port",
            "mqtt_ssl_port",
            "openwire_port",
            "mqtt_subscription_strategy",
            "http_port",
            "https_port",
            "http_allowed_hosts",
            "wait_for_lock",
            "lock_retry_interval",
        },
        "server",
    )
    limits = reader.table(doc, "limits")
    reader.unknown(
        limits,
        {
            "max_connections",
            "max_frame_size",
            "handshake_timeout",
            "idle_timeout",
            "max_consumers_per_connection",
            "max_transactions_per_connection",
            "max_producers_per_connection",
            "max_composite_parts",
            "max_transformation_entries",
        },
        "limits",
    )
    connection_limits = (
        ConnectionLimits(
            max_consumers=reader.value(
                limits, "max_consumers_per_connection", "int", DEFAULT_CONNECTION_LIMITS.max_consumers, "limits"
            ),
            max_transactions=reader.value(
                limits, "max_transactions_per_connection", "int", DEFAULT_CONNECTION_LIMITS.max_transactions, "limits"
            ),
            max_producers=reader.value(
                limits, "max_producers_per_connection", "int", DEFAULT_CONNECTION_LIMITS.max_producers, "limits"
            ),
            max_composite_parts=reader.value(
                limits, "max_composite_parts", "int", DEFAULT_CONNECTION_LIMITS.max_composite_parts, "limits"
            ),
        )
        if _positive(reader, limits)
        else DEFAULT_CONNECTION_LIMITS
    )
    server_config = ServerConfig(
        host=reader.value(server, "host", "str", DEFAULT_HOST, "server"),
        port=reader.value(server, "port", "int", DEFAULT_PORT, "server"),
        stomp_port=reader.value(server, "stomp_port", "int", None, "server"),
        ssl_port=reader.value(server, "ssl_port", "int", None, "server"),
        stomp_ssl_port=reader.value(server, "stomp_ssl_port", "int", None, "server"),
        mqtt_port=reader.value(server, "mqtt_port", "int", None, "server"),
        mqtt_ssl_port=reader.value(server, "mqtt_ssl_port", "int", None, "server"),
        openwire_port=reader.value(server, "openwire_port", "int", None, "server"),
        http_port=reader.value(server, "http_port", "int", None, "server"),
        https_port=reader.value(server, "https_port", "int", None, "server"),
        http_allowed_hosts=tuple(reader.value(server, "http_allowed_hosts", "names", [], "server")),
        mqtt_subscription_strategy=reader.value(server, "mqtt_subscription_strategy", "str", "default", "server"),
        wait_for_lock=reader.value(server, "wait_for_lock", "bool", False, "server"),
        lock_retry_interval=reader.value(server, "lock_retry_interval", "float", 10.0, "server"),
        tls=_tls(reader, doc, base),
        max_connections=reader.value(limits, "max_connections", "int", DEFAULT_MAX_CONNECTIONS, "limits"),
        max_frame_size=reader.value(limits, "max_frame_size", "size", DEFAULT_MAX_FRAME_SIZE, "limits"),
        handshake_timeout=reader.value(limits, "handshake_timeout", "float", DEFAULT_HANDSHAKE_TIMEOUT, "limits"),
        idle_timeout=reader.value(limits, "idle_timeout", "float", DEFAULT_IDLE_TIMEOUT, "limits"),
        max_transformation_entries=reader.value(
            limits, "max_transformation_entries", "int", DEFAULT_MAX_TRANSFORMATION_ENTRIES, "limits"
        ),
    )
    if server_config.idle_timeout < 0:
        raise reader.fail("limits.idle_timeout", f"{server_config.idle_timeout} must be 0 (never) or above")
    if server_config.lock_retry_interval <= 0:
        raise reader.fail("server.lock_retry_interval", f"{server_config.lock_retry_interval} must be above 0")
    if server_config.handshake_timeout <= 0:
        raise reader.fail("limits.handshake_timeout", f"{server_config.handshake_timeout} must be above 0")
    for key, value, low in (
        ("server.port", server_config.port, 0),
        ("server.stomp_port", server_config.stomp_port, 0),
        ("server.ssl_port", server_config.ssl_port, 0),
        ("server.stomp_ssl_port", server_config.stomp_ssl_port, 0),
        ("server.mqtt_port", server_config.mqtt_port, 0),
        ("server.mqtt_ssl_port", server_config.mqtt_ssl_port, 0),
        ("server.openwire_port", server_config.openwire_port, 0),
        ("server.http_port", server_config.http_port, 0),
        ("server.https_port", server_config.https_port, 0),
        ("limits.max_connections", server_config.max_connections, 1),
        ("limits.max_frame_size", server_config.max_frame_size, MIN_FRAME_SIZE),
        ("limits.max_transformation_entries", server_config.max_transformation_entries, 1),
    ):
        if value is not None and not low <= value <= (65535 if "port" in key else 2**31):
            raise reader.fail(key, f"{value} is out of range")

    if server_config.mqtt_subscription_strategy not in ("default", "virtual-topic"):
        raise reader.fail(
            "server.mqtt_subscription_strategy",
            f"expected default or virtual-topic, not {server_config.mqtt_subscription_strategy!r}",
        )
    for key in ("ssl_port", "stomp_ssl_port", "mqtt_ssl_port", "https_port"):
        if getattr(server_config, key) is not None and server_config.tls is None:
            raise reader.fail(f"server.{key}", "a TLS listener needs a [tls] table with cert and key")

    policies: dict[str, DestinationPolicy] = {}
    for pattern, table in reader.table(doc, "destinations").items():
        if not isinstance(table, dict):
            raise reader.fail(_key("destinations", pattern), "expected a table of policy settings")
        policies[pattern] = _policy(reader, pattern, table)
    if policies:
        from .destination_map import DestinationMap

        try:
            DestinationMap(DestinationPolicy(), policies)
        except InvalidConfiguration as exc:
            raise reader.fail(_key("destinations", str(exc.value or "")), exc.message) from None

    redelivery_plugin = None
    redelivery = reader.table(doc, "redelivery")
    if "redelivery" in doc:
        redelivery_plugin = _redelivery(reader, redelivery)
        scheduler_support = True

    auth_plugin = _auth(reader, doc)
    return BrokerConfig(
        connection_limits=connection_limits,
        virtual_topics=_virtual_topics(reader, doc),
        name=name,
        data_dir=data_dir,
        store_synchronous=synchronous,
        scheduler_support=scheduler_support,
        scheduler_time_zone=time_zone,
        history_limit=history_limit,
        advisory_support=advisory_support,
        system_memory_limit=system_memory_limit,
        policies=policies,
        redelivery=redelivery_plugin,
        auth=auth_plugin,
        server=server_config,
    )


def _positive(reader: _Reader, limits: Mapping[str, Any]) -> bool:
    """Checks the per-connection limits are at least 1 (naming the key); True when any is given."""
    given = False
    for key in (
        "max_consumers_per_connection",
        "max_transactions_per_connection",
        "max_producers_per_connection",
        "max_composite_parts",
    ):
        if key in limits:
            given = True
            value = reader.value(limits, key, "int", 1, "limits")
            if value < 1:
                raise reader.fail(f"limits.{key}", f"{value} must be at least 1")
    return given


def _virtual_topics(reader: _Reader, doc: Mapping[str, Any]) -> VirtualTopics | None:
    """ActiveMQ's ``virtualDestinationInterceptor``: on by default with its names, changed or turned off here."""
    table = reader.table(doc, "virtual_topics")
    reader.unknown(table, {"enabled", "name", "prefix"}, "virtual_topics")
    if not reader.value(table, "enabled", "bool", True, "virtual_topics"):
        return None
    name = reader.value(table, "name", "str", DEFAULT_VIRTUAL_TOPICS.name, "virtual_topics")
    prefix = reader.value(table, "prefix", "str", DEFAULT_VIRTUAL_TOPICS.prefix, "virtual_topics")
    try:
        _check_pattern("topic://" + name)
        return VirtualTopics(name, prefix)
    except InvalidConfiguration as exc:
        raise reader.fail(_key("virtual_topics", exc.option or "name"), exc.message or str(exc)) from None


def _tls(reader: _Reader, doc: Mapping[str, Any], base: Path) -> TlsSettings | None:
    if "tls" not in doc:
        return None
    table = reader.table(doc, "tls")
    reader.unknown(table, {"cert", "key", "ca", "client_auth"}, "tls")
    if "cert" not in table:
        raise reader.fail("tls.cert", "missing (the server certificate, PEM)")

    def path(name: str) -> Path | None:
        text = reader.value(table, name, "str", None, "tls")
        return None if text is None else base / Path(text).expanduser()

    try:
        settings = TlsSettings(
            cert=path("cert") or Path(),
            key=path("key"),
            ca=path("ca"),
            client_auth=reader.value(table, "client_auth", "str", "none", "tls"),
        )
    except InvalidConfiguration as exc:
        raise reader.fail(_key("tls", exc.option or "client_auth"), exc.message or str(exc)) from None
    return settings


def _redelivery(reader: _Reader, table: Mapping[str, Any]) -> Any:
    from minibroker.plugins.redelivery import RedeliveryPlugin

    fields = {k: v for k, v in table.items() if k not in _REDELIVERY_PLUGIN_KEYS}
    default = _build(reader, RedeliveryPolicy, fields, _REDELIVERY_FIELDS, "redelivery")
    per_destination = {}
    for pattern, sub in reader.table(table, "destinations", "redelivery").items():
        if not isinstance(sub, dict):
            raise reader.fail(_key("redelivery", "destinations", pattern), "expected a table of policy settings")
        per_destination[pattern] = _build(
            reader, RedeliveryPolicy, sub, _REDELIVERY_FIELDS, "redelivery", "destinations", pattern
        )
    plugin = RedeliveryPlugin(
        default,
        policies=per_destination,
        send_to_dlq_if_max_retries_exceeded=reader.value(
            table, "send_to_dlq_if_max_retries_exceeded", "bool", True, "redelivery"
        ),
        fallback_to_dead_letter=reader.value(table, "fallback_to_dead_letter", "bool", True, "redelivery"),
    )
    for where, policy in [
        (("redelivery",), default),
        *((("redelivery", "destinations", p), pol) for p, pol in per_destination.items()),
    ]:
        for name in ("initial_redelivery_delay", "redelivery_delay"):
            if getattr(policy, name) < 1.0:
                raise reader.fail(
                    _key(*where, name),
                    "the broker redelivery plugin refuses delays under 1 second (as ActiveMQ: 'must exceed: 1000')",
                )
    return plugin


def _auth(reader: _Reader, doc: Mapping[str, Any]) -> Any:
    from minibroker.plugins.auth import AuthorizationEntry, AuthPlugin, User

    security = reader.table(doc, "security")
    reader.unknown(security, {"anonymous_access_allowed"}, "security")
    anonymous = reader.value(security, "anonymous_access_allowed", "bool", False, "security")
    users: dict[str, User] = {}
    for name, table in reader.table(doc, "users").items():
        if not isinstance(table, dict):
            raise reader.fail(_key("users", name), "expected a table with a password (and groups)")
        reader.unknown(table, {"password", "groups"}, "users", name)
        if "password" not in table:
            raise reader.fail(_key("users", name, "password"), "missing")
        users[name] = User(
            reader.value(table, "password", "str", None, "users", name),
            frozenset(reader.value(table, "groups", "groups", [], "users", name)),
        )
    raw_entries = doc.get("authorization")
    entries: list[AuthorizationEntry] | None = None
    if raw_entries is not None:
        if not isinstance(raw_entries, list):
            raise reader.fail("authorization", "expected an array of tables ([[authorization]])")
        entries = []
        for i, table in enumerate(raw_entries):
            where = ("authorization", str(i))
            if not isinstance(table, dict):
                raise reader.fail(_key(*where), "expected a table")
            if "temp" in table:
                raise reader.fail(
                    _key(*where, "temp"),
                    "minibroker has no tempDestinationAuthorizationEntry: a temporary destination is its "
                    "connection's (anyone may send to it), and creating one needs admin on "
                    'topic = "ActiveMQ.Advisory.TempQueue" / "ActiveMQ.Advisory.TempTopic" (config.md)',
                )
            reader.unknown(table, {"destination", "queue", "topic", "read", "write", "admin"}, *where)
            rights = [frozenset(reader.value(table, a, "groups", [], *where)) for a in ("read", "write", "admin")]
            for key, pattern in _entry_patterns(reader, table, where):
                try:
                    _check_pattern(pattern)
                except InvalidConfiguration as exc:
                    raise reader.fail(_key(*where, key), exc.message) from None
                entries.append(AuthorizationEntry(pattern, *rights))
    if not users and not anonymous:
        if entries is not None:
            raise reader.fail("authorization", "authorization entries need [users] (or anonymous_access_allowed)")
        return None
    return AuthPlugin(users, entries, anonymous_access_allowed=anonymous)


def _entry_patterns(reader: _Reader, table: Mapping[str, Any], where: tuple[str, ...]) -> list[tuple[str, str]]:
    """The destination patterns of one ``[[authorization]]`` entry, as (key, pattern): ActiveMQ's split, ``queue``
    and ``topic`` (both in one entry grant both, as ``authorizationEntry queue=">" topic=">"``), or ``destination``
    (plain names are queues; ``topic://`` names topics)."""
    found = []
    for key, prefix in (("destination", ""), ("queue", ""), ("topic", "topic://")):
        pattern = reader.value(table, key, "str", None, *where)
        if pattern is None:
            continue
        if key != "destination" and pattern.startswith(("queue://", "topic://")):
            raise reader.fail(_key(*where, key), f"a name without its domain ({key} = {pattern.split('://', 1)[1]!r})")
        found.append((key, prefix + pattern))
    if not found:
        raise reader.fail(_key(*where, "destination"), 'missing (or queue = "..." and/or topic = "...")')
    return found


def _check_pattern(pattern: str) -> None:
    """Raise InvalidConfiguration unless ``pattern`` is a valid destination wildcard."""
    from .destination_map import DestinationMap

    DestinationMap(None, {pattern: None})


def load_config(path: str | os.PathLike[str]) -> BrokerConfig:
    """Read and check ``broker.toml``; :class:`ConfigError` on a missing file, bad TOML or a bad setting."""
    import tomllib  # here, not at import: a broker started without a config file does not pay for its parser

    p = Path(path)
    try:
        with p.open("rb") as f:
            doc = tomllib.load(f)
    except OSError as exc:
        raise ConfigError("(file)", f"cannot read it: {exc.strerror or exc}", str(p)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("(syntax)", f"not valid TOML: {exc}", str(p)) from None
    return parse_config(doc, path=p)
