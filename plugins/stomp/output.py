"""What a STOMP connection writes, sans I/O: MESSAGE frames made from the broker's dispatches, and the output.

The output half of :class:`~minibroker.plugins.stomp.converter.StompConverter` (its base class: the converter's
state, one object). Dispatches arrive through the route a SUBSCRIBE gave ``BrokerConnection.add_consumer``, possibly
while another connection's frame is handled, and only append to the output (``_out``: frames, or MESSAGEs encoded
at once, each with the version it is written in); past the render budget they wait in ``_backlog`` as references
until the peer has read what went before. The listener takes it all with one call per write (:meth:`flush_output`).

An ``ack:auto`` subscription without a transformation routes to :meth:`_ConnectionOutput._on_auto_dispatch`, which
writes the plainest MESSAGE in one call; everything else, and that one whenever in doubt, goes through
:meth:`_ConnectionOutput._on_dispatch`, the reference path (the tests compare the two).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from minibroker.errors import LocalProtocolError
from minibroker.message import DestinationKind, Message

from .advisories import ADVISORY_PREFIX, ADVISORY_TRANSFORMATIONS, render_advisory
from .codec import StompDecoder, StompFrame, encode_frame
from .messages import message_bytes, message_frame, sanitized
from .naming import DestinationNames
from .subscriptions import Delivery, StompAckMode, Subscription, send_auto_acks

if TYPE_CHECKING:
    from minibroker import BrokerConnection, Dispatch

__all__ = ["_ConnectionOutput"]

log = logging.getLogger("minibroker.stomp")

QUEUE = DestinationKind.QUEUE


class _ConnectionOutput:
    """The output of one STOMP connection: what is written, and how dispatches become MESSAGEs. Its state is set up
    by :class:`~minibroker.plugins.stomp.converter.StompConverter`, its subclass."""

    version: str
    on_output: Callable[[], None] | None
    remote_address: str
    connection: BrokerConnection | None
    close_after_output: bool
    render_budget: int
    max_transformation_entries: int
    max_render_size: int | None
    _names: DestinationNames
    #: what to write, oldest first, each with the version it is written in: a frame, or a MESSAGE already encoded
    _out: list[tuple[StompFrame | bytes, str]]
    _pending_bytes: int
    _render_failed: bool
    _backlog: deque[tuple[Subscription, Dispatch]]
    _auto_acks: deque[tuple[int, str]]
    _by_consumer: dict[int, Subscription]
    _acks: dict[str, tuple[Subscription, Delivery]]
    _ack_seq: int
    _in_frame: bool

    # -- the output, as the listener takes it ------------------------------------------------------------------------

    @property
    def has_output(self) -> bool:
        return bool(self._out) or bool(self._backlog)

    def render_backlog(self, budget: int | None = None) -> bool:
        """Render waiting dispatches, up to ``budget`` bytes of messages (the render budget); whether some wait
        still."""
        limit = self.render_budget if budget is None else budget
        self._pending_bytes = 0
        backlog = self._backlog
        while backlog and self._pending_bytes <= limit and not self._render_failed:
            sub, dispatch = backlog.popleft()
            if not sub.closed and dispatch.message is not None:
                self._pending_bytes += len(dispatch.message.body)
                self._render_or_fail(sub, dispatch)
        return bool(backlog) and not self._render_failed

    def take_frames(self) -> list[StompFrame]:
        """The frames to send, oldest first (they leave the output); MESSAGEs encoded early are decoded back."""
        self.render_backlog(1 << 62)
        out, self._out = self._out, []
        frames: list[StompFrame] = []
        for item, version in out:
            if isinstance(item, bytes):
                decoder = StompDecoder(role="client", version=version)
                decoder.receive_data(item)
                frames.extend(decoder)
            else:
                frames.append(item)
        return frames

    def flush_output(self, ack_limit: int | None, paused: bool) -> tuple[bytes, bool]:
        """The listener's one call per write: unless the peer does not read (``paused``), the owed auto acks (at most
        ``ack_limit``, :meth:`run_pending`) and the dispatches waiting to be rendered (:meth:`render_backlog`); then
        the bytes to write (:meth:`data_to_send`), and whether more waits for a later write. The three calls in one,
        each step skipped when it has nothing to do (tested against them)."""
        more = False
        if not paused:
            if self._auto_acks:
                # what these acks dispatch is written by this call (or said by ``more``): no on_output per message
                self._in_frame = True
                try:
                    send_auto_acks(self.connection, self._auto_acks, self._by_consumer, ack_limit)
                finally:
                    self._in_frame = False
                more = bool(self._auto_acks)
            if self._backlog and self.render_backlog():
                more = True
        if not self._out:  # (after a SEND, usually)
            self._pending_bytes = 0
            return b"", more
        return self.data_to_send(), more

    def data_to_send(self) -> bytes:
        """The output encoded for the wire (each frame in the version it was produced under)."""
        out, self._out = self._out, []
        self._pending_bytes = 0
        if not out:
            return b""
        chunks = []
        for item, version in out:
            if type(item) is bytes:
                chunks.append(item)
                continue
            assert isinstance(item, StompFrame)
            try:
                chunks.append(encode_frame(item, version))
            except LocalProtocolError:
                chunks.append(encode_frame(sanitized(item, version), version))
        return b"".join(chunks)

    def _emit(self, frame: StompFrame | bytes, version: str | None = None) -> None:
        self._out.append((frame, version or self.version))
        if not self._in_frame and self.on_output is not None:
            self.on_output()

    # -- dispatches to MESSAGEs -------------------------------------------------------------------------------------

    def _on_dispatch(self, sub: Subscription, dispatch: Dispatch) -> None:
        message = dispatch.message
        if message is None or sub.closed or self._render_failed:
            return  # (a connection closing for a failed rendering takes no more: the broker gets them back)
        if self._backlog or self._pending_bytes > self.render_budget:  # the peer has not read what went before
            self._backlog.append((sub, dispatch))
            if not self._in_frame and self.on_output is not None:
                self.on_output()
            return
        self._pending_bytes += len(message.body)
        self._render_or_fail(sub, dispatch)

    def _on_auto_dispatch(self, sub: Subscription, dispatch: Dispatch) -> None:
        """The route of an ``ack:auto`` subscription without a transformation, in 1.1/1.2: the plainest MESSAGE (what
        a SEND of bytes with no other header makes) rendered in this one call, and the ack it owes. Any other
        dispatch, or any doubt, takes the reference path, :meth:`_on_dispatch`, which writes the same bytes (tested
        against it); it also reports what this one cannot write."""
        message = dispatch.message
        if (
            message is None
            or message.properties
            or dispatch.redelivery_counter
            or type(message.body) is not bytes
            or message.persistent
            or message.correlation_id is not None
            or message.reply_to is not None
            or message.type is not None
            or message.original_destination is not None
            or sub.closed
            or sub.consumer_id is None
            or self._render_failed
            or self._backlog
            or self._pending_bytes > self.render_budget
        ):
            self._on_dispatch(sub, dispatch)
            return
        message_id = message.message_id
        if "\\" in message_id or "\n" in message_id or "\r" in message_id or "\0" in message_id:
            self._on_dispatch(sub, dispatch)
            return
        destination = message.destination
        if destination is sub.escaped_for:
            name = sub.escaped_destination
        else:
            names = self._names
            found = names.escaped_name(destination, self.version)
            if found is None:
                self._on_dispatch(sub, dispatch)
                return
            name = found
            if destination in names.escaped_names:  # a name that cannot change (not a temporary destination's)
                sub.escaped_for = destination
                sub.escaped_destination = name
        body = message.body
        expiration = message.expiration
        escaped_id = message_id.replace(":", "\\c")
        try:
            head = (
                f"MESSAGE\nmessage-id:{escaped_id}\ndestination:{name}"
                f"\nexpires:{round(expiration * 1000) if expiration else 0}\npriority:{message.priority}"
                f"\ntimestamp:{round(message.timestamp * 1000)}{sub.id_line}\ncontent-length:{len(body)}\n\n"
            )
            data = b"".join((head.encode("utf-8"), body, b"\0\n"))
        except Exception:  # a lone surrogate, a time that is no number: the reference path writes it or fails
            self._on_dispatch(sub, dispatch)
            return
        self._pending_bytes += len(body)
        version = self.version
        self._out.append((data, version))
        self._auto_acks.append((dispatch.consumer_id, message_id))
        if not self._in_frame and self.on_output is not None:
            self.on_output()

    def _render_or_fail(self, sub: Subscription, dispatch: Dispatch) -> None:
        """Render a dispatch; one this connection cannot write (a transformation that fails, a text that is no valid
        UTF-8) fails this connection's transport, as the exception out of ActiveMQ's ProtocolConverter does: the
        client is disconnected and the broker redelivers what it held. Neither the operation that caused the dispatch
        (another client's send) nor any other client sees the error."""
        try:
            self._render_dispatch(sub, dispatch)
        except Exception as exc:
            message = dispatch.message
            log.warning(
                "STOMP client %s: cannot write message %s to subscription %s (%s: %s); closing its connection",
                self.remote_address,
                None if message is None else message.message_id,
                sub.header_id,
                type(exc).__name__,
                exc,
            )
            self._render_failed = True
            self.close_after_output = True
            if self.on_output is not None:
                self.on_output()

    def _render_dispatch(self, sub: Subscription, dispatch: Dispatch) -> None:
        """A dispatch as the MESSAGE frame it is written as (and, for an auto subscription, the ack it owes)."""
        message = dispatch.message
        assert message is not None
        if sub.consumer_id is None:
            sub.consumer_id = dispatch.consumer_id
        if message.type == "Advisory" and message.destination.name.startswith(ADVISORY_PREFIX):
            message = self._advisory(sub, message)
        elif sub.transformation is not None:
            from .transformations import transformed  # loaded when a client first asks for one

            message = transformed(message, sub.transformation, self.max_transformation_entries, self.max_render_size)
        counter = dispatch.redelivery_counter
        if counter and message.destination.kind is not QUEUE:
            counter = 0  # a topic message's own counter stays 0 (the module's notes: redelivered)
        if sub.mode != StompAckMode.AUTO:
            self._deliver(sub, message, counter)
            return
        # _deliver and _emit inline (the hot path of an auto subscription), then the ack owed
        version = self.version
        data = message_bytes(self._names, version, sub.id_line, message, counter, None)
        self._out.append(
            (
                data
                if data is not None
                else message_frame(self._names, version, sub.header_id, message, counter, None),
                version,
            )
        )
        self._auto_acks.append((dispatch.consumer_id, message.message_id))
        if not self._in_frame and self.on_output is not None:
            self.on_output()

    def _advisory(self, sub: Subscription, message: Message) -> Message:
        """An advisory as ActiveMQ's JmsFrameTranslator writes it: its data structure marshalled (advisories.py)."""
        header = ADVISORY_TRANSFORMATIONS.get(sub.transformation, "jms-advisory-json")
        body = message.body
        rendered = render_advisory(body, header) if isinstance(body, str) else None
        if rendered is None:  # (a subscription reads only the advisories this renders)
            return message
        return attrs.evolve(message, body=rendered, properties={**message.properties, "transformation": header})

    def _deliver(self, sub: Subscription, message: Message, redelivery_counter: int) -> None:
        ack_id: str | None = None
        if sub.mode != StompAckMode.AUTO:
            if self.version == "1.2":
                self._ack_seq += 1
                ack_id = str(self._ack_seq)
            delivery = Delivery(message.message_id, ack_id, sub.next_index)
            sub.next_index += 1
            sub.unacked[message.message_id] = delivery
            if ack_id is not None:
                self._acks[ack_id] = (sub, delivery)
        version = self.version
        data = message_bytes(self._names, version, sub.id_line, message, redelivery_counter, ack_id)
        self._out.append(
            (
                data
                if data is not None
                else message_frame(self._names, version, sub.header_id, message, redelivery_counter, ack_id),
                version,
            )
        )
        if not self._in_frame and self.on_output is not None:
            self.on_output()
