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
  ``"topic://prices.*"``; plain names are queues) and the groups allowed to ``read`` (consume, browse, statistics,
  range reads), ``write`` (send) and ``admin`` (purge, and creating a destination that does not exist yet: a first
  send or subscription to a new destination needs ``admin`` on it too, as in ActiveMQ). The rights of every
  matching entry add up (ActiveMQ's ``DefaultAuthorizationMap``); a destination no entry matches is refused to
  everyone. ``"*"`` in a group list means every authenticated user (ActiveMQ's wildcard group). Refusals are
  :class:`~minibroker.errors.AccessDenied` with ``user``, ``destination`` and ``action`` attributes and ActiveMQ's
  text ("User bob is not authorized to write to: queue://orders").

ActiveMQ's rules for the destinations that name several (:class:`~minibroker.destination_map.DestinationIndex`):

* a **composite** (``orders.a,queue://secret.q``) gets the rights every part has a matching entry for (ActiveMQ
  intersects the parts' entries, and counts two entries with the same rights as one), so it is refused when one
  part is ("User app is not authorized to read from: orders.a,queue://secret.q"), and allowed when each part has
  its own entry granting the same rights (``billing.a,billing.b``; recorded);
* a **wildcard** subscription (``orders.*``, MQTT ``test/+``) gets the rights of every entry that could match a
  destination it reads (``orders.>``, ``orders.*``, ``orders.eu``, ``>``), so it is allowed when any of them grants
  it;
* a **temporary** destination is its owner's to read, write and administer, and anyone's to write (ActiveMQ checks
  them only when a ``tempDestinationAuthorizationEntry`` is configured, which minibroker does not offer); another
  connection's is read (browsed) or administered (purged) only by a user the entries let administer it by name (an
  entry such as ``>``), and consumed by nobody (the broker itself refuses). Creating one needs ``admin`` on
  ``topic://ActiveMQ.Advisory.TempQueue`` (``TempTopic``), which ActiveMQ creates with the client's rights.

Every edge asks the same question through its connection (:class:`~minibroker.BrokerConnection`), so the rules hold
for in-process, TCP, TLS, STOMP and MQTT clients alike. Destinations the broker fills itself (dead-letter queues,
scheduled redeliveries) are not checked.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from minibroker.destination_map import DestinationIndex
from minibroker.errors import AccessDenied, InvalidConfiguration
from minibroker.filters import BrokerFilter, ConnectionContext
from minibroker.message import Destination, composite_parts

if TYPE_CHECKING:
    from minibroker import Broker

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
        #: which entries apply to a destination (a composite or wildcard one included), ActiveMQ's way
        self._index = DestinationIndex(() if self.entries is None else (e.destination for e in self.entries))
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
            self.authorize(context.principal, action, destination, context.connection_id)
        self.next.on_authorize(context, action, destination)

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
        """The groups allowed each action on ``destination`` (the union of every entry that applies to it; for a
        composite, of those that apply to every part)."""
        key = str(destination)
        acl = self._acls.get(key)
        if acl is None:
            assert self.entries is not None
            entries = self.entries
            rights: set[tuple[frozenset[str], ...]] | None = None
            for part in composite_parts(destination):
                found = {_rights(entries[i]) for i in self._index.get(str(part))}
                # ActiveMQ intersects the parts' entries, and two entries are equal when their rights are
                # (AuthorizationEntry.equals): a composite gets the rights every part has an entry for
                rights = found if rights is None else rights & found
            acl = {action: frozenset().union(*(r[i] for r in rights or ())) for i, action in enumerate(ACTIONS)}
            if len(self._acls) >= ACL_CACHE_LIMIT:
                self._acls.clear()  # a client naming ever new destinations must not grow the broker's memory
            self._acls[key] = acl
        return acl

    def allowed(self, principal: Principal, action: str, destination: Destination) -> bool:
        if self.entries is None:
            return True
        groups = self.acl(destination)[action]
        return "*" in groups or not groups.isdisjoint(principal.groups)

    def authorize(
        self, principal: object, action: str, destination: Destination, connection_id: int | None = None
    ) -> None:
        """Raise :class:`~minibroker.errors.AccessDenied` unless ``principal`` may ``action`` ``destination``; a
        read or write of a destination that does not exist yet needs ``admin`` on it too (it would create it).
        ``connection_id``: who asks, for another connection's temporary destinations (see the module notes)."""
        if not isinstance(principal, Principal):
            raise AccessDenied(f"not a principal of this plugin: {principal!r}", destination=str(destination))
        if action not in _VERBS:
            raise InvalidConfiguration(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
        broker = self.broker
        parts = composite_parts(destination)
        owners = [broker.temporary_owner(part) for part in parts]
        if all(owner is not None for owner in owners):
            # no temporary entry: a temporary destination is its owner's, and anyone's to write; another
            # connection's is read or administered only by a user the entries let administer it (issue 41)
            if action == "write" or connection_id is None or all(owner == connection_id for owner in owners):
                return
            if self.allowed(principal, "admin", destination):
                return
            raise AccessDenied(
                f"User {principal.user} is not authorized to {_VERBS[action]}: {_qualified(destination)} "
                "(another connection's temporary destination)",
                user=principal.user,
                destination=str(destination),
                action=action,
            )
        if not self.allowed(principal, action, destination):
            raise AccessDenied(
                f"User {principal.user} is not authorized to {_VERBS[action]}: {_qualified(destination)}",
                user=principal.user,
                destination=str(destination),
                action=action,
            )
        if action == "admin":
            return
        for part in parts:
            if _creates(broker, part) and not self.allowed(principal, "admin", part):
                raise AccessDenied(
                    f"User {principal.user} is not authorized to create: {part}",
                    user=principal.user,
                    destination=str(part),
                    action="create",
                )


#: destinations whose rights the plugin remembers; past this many it starts again (a bound, as the destination map's)
ACL_CACHE_LIMIT = 10_000


def _rights(entry: AuthorizationEntry) -> tuple[frozenset[str], ...]:
    return (entry.read, entry.write, entry.admin)


def _qualified(destination: Destination) -> str:
    """How ActiveMQ writes a destination in a refusal: ``queue://x``, and a composite as its physical name (the
    parts as written, the first without its domain's prefix: ``orders.a,queue://secret.q``)."""
    if "," not in destination.name:
        return str(destination)
    return destination.name.removeprefix(f"{destination.kind.value}://")


def _creates(broker: Broker, destination: Destination) -> bool:
    """Whether reading or writing ``destination`` would create it: a name without wildcards that does not exist."""
    if broker.has_destination(destination) or broker.temporary_owner(destination) is not None:
        return False
    return not any(segment in ("*", ">") for segment in destination.name.split("."))
