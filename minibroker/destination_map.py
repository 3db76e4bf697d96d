"""ActiveMQ's destination wildcards: one home for "which entry applies to this destination".

Keys use ActiveMQ's syntax: segments split by ``.``, ``*`` matches one segment, a trailing ``>`` matches the rest
(even nothing, so ``A.>`` matches ``A``); a ``queue://`` or ``topic://`` prefix picks the domain (plain means queue);
``,`` lists several destinations in one key. When several keys match, the most specific wins: the exact name, then
more literal segments, then the longer key; remaining ties go to the alphabetically first key.

Used by redelivery policy maps, destination policies (prioritised messages, dead-letter strategies) and
authorization entries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Generic, TypeVar

import attrs

from .errors import InvalidConfiguration

__all__ = ["DestinationIndex", "DestinationMap", "split_destination"]

T = TypeVar("T")

#: destinations whose answer a map remembers; past this many the memory starts again (a bound, not an eviction
#: policy: the lookup it saves is cheap)
CACHE_LIMIT = 10_000

DESTINATION_PREFIXES: dict[str, str] = {
    "queue://": "queue",
    "topic://": "topic",
    "temp-queue://": "temp-queue",
    "temp-topic://": "temp-topic",
}


def split_destination(name: str) -> tuple[str, tuple[str, ...]]:
    """(domain, path segments) of a destination name; a name without a prefix is a queue, as in ActiveMQ."""
    for prefix, domain in DESTINATION_PREFIXES.items():
        if name.startswith(prefix):
            return domain, tuple(name[len(prefix) :].split("."))
    return "queue", tuple(name.split("."))


@attrs.frozen
class _Pattern(Generic[T]):
    text: str
    domain: str
    segments: tuple[str, ...]
    value: T

    @property
    def descendant(self) -> bool:
        return self.segments[-1] == ">"

    @property
    def fixed(self) -> tuple[str, ...]:
        return self.segments[:-1] if self.descendant else self.segments

    def matches(self, domain: str, path: tuple[str, ...]) -> bool:
        if domain != self.domain:
            return False
        fixed = self.fixed
        if self.descendant:
            if len(path) < len(fixed):
                return False
            path = path[: len(fixed)]
        elif len(path) != len(fixed):
            return False
        return all(want in ("*", got) for want, got in zip(fixed, path, strict=True))

    def rank(self, path: tuple[str, ...]) -> tuple[int, int, int, int]:
        """Higher is more specific: exact name, then more literal segments, then longer, then no ``>``."""
        fixed = self.fixed
        exact = int(not self.descendant and "*" not in fixed and fixed == path)
        literals = sum(1 for segment in fixed if segment != "*")
        return exact, literals, len(fixed), int(not self.descendant)


def _parse(key: str, value: T) -> list[_Pattern[T]]:
    if not isinstance(key, str) or not key.strip():
        raise InvalidConfiguration(f"destination map key {key!r} is not a destination", key=key)
    patterns = []
    for part in key.split(","):
        domain, segments = split_destination(part.strip())
        if any(not segment for segment in segments):
            raise InvalidConfiguration(f"destination map key {key!r}: empty segment", key=key)
        if ">" in segments[:-1]:
            raise InvalidConfiguration(f"destination map key {key!r}: '>' may only be the last segment", key=key)
        patterns.append(_Pattern(part.strip(), domain, segments, value))
    return patterns


class DestinationMap(Generic[T]):
    """A default value plus values keyed by destination wildcards; ``get`` picks the most specific match."""

    __slots__ = ("_cache", "_patterns", "default", "entries")

    def __init__(self, default: T, entries: Mapping[str, T] | Iterable[tuple[str, T]] = ()) -> None:
        items = entries.items() if isinstance(entries, Mapping) else entries
        self.default = default
        self.entries: tuple[tuple[str, T], ...] = tuple((k, v) for k, v in items)
        self._patterns: list[_Pattern[T]] = [p for key, value in self.entries for p in _parse(key, value)]
        self._cache: dict[str, T] = {}

    def get(self, destination: str) -> T:
        """The value for a destination (``queue://``/``topic://`` or a plain queue name)."""
        cached = self._cache.get(destination)
        if cached is not None:
            return cached
        domain, path = split_destination(destination)
        candidates = [p for p in self._patterns if p.matches(domain, path)]
        if not candidates:
            value = self.default
        else:
            best = max(p.rank(path) for p in candidates)
            value = min((p for p in candidates if p.rank(path) == best), key=lambda p: p.text).value
        if len(self._cache) >= CACHE_LIMIT:
            # a client naming ever new destinations (refused ones too) must not grow the broker's memory (issue 15)
            self._cache.clear()
        self._cache[destination] = value
        return value

    def __repr__(self) -> str:
        return f"DestinationMap(default={self.default!r}, entries={self.entries!r})"


class _Node:
    """One segment of a :class:`DestinationIndex`'s tree: what is keyed exactly here, and the segments below."""

    __slots__ = ("children", "values")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.values: set[int] = set()

    def descendant_values(self) -> set[int]:
        found: set[int] = set()
        stack = list(self.children.values())
        while stack:
            node = stack.pop()
            found |= node.values
            stack.extend(node.children.values())
        return found


class DestinationIndex:
    """Every key that applies to a destination, where the destination itself may hold wildcards: ActiveMQ's
    ``DestinationMap.get`` as its authorization map reads it (``DefaultAuthorizationMap``).

    Keys are stored in a tree of segments; a lookup of ``orders.*`` walks ``*`` as every child, so it finds the keys
    that could apply to some destination it reads (``orders.>``, ``orders.*``, ``orders.eu``, ``>``), not only those
    that cover all of it: ActiveMQ grants a wildcard subscription when any of them grants it. A ``>`` in the looked-up
    name is a literal segment at the top level and "everything below" under a ``*`` key, as in ActiveMQ. :meth:`get`
    returns key positions (0-based, in the order given); a composite name is its caller's to split (the
    authorization plugin intersects its parts' entries, as ActiveMQ does)."""

    __slots__ = ("_roots",)

    def __init__(self, keys: Iterable[str]) -> None:
        self._roots: dict[str, _Node] = {}
        for position, key in enumerate(keys):
            for domain, segments in (split_destination(part.strip()) for part in key.split(",")):
                node = self._roots.setdefault(domain, _Node())
                for segment in segments:
                    node = node.children.setdefault(segment, _Node())
                node.values.add(position)

    def get(self, destination: str) -> set[int]:
        """The positions of the keys that apply to ``destination`` (``queue://``/``topic://`` or a plain queue name,
        with ``*``/``>`` wildcards or without)."""
        domain, path = split_destination(destination)
        root = self._roots.get(domain)
        if root is None:
            return set()
        answer: set[int] = set()
        _append_matching(answer, [root], path, 0, deep=False)
        return answer


def _append_matching(answer: set[int], nodes: list[_Node], path: tuple[str, ...], start: int, *, deep: bool) -> None:
    """ActiveMQ's ``appendMatchingValues``: walk ``path`` from ``start`` down the tree; ``nodes`` stands for one
    node, or for "any child" (``*``) of the nodes before."""
    could_match_any = True
    for i in range(start, len(path)):
        if not nodes:
            return
        segment = path[i]
        if deep and segment == ">":
            for node in nodes:
                answer |= node.descendant_values()
            could_match_any = False
            break
        for node in nodes:  # keys with wildcards at this level apply whatever the segment is
            star = node.children.get("*")
            if star is not None:
                _append_matching(answer, [star], path, i + 1, deep=True)
            rest = node.children.get(">")
            if rest is not None:
                answer |= rest.values | rest.descendant_values()
        if segment == "*":
            nodes = [child for node in nodes for child in node.children.values()]
        else:
            nodes = [child for node in nodes if (child := node.children.get(segment)) is not None]
    for node in nodes:
        answer |= node.values
        if could_match_any:  # ``A.B`` is also keyed by ``A.B.>``
            rest = node.children.get(">")
            if rest is not None:
                answer |= rest.values
