"""An operator's requests through a connection: single messages (remove, copy, move, retry: ActiveMQ's
QueueViewMBean operations), a message's history, and the listings of connections, consumers, producers and scheduled
jobs. What the web console and Jolokia ask for (plugins/http); each request authorizes through the connection, as
every other does (connection.py), so a user sees and acts on what the security filter grants them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from .._core.durable import DURABLE_PREFIX
from .._core.history import HistoryRecord
from ..errors import InvalidDestination
from ..message import Destination, Message
from .rights import ADMIN, READ

if TYPE_CHECKING:
    from ..filters import ConnectionContext
    from .broker import Broker
    from .results import ConnectionView, ConsumerView, ProducerView, ScheduledJobView  # load when listed (issue 45)

__all__ = ["_OperatorRequests", "one_queue"]


def one_queue(name: str, role: str = "queue") -> Destination:
    """The one queue an operation on single messages names: ActiveMQ's ``QueueView`` operations act on one queue,
    so a wildcard or a composite (which would be authorized as a whole, then expanded over queues the user may not
    touch) is refused with :class:`~minibroker.errors.InvalidDestination` naming it (issue 41)."""
    destination = Destination.queue(name)
    if not name or _names_many(name) or name.startswith(DURABLE_PREFIX):
        raise InvalidDestination(
            f"{role} {name!r} must name one queue (no wildcard, composite or subscription queue)", destination=name
        )
    return destination


def _names_many(name: str) -> bool:
    """Whether a purge or a consumer would read ``name`` as several destinations: a composite, or a wildcard segment
    (``*``, ``>``; a ``>`` inside a segment, as in ``<b>``, is a plain character, as the broker's matching reads
    it)."""
    return "," in name or any(segment in ("*", ">") for segment in name.split("."))


def _one_target(destination: Destination) -> Destination:
    """A copy's or a move's target: one destination too (a wildcard or composite target is refused)."""
    if _names_many(destination.name):
        raise InvalidDestination(
            f"the target {destination} must name one destination (no wildcard or composite)",
            destination=str(destination),
        )
    return destination


class _OperatorRequests:
    """The operator's requests of :class:`~minibroker.BrokerConnection` (declarations of what they use first)."""

    if TYPE_CHECKING:
        broker: Broker
        context: ConnectionContext
        connection_id: int

        @property
        def principal(self) -> object | None: ...

        def authorize(self, action: str, destination: Destination) -> None: ...

        def may(self, action: str, destination: Destination) -> bool: ...

        def may_see(self, destination: Destination) -> bool: ...

        def _authorize_read(self, queue: str) -> None: ...

        def send(self, message: Message, transaction_id: int | None = None) -> None: ...

    # -- an operator's requests on single messages (ActiveMQ's QueueViewMBean, for the web console and Jolokia) ----

    def remove_message(self, queue: str, message_id: str) -> bool:
        """ActiveMQ's ``QueueView.removeMessage(id)``: the waiting message ``message_id`` of ``queue`` goes, as if
        acked (counted dequeued, nothing dead-lettered); False when no waiting message has that id. Needs the
        right to administer ``queue``."""
        self.authorize(ADMIN, one_queue(queue))
        return self.broker.purge(queue, _id_selector(message_id)) > 0

    def copy_message(self, queue: str, message_id: str, destination: Destination) -> bool:
        """ActiveMQ's ``copyMessageTo(id, dest)``: a copy of the waiting message ``message_id`` of ``queue`` is sent
        to ``destination`` (same id and content; its ``original_destination`` is ``queue``, as ActiveMQ's
        ``BrokerSupport.resend`` sets it); False when no waiting message has that id. Needs the right to
        administer both."""
        self.authorize(ADMIN, one_queue(queue))
        self.authorize(ADMIN, _one_target(destination))
        message = self._waiting(queue, message_id)
        if message is None:
            return False
        self._resend(message, destination)
        return True

    def move_message(self, queue: str, message_id: str, destination: Destination) -> bool:
        """ActiveMQ's ``moveMessageTo(id, dest)``: :meth:`copy_message`, then the original goes (a move to the
        queue itself does nothing, as ActiveMQ's). Needs the right to administer both."""
        self.authorize(ADMIN, one_queue(queue))
        self.authorize(ADMIN, _one_target(destination))
        if destination == Destination.queue(queue):
            return False
        message = self._waiting(queue, message_id)
        if message is None:
            return False
        self._move(queue, message, destination)
        return True

    def is_dead_letter_queue(self, queue: str) -> bool:
        """ActiveMQ's ``QueueView.isDLQ``: a queue the dead-letter strategy sends to (``ActiveMQ.DLQ``, ``DLQ.*``,
        or one the broker has dead-lettered to). Needs the right to administer ``queue``, asked first: a user
        without it learns nothing of the queue (the console's and Jolokia's retry ask before they answer)."""
        self.authorize(ADMIN, one_queue(queue))
        if queue == "ActiveMQ.DLQ" or queue.startswith("DLQ."):
            return True
        return any(r.dead_letter_queue == queue for r in self.broker.dead_letters())

    def queue_exists(self, queue: str) -> bool:
        """Whether ``queue`` exists, for a connection that may read it (asked first: a user without the right
        learns nothing of the queue); asking creates nothing."""
        self.authorize(READ, one_queue(queue))
        return self.broker.has_queue(queue)

    def remove_scheduled_job(self, job_id: str, request: Message) -> bool | None:
        """ActiveMQ's ``JobSchedulerViewMBean.removeJob``, done as a client removes a job: ``request`` (a REMOVE
        to ``topic://ActiveMQ.Scheduler.Management``) is sent through this connection, so the right to write there
        is checked as for any client, and the job's destination needs ``admin`` too, as deleting a message does.
        None when no job this connection may see has that id; else whether it is gone."""
        job = next((j for j in self.scheduled_jobs() if j.job_id == job_id), None)
        if job is None:
            return None
        self.authorize(ADMIN, job.message.destination)
        self.send(request)
        return all(j.job_id != job_id for j in self.scheduled_jobs())

    def retry_messages(self, queue: str, message_id: str | None = None) -> int:
        """ActiveMQ's ``retryMessages()`` on a dead-letter queue (``retryMessage(id)`` with ``message_id``): each
        waiting message that knows its original destination is moved back there, and the dead-letter strategy
        forgets it (so it can be dead-lettered again). Returns how many moved. Needs the right to administer
        ``queue`` and every destination a message goes back to (checked for all before any moves, as a move's
        target is)."""
        self.authorize(ADMIN, one_queue(queue))
        broker = self.broker
        waiting = self._waiting_ids(queue)  # once: a check per message would read the whole queue each time
        retried = [
            (message, message.original_destination)
            for message in broker.browse_all(queue)
            if (message_id is None or message.message_id == message_id)
            and message.original_destination is not None
            and message.message_id in waiting
        ]
        if broker._hook_authorize:
            for original in dict.fromkeys(original for _, original in retried):
                self.authorize(ADMIN, _one_target(original))
        for message, original in retried:
            self._move(queue, message, original)
            broker.core.dead_letter_router.forget(Destination.queue(queue), message.message_id)
        return len(retried)

    # -- destinations made and removed by an operator (ActiveMQ's BrokerViewMBean addQueue, removeTopic, ...) ------

    def add_destination(self, destination: Destination) -> None:
        """ActiveMQ's ``addQueue(name)``/``addTopic(name)``: the destination exists from now on, empty (nothing
        when it already does). Needs the right to administer it, as ActiveMQ's ``addDestination`` checks ("not
        authorized to create"); one destination, no wildcard or composite."""
        target = one_queue(destination.name) if destination.is_queue else _one_target(destination)
        self.authorize(ADMIN, target)
        self.broker._check_open()
        core = self.broker.core
        if destination.is_queue:
            core.queue(destination.name)
        else:
            core.topic(destination.name)
        self.broker._flush()  # its advisory

    def remove_destination(self, destination: Destination) -> None:
        """ActiveMQ's ``removeQueue(name)``/``removeTopic(name)``: the destination and the messages it holds go
        (nothing when it does not exist). Needs the right to administer it ("not authorized to remove"). Refused
        with :class:`~minibroker.errors.DestinationInUse` while a consumer, a durable subscription or an open
        transaction holds it (ActiveMQ drops it from under them; a fidelity row); a temporary destination goes
        with its connection (:meth:`delete_temporary`)."""
        target = one_queue(destination.name) if destination.is_queue else _one_target(destination)
        self.authorize(ADMIN, target)
        broker = self.broker
        broker._check_open()
        core = broker.core
        if core.temporaries.is_temporary(destination):
            raise InvalidDestination(
                f"{destination} is temporary: it goes with its connection", destination=str(target)
            )
        core.remove_destination(destination)
        broker._flush()

    @property
    def history_kept(self) -> bool:
        """Whether the broker keeps messages' histories (``history_limit`` above 0), what :meth:`message_history`
        reads."""
        return self.broker.history_kept

    def message_history(self, queue: str, message_id: str) -> tuple[HistoryRecord, ...]:
        """What the broker did with ``message_id`` (its history, when the broker keeps one), for a connection that
        may read ``queue``, where the message is or was: it is in ``queue`` now (waiting or in flight), or a record
        of its history names ``queue`` (dead-lettered to it, purged from it, redelivered to it). Else nothing, so a
        name the user may read cannot show another queue's message (issue 41). Without a security filter, or for the
        application itself (no principal), every history is shown."""
        destination = one_queue(queue)
        self._authorize_read(queue)
        broker = self.broker
        history = broker.history(message_id)
        if not broker._hook_authorize or self.principal is None or not history:
            return history  # no security filter, or the application itself: every queue is readable
        named = {queue, str(destination)}
        if any(r.destination in named for r in history) or self._holds(queue, message_id):
            return history
        return ()

    def _holds(self, queue: str, message_id: str) -> bool:
        """Whether ``queue`` holds ``message_id`` now (waiting, in flight or acked in an open transaction)."""
        broker = self.broker
        if not broker.has_queue(queue):
            return False
        return any(m.message_id == message_id for m in broker.browse_all(queue))

    def producer_count(self, destination: Destination) -> int:
        """The producers sending to ``destination`` now (ActiveMQ's destination ``ProducerCount``), for a connection
        that may read it."""
        self.authorize(READ, destination)
        return self.broker.core.producer_count(destination)

    # -- who is connected, what they read and send, what the scheduler holds (the web console's listings) ----------

    def connection_listing(self) -> list[ConnectionView]:
        """The open connections this connection may see: all of them without a security filter, or for the
        application itself (no principal); else those logged in as the same user, and those with a consumer or a
        producer on a destination this connection may administer (RabbitMQ's rule for its management users: your
        own connections, or those of what you manage)."""
        from .results import ConnectionView

        broker = self.broker
        core = broker.core
        every = not broker._hook_authorize or self.principal is None
        rows = []
        for state in core.connections.values():
            context = broker._contexts.get(state.connection_id)
            user = None if context is None else context.user
            if not every and user != self.context.user and not self._administers_any(state.connection_id):
                continue
            rows.append(
                ConnectionView(
                    state.connection_id,
                    state.name,
                    state.client_id,
                    user,
                    context is not None and context.remote,
                    len(state.consumers),
                    len(state.producers),
                    len(state.transactions),
                    None if context is None else context.protocol,
                    None if context is None else context.remote_address,
                )
            )
        return rows

    def _administers_any(self, connection_id: int) -> bool:
        """Whether this connection may administer a destination connection ``connection_id`` reads or sends to."""
        return any(self.may(ADMIN, c.destination) for c in self._consumers_of(connection_id)) or any(
            p.destination is not None and self.may(ADMIN, p.destination) for p in self._producers_of(connection_id)
        )

    def consumer_listing(self) -> list[ConsumerView]:
        """The consumers (queue and topic consumers, durable subscribers, browsers) of every connection, on the
        destinations this connection may see (read or administer), oldest first."""
        hooked = self.broker._hook_authorize
        return [c for c in self._consumers_of(None) if not hooked or self.may_see(c.destination)]

    def producer_listing(self) -> list[ProducerView]:
        """The producers of every connection on the destinations this connection may see; an anonymous producer
        (no destination of its own) is listed with its connection (see :meth:`connection_listing`)."""
        if not self.broker._hook_authorize:
            return self._producers_of(None)
        visible = {c.connection_id for c in self.connection_listing()}
        return [
            p
            for p in self._producers_of(None)
            if (p.connection_id in visible if p.destination is None else self.may_see(p.destination))
        ]

    def scheduled_jobs(self) -> list[ScheduledJobView]:
        """The scheduler's waiting jobs (delayed, repeating and cron messages, broker-side redeliveries), soonest
        first, whose destination this connection may see."""
        from .results import ScheduledJobView

        broker = self.broker
        hooked = broker._hook_authorize
        return [
            ScheduledJobView(message.message_id, due, message, counter)
            for due, _job, message, counter in sorted(broker.core._scheduled, key=lambda entry: entry[:2])
            if not hooked or self.may_see(message.destination)
        ]

    def _consumers_of(self, connection_id: int | None) -> list[ConsumerView]:
        """The consumers of one connection (None: of all), as views; a durable subscriber is shown on its topic."""
        from .results import ConsumerView

        core = self.broker.core
        durables = {d.consumer_id: d for d in core.durables.values() if d.consumer_id is not None}
        rows = []
        for sub in core.subscriptions.values():
            if sub.closed or (connection_id is not None and sub.connection_id != connection_id):
                continue
            state = core.connections.get(sub.connection_id)
            durable = durables.get(sub.consumer_id)
            rows.append(
                ConsumerView(
                    sub.consumer_id,
                    sub.connection_id,
                    None if state is None else state.client_id,
                    sub.destination if durable is None else Destination.topic(durable.topic),
                    _selector_text(sub.selector) if durable is None else durable.selector_text,
                    sub.prefetch,
                    len(sub.dispatched),
                    sub.dispatch_count,
                    browser=sub.browser,
                    exclusive=sub.exclusive,
                    durable_name=None if durable is None else durable.name,
                )
            )
        return rows

    def _producers_of(self, connection_id: int | None) -> list[ProducerView]:
        from .results import ProducerView

        core = self.broker.core
        return [
            ProducerView(producer_id, state.connection_id, state.client_id, destination)
            for state in core.connections.values()
            if connection_id is None or state.connection_id == connection_id
            for producer_id, destination in state.producers.items()
        ]

    def _waiting(self, queue: str, message_id: str) -> Message | None:
        """The message ``message_id`` of ``queue`` when it waits (not in flight), else None."""
        if message_id not in self._waiting_ids(queue):
            return None
        for message in self.broker.browse_all(queue):
            if message.message_id == message_id:
                return message
        return None

    def _waiting_ids(self, queue: str) -> set[str]:
        """The ids of the messages waiting in ``queue``: what a selector purge removes (not in flight, not acked
        in a transaction)."""
        broker = self.broker
        if not broker.has_queue(queue):
            return set()
        broker._load_whole(queue)
        entries = broker.core.queues[queue].entries.values()
        return {e.message.message_id for e in entries if e.holder is None and e.acked_in_txn is None}

    def _resend(self, message: Message, destination: Destination) -> None:
        broker = self.broker
        copy = attrs.evolve(message, destination=destination, original_destination=message.destination)
        if broker._hook_send:
            broker._chain.on_send(self.context, copy, None)
        else:
            broker.core.send(self.connection_id, copy, None)
        broker._flush()

    def _move(self, queue: str, message: Message, destination: Destination) -> None:
        self._resend(message, destination)
        self.broker.purge(queue, _id_selector(message.message_id))


def _selector_text(selector: object) -> str | None:
    """A compiled selector's text (None: no selector)."""
    return None if selector is None else str(getattr(selector, "text", selector))


def _id_selector(message_id: str) -> str:
    """The selector matching one message id (quotes doubled, as in SQL)."""
    quoted = message_id.replace("'", "''")
    return f"JMSMessageID = '{quoted}'"
