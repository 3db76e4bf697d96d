"""The asyncio side of the broker: owns the core, the clock's timer, and the routing of dispatches to consumers.

The core is synchronous and pure; this driver is the only thing that turns its deadlines into timers and its output
into calls on consumers (in-process) or writes on sockets (the TCP server registers routes the same way). It is also
the only door into the core: edges (the in-process link, the TCP server, the STOMP connector) and plugins use its
public methods, never ``broker.core``, so producer flow control (:meth:`Broker.admit`) and the plugin chain apply
to every edge alike.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from .._core.broker import BrokerCore
from .._core.commands import ConsumerInfo, MessageAck
from .._core.effects import Dispatch
from .._core.journal import Journal
from .._core.multi import reads
from .._core.paging import PAGE, pages_wanted
from .._core.policy import DestinationPolicy
from .._core.undo import roll_back
from .._core.usage import DEFAULT_SYSTEM_MEMORY_LIMIT
from .._core.virtual import DEFAULT_VIRTUAL_TOPICS, VirtualTopics
from ..clock import Clock, ManualClock, RealClock, TimerHandle, settle
from ..destination_map import DestinationMap
from ..errors import (
    AccessDenied,
    BrokerClosed,
    InvalidClientIdError,
    InvalidConfiguration,
    LimitExceeded,
    SettleTimeout,
    StoreError,
)
from ..filters import BrokerFilter, BrokerPlugin, ConnectionContext, DeadLetterRequest, hooks_of
from ..limits import DEFAULT_CONNECTION_LIMITS, ConnectionLimits
from ..message import Body, Destination, DestinationKind, Message, composite_parts
from .connection import BrokerConnection
from .faults import _FaultInjection
from .flow import Admission, SpaceWaiters, own_fill
from .reads import _ReplayableReads
from .sockets import SocketSlots
from .views import _BrokerViews

if TYPE_CHECKING:  # the store module (sqlite3, the codec) is imported only by brokers that have a data_dir
    from zoneinfo import ZoneInfo

    from ..store import MessageStore
    from .link import MemoryLink
    from .results import ListenerFailure  # listener failures load it (issue 45)

log = logging.getLogger("minibroker.broker")

__all__ = ["Broker", "BrokerPlugin"]  # the result types are minibroker's (results.py)

DispatchRoute = Callable[[Dispatch], None]


def _pending_report(pending: list[str], timeout: float) -> str:
    lines = "\n".join(f"  - {item}" for item in pending)
    return f"the broker did not settle within {timeout} s; still pending:\n{lines}"


class Broker(_BrokerViews, _ReplayableReads, _FaultInjection):
    """An in-process broker. ``async with Broker() as broker:`` starts it; connect clients with ``connect(broker)``.

    ``clock`` decides how time passes (a :class:`~minibroker.ManualClock` for virtual time); ``policies`` maps a
    destination to its :class:`DestinationPolicy` (prioritised messages, dead-letter strategy): a mapping keyed by
    ActiveMQ destination wildcards (``">"`` for every queue, ``"orders.>"``), or a function of the destination.
    ``scheduler_support`` enables scheduled delivery (``AMQ_SCHEDULED_*``) and is required by the broker
    redelivery plugin, as in ActiveMQ. ``plugins``: :class:`~minibroker.filters.BrokerFilter` s form the chain every
    connect, subscribe, send, ack, commit, rollback, dispatch and dead letter goes through, outermost first; other
    plugins (``install(broker)``) are installed in order. ``virtual_topics``: ActiveMQ's default virtual topics
    (``VirtualTopic.>`` copied to ``Consumer.*.VirtualTopic.>`` queues), another ``VirtualTopics(name, prefix)``, or
    None to turn them off. ``scheduler_time_zone``: the IANA zone ``AMQ_SCHEDULED_CRON`` entries are read in (UTC
    unless given; ActiveMQ uses its JVM's zone). ``connection_limits``: the most consumers, producers and open
    transactions one connection may hold (:class:`~minibroker.limits.ConnectionLimits`; 1000 each by default).
    ``advisory_support``: ActiveMQ's ``advisorySupport``, publishing consumer, producer, connection, expiry and
    dead-letter advisories (:mod:`minibroker.advisory`); on by default, as in ActiveMQ. ``system_memory_limit``:
    bytes all queues' unacked messages may hold (ActiveMQ's ``systemUsage`` memory, 1 GiB as an embedded ActiveMQ's;
    0 for none): past it, producer flow control holds every queue's sends (or fails them, per the queue's policy)
    until consumers catch up.

    Persistence: with ``data_dir`` (or a ``store``, see :mod:`minibroker.store`), persistent messages sent to queues
    are stored (SQLite in ``data_dir``) before the send is answered, removed when acked, and loaded again when a
    broker starts on the same directory or :meth:`restart` s; without, everything stays in memory.
    """

    #: the most consumers and open transactions one connection may hold (limits.py); set on the instance only
    #: when not the default, to keep the instance's attributes few (see BrokerCore's note)
    connection_limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS
    #: which hooks some filter overrides (the others go straight to the core): class defaults, set on the instance
    #: only when True, for the same reason
    _hook_send = False
    _hook_ack = False
    _hook_dispatch = False
    _hook_authorize = False

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        policies: Mapping[str, DestinationPolicy] | Callable[[Destination], DestinationPolicy] | None = None,
        history_limit: int = 10_000,
        name: str = "minibroker",
        scheduler_support: bool = False,
        plugins: Sequence[BrokerPlugin] = (),
        data_dir: str | os.PathLike[str] | None = None,
        store: MessageStore | None = None,
        virtual_topics: VirtualTopics | None = DEFAULT_VIRTUAL_TOPICS,
        connection_limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS,
        scheduler_time_zone: str = "UTC",
        advisory_support: bool = True,
        system_memory_limit: int = DEFAULT_SYSTEM_MEMORY_LIMIT,
    ) -> None:
        if data_dir is not None and store is not None:
            raise InvalidConfiguration("give a data_dir or a store, not both", data_dir=str(data_dir))
        self.clock: Clock = clock if clock is not None else RealClock()
        self.name = name
        policy_for: Callable[[Destination], DestinationPolicy] | None
        if policies is None:
            policy_for = None
        elif callable(policies):
            policy_for = policies
        else:
            table = DestinationMap(DestinationPolicy(), policies)

            def policy_for(dest: Destination) -> DestinationPolicy:
                return table.get(str(dest))

        self.scheduler_support = scheduler_support
        zone = None if scheduler_time_zone == "UTC" else _time_zone(scheduler_time_zone)  # the default: no tz database
        if connection_limits is not DEFAULT_CONNECTION_LIMITS:  # instance attributes only when needed (BrokerCore)
            self.connection_limits = connection_limits
        #: where persistent messages are kept (None: memory only); the core journals into ``_journal``
        if data_dir is not None:
            from ..store import SqliteStore

            store = SqliteStore(data_dir)
        self.store: MessageStore | None = store
        if store is not None:
            # what the store keeps survives a restart, and so does the epoch that says so
            self.epoch_source = store.epoch
        self._journal: Journal | None = Journal() if self.store is not None else None
        self._store_open = self.store is not None
        self.core = BrokerCore(
            self.clock,
            policy_for=policy_for,
            history_limit=history_limit,
            scheduler_support=scheduler_support,
            journal=self._journal,
            virtual_topics=virtual_topics,
            system_memory_limit=system_memory_limit,
        )
        if zone is not None and zone.key != "UTC":
            self.core.scheduler_time_zone = zone
        if not advisory_support:
            self.core.advisory_support = False
        if name != self.core.broker_name:
            self.core.broker_name = name  # advisories name their origin broker
        self._load_store()
        #: what the filters know of each open connection (its principal, given by a security filter)
        self._contexts: dict[int, ConnectionContext] = {}
        self._space_waiters = SpaceWaiters(self.clock)
        self._routes: dict[int, DispatchRoute] = {}
        self._timer: TimerHandle | None = None
        self._timer_at: float | None = None
        #: a step of the core's topic binding is scheduled on the loop (binding.py)
        self._binding_soon = False
        #: the core's timers_set when the driver last asked for its deadline
        self._timers_seen = -1
        self._started = False
        self._closed = False
        self._close_hooks: list[Callable[[], None]] = []
        #: how to break each client connection's transport, registered by the transports (fault injection)
        self._droppers: dict[int, Callable[[], None]] = {}
        #: client sockets open on every listener (native and STOMP) together, so no protocol can crowd out another
        self.sockets = SocketSlots()
        #: in-process clients say what work they still have (listeners to run, redeliveries waiting), for settled()
        self._probes: dict[int, Callable[[], list[str]]] = {}
        #: exceptions raised by message listeners of in-process clients, for tests to inspect
        self.listener_errors: list[ListenerFailure] = []
        #: ids of messages a test looked at (browsed, or listed by minibroker.testing's dead-letter helpers): their
        #: dead letters are expected, and the pytest plugin's teardown does not report them
        self.observed_messages: set[str] = set()
        self._incarnation = 0
        self.plugins = tuple(plugins)
        self._chain: BrokerFilter = _BrokerEnd(self)
        #: the hooks some filter overrides: the others go straight to the core
        self._hooked: frozenset[str] = frozenset()
        self._build_chain([p for p in self.plugins if isinstance(p, BrokerFilter)])
        self._install_plugins()

    def _build_chain(self, filters: Sequence[BrokerFilter]) -> None:
        """Chain the filters outermost first, in front of the broker itself; an unknown hook fails the broker."""
        hooked: set[str] = set()
        for plugin in filters:
            hooked |= hooks_of(plugin)
        chain: BrokerFilter = self._chain
        for plugin in reversed(filters):
            plugin.attach(self, chain)
            chain = plugin
        self._chain = chain
        self._hooked = frozenset(hooked)
        for hook in ("send", "ack", "dispatch", "authorize"):
            if hook in hooked:
                setattr(self, f"_hook_{hook}", True)
        #: a send can go straight to the core (no filter watches sends or rights, the broker runs): the hot path
        self._plain_sends = not (self._hook_send or self._hook_authorize or self._closed)

    def _install_plugins(self) -> None:
        """Plugins that are not filters get the broker; the core asks the chain before dead-lettering."""
        for plugin in self.plugins:
            if not isinstance(plugin, BrokerFilter):
                plugin.install(self)
        if "dead_letter" in self._hooked:
            self.core.dead_letter_hook = self._dead_letter
        if self._hook_authorize:
            self.core.read_check = self._may_read

    def _may_read(self, connection_id: int, destination: Destination) -> bool:
        """The core's question when a wildcard or composite subscription would read one more destination: the
        filters' answer for that connection (ActiveMQ leaves the refused destinations out of the subscription)."""
        context = self._contexts.get(connection_id)
        if context is None:
            return True
        try:
            self._chain.on_authorize(context, "read", destination)
        except AccessDenied:
            return False
        return True

    def _dead_letter(
        self, message: Message, cause: str | None, source: Destination, expired: bool, counter: int
    ) -> bool:
        return self._chain.on_dead_letter(DeadLetterRequest(message, cause, source, expired, counter))

    def schedule_redelivery(self, delay: float, message: Message, redelivery_counter: int, cause: str | None) -> None:
        """Put ``message`` back at its queue's tail ``delay`` seconds from now (broker clock), with that counter:
        a broker redelivery filter calls it from ``on_dead_letter``, inside the broker call that answers it."""
        self.core.schedule_redelivery(self.clock.now() + delay, message, redelivery_counter, cause)

    # -- lifecycle --------------------------------------------------------------------------------------------------

    async def start(self) -> Broker:
        self._started = True
        if self.store is not None:
            self._flush()  # timers for what came back from the store (scheduled messages, expiry)
        return self

    async def stop(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._plain_sends = False
        for hook in list(self._close_hooks):
            hook()
        self._close_hooks.clear()
        self._space_waiters.fail_all(BrokerClosed("the broker stopped"))
        if self.store is not None and self._store_open:
            self._persist()
            self._store_open = False
            self.store.close()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if isinstance(self.clock, ManualClock):
            self.clock.stop()

    async def __aenter__(self) -> Broker:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def running(self) -> bool:
        """Started and not stopped yet."""
        return self._started and not self._closed

    def on_close(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` when the broker stops (transports use it to drop their clients)."""
        self._close_hooks.append(hook)

    def register_probe(self, connection_id: int, probe: Callable[[], list[str]]) -> None:
        """An in-process client reports its pending work through ``probe`` (see :meth:`settled`)."""
        self._probes[connection_id] = probe

    def report_listener_error(self, consumer: str, message_id: str, body: Body, error: BaseException) -> None:
        from .results import ListenerFailure

        self.listener_errors.append(ListenerFailure(consumer, message_id, body, error))

    def pending_work(self) -> list[str]:
        """What the broker and its in-process clients still have to do now or on a timer: a list of descriptions."""
        pending = self.core.pending_work()
        for probe in list(self._probes.values()):
            pending.extend(probe())
        return pending

    async def settled(self, timeout: float = 10.0) -> None:
        """Return once nothing is left to do: no listener running or with messages to process, no redelivery
        waiting (client or broker side), nothing dispatchable.

        Messages prefetched by a consumer that only ``receive()`` s are not work: only the test can take them.
        With a :class:`ManualClock`, waiting timers are run by moving virtual time forward (at most ``timeout``
        virtual seconds); with real time this waits up to ``timeout`` seconds. On expiry, raises
        :class:`~minibroker.errors.SettleTimeout` listing what is still pending.
        """
        clock = self.clock
        start = clock.now()
        real_deadline = time.monotonic() + timeout
        while True:
            await settle()
            pending = self.pending_work()
            if not pending:
                return
            if isinstance(clock, ManualClock):
                deadline = clock.next_deadline()
                if deadline is None or deadline - start > timeout:
                    raise SettleTimeout(_pending_report(pending, timeout), pending=pending)
                await clock.advance_to(deadline)
            else:
                if time.monotonic() >= real_deadline:
                    raise SettleTimeout(_pending_report(pending, timeout), pending=pending)
                await asyncio.sleep(0.002)

    # -- restart (fault injection: faults.py) -----------------------------------------------------------------------

    async def restart(self) -> None:
        """Stop and start again, as a process restart would: every connection is dropped (fault-tolerant clients
        reconnect). Without a store every message is lost, as with a non-persistent ActiveMQ; with one
        (``data_dir``), the persistent messages of queues come back from it, in order, with their redelivery
        counters (raised for those the dropped connections held)."""
        self.drop_connections()
        if self.store is not None:
            for connection_id in list(self.core.connections):
                self.core.remove_connection(connection_id, None)
            self._persist()
        self._contexts.clear()
        self._incarnation += 1
        policy_for = self.core._policy_for
        zone = self.core.scheduler_time_zone
        advisory_support = self.core.advisory_support
        self.core = BrokerCore(
            self.clock,
            policy_for=policy_for,
            history_limit=self.core.history.limit,
            scheduler_support=self.scheduler_support,
            journal=self._journal,
            virtual_topics=self.core.virtual_topics,
            system_memory_limit=self.core.usage.limit,
        )
        if zone is not None:
            self.core.scheduler_time_zone = zone
        if not advisory_support:
            self.core.advisory_support = False
        if self.name != self.core.broker_name:
            self.core.broker_name = self.name
        self._load_store()
        self._install_plugins()
        self._timers_seen = -1
        self._arm(self.core.next_deadline())
        await settle()

    def link(self) -> MemoryLink:
        """A new, unopened in-process link to this broker (what ``connect(broker)`` speaks through)."""
        from .link import MemoryLink

        return MemoryLink(self)

    def _check_open(self) -> None:
        if self._closed:
            raise BrokerClosed("the broker is stopped")

    def _load_store(self) -> None:
        if self.store is not None:
            state = self.store.load(PAGE)
            self.core.restore(
                state.messages, state.scheduled, state.durables, state.paged, state.log_seqs, state.shares
            )
            self._persist()  # what the restore decided (positions, trims) is on disk before anything else happens

    def _page_in(self) -> None:
        """Read the next page of each paged queue that runs low in memory (paging.py)."""
        journal, store = self._journal, self.store
        if journal is None or store is None:
            return
        for name, after in list(pages_wanted(journal)):
            self.core.page_in(name, store.load_page(name, after, PAGE))

    def _load_whole(self, queue: str) -> None:
        """Page in every message of ``queue`` still only on disk (a read of the whole queue needs them)."""
        journal, store = self._journal, self.store
        if journal is None or store is None:
            return
        if journal and queue in journal.paged:
            self._persist()  # rows this call gave the queue (a topic log's, copied at a catch-up) are read next
        while queue in journal.paged and journal.paged[queue].on_disk > 0:
            self.core.page_in(queue, store.load_page(queue, journal.paged[queue].disk_after, PAGE))
        journal.paged.pop(queue, None)

    def _persist(self) -> None:
        """Apply the journal to the store: one batch (one transaction) per driver call. When the store cannot, the
        call fails as a whole: memory is taken back to what the disk holds (undo.py) and the StoreError raised."""
        journal = self._journal
        if journal:
            batch = journal[:]
            journal.clear()
            undo, journal.undo = journal.undo, []
            if self.store is not None and self._store_open:
                try:
                    self.store.apply(batch)
                except StoreError as exc:
                    taken_back = roll_back(undo, self.core.output, self.core.dead_letter_router)
                    self.core.sweep_again(1.0)
                    log.error("%s: the store failed (%s); %d changes taken back in memory", self.name, exc, taken_back)
                    raise

    def _flush(self) -> None:
        """After each driver call: the store's step (a store write, a page in), then the call's dispatches out and
        the timer re-armed; a store failure is raised last, once what else the call did has gone out.

        It does nothing unless one of its conditions below holds: the in-process hot path
        (``BrokerConnection.minted_sender``, ``auto_acker``) checks them inline and skips the call; keep the two
        in step."""
        journal = self._journal
        failure = None if journal is None else self._store_step(journal)
        if self._space_waiters.waiting:
            self._space_waiters.wake(self.core.has_space)
        core = self.core
        if core.binding and not self._binding_soon and core.binding_ready():
            self._bind_later()
        out = core.output
        if out:
            core.output = []
            if self._hook_dispatch:
                for dispatch in out:
                    self._chain.on_dispatch(dispatch)
            else:
                routes = self._routes
                for dispatch in out:
                    route = routes.get(dispatch.consumer_id)
                    if route is not None:
                        route(dispatch)
        # ask the core for its deadline when one is armed or a timer was set since the last answer (the usual call
        # sets none: no question then)
        if self._timer_at is not None or core.timers_set != self._timers_seen:
            self._timers_seen = core.timers_set
            deadline = core.next_deadline()
            if deadline != self._timer_at:
                self._arm(deadline)
        if failure is not None:
            raise failure

    def _store_step(self, journal: Journal) -> StoreError | None:
        """Write the call's journal (memory is taken back to the disk when that fails) and page in what paged
        queues need; the failure, for :meth:`_flush` to raise."""
        failure: StoreError | None = None
        if journal:
            try:
                self._persist()
            except StoreError as exc:  # memory is as the disk is; what else the call did still goes out
                failure = exc
        if journal.paged:
            try:
                self._page_in()
            except StoreError as exc:  # a page that cannot be read is tried again at the next call
                log.error("%s: cannot page messages in: %s", self.name, exc)
                failure = failure or exc
        return failure

    def _bind_later(self) -> None:
        """A wildcard subscription still joins its topics (binding.py): its next step runs after what else the loop
        has ready, so other clients are served between steps; without a running loop, every step now."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            while self.core.bind_more():
                pass
            return
        self._binding_soon = True
        loop.call_soon(self._bind_step)

    def _bind_step(self) -> None:
        self._binding_soon = False
        if self._closed:
            return
        self.core.bind_more()
        self._flush()

    def _arm(self, deadline: float | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = deadline
        if deadline is not None and not self._closed:
            self._timer = self.clock.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        self._timers_seen = -1  # what is left of the timers (another job, the next sweep) is armed again
        if self._closed:
            return
        self.core.tick()
        try:
            self._flush()
        except StoreError:  # taken back and logged (_persist); the timer's work (an expiry, a due job) is tried
            self._arm(self.clock.now() + 1.0)  # again in a second, not in a loop

    def connect(
        self,
        client_id: str | None = None,
        *,
        user: str | None = None,
        password: str | None = None,
        remote: bool = False,
        audit_producers: bool = False,
        failover_reconnect: bool = False,
    ) -> BrokerConnection:
        """A new broker connection: the one door through which an edge does everything for one client
        (:class:`~minibroker.BrokerConnection`). It passes the filters' ``on_connect`` (a security filter
        authenticates a ``remote`` connection (TCP, STOMP, MQTT) or one that gives credentials, and raises
        :class:`~minibroker.errors.AccessDenied` when refused; an in-process connection without credentials is
        trusted).

        ``audit_producers``: a client that may resend its persistent sends after a failover reconnect (ActiveMQ's
        JMS client): the store remembers the last sequence of each of its producers. ``failover_reconnect``: this
        connection is such a reconnect: a persistent send at or below its producer's last sequence is dropped, and
        answered, as ActiveMQ's producer audit does (``_driver/resent_sends.py``)."""
        self._check_open()
        if client_id is not None:
            for existing in self.core.connections.values():
                if existing.client_id == client_id:  # one connection per client id (JMS InvalidClientIDException)
                    raise InvalidClientIdError(
                        f"Broker: {self.name} - Client: {client_id} already connected from "
                        f"vm://{self.name}#{existing.connection_id}",
                        client_id=client_id,
                    )
        context = ConnectionContext(client_id, user, password, remote)
        self._chain.on_connect(context)
        self._contexts[context.connection_id] = context
        connection = BrokerConnection(self, context)
        if audit_producers or failover_reconnect:
            from .resent_sends import ResentSends

            audit = getattr(self.store, "producer_audit", None)
            connection._resent_sends = ResentSends(audit, failover_reconnect)
        if self.core.output:  # the connection advisory goes out now, as ActiveMQ sends it (not at the next call)
            self._flush()
        return connection

    def principal(self, connection_id: int) -> object | None:
        """Who a security filter says the connection is (None: unchecked)."""
        context = self._contexts.get(connection_id)
        return None if context is None else context.principal

    def _close_connection(self, connection_id: int, context: ConnectionContext, last_delivered_seq: int | None) -> None:
        """What :meth:`BrokerConnection.close` does: through the filters' ``on_disconnect``, then the routes of its
        consumers go."""
        self._droppers.pop(connection_id, None)
        self._probes.pop(connection_id, None)
        if self._contexts.pop(connection_id, None) is None:
            return  # closed already
        consumers = list(self.core.connections.get(connection_id, _NO_CONN).consumers)
        self._chain.on_disconnect(context, last_delivered_seq)
        for consumer_id in consumers:
            self._routes.pop(consumer_id, None)
        self._flush_leaving()

    def _flush_leaving(self) -> None:
        """:meth:`_flush` for a consumer or connection that goes: it goes even when the store cannot write (the
        failure is logged; what it held is back in its queues, only their redelivery counters are not on disk)."""
        try:
            self._flush()
        except StoreError:
            pass

    def admit(self, destination: Destination, transaction_id: int | None = None) -> Admission | None:
        """Producer flow control, the one admission check of every edge: None when a send to ``destination`` may
        go now (it may still fail by itself: a full queue under ``send_fail_if_no_space``), else an awaitable that
        returns once the queue is under its memory limit, or raises :class:`~minibroker.errors.LimitExceeded` after
        the policy's ``send_fail_if_no_space_after_timeout`` (broker clock). Until then the edge holds that
        producer's following commands, as ActiveMQ blocks a flow-controlled producer. A send in transaction
        ``transaction_id`` (the broker's id) that only its own transaction's end could make room for raises
        LimitExceeded at once: the transaction alone holds the queue's limit."""
        core = self.core
        if not core.memory_limited:
            return None
        if "," in destination.name:  # a composite waits for the first of its queues without room
            for part in composite_parts(destination):
                admission = self.admit(part, transaction_id)
                if admission is not None:
                    return admission
            return None
        if destination.kind is not DestinationKind.QUEUE or core.has_space(destination.name):
            return None
        if core.queues[destination.name].policy.send_fail_if_no_space:
            return None
        if transaction_id is not None and (refused := own_fill(core, destination, transaction_id)) is not None:
            raise refused
        return Admission(self, destination)

    async def _wait_for_space(self, destination: Destination) -> None:
        start = self.clock.now()
        while not self._closed and not self.core.has_space(destination.name):
            q = self.core.queues[destination.name]
            timeout = q.policy.send_fail_if_no_space_after_timeout
            if q.policy.send_fail_if_no_space:
                return  # the send fails by itself
            deadline = None if timeout is None else start + timeout
            if not await self._space_waiters.wait(destination.name, deadline):
                raise LimitExceeded(
                    f"Usage Manager Memory Limit reached on {destination}: no space freed within {timeout} s "
                    f"(memory limit {q.policy.memory_limit} bytes, {q.memory} held)",
                    destination=str(destination),
                    limit=q.policy.memory_limit,
                    timeout=timeout,
                )
        self._check_open()

    @property
    def waiting_producers(self) -> int:
        """Sends waiting for room in a queue over its memory limit."""
        return len(self._space_waiters)

    def temporary_owner(self, destination: Destination) -> int | None:
        """The connection owning this live temporary destination (None: not one, or deleted)."""
        return self.core.temporaries.owners.get(destination)

    def purge(self, queue: str, selector: str | None = None) -> int:
        """Remove every message of ``queue`` (in flight ones included), as ActiveMQ's ``QueueView.purge()``; an
        operator's purge, unchecked (a connection's goes through :meth:`BrokerConnection.purge`, which needs the
        right to administer each queue). ``queue`` may be a wildcard (``orders.>``; ``>``: every queue) or a durable
        subscription's queue (``durable://client/name``, see :func:`~minibroker.durable_queue_name`). With a
        ``selector``, only the waiting messages it matches go (ActiveMQ's ``removeMatchingMessages``;
        ``"JMSMessageID = 'ID:x'"`` removes one message). Returns how many messages went."""
        names = self.purge_targets(queue)
        compiled = None
        if selector is not None:
            from ..selector import parse_selector

            compiled = parse_selector(selector)
        count = 0
        for name in names:
            if compiled is None:
                count += self.core.purge(name)
            else:
                self._load_whole(name)
                count += self.core.remove_matching(name, compiled)
        self._flush()
        return count

    def purge_targets(self, queue: str) -> list[str]:
        """The queues a purge of ``queue`` empties: those a wildcard matches (durable subscriptions' queues are
        named on their own), or the one named."""
        if "*" in queue or ">" in queue:
            pattern = Destination.queue(queue)
            return [name for name in self.queue_names() if reads(pattern, name)]
        return [queue]


def _time_zone(name: str) -> ZoneInfo:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # a scheduler zone other than UTC (issue 45)

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidConfiguration(f"unknown time zone {name!r}", option="scheduler_time_zone", value=name) from None


class _BrokerEnd(BrokerFilter):
    """The end of the filter chain: the broker itself (every hook does the operation on the core)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def on_connect(self, context: ConnectionContext) -> None:
        context.connection_id = self.broker.core.add_connection(context.client_id)

    def on_disconnect(self, context: ConnectionContext, last_delivered_seq: int | None) -> None:
        self.broker.core.remove_connection(context.connection_id, last_delivered_seq)

    def on_authorize(self, context: ConnectionContext, action: str, destination: Destination) -> None:
        pass

    def on_subscribe(self, context: ConnectionContext, info: ConsumerInfo) -> int:
        return self.broker.core.add_consumer(context.connection_id, info)

    def on_send(self, context: ConnectionContext, message: Message, transaction_id: int | None) -> None:
        self.broker.core.send(context.connection_id, message, transaction_id)

    def on_dispatch(self, dispatch: Dispatch) -> None:
        route = self.broker._routes.get(dispatch.consumer_id)
        if route is not None:
            route(dispatch)

    def on_ack(self, context: ConnectionContext, ack: MessageAck) -> None:
        self.broker.core.ack(context.connection_id, ack)

    def on_commit(self, context: ConnectionContext, transaction_id: int) -> None:
        self.broker.core.commit(context.connection_id, transaction_id)

    def on_rollback(self, context: ConnectionContext, transaction_id: int) -> None:
        self.broker.core.rollback(context.connection_id, transaction_id)

    def on_dead_letter(self, request: DeadLetterRequest) -> bool:
        return False


class _NoConnection:
    consumers: frozenset[int] = frozenset()


_NO_CONN = _NoConnection()
