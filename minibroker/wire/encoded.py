"""A cache of the wire encoding of messages received in SEND frames, so that dispatching them copies bytes."""

from __future__ import annotations

from collections import OrderedDict

from ..message import Message


class EncodedMessages:
    """Remembers the wire encoding of recently decoded messages, so that dispatching a message that arrived in a
    SEND frame copies its bytes instead of encoding it again (messages are never changed once sent).

    Keyed by identity, holding the message itself so that the key stays valid; the oldest entries go first, once
    more than ``limit`` messages or ``max_bytes`` bytes of encodings are held. Bounded by bytes so that a backlog of
    small messages (the common case: tens of thousands queued behind a full prefetch window) is still cached when
    it is finally dispatched, and large messages cannot pin much memory.
    """

    __slots__ = ("_entries", "bytes", "limit", "max_bytes")

    def __init__(self, limit: int = 262_144, max_bytes: int = 32 << 20) -> None:
        self.limit = limit
        self.max_bytes = max_bytes
        #: bytes of encodings held
        self.bytes = 0
        # an OrderedDict: dropping the oldest of a plain dict (del d[next(iter(d))]) makes the next lookup of the
        # oldest skip every deleted slot, ~15 us per send at this size, where popitem(last=False) is O(1)
        self._entries: OrderedDict[int, tuple[Message, bytes]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, message: Message, raw: bytes) -> None:
        entries = self._entries
        key = id(message)
        old = entries.get(key)
        if old is not None:  # the same message again: replaced (held here, its id cannot name another message)
            self.bytes -= len(old[1])
        entries[key] = (message, raw)
        self.bytes += len(raw)
        if self.bytes > self.max_bytes or len(entries) > self.limit:
            while len(entries) > 1 and (len(entries) > self.limit or self.bytes > self.max_bytes):
                self.bytes -= len(entries.popitem(last=False)[1][1])

    def get(self, message: Message) -> bytes | None:
        entry = self._entries.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        return None

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0
