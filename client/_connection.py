"""Connections: ``connect()`` and the settings every session of a connection shares."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Sequence
from ssl import SSLContext
from types import TracebackType
from typing import TYPE_CHECKING

import attrs

from minibroker._ids import PROCESS_ID_PREFIX
from minibroker.clock import RealClock
from minibroker.errors import ConnectionClosed, InvalidConfiguration, MinibrokerError, UnsupportedOperation
from minibroker.refusals import check_connection_url
from minibroker.transport import commands as c

from ._ack_mode import AckMode

if TYPE_CHECKING:  # the broker, sessions, the audit and the redelivery policies load when first used (issue 45)
    import random

    from minibroker import Broker, BrokerInfo, CursorAck, PublishResult, QueueStatistics, RangeRead
    from minibroker.clock import Clock
    from minibroker.message import Destination, Message
    from minibroker.redelivery import RedeliveryPolicyMap, RetryPolicy
    from minibroker.transport.base import BrokerLink

    from ._consumer import Consumer
    from ._message import ReceivedMessage
    from ._session import Session

__all__ = ["Connection", "ListenerError", "PrefetchPolicy", "connect"]

_connection_numbers = itertools.count(1)


_ID_PREFIX = PROCESS_ID_PREFIX


@attrs.frozen(slots=True)
class PrefetchPolicy:
    """Default prefetch per kind of consumer (ActiveMQ ``ActiveMQPrefetchPolicy``)."""

    queue: int = 1000
    queue_browser: int = 500
    topic: int = 32767
    durable_topic: int = 100

    @classmethod
    def all(cls, value: int) -> PrefetchPolicy:
        """Every kind set to ``value`` (ActiveMQ ``jms.prefetchPolicy.all``)."""
        return cls(value, value, value, value)


@attrs.frozen(slots=True)
class ListenerError:
    """An exception a message listener raised, kept for the test to inspect (and for the pytest plugin's report)."""

    consumer: Consumer
    message: ReceivedMessage
    error: BaseException


class Connection:
    """A connection to a broker. Create with ``await connect(...)``; use as ``async with``."""

    def __init__(
        self,
        link: BrokerLink,
        *,
        client_id: str | None,
        redelivery_policy: RetryPolicy | RedeliveryPolicyMap | None,
        prefetch: PrefetchPolicy,
        non_blocking_redelivery: bool,
        message_priority_supported: bool,
        rng: random.Random,
        start: bool,
        reconnect: Callable[[], Awaitable[BrokerLink]] | None = None,
        always_sync_send: bool = False,
    ) -> None:
        self._link = link
        #: the last producer id given out in this connection (the broker's ids, unique per connection)
        self._last_producer_id = 0
        #: every send waits for the broker's receipt (ActiveMQ ``alwaysSyncSend``)
        self.always_sync_send = always_sync_send
        #: opens a new link after a transport failure; set on fault-tolerant connections (ActiveMQ ``failover:``)
        self._reconnect = reconnect
        self.fault_tolerant = reconnect is not None
        #: duplicate detection, active only on fault-tolerant connections (semantics §7)
        from minibroker.redelivery import RedeliveryPolicy

        from ._audit import ConnectionAudit

        self.audit = ConnectionAudit(self.fault_tolerant)
        self.async_errors: list[BaseException] = []
        self.reconnects = 0
        self._reconnecting: asyncio.Task[None] | None = None
        self.clock: Clock = link.clock
        self.client_id = client_id
        self.connection_id = f"{_ID_PREFIX}:{next(_connection_numbers)}"
        self.redelivery_policy = redelivery_policy or RedeliveryPolicy()
        self.prefetch_policy = prefetch
        self.non_blocking_redelivery = non_blocking_redelivery
        self.message_priority_supported = message_priority_supported
        self.random = rng
        self.started = start
        self.sessions: list[Session] = []
        self.listener_errors: list[ListenerError] = []
        self.exception_listener: Callable[[BaseException], None] | None = None
        self._listener_running = 0
        self._closed = False
        self._session_ids = itertools.count(1)
        link.set_closed_handler(self._on_link_closed)
        self._attach(link)

    def __repr__(self) -> str:
        return f"<Connection {self.connection_id} sessions={len(self.sessions)}{' closed' if self._closed else ''}>"

    # -- settings ---------------------------------------------------------------------------------------------------

    def prefetch_for(self, destination: Destination) -> int:
        return self.prefetch_policy.topic if destination.is_topic else self.prefetch_policy.queue

    def redelivery_policy_for(self, destination: Destination) -> RetryPolicy:
        from minibroker.redelivery import RedeliveryPolicyMap

        policy = self.redelivery_policy
        if isinstance(policy, RedeliveryPolicyMap):
            return policy.get(str(destination))
        return policy

    # -- lifecycle --------------------------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ConnectionClosed("The connection is closed")

    async def start(self) -> None:
        """Start delivery to listeners and browsers (connections from ``connect()`` start unless told otherwise)."""
        self._check_open()
        self.started = True
        for session in self.sessions:
            for consumer in list(session.consumers):
                consumer._connection_started(True)
            session._wake_dispatcher()

    async def stop(self) -> None:
        """Hold messages back from receive() and listeners until :meth:`start` (the broker keeps dispatching)."""
        self.started = False
        for session in self.sessions:
            for consumer in list(session.consumers):
                consumer._connection_started(False)

    async def create_session(self, ack_mode: AckMode | int = AckMode.AUTO_ACKNOWLEDGE) -> Session:
        """A new session in ``ack_mode`` (an :class:`AckMode` or its JMS integer value)."""
        self._check_open()
        try:
            mode = AckMode(ack_mode)
        except ValueError:
            raise InvalidConfiguration(f"invalid acknowledge mode: {ack_mode!r}", ack_mode=ack_mode) from None
        from ._session import Session

        session = Session(self, next(self._session_ids), mode)
        self.sessions.append(session)
        return session

    def _forget(self, session: Session) -> None:
        if session in self.sessions:
            self.sessions.remove(session)

    def _link_begin(self) -> int:
        return self._link.begin()

    async def close(self) -> None:
        """Close every session (unacked messages go back to the broker), then the connection."""
        if self._closed:
            return
        sessions = list(self.sessions)
        last = -1
        for session in sessions:
            for consumer in session.consumers:
                last = max(last, consumer.last_delivered_seq)
            await session._close_with_connection()
        self._closed = True
        await self._link.close(last)

    def _on_link_closed(self, error: BaseException | None) -> None:
        if self._closed:
            return
        if self._reconnect is not None and error is not None:
            self._reconnecting = asyncio.get_running_loop().create_task(self._fail_over())
            return
        self._closed = True
        for session in list(self.sessions):
            session._abandon()
        if error is not None and self.exception_listener is not None:
            self.exception_listener(error)

    async def _fail_over(self) -> None:
        """Open a new transport and subscribe every consumer again; what was in flight is dispatched again."""
        assert self._reconnect is not None
        try:
            link = await self._reconnect()
        except MinibrokerError as exc:
            self._closed = True
            for session in list(self.sessions):
                session._abandon()
            self._report_async_error(exc)
            return
        link.set_closed_handler(self._on_link_closed)
        self._link = link
        self._attach(link)
        self.reconnects += 1
        for session in list(self.sessions):
            await session._resubscribe()

    async def wait_reconnected(self) -> None:
        """Return once a fail-over in progress has finished (at once when there is none)."""
        task = self._reconnecting
        if task is not None:
            await asyncio.shield(task)

    # -- replayable reads: sequence ranges, cursor acks, the epoch (minibroker._core.replay) ----------------------

    async def read_range(
        self,
        queue: str,
        from_seq: int = 0,
        to_seq: int | None = None,
        limit: int | None = None,
        *,
        epoch: str | None = None,
    ) -> RangeRead:
        """The messages of ``queue`` not yet acked with ``from_seq <= seq < to_seq`` (None: up to the newest), oldest
        first, at most ``limit``, *without consuming them* (no dispatch, no redelivery counted): a
        :class:`~minibroker.RangeRead` of ``(seq, message, redelivery_counter)`` entries, with the broker's epoch and
        the queue's next sequence number. ``epoch``: fail with :class:`~minibroker.errors.StaleEpoch` unless the
        broker is still in that epoch (it was not restarted)."""
        self._check_open()
        read = await self._link.request(c.ReadRange(queue, from_seq, to_seq, limit, epoch))
        entries = list(read.entries)
        # over the network the broker answers at most 10,000 messages or 16 MiB at a time: ask on for the rest
        while entries and (limit is None or len(entries) < limit):
            start = entries[-1].seq + 1
            if start >= read.next_seq or (to_seq is not None and start >= to_seq):
                break
            more = await self._link.request(
                c.ReadRange(queue, start, to_seq, None if limit is None else limit - len(entries), read.epoch)
            )
            if not more.entries:
                break
            entries.extend(more.entries)
        return attrs.evolve(read, entries=tuple(entries)) if len(entries) != len(read.entries) else read

    async def ack_below(self, queue: str, cursor: str, seq: int, *, epoch: str | None = None) -> CursorAck:
        """Consume every message of ``queue`` with a sequence number below ``seq``, on behalf of the named ``cursor``:
        cumulative, idempotent, tied to no consumer or connection. Messages dispatched to a consumer and not yet acked
        are left to that consumer (``skipped``); see :mod:`minibroker._core.replay`."""
        self._check_open()
        return await self._link.request(c.AckBelow(queue, cursor, seq, epoch))

    async def broker_info(self, queues: Sequence[str] | None = None, *, cursor: str | None = None) -> BrokerInfo:
        """The broker's epoch and name, and where ``queues`` stand (None: every queue): first held and next sequence
        numbers, size, and ``cursor``'s floor when a cursor is named."""
        self._check_open()
        return await self._link.request(c.GetBrokerInfo(queues, cursor))

    async def publish(self, messages: Sequence[Message], *, dedupe: bool = False) -> PublishResult:
        """Send a batch of ready-made messages in one request, outside any transaction, and wait for the broker.
        With ``dedupe``, the broker drops a message whose id its destination has seen on this path before (an
        idempotent re-send after a failure)."""
        self._check_open()
        return await self._link.request(c.Publish(messages, dedupe))

    # -- what an administrator may do: the broker checks the connection's rights -------------------------------------

    async def queue_statistics(self, queue: str) -> QueueStatistics | None:
        """The counters of ``queue`` (None: no such queue); needs the right to read it."""
        self._check_open()
        return await self._link.request(c.GetQueueStatistics(queue))

    async def purge(self, queue: str, *, selector: str | None = None) -> int:
        """Remove every message of ``queue``, in flight ones included, as ActiveMQ's ``QueueView.purge()``; needs
        the right to administer the queue (``admin`` with :mod:`minibroker.plugins.auth`). Returns how many went.

        ``queue`` may be a wildcard (``"orders.>"``; ``">"`` empties every queue: a shared broker cleaned between
        tests) or a durable subscription (``minibroker.durable_queue_name(client_id, name)``: its backlog). With a
        ``selector`` only the waiting messages it matches go, as ActiveMQ's ``removeMatchingMessages``
        (``"JMSMessageID = 'ID:...'"`` removes one message, its ``removeMessage``); messages in flight stay with
        their consumers."""
        self._check_open()
        return await self._link.request(c.Purge(queue, selector))

    def _report_async_error(self, error: BaseException) -> None:
        """An error from an asynchronous operation (an ack): kept, and passed to ``exception_listener``."""
        self.async_errors.append(error)
        if self.exception_listener is not None:
            self.exception_listener(error)

    def _report_listener_error(self, consumer: Consumer, message: ReceivedMessage, error: BaseException) -> None:
        from minibroker import MemoryLink

        self.listener_errors.append(ListenerError(consumer, message, error))
        if isinstance(self._link, MemoryLink):
            self._link.report_listener_error(consumer.name, message.message_id, message.body, error)

    def _pending_work(self) -> list[str]:
        """What this connection's consumers and listeners still have to do (for ``Broker.settled``)."""
        pending = []
        if self._listener_running:
            pending.append(f"connection {self.connection_id}: a listener is running")
        if self._reconnecting is not None and not self._reconnecting.done():
            pending.append(f"connection {self.connection_id}: reconnecting")
        for session in self.sessions:
            for consumer in session.consumers:
                pending.extend(consumer._pending_work())
        return pending

    def _attach(self, link: BrokerLink) -> None:
        """In-process links let the broker see this connection's pending work."""
        from minibroker import MemoryLink

        if isinstance(link, MemoryLink):
            link.watch(self._pending_work)

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


async def connect(
    target: Broker | str,
    *,
    client_id: str | None = None,
    redelivery_policy: RetryPolicy | RedeliveryPolicyMap | None = None,
    prefetch: int | PrefetchPolicy | None = None,
    non_blocking_redelivery: bool = False,
    message_priority_supported: bool = False,
    seed: int | None = 0,
    start: bool = True,
    fault_tolerant: bool = False,
    clock: Clock | None = None,
    always_sync_send: bool = False,
    user: str | None = None,
    password: str | None = None,
    ssl: SSLContext | None = None,
) -> Connection:
    """Connect to an in-process :class:`~minibroker.Broker` (no sockets) or to a broker URL (``tcp://HOST:PORT``, or
    ``ssl://HOST:PORT`` for a TLS listener: ``ssl`` is the client's ``ssl.SSLContext``, the default one when omitted).

    ``redelivery_policy`` applies to every consumer (or per destination, with a :class:`RedeliveryPolicyMap`);
    ``prefetch`` sets the default prefetch of every consumer; ``seed`` seeds the random source of collision
    avoidance so runs replay (None: fresh randomness). ``fault_tolerant=True`` behaves like ActiveMQ's ``failover:``
    transport: a dropped transport is reopened, consumers subscribe again, and messages the connection has already
    seen are suppressed as duplicates (poison-acked into the DLQ), exactly as ActiveMQ does. Non-persistent and
    transacted sends do not wait for the broker (as in ActiveMQ) unless ``always_sync_send=True``. ``user`` and
    ``password`` are checked by the broker's security plugin (over TCP the plugin checks every connection; in-process
    only those that give credentials); a refusal raises :class:`~minibroker.errors.AccessDenied`.
    """
    link: BrokerLink
    reconnect: Callable[[], Awaitable[BrokerLink]] | None = None
    from minibroker import Broker

    if isinstance(target, Broker):
        broker = target

        async def reopen() -> BrokerLink:
            new = broker.link()
            new.fault_tolerant = True
            await new.open(client_id, user, password)
            return new

        link = target.link()
        if fault_tolerant:
            link.fault_tolerant = True
            reconnect = reopen
    elif isinstance(target, str):
        # ``clock``: the client's clock for a URL connection (real time by default); in-process uses the broker's
        check_connection_url(target)  # failover:, vm://, ?jms.* options: UnsupportedFeature (issue 17)
        if not target.startswith(("tcp://", "ssl://")):
            raise UnsupportedOperation(f"no transport for {target!r}; use tcp://HOST:PORT or a Broker", url=target)
        if fault_tolerant:
            raise UnsupportedOperation("fault_tolerant is not supported over tcp:// yet", url=target)
        from minibroker.transport.tcp_link import TcpLink

        link = await TcpLink.open_url(target, clock=clock if clock is not None else RealClock(), ssl=ssl)
    else:
        raise TypeError(f"connect() takes a Broker or a URL, not {type(target).__name__}")
    if prefetch is None:
        prefetch_policy = PrefetchPolicy()
    elif isinstance(prefetch, PrefetchPolicy):
        prefetch_policy = prefetch
    else:
        prefetch_policy = PrefetchPolicy.all(prefetch)
    await link.open(client_id, user, password)
    import random  # a seeded generator per connection; the module loads with the first one (issue 45)

    conn = Connection(
        link,
        client_id=client_id,
        redelivery_policy=redelivery_policy,
        prefetch=prefetch_policy,
        non_blocking_redelivery=non_blocking_redelivery,
        message_priority_supported=message_priority_supported,
        rng=random.Random(seed),
        start=start,
        reconnect=reconnect,
        always_sync_send=always_sync_send,
    )
    # a network link reports the refusal of an asynchronous command (an ack) later, when the broker's answer comes
    link.set_async_error_handler(conn._report_async_error)
    return conn
