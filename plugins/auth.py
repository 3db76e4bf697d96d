"""Users, passwords and per-destination rights: ActiveMQ's simple authentication and authorization plugins in one.

Install with ``Broker(plugins=[AuthPlugin(users={...}, entries=[...])])`` (or from a ``broker.toml``, see
:mod:`minibroker.config`). Then:

* **Authentication**, when a connection opens: every remote connection (TCP, STOMP), and an in-process one when it
  gives credentials (``connect(broker, user=..., password=...)``; an in-process connection without credentials is
  the application itself and is trusted). Unknown user or wrong password: :class:`~minibroker.errors.AccessDenied`
  ("User name [x] or password is invalid.", ActiveMQ's text). Without credentials, a remote connection is refused
  unless ``anonymous_access_allowed`` (it then acts as user ``anonymous`` in group ``anonymous``, as in ActiveMQ).
* **Authorization** (only when ``entries`` is given; without, any authenticated user may do anything, as ActiveMQ
  with only the authentication plugin): each entry names destinations with ActiveMQ wildcards (``"orders.>"``,
  ``"topic://prices.*"``; plain names are queues) and the groups allowed to ``read`` (consume, browse, statistics),
  ``write`` (send) and ``admin`` (purge, and creating a destination that does not exist yet: a first send or
  subscription to a new destination needs ``admin`` too, as in ActiveMQ). The rights of every matching entry add
  up (ActiveMQ's ``DefaultAuthorizationMap``); a destination no entry matches is refused to everyone. ``"*"`` in a
  group list means every authenticated user (a minibroker convenience). Refusals are
  :class:`~minibroker.errors.AccessDenied` with ``user``, ``destination`` and ``action`` attributes and ActiveMQ's
  text ("User bob is not authorized to write to: queue://orders").

Destinations the broker fills itself (dead-letter queues, scheduled redeliveries) are not checked.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping

import attrs

from minibroker import ConsumerInfo, Message
from minibroker.destination_map import DestinationMap
from minibroker.errors import AccessDenied, InvalidConfiguration
from minibroker.filters import BrokerFilter, ConnectionContext
from minibroker.message import Destination

__all__ = ["ACTIONS", "AuthPlugin", "AuthorizationEntry", "Principal", "User"]

ACTIONS = ("read", "write", "admin")
_VERBS = {"read": "read from", "write": "write to", "admin": "administer"}


def _groups(value: Iterable[str] | str) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset(g.strip() for g in value.split(",") if g.strip())
    return frozenset(value)


@attrs.frozen(slots=True)
class User:
    """A user's password and groups (ActiveMQ ``authenticationUser``)."""

    password: str = attrs.field(repr=False)
    groups: frozenset[str] = attrs.field(default=frozenset(), converter=_groups)


@attrs.frozen(slots=True)
class AuthorizationEntry:
    """The groups allowed to read, write and administer the destinations ``destination`` matches (ActiveMQ
    ``authorizationEntry``; a comma-separated string or a set of group names)."""

    destination: str
    read: frozenset[str] = attrs.field(default=frozenset(), converter=_groups)
    write: frozenset[str] = attrs.field(default=frozenset(), converter=_groups)
    admin: frozenset[str] = attrs.field(default=frozenset(), converter=_groups)


@attrs.frozen(slots=True)
class Principal:
    """Who a connection is: ``broker.principal(connection_id)``."""

    user: str
    groups: frozenset[str]


