"""The web console's JSON API (``/console/api/...``), what the page in ``static/`` polls and posts: destinations with
their counts, a queue's messages a page at a time, one message with its delivery history, and the operator's actions
(purge, delete, move, copy, retry, send, removing a scheduled job). Everything goes through the request's
:class:`~minibroker.BrokerConnection`, which authorizes it."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from minibroker._ids import PROCESS_ID_PREFIX
from minibroker.errors import InvalidDestination
from minibroker.message import Destination, Message, body_as_bytes, jms_class, string_properties

from ..testing.timeline import timeline_rows
from .mbeans import ACTIVEMQ_VERSION, MBeans

if TYPE_CHECKING:
    from minibroker import Broker, BrokerConnection

__all__ = ["PAGE_SIZE", "PREVIEW", "ConsoleApi"]

#: messages per page of a queue's listing, and characters of a body shown in it
PAGE_SIZE = 25
PREVIEW = 120
#: characters of a body shown on a message's page
FULL_BODY = 64 * 1024
#: where a client sends its requests to the scheduler (ActiveMQ's ScheduledMessage.AMQ_SCHEDULER_MANAGEMENT_DESTINATION)
SCHEDULER_MANAGEMENT = "ActiveMQ.Scheduler.Management"
_ids = itertools.count(1)

Answer = tuple[int, Any]


def _body_text(message: Message, limit: int) -> str:
    body = message.body
    if isinstance(body, str):
        return body[:limit]
    return body_as_bytes(body)[:limit].decode("utf-8", "replace")


def _destination(destination: Destination | None) -> dict[str, Any]:
    """A destination as the console's JSON names it: ``destination`` (``queue://orders``), and its kind and name
    (None for an anonymous producer's)."""
    if destination is None:
        return {"destination": None, "destinationKind": None, "destinationName": None}
    return {
        "destination": str(destination),
        "destinationKind": "queue" if destination.is_queue else "topic",
        "destinationName": destination.name,
    }


def _summary(message: Message) -> dict[str, Any]:
    return {
        "id": message.message_id,
        "timestamp": message.timestamp,
        "priority": message.priority,
        "persistent": message.persistent,
        "type": message.type,
        "correlationId": message.correlation_id,
        "kind": jms_class(message.body),
        "size": len(message.body),
        "preview": _body_text(message, PREVIEW),
        "properties": dict(string_properties(message)),
    }


class ConsoleApi:
    """One request's console API (see the module notes)."""

    def __init__(self, broker: Broker, connection: BrokerConnection, broker_name: str) -> None:
        self.broker = broker
        self.connection = connection
        self.broker_name = broker_name

    def get(self, action: str, params: dict[str, str]) -> Answer:
        if action == "destinations":
            return 200, self._destinations()
        if action == "messages":
            return self._messages(params.get("queue", ""), params.get("page", "0"))
        if action == "message":
            return self._message(params.get("queue", ""), params.get("id", ""))
        if action == "connections":
            return 200, self._connections()
        if action == "consumers":
            return 200, self._consumers()
        if action == "producers":
            return 200, self._producers()
        if action == "scheduled":
            return 200, self._scheduled()
        return 404, {"error": f"no such console request: {action}"}

    def post(self, action: str, body: dict[str, Any]) -> Answer:
        conn = self.connection
        queue = body.get("queue")
        if action == "send":
            return self._send(body)
        if action == "unschedule":
            return self._unschedule(body.get("jobId"))
        if not isinstance(queue, str) or not queue:
            return 400, {"error": "which queue?"}
        message_id = body.get("id")
        if action == "purge":
            return 200, {"purged": conn.purge(queue)}
        if action == "retry":
            if not conn.is_dead_letter_queue(queue):  # rights first: a refused user learns nothing of the queue
                return 400, {"error": f"{queue} is not a dead-letter queue"}
            return 200, {"retried": conn.retry_messages(queue, message_id if isinstance(message_id, str) else None)}
        if not isinstance(message_id, str) or not message_id:
            return 400, {"error": "which message?"}
        if action == "delete":
            return 200, {"done": conn.remove_message(queue, message_id)}
        if action in ("move", "copy"):
            target = body.get("to")
            if not isinstance(target, str) or not target.strip():
                return 400, {"error": "move or copy to which queue?"}
            destination = Destination.parse(target.strip())
            operation = conn.move_message if action == "move" else conn.copy_message
            return 200, {"done": operation(queue, message_id, destination)}
        return 404, {"error": f"no such console action: {action}"}

    # -- reads ------------------------------------------------------------------------------------------------------

    def _destinations(self) -> dict[str, Any]:
        conn = self.connection
        mbeans = MBeans(self.broker, conn, self.broker_name, 0)
        queues = [
            {
                "name": q.name,
                "size": q.size,
                "inflight": q.inflight,
                "enqueued": q.enqueued,
                "dequeued": q.dequeued,
                "expired": q.expired,
                "consumers": q.consumers,
                "producers": conn.producer_count(Destination.queue(q.name)),
                "dlq": mbeans.is_dlq(q.name),
            }
            for q in mbeans.queues()
        ]
        topic_rows, durables = conn.topic_listing()
        topics = [
            {
                "name": name,
                "enqueued": t.enqueued,
                "dequeued": t.dequeued,
                "consumers": t.consumers,
                "producers": conn.producer_count(Destination.topic(name)),
            }
            for name, t in topic_rows
            if not name.startswith("ActiveMQ.Advisory.")
        ]
        return {
            "broker": {"name": self.broker.name, "version": ACTIVEMQ_VERSION},
            "history": self.connection.history_kept,
            "queues": queues,
            "topics": topics,
            "durables": [
                {
                    "clientId": d.client_id,
                    "name": d.name,
                    "topic": d.topic,
                    "selector": d.selector,
                    "active": d.active,
                    "pending": d.pending,
                }
                for d in durables
            ],
        }

    def _connections(self) -> dict[str, Any]:
        own = self.connection.connection_id  # this request's own connection is not one of the broker's clients
        return {
            "connections": [
                {
                    "id": c.connection_id,
                    "name": c.name,
                    "clientId": c.client_id,
                    "user": c.user,
                    "remote": c.remote,
                    "protocol": c.protocol,
                    "remoteAddress": c.remote_address,
                    "consumers": c.consumers,
                    "producers": c.producers,
                    "transactions": c.transactions,
                }
                for c in self.connection.connection_listing()
                if c.connection_id != own
            ]
        }

    def _consumers(self) -> dict[str, Any]:
        return {
            "consumers": [
                {
                    "id": c.consumer_id,
                    "connectionId": c.connection_id,
                    "clientId": c.client_id,
                    **_destination(c.destination),
                    "selector": c.selector,
                    "prefetch": c.prefetch,
                    "inFlight": c.in_flight,
                    "dispatched": c.dispatched,
                    "browser": c.browser,
                    "exclusive": c.exclusive,
                    "durable": c.durable_name,
                }
                for c in self.connection.consumer_listing()
            ]
        }

    def _producers(self) -> dict[str, Any]:
        own = self.connection.connection_id
        return {
            "producers": [
                {
                    "id": p.producer_id,
                    "connectionId": p.connection_id,
                    "clientId": p.client_id,
                    **_destination(p.destination),
                }
                for p in self.connection.producer_listing()
                if p.connection_id != own
            ]
        }

    def _scheduled(self) -> dict[str, Any]:
        jobs = []
        for job in self.connection.scheduled_jobs():
            props = job.message.properties
            jobs.append(
                {
                    "jobId": job.job_id,
                    "next": job.due,
                    **_destination(job.message.destination),
                    "delay": props.get("AMQ_SCHEDULED_DELAY"),
                    "period": props.get("AMQ_SCHEDULED_PERIOD"),
                    "repeat": props.get("AMQ_SCHEDULED_REPEAT"),
                    "cron": props.get("AMQ_SCHEDULED_CRON"),
                    "redelivery": job.redelivery_counter,
                    "preview": _body_text(job.message, PREVIEW),
                }
            )
        return {"now": self.broker.clock.now(), "jobs": jobs}

    def _messages(self, queue: str, page_text: str) -> Answer:
        stats = self.connection.queue_statistics(queue) if queue else None
        if stats is None:
            return 404, {"error": f"no queue {queue!r}"}
        page = int(page_text) if page_text.isdigit() else 0
        messages = self.connection.browse(queue)
        start = page * PAGE_SIZE
        return 200, {
            "queue": queue,
            "size": stats.size,
            "browsable": len(messages),
            "page": page,
            "pageSize": PAGE_SIZE,
            "messages": [_summary(m) for m in messages[start : start + PAGE_SIZE]],
        }

    def _message(self, queue: str, message_id: str) -> Answer:
        found = next((m for m in self.connection.browse(queue) if m.message_id == message_id), None) if queue else None
        history = self.connection.message_history(queue, message_id) if queue else ()
        if found is None and not history:
            return 404, {"error": f"no message {message_id!r} in {queue!r}"}
        message = None
        if found is not None:
            message = _summary(found)
            message["body"] = _body_text(found, FULL_BODY)
            message["expiration"] = found.expiration
            message["replyTo"] = None if found.reply_to is None else str(found.reply_to)
            message["groupId"] = found.group_id
            message["originalDestination"] = (
                None if found.original_destination is None else str(found.original_destination)
            )
            message["destination"] = str(found.destination)
        return 200, {
            "queue": queue,
            "message": message,
            "historyKept": self.connection.history_kept,
            "history": [
                {
                    "time": r.time,
                    "event": r.event,
                    "consumer": r.consumer_id,
                    "ackType": r.ack_type,
                    "transaction": r.transaction_id,
                    "redeliveryCounter": r.redelivery_counter,
                    "detail": r.detail,
                    "destination": r.destination,
                    "delay": r.delay,
                    **row.as_json(),  # how the timeline draws it (plugins/testing/timeline.py)
                }
                for r, row in zip(history, timeline_rows(history), strict=True)
            ],
        }

    # -- the scheduler ----------------------------------------------------------------------------------------------

    def _unschedule(self, job_id: Any) -> Answer:
        """Remove a waiting job (ActiveMQ's ``JobSchedulerViewMBean.removeJob``) as a client removes one: a REMOVE
        request sent to ``topic://ActiveMQ.Scheduler.Management`` through the connection, so the right to write
        there is checked as for any client; the job's destination needs ``admin`` too, as deleting a message does."""
        if not isinstance(job_id, str) or not job_id:
            return 400, {"error": "which job?"}
        seq = next(_ids)
        request = Message(
            f"ID:{PROCESS_ID_PREFIX}-console-{seq}:1:1:1:1",
            Destination.topic(SCHEDULER_MANAGEMENT),
            "",
            {"AMQ_SCHEDULER_ACTION": "REMOVE", "scheduledJobId": job_id},
            4,
            False,
            self.broker.clock.now(),
            producer_id=f"ID:{PROCESS_ID_PREFIX}-console-{seq}:1:1",
        )
        done = self.connection.remove_scheduled_job(job_id, request)
        return 200, {"done": bool(done)}  # None: no job this user may see has that id

    # -- send -------------------------------------------------------------------------------------------------------

    def _send(self, body: dict[str, Any]) -> Answer:
        target = body.get("destination")
        if not isinstance(target, str) or not target.strip():
            return 400, {"error": "send to which destination?"}
        try:
            destination = Destination.parse(target.strip())
        except InvalidDestination as exc:
            return 400, {"error": str(exc)}
        text = body.get("body", "")
        properties = body.get("properties") or {}
        if not isinstance(text, str) or not isinstance(properties, dict):
            return 400, {"error": "body is text, properties a map of names to text"}
        priority = body.get("priority", 4)
        if not isinstance(priority, int) or not 0 <= priority <= 9:
            return 400, {"error": "priority is 0-9"}
        seq = next(_ids)
        now = self.broker.clock.now()
        message = Message(
            f"ID:{PROCESS_ID_PREFIX}-console-{seq}:1:1:1:1",
            destination,
            text,
            {str(k): str(v) for k, v in properties.items()},
            priority,
            bool(body.get("persistent", True)),
            now,
            correlation_id=body.get("correlationId") or None,
            type=body.get("type") or None,
            producer_id=f"ID:{PROCESS_ID_PREFIX}-console-{seq}:1:1",
        )
        self.connection.send(message)
        return 200, {"id": message.message_id}
