"""Durable topic subscribers as the core keeps them: made, reattached, replaced and dropped by JMS's rules (the
subscription itself, and its queue, are in durable.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import attrs

from ..errors import DurableSubscriptionError, InvalidDestination
from ..message import Destination, DestinationKind, Message
from ..refusals import check_durable_destination
from .acks import ack_range
from .commands import AckType, ConsumerInfo, MessageAck
from .connection import ConnectionState
from .durable import DURABLE_PREFIX, DurableSubscription, DurableView, durable_queue_name
from .journal import (
    CAUGHT_UP,
    DEFERRED,
    DISK_TRIMMED,
    DURABLE_DROPPED,
    DURABLE_SAVED,
    LOG_SHARED,
    LOGGED,
    LOGGED_ON_DISK,
    SHARES_DROPPED,
    TRIMMED,
    DurableDropped,
    DurableSaved,
    LogShared,
    LogTrimmed,
    Removed,
    Stored,
)
from .queue import Queue
from .state import CoreState
from .subscription import QueueEntry, Subscription
from .topic import Topic
from .virtual import is_wildcard, topic_matches

if TYPE_CHECKING:
    from .topic_log import TopicLog

__all__ = ["DurableConsumers"]

QUEUE = DestinationKind.QUEUE


class DurableConsumers(CoreState):
    """``create_durable_subscriber`` and ``unsubscribe`` (JMS), in the core."""

    def _add_durable_consumer(self, conn: ConnectionState, info: ConsumerInfo) -> int:
        name = info.subscription_name
        assert name is not None
        topic = info.destination
        if not topic.is_topic:
            raise InvalidDestination(f"a durable subscription is to a topic, not {topic}", destination=str(topic))
        check_durable_destination(topic)
        client_id = conn.client_id
        if client_id is None:
            raise DurableSubscriptionError(
                "You cannot create a durable subscriber without specifying a unique clientID on a Connection",
                subscription_name=name,
            )
        durable = self.durables.get((client_id, name))
        if durable is not None and durable.consumer_id is not None:
            raise DurableSubscriptionError(
                f"Durable consumer is in use for client: {client_id} and subscriptionName: {name}",
                client_id=client_id,
                subscription_name=name,
            )
        if durable is not None and (durable.topic != topic.name or durable.selector_text != (info.selector or None)):
            self._drop_durable(durable)  # another topic or selector: a new subscription (JMS)
            durable = None
        if durable is None:
            durable = self._new_durable(client_id, name, topic.name, info.selector or None, info.no_local)
        elif durable.behind is not None:
            self._catch_up(durable)
        retained = self.topics[topic.name].retained if info.retroactive and topic.name in self.topics else None
        if retained is not None and retained.message_id not in durable.queue.duplicate_check():
            durable.queue.add(retained)  # a retroactive durable subscriber gets the retained message on activation
        consumer_id = self.add_consumer(
            conn.connection_id,
            attrs.evolve(
                info,
                destination=durable.destination,
                selector=None,
                no_local=False,
                subscription_name=None,
                retroactive=False,
            ),
        )
        durable.consumer_id = consumer_id
        if self.advisory_support:
            self._advise_consumer(self.subscriptions[consumer_id], topic, added=True)
        return consumer_id

    def _new_durable(
        self, client_id: str, name: str, topic: str, selector_text: str | None, no_local: bool, journaled: bool = True
    ) -> DurableSubscription:
        selector = None
        if selector_text:
            from ..selector import parse_selector

            selector = parse_selector(selector_text)
        # made here, not by queue(): its name is one no client can spell (Destination.parse refuses it)
        destination = Destination(QUEUE, durable_queue_name(client_id, name))
        queue = Queue(
            destination, self._policy_for(Destination.topic(topic)), self.usage, self.numbering.broker_sequence
        )
        queue.journal = self.journal
        if queue.policy.memory_limit:
            self.memory_limited += 1
        self.queues[destination.name] = queue
        self._virtual_queues.clear()
        durable = DurableSubscription(client_id, name, topic, selector_text, no_local, queue, selector)
        self.durables[(client_id, name)] = durable
        if is_wildcard(topic):  # fed by every matching topic, present and future (topic() adds it to new ones)
            for t in self.topics.values():
                if topic_matches(topic, t.destination.name):
                    t.add_durable(durable)
        else:
            self.topic(topic).add_durable(durable)
        if self.journal is not None and journaled:
            self.journal.append(DurableSaved(client_id, name, topic, selector_text, no_local))
            self.journal.undo.append((DURABLE_SAVED, self, durable, None))
        return durable

    def _drop_durable(self, durable: DurableSubscription) -> None:
        self.purge(durable.queue.destination.name)
        self._forget_durable(durable)
        if self.journal is not None:
            self.journal.append(DurableDropped(durable.client_id, durable.name))
            self.journal.undo.append((DURABLE_DROPPED, self, durable, None))

    def _forget_durable(self, durable: DurableSubscription) -> None:
        """Take a durable subscription out of the core (its queue, its topics), without telling the store."""
        self.queues.pop(durable.queue.destination.name, None)
        self._virtual_queues.clear()
        self.durables.pop((durable.client_id, durable.name), None)
        if durable.queue.policy.memory_limit:
            self.memory_limited -= 1
        for topic in self.topics.values() if is_wildcard(durable.topic) else [self.topics.get(durable.topic)]:
            if topic is not None and durable in topic.durables:
                topic.remove_durable(durable)
                log = topic.log
                if log is not None and log.waiting.pop(durable, None) is not None:
                    self._trim_log(log)  # ``durable.behind`` stays: a drop taken back reads the log again

    def _unmake_durable(self, durable: DurableSubscription) -> None:
        """Take back a durable subscription the store never saw made (undo.py): it, and its subscriber, go."""
        if durable.consumer_id is not None:
            sub = self.subscriptions.pop(durable.consumer_id, None)
            if sub is not None:
                sub.closed = True
                self.connections[sub.connection_id].consumers.discard(sub.consumer_id)
                durable.queue.remove_consumer(sub)
            durable.consumer_id = None
        self._forget_durable(durable)

    def _remake_durable(self, durable: DurableSubscription) -> None:
        """Take back the drop of a durable subscription the store never saw (undo.py): it comes back as it was."""
        queue = durable.queue
        self.queues[queue.destination.name] = queue
        self._virtual_queues.clear()
        self.durables[(durable.client_id, durable.name)] = durable
        if queue.policy.memory_limit:
            self.memory_limited += 1
        if is_wildcard(durable.topic):
            for t in self.topics.values():
                if topic_matches(durable.topic, t.destination.name) and durable not in t.durables:
                    t.add_durable(durable)
        else:
            t = self.topic(durable.topic)
            t.add_durable(durable, fed=durable.behind is None)
            if durable.behind is not None:
                assert t.log is not None
                t.log.wait(durable, durable.behind)

    # -- the topic's log, read by the subscriptions that are away (topic_log.py) --------------------------------------

    def _defer(self, durable: DurableSubscription, position: int | None = None, journaled: bool = True) -> None:
        """``durable`` lost its subscriber: while away it reads its topic's log from now on (or from ``position``,
        a restart's), instead of being fed a copy of each message."""
        from .topic_log import TopicLog  # the first durable subscriber away loads topic logs (issue 45)

        topic = self.topic(durable.topic)
        log = topic.log
        if log is None:
            log = topic.log = TopicLog(durable.topic)
        durable.behind = log.next_seq if position is None else position
        log.next_seq = max(log.next_seq, durable.behind)
        log.wait(durable, durable.behind)
        topic.refeed()
        journal = self.journal
        if journal is not None and journaled:
            journal.append(self._saved(durable))
            journal.undo.append((DEFERRED, self, durable, None))

    def _catch_up(self, durable: DurableSubscription) -> None:
        """Copy what the log holds for ``durable`` into its queue, numbered as the topic numbered it, and feed it
        again from now on (its subscriber is back, or its messages are read)."""
        topic = self.topics[durable.topic]
        log = topic.log
        assert log is not None and durable.behind is not None
        position = durable.behind
        del log.waiting[durable]
        durable.behind = None
        q = durable.queue
        for entry in log.since(position):
            q.add(entry.message, 0, entry.broker_seq)
            if entry.message.expiration:
                self._arm_sweep()
        on_disk = log.disk_since(position)
        if on_disk:
            self._share_from_disk(log, on_disk, q)
        topic.refeed()
        journal = self.journal
        if journal is not None:
            journal.append(self._saved(durable))
            journal.undo.append((CAUGHT_UP, self, durable, position))
        self._trim_log(log)

    def _share_from_disk(self, log: TopicLog, seqs: Sequence[int], q: Queue) -> None:
        """The log's rows ``seqs`` (on disk only) become rows of ``q`` behind what it has, for it to page in: shared,
        not copied (the store hands them over a page at a time, and the log keeps them until then)."""
        journal = q.journal
        assert journal is not None  # a log has a part on disk only with a store
        from .topic_log import LogShare

        name = q.destination.name
        share = LogShare(name, seqs[0], seqs[-1] + 1, q.next_seq, len(seqs))
        journal.append(LogShared(log.name, share.from_seq, share.to_seq, name, share.first))
        journal.undo.append((LOG_SHARED, q, (q.on_disk, q.next_seq, q.disk_after, name in journal.paged), (log, share)))
        log.shares.append(share)
        if not q.on_disk:
            q.disk_after = share.first - 1
        q.on_disk += len(seqs)
        q.enqueued += len(seqs)
        q.next_seq = share.first + share.to_seq - share.from_seq
        journal.paged[name] = q

    def _shares_handed(self, name: str, seqs: Sequence[int]) -> None:
        """The store handed durable subscription queue ``name`` the rows ``seqs``: the shares they came from move on
        (as the store's did), and the log lets go of what nobody reads any more."""
        for durable in self.durables.values():
            if durable.queue.destination.name == name:
                topic = self.topics.get(durable.topic)
                log = None if topic is None else topic.log
                if log is not None and log.shares and log.handed(name, seqs):
                    self._trim_log(log)
                return

    def _drop_shares(self, name: str) -> None:
        """Durable subscription queue ``name`` was purged: the log's rows it shared are not its any more (the store's
        purge drops its shares too)."""
        for durable in self.durables.values():
            if durable.queue.destination.name == name:
                topic = self.topics.get(durable.topic)
                log = None if topic is None else topic.log
                if log is None or not log.shares:
                    return
                dropped = [share for share in log.shares if share.queue == name]
                if dropped:
                    log.shares = [share for share in log.shares if share.queue != name]
                    if self.journal is not None:
                        self.journal.undo.append((SHARES_DROPPED, log, dropped, None))
                    self._trim_log(log)
                return

    def _restore_shares(self, shares: Iterable[tuple[str, int, str, int, int, int]]) -> None:
        """The parts of topic logs the store still shares with durable subscription queues (after a restart's first
        page was handed over)."""
        from .topic_log import LOG_PREFIX, LogShare, TopicLog

        for queue, first, name, from_seq, to_seq, rows in shares:
            topic = self.topic(name[len(LOG_PREFIX) :])
            if topic.log is None:
                topic.log = TopicLog(topic.destination.name)
            topic.log.shares.append(LogShare(queue, from_seq, to_seq, first, rows))

    def _undefer(self, durable: DurableSubscription) -> None:
        """Take back :meth:`_defer` the store never saw: it is fed copies again (as the disk says)."""
        topic = self.topics.get(durable.topic)
        if topic is None or topic.log is None:
            return
        topic.log.waiting.pop(durable, None)
        durable.behind = None
        topic.refeed()

    def _uncatch_up(self, durable: DurableSubscription, position: int) -> int | None:
        """Take back :meth:`_catch_up` the store never saw (its copies leave its queue by their own records): it
        reads the log from ``position`` again, and a subscriber that came back with it goes, as a subscription
        made in a failed call does (``_unmake_durable``); what that subscriber held waits again. The consumer id of that
        subscriber (its dispatches are not sent), if there was one."""
        sub = None if durable.consumer_id is None else self.subscriptions.pop(durable.consumer_id, None)
        if sub is not None:
            sub.closed = True
            self.connections[sub.connection_id].consumers.discard(sub.consumer_id)
            durable.queue.remove_consumer(sub)
            for entry in reversed(list(sub.dispatched.values())):
                entry.holder = None
                durable.queue.redelivery.appendleft(entry)
            sub.dispatched.clear()
        durable.consumer_id = None
        topic = self.topics[durable.topic]
        assert topic.log is not None
        durable.behind = position
        topic.log.wait(durable, position)
        topic.refeed()
        return None if sub is None else sub.consumer_id

    def catch_up_queue(self, name: str) -> bool:
        """Before a read of durable subscription queue ``name``: give it what the log holds for it; whether it had
        to (the call then journaled what it copied)."""
        if not name.startswith(DURABLE_PREFIX):
            return False
        for durable in self.durables.values():
            if durable.behind is not None and durable.queue.destination.name == name:
                self._catch_up(durable)
                return True
        return False

    def _catch_up_expiring(self, now: float) -> None:
        """An expiry sweep: the subscriptions reading a log that holds an expired message get their copies, which
        expire as their queue's do (ActiveMQ expires an offline durable subscription's messages too)."""
        for topic in list(self.topics.values()):
            log = topic.log
            if log is None or not log.expiring or not log.waiting:
                continue
            live = log.entries[log.head :]
            if any(e.message.expiration and now >= e.message.expiration for e in live):
                for durable in list(log.waiting):
                    self._catch_up(durable)

    def _log_message(self, log: TopicLog, message: Message, broker_seq: int) -> None:
        entry = log.append(message, broker_seq)
        if isinstance(entry, int):  # behind what a restart left on disk: written, not kept in memory
            journal = self.journal
            assert journal is not None
            journal.append(Stored(log.name, entry, message, 0))
            journal.undo.append((LOGGED_ON_DISK, log, entry, None))
            return
        usage = self.usage
        usage.used += entry.size
        if usage.used >= usage.limit and not usage.full:
            usage.fill()
        journal = self.journal
        if journal is not None and message.persistent:
            journal.append(Stored(log.name, entry.seq, message, 0))
            journal.undo.append((LOGGED, log, entry, self.usage))
        if message.expiration:
            self._arm_sweep()

    def _trim_log(self, log: TopicLog) -> None:
        """Let go of the log's entries no subscription reads any more."""
        if log.disk:
            gone_from_disk = log.disk_below_floor()
            if gone_from_disk:
                journal = self.journal
                assert journal is not None
                journal.append(LogTrimmed(log.name, gone_from_disk[-1] + 1))
                journal.undo.append((DISK_TRIMMED, log, gone_from_disk, None))
        gone = log.below_floor()
        if not gone:
            return
        self.usage.used -= sum(e.size for e in gone)
        journal = self.journal
        if journal is not None:
            journal.extend(Removed(log.name, e.seq) for e in gone if e.message.persistent)
            journal.undo.append((TRIMMED, log, gone, self.usage))

    def _saved(self, durable: DurableSubscription) -> DurableSaved:
        return DurableSaved(
            durable.client_id, durable.name, durable.topic, durable.selector_text, durable.no_local, durable.behind
        )

    def _restore_logged(self, record: Stored) -> None:
        """A log row from the store: back into its topic's log."""
        from .topic_log import LOG_PREFIX, TopicLog

        topic = self.topic(record.queue[len(LOG_PREFIX) :])
        log = topic.log
        if log is None:
            log = topic.log = TopicLog(topic.destination.name)
        entry = log.restore(record.seq, self.numbering.broker_sequence.take(), record.message)
        self.usage.used += entry.size

    def _restore_log_on_disk(self, name: str, seqs: Sequence[int]) -> None:
        """The sequence numbers of a log's rows a restart left on disk, behind the page it loaded (topic_log.py)."""
        if not seqs:
            return
        from .topic_log import LOG_PREFIX, TopicLog

        topic = self.topic(name[len(LOG_PREFIX) :])
        log = topic.log
        if log is None:
            log = topic.log = TopicLog(topic.destination.name)
        log.disk.extend(seqs)
        log.next_seq = max(log.next_seq, seqs[-1] + 1)

    def _restore_positions(self, saved: Iterable[DurableSaved]) -> None:
        """After a restart every durable subscription is away: those that may read their topic's log do, from the
        position the store kept, or, for one that had a subscriber when the broker stopped (the store kept no
        position: its messages were all in its own queue), from what is new. That position is journaled: were the
        store not told before something is logged for it, the next restart would put it at the log's end again, past
        what it had not read, and the trim would delete that (issue 41)."""
        positions = {(s.client_id, s.name): s.position for s in saved}
        for key, durable in self.durables.items():
            if durable.shares_log:
                position = positions.get(key)
                self._defer(durable, position, journaled=position is None)
        for topic in self.topics.values():
            if topic.log is not None:
                self._trim_log(topic.log)

    def unsubscribe(self, connection_id: int, name: str, client_id: str | None = None) -> None:
        """Remove the connection's client id's durable subscription ``name`` (``client_id``'s, when given) and what it
        kept (JMS ``unsubscribe``, ActiveMQ's ``TopicRegion.removeSubscription``)."""
        connection = self._connection(connection_id)
        if client_id is None:
            client_id = connection.client_id
        durable = None if client_id is None else self.durables.get((client_id, name))
        if durable is None:
            raise InvalidDestination(
                f"No durable subscription exists for clientID: {client_id} and subscriptionName: {name}",
                destination=name,
            )
        if durable.consumer_id is not None:
            raise DurableSubscriptionError("Durable consumer is in use", client_id=client_id, subscription_name=name)
        self._drop_durable(durable)

    def durable_subscriptions(self, topic: str | None = None) -> list[DurableView]:
        return [d.view(self._logged(d)) for d in self.durables.values() if topic is None or d.topic == topic]

    def _logged(self, durable: DurableSubscription) -> int:
        """How many messages its topic's log holds for ``durable`` (0 unless it reads the log)."""
        if durable.behind is None:
            return 0
        log = self.topics[durable.topic].log
        return 0 if log is None else log.count_since(durable.behind)

    # -- what a durable subscriber's acks change beyond its queue -----------------------------------------------------

    def _durable_ack_topic(self, sub: Subscription, entry: QueueEntry) -> Topic | None:
        """The topic an ack of ``entry`` counts on when ``sub`` is a durable subscription's consumer: the message's
        own (a durable subscription to a wildcard reads several); None for any other subscription."""
        source = sub.source
        if not isinstance(source, Queue) or not source.destination.name.startswith(DURABLE_PREFIX):
            return None
        return self.topics.get(entry.message.destination.name)

    def _count_durable_transacted_ack(self, sub: Subscription, ack: MessageAck) -> None:
        """ActiveMQ counts a durable subscription's ack on its topic when the ack arrives, inside a transaction too,
        and a rollback does not take it back (DurableTopicSubscription.acknowledge; recorded in the mixed corpus).
        The topic counts it now; the commit's own count on the subscription is then taken off the topic's."""
        if not sub.destination.name.startswith(DURABLE_PREFIX):
            return
        if ack.ack_type is AckType.INDIVIDUAL:
            entry = sub.dispatched.get(ack.last_message_id)
            span = [] if entry is None else [entry]
        else:
            span = ack_range(sub, ack)
        for entry in span:
            topic = self._durable_ack_topic(sub, entry)
            if entry.acked_in_txn is None and topic is not None:
                topic.dequeued += 1

    def _durable_redelivered(self, sub: Subscription, ack: MessageAck) -> None:
        """A durable subscription forgets the redeliveries it counted for what its client rolled back after a
        redelivery (recorded: a transacted round never leaves more than one, mixed_durable_rollback_close_twice,
        durable_redelivery_rounds_*)."""
        source = sub.source
        if isinstance(source, Queue) and source.destination.name.startswith(DURABLE_PREFIX):
            source.forget_redeliveries(ack_range(sub, ack))