class AuthPlugin(BrokerFilter):
    """ActiveMQ's ``simpleAuthenticationPlugin`` (``users``) with an optional ``authorizationPlugin``
    (``entries``); see the module notes. A filter: it checks, then passes each call on."""

    def __init__(
        self,
        users: Mapping[str, User | str],
        entries: Iterable[AuthorizationEntry] | None = None,
        *,
        anonymous_access_allowed: bool = False,
        anonymous_user: str = "anonymous",
        anonymous_group: str = "anonymous",
    ) -> None:
        self.users: dict[str, User] = {}
        for name, user in users.items():
            if not isinstance(name, str) or not name:
                raise InvalidConfiguration(f"a user name must be a non-empty string, not {name!r}", key=name)
            self.users[name] = user if isinstance(user, User) else User(user)
        self.entries: tuple[AuthorizationEntry, ...] | None = None if entries is None else tuple(entries)
        # one single-entry map per entry: a destination gets the rights of every entry that matches it
        self._matchers = (
            []
            if self.entries is None
            else [(DestinationMap(False, {entry.destination: True}), entry) for entry in self.entries]
        )
        self.anonymous_access_allowed = anonymous_access_allowed
        self.anonymous = Principal(anonymous_user, frozenset({anonymous_group}))
        self._acls: dict[str, dict[str, frozenset[str]]] = {}

    # -- the filter hooks -------------------------------------------------------------------------------------------

    def on_connect(self, context: ConnectionContext) -> None:
        if context.remote or context.user is not None or context.password is not None:
            context.principal = self.authenticate(context.user, context.password)
        self.next.on_connect(context)

    def on_authorize(self, context: ConnectionContext, action: str, destination: Destination) -> None:
        if context.principal is not None:
            self.authorize(context.principal, action, destination, self.broker.has_destination(destination))
        self.next.on_authorize(context, action, destination)

    def on_subscribe(self, context: ConnectionContext, info: ConsumerInfo) -> int:
        if context.principal is not None:
            self.authorize(context.principal, "read", info.destination, self.broker.has_destination(info.destination))
        return self.next.on_subscribe(context, info)

    def on_send(self, context: ConnectionContext, message: Message, transaction_id: int | None) -> None:
        if context.principal is not None:
            destination = message.destination
            self.authorize(context.principal, "write", destination, self.broker.has_destination(destination))
        self.next.on_send(context, message, transaction_id)

    # -- the checks -------------------------------------------------------------------------------------------------

    def authenticate(self, user: str | None, password: str | None) -> Principal:
        if user is None and password is None and self.anonymous_access_allowed:
            return self.anonymous
        known = self.users.get(user) if user is not None else None
        # compare even for an unknown user, so a refusal takes the same time either way
        expected = known.password if known is not None else "\x00unknown user"
        if not hmac.compare_digest((password or "").encode(), expected.encode()) or known is None:
            shown = "null" if user is None else user  # as ActiveMQ prints Java's null
            raise AccessDenied(f"User name [{shown}] or password is invalid.", user=user)
        assert user is not None
        return Principal(user, known.groups)

    def acl(self, destination: Destination) -> dict[str, frozenset[str]]:
        """The groups allowed each action on ``destination`` (the union of every matching entry)."""
        key = str(destination)
        acl = self._acls.get(key)
        if acl is None:
            acl = {action: frozenset() for action in ACTIONS}
            for matcher, entry in self._matchers:
                if matcher.get(key):
                    acl = {action: acl[action] | getattr(entry, action) for action in ACTIONS}
            self._acls[key] = acl
        return acl

    def allowed(self, principal: Principal, action: str, destination: Destination) -> bool:
        if self.entries is None:
            return True
        groups = self.acl(destination)[action]
        return "*" in groups or not groups.isdisjoint(principal.groups)

    def authorize(self, principal: object, action: str, destination: Destination, exists: bool) -> None:
        if not isinstance(principal, Principal):
            raise AccessDenied(f"not a principal of this plugin: {principal!r}", destination=str(destination))
        if action not in _VERBS:
            raise InvalidConfiguration(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
        if not self.allowed(principal, action, destination):
            raise AccessDenied(
                f"User {principal.user} is not authorized to {_VERBS[action]}: {destination}",
                user=principal.user,
                destination=str(destination),
                action=action,
            )
        if not exists and action != "admin" and not self.allowed(principal, "admin", destination):
            raise AccessDenied(
                f"User {principal.user} is not authorized to create: {destination}",
                user=principal.user,
                destination=str(destination),
                action="create",
            )
