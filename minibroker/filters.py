"""Broker plugins as a declared chain of filters, as ActiveMQ's ``BrokerFilter`` chain.

A plugin that changes what the broker does subclasses :class:`BrokerFilter` and overrides some of its hooks
(``on_connect``, ``on_send``, ``on_dead_letter``, ...; :data:`HOOKS` lists them). ``Broker(plugins=[a, b])`` chains
them outermost first: a call enters ``a``'s hook, which passes it on with ``self.next.on_xxx(...)`` to ``b``'s, and
the last filter passes it to the broker itself. A filter refuses by raising (a typed
:class:`~minibroker.errors.MinibrokerError`, before passing on, so nothing is half done), or takes a call over by
not passing it on. Two plugins therefore compose instead of replacing each other, as two assignments to one
attribute did.

Why the set of hooks is closed: a method named ``on_sned`` would otherwise be a hook nobody calls. Every ``on_*``
method of a filter's class must name a hook, or installing it raises
:class:`~minibroker.errors.InvalidConfiguration` (with ``hook`` and ``plugin``). The broker calls only the hooks
some filter overrides: a chain that ignores sends costs a send nothing.

The public plugin interface is this module, :class:`minibroker.Broker`'s public methods, and the data types of
:mod:`minibroker` (``Message``, ``Destination``, ``ConsumerInfo``, ``MessageAck``, ``Dispatch``); the public
transport interface is :class:`minibroker.transport.base.BrokerLink` (and :class:`minibroker.MemoryLink`, from
``Broker.link()``). Nothing else under ``minibroker._*`` is promised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import attrs

from ._core.commands import ConsumerInfo, MessageAck
from ._core.effects import Dispatch
from .errors import FilterValidationError, InvalidConfiguration
from .message import Destination, Message

if TYPE_CHECKING:
    from ._driver.broker import Broker

__all__ = ["HOOKS", "BrokerFilter", "BrokerPlugin", "ConnectionContext", "DeadLetterRequest", "hooks_of"]

#: the hooks a filter may override, as ``on_<hook>``
HOOKS = frozenset(
    {
        "connect",
        "disconnect",
        "authorize",
        "subscribe",
        "send",
        "dispatch",
        "ack",
        "commit",
        "rollback",
        "dead_letter",
    }
)


class BrokerPlugin(Protocol):
    """An extension that only needs the broker, not a place in the chain (it starts a server, say): installed when
    the broker is created, and again after each ``restart()`` (as ActiveMQ's ``BrokerPlugin.installPlugin``)."""

    def install(self, broker: Broker) -> None: ...


@attrs.define(slots=True)
class ConnectionContext:
    """One connection as the filters see it (ActiveMQ's ``ConnectionContext``): ``on_connect`` may set
    ``principal`` (who the connection is); the broker fills ``connection_id`` when the connection is open."""

    client_id: str | None
    user: str | None = None
    password: str | None = attrs.field(default=None, repr=False)
    #: a remote connection (TCP, STOMP) rather than an in-process one
    remote: bool = False
    connection_id: int = 0
    principal: object | None = None
    #: the edge it came through, as the console shows it ("native", "STOMP", "MQTT", "HTTP"; None: in process),
    #: and the client's address (``tcp://host:port``): set by the edge once the connection is open
    protocol: str | None = None
    remote_address: str | None = None


@attrs.frozen(slots=True)
class DeadLetterRequest:
    """A message the broker is about to dead-letter (poisoned, or expired): ``on_dead_letter`` returns True when
    it took the message (rescheduled, dropped), False to let the broker dead-letter it."""

    message: Message
    cause: str | None
    source: Destination
    expired: bool
    redelivery_counter: int


class BrokerFilter:
    """A link of the chain whose every hook passes the call to the next one; subclass and override some.

    ``broker`` and ``next`` are set when the broker installs the chain (:meth:`attach`); ``on_attach`` runs then,
    so a filter can refuse a broker it cannot work with.
    """

    broker: Broker
    next: BrokerFilter

    def attach(self, broker: Broker, next_filter: BrokerFilter) -> None:
        """Take this filter's place in ``broker``'s chain; one filter serves one running broker at a time."""
        current = getattr(self, "broker", None)
        if current is not None and current is not broker and current.running:
            raise InvalidConfiguration(
                f"{type(self).__name__} is already installed in a running broker; give each broker its own instance",
                plugin=type(self).__name__,
            )
        self.on_attach(broker)
        self.broker = broker
        self.next = next_filter

    def on_attach(self, broker: Broker) -> None:
        """Called once per broker, when the chain is built (not a hook: it does not pass on)."""

    def on_connect(self, context: ConnectionContext) -> None:
        self.next.on_connect(context)

    def on_disconnect(self, context: ConnectionContext, last_delivered_seq: int | None) -> None:
        """``last_delivered_seq`` None: the transport failed (what the connection held comes back redelivered)."""
        self.next.on_disconnect(context, last_delivered_seq)

    def on_authorize(self, context: ConnectionContext, action: str, destination: Destination) -> None:
        """Raise :class:`~minibroker.errors.AccessDenied` unless the connection may do ``action`` ("read",
        "write", "admin") on ``destination``; browsing, statistics, purges and batch publishes come here."""
        self.next.on_authorize(context, action, destination)

    def on_subscribe(self, context: ConnectionContext, info: ConsumerInfo) -> int:
        return self.next.on_subscribe(context, info)

    def on_send(self, context: ConnectionContext, message: Message, transaction_id: int | None) -> None:
        self.next.on_send(context, message, transaction_id)

    def on_dispatch(self, dispatch: Dispatch) -> None:
        self.next.on_dispatch(dispatch)

    def on_ack(self, context: ConnectionContext, ack: MessageAck) -> None:
        self.next.on_ack(context, ack)

    def on_commit(self, context: ConnectionContext, transaction_id: int) -> None:
        self.next.on_commit(context, transaction_id)

    def on_rollback(self, context: ConnectionContext, transaction_id: int) -> None:
        self.next.on_rollback(context, transaction_id)

    def on_dead_letter(self, request: DeadLetterRequest) -> bool:
        return self.next.on_dead_letter(request)


def hooks_of(plugin: BrokerFilter) -> frozenset[str]:
    """The hooks ``plugin``'s class overrides; an ``on_*`` method that names no hook is an error."""
    found: set[str] = set()
    for klass in type(plugin).__mro__:
        if klass is BrokerFilter or klass is object:
            continue
        for name in vars(klass):
            if not name.startswith("on_") or name == "on_attach":
                continue
            hook = name[3:]
            if hook not in HOOKS:
                raise FilterValidationError(
                    f"{type(plugin).__name__}.{name} names no broker hook; the hooks are "
                    f"{', '.join('on_' + h for h in sorted(HOOKS))}",
                    hook=name,
                    plugin=type(plugin).__name__,
                )
            found.add(hook)
    return frozenset(found)
