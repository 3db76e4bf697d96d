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

__all__ = ["DestinationMap", "split_destination"]

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
