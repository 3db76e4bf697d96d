"""Virtual topics (ActiveMQ's ``virtualDestinationInterceptor`` with its default ``<virtualTopic>``): a message
published to topic ``VirtualTopic.Orders`` is also copied to every queue ``Consumer.<name>.VirtualTopic.Orders``
that exists then, so each consuming service gets a queue of its own with queue semantics (load balancing between
its consumers, redelivery, dead-lettering), while plain topic subscribers still get theirs.

A consumer queue exists once a consumer opened it (and stays, as ActiveMQ keeps it); a message published before
that is not copied to it (recorded on ActiveMQ 5.17.2: ``virtual_topic_*``).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from ..destination_map import DestinationMap
from ..errors import InvalidConfiguration

__all__ = ["DEFAULT_VIRTUAL_TOPICS", "VirtualTopics", "is_wildcard", "topic_matches"]


def is_wildcard(name: str) -> bool:
    """A destination name with ActiveMQ's wildcards: a ``*`` or ``>`` segment."""
    return "*" in name or ">" in name


def topic_matches(pattern: str, topic: str) -> bool:
    """Whether ActiveMQ's wildcard ``pattern`` (``*`` one segment, ``>`` the rest) names ``topic``."""
    want = pattern.split(".")
    have = topic.split(".")
    for i, segment in enumerate(want):
        if segment == ">":
            return True
        if i >= len(have) or (segment != "*" and segment != have[i]):
            return False
    return len(want) == len(have)


def patterns_overlap(stored: str, lookup: str) -> bool:
    """Whether ActiveMQ's DestinationMap finds the destination named ``stored`` (which may itself hold wildcards: a
    queue can be named ``Consumer.B.VirtualTopic.>``) when it looks up ``lookup``: a ``*`` on either side stands for
    any one segment, a ``>`` on either side for the rest."""
    a, b = stored.split("."), lookup.split(".")
    for i, segment in enumerate(a):
        if segment == ">" or (i < len(b) and b[i] == ">"):
            return True
        if i >= len(b) or (segment != "*" and b[i] != "*" and segment != b[i]):
            return False
    return len(a) == len(b)


@attrs.frozen(slots=True)
class VirtualTopics:
    """Which topics are virtual (``name``, a destination wildcard) and how their consumer queues are named
    (``prefix``, whose ``*`` segments stand for any one name): ActiveMQ's ``<virtualTopic name=... prefix=...>``."""

    name: str = "VirtualTopic.>"
    prefix: str = "Consumer.*."
    _topics: DestinationMap[bool] = attrs.field(init=False, repr=False, eq=False)
    _prefix_segments: tuple[str, ...] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        if not self.prefix.endswith(".") or "" in self.prefix[:-1].split("."):
            raise InvalidConfiguration(
                f"virtual topic prefix {self.prefix!r}: dot-separated names ending with a dot, like 'Consumer.*.'",
                option="prefix",
                value=self.prefix,
            )
        object.__setattr__(self, "_topics", DestinationMap(False, {"topic://" + self.name: True}))
        object.__setattr__(self, "_prefix_segments", tuple(self.prefix[:-1].split(".")))

    def is_virtual(self, topic: str) -> bool:
        return self._topics.get("topic://" + topic)

    def is_consumer_queue(self, queue: str) -> bool:
        """A queue named like the consumer queue of some virtual topic (``Consumer.A.VirtualTopic.Orders``)."""
        segments = queue.split(".")
        n = len(self._prefix_segments)
        return self._prefix_matches(segments[:n]) and len(segments) > n and self.is_virtual(".".join(segments[n:]))

    def consumer_queues(self, topic: str, queues: Iterable[str]) -> list[str]:
        """The existing queues that get a copy of a message published to ``topic``: ActiveMQ sends it to the
        queues its destination map finds for ``<prefix><topic>``, which include a queue named by a matching wildcard
        (``Consumer.B.VirtualTopic.>``, see :meth:`makes_literal`)."""
        topic_segments = topic.split(".")
        n = len(self._prefix_segments)
        lookup = self.prefix + topic
        chosen = []
        for queue in queues:
            segments = queue.split(".")
            named = segments[n:] == topic_segments and self._prefix_matches(segments[:n])
            if named or (is_wildcard(queue) and patterns_overlap(queue, lookup)):
                chosen.append(queue)
        return chosen

    def makes_literal(self, queue: str) -> bool:
        """A consumer on a queue wildcard under the consumer prefix (``Consumer.B.VirtualTopic.>``) makes a queue of
        that literal name, which virtual topics then copy to and the consumer reads (ActiveMQ's ``VirtualTopic.
        create``; recorded: virtual_topic_wildcard_*)."""
        return is_wildcard(queue) and topic_matches(self.prefix + ">", queue)

    def _prefix_matches(self, segments: list[str]) -> bool:
        pattern = self._prefix_segments
        return len(segments) == len(pattern) and all(
            want in ("*", got) for want, got in zip(pattern, segments, strict=True)
        )


#: ActiveMQ's default: on unless the broker configures its own interceptor (or none)
DEFAULT_VIRTUAL_TOPICS = VirtualTopics()
