"""The Spark data source's options, offsets and planning arithmetic: plain Python, no pyspark, so it is unit tested
in milliseconds and shared by the driver, the streaming runner and the executors."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Literal

import attrs

from minibroker import durable_queue_name
from minibroker.destination_map import DestinationMap
from minibroker.errors import InvalidConfiguration
from minibroker.message import stringify

__all__ = [
    "DEFAULT_CURSOR",
    "SourceOptions",
    "WriterOptions",
    "fair_share",
    "is_pattern",
    "make_offset",
    "parse_offset",
    "resolve_destinations",
    "split_range",
    "stringify",
]

DEFAULT_CURSOR = "spark"

BodyType = Literal["binary", "string"]


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise InvalidConfiguration(f"option {key}: expected true or false, not {raw!r}", option=key)


def _int(options: Mapping[str, str], key: str, default: int | None, minimum: int = 1) -> int | None:
    raw = options.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidConfiguration(f"option {key}: expected an integer, not {raw!r}", option=key) from None
    if value < minimum:
        raise InvalidConfiguration(f"option {key} must be >= {minimum}, not {value}", option=key)
    return value


def _url(options: Mapping[str, str]) -> str:
    url = options.get("url")
    if not url:
        raise InvalidConfiguration(
            "option url is required: the broker's tcp://HOST:PORT (Spark runs the source in "
            "other processes, which reach the broker over TCP)"
        )
    if not url.startswith("tcp://"):
        raise InvalidConfiguration(f"option url: expected tcp://HOST:PORT, not {url!r}", option="url")
    return url


def _offsets_option(
    options: Mapping[str, str], key: str, default: str, allowed: tuple[str, ...]
) -> str | dict[str, int]:
    raw = options.get(key, default).strip()
    if raw.lower() in allowed:
        return raw.lower()
    try:
        value = json.loads(raw)
    except ValueError:
        raise InvalidConfiguration(
            f'option {key}: expected {" or ".join(allowed)} or a JSON object {{"queue": seq}}, not {raw!r}', option=key
        ) from None
    if isinstance(value, dict) and set(value) == {"epoch", "offsets"} and isinstance(value["offsets"], dict):
        value = value["offsets"]  # an offset taken from a streaming query's progress
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k, v in value.items()
    ):
        raise InvalidConfiguration(
            f"option {key}: a JSON object of queue -> sequence number (>= 0), not {raw!r}", option=key
        )
    return dict(value)


def _destinations(options: Mapping[str, str]) -> tuple[str, ...]:
    raw = options.get("destinations") or options.get("destination") or options.get("path") or ""
    specs = []
    for part in raw.split(","):
        spec = part.strip()
        if not spec:
            continue
        if spec.startswith("topic://"):
            if not options.get("subscriptionname"):
                raise InvalidConfiguration(
                    f"option destinations: {spec!r} is a topic, which keeps nothing to replay: give "
                    "subscriptionName (and clientId) to read it through a durable subscription",
                    option="destinations",
                )
            if is_pattern(spec[len("topic://") :]):
                raise InvalidConfiguration(
                    f"option destinations: {spec!r}: a durable subscription is to one topic, not a wildcard",
                    option="destinations",
                )
            specs.append(spec)
            continue
        if spec.startswith("queue://"):
            spec = spec[len("queue://") :]
        specs.append(spec)
    if not specs:
        raise InvalidConfiguration(
            "option destinations is required: queue names separated by commas, or ActiveMQ "
            "wildcards such as orders.> or *.in",
            option="destinations",
        )
    return tuple(dict.fromkeys(specs))


@attrs.frozen
class SourceOptions:
    """The reading options (keys are case-insensitive, as Spark's)."""

    url: str
    destinations: tuple[str, ...]
    starting_offsets: str | dict[str, int] = "earliest"
    ending_offsets: str | dict[str, int] = "latest"
    body_type: BodyType = "binary"
    max_messages_per_trigger: int | None = None
    max_messages_per_partition: int = 100_000
    cursor: str = DEFAULT_CURSOR
    ack_on_commit: bool = True
    fail_on_data_loss: bool = True
    page_size: int = 10_000
    timeout: float = 60.0
    #: a topic (``topic://prices``) is read through the durable subscription (client_id, subscription_name)
    client_id: str = DEFAULT_CURSOR
    subscription_name: str | None = None

    @property
    def topics(self) -> tuple[str, ...]:
        """The topics read (names without ``topic://``)."""
        return tuple(d[len("topic://") :] for d in self.destinations if d.startswith("topic://"))

    def queue_specs(self) -> tuple[str, ...]:
        """What the broker is asked for: each queue name or wildcard, and for a topic its durable subscription's
        queue (``durable://<clientId>/<subscriptionName>``, the name offsets are keyed by)."""
        return tuple(
            durable_queue_name(self.client_id, self.subscription_name or "") if d.startswith("topic://") else d
            for d in self.destinations
        )

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        o = _lower(options)
        body = o.get("bodytype", "binary").strip().lower()
        if body not in ("binary", "string"):
            raise InvalidConfiguration(f"option bodyType: binary or string, not {body!r}", option="bodyType")
        timeout = float(o.get("timeout", "60"))
        url = _url(o)
        destinations = _destinations(o)
        if sum(1 for d in destinations if d.startswith("topic://")) > 1:
            raise InvalidConfiguration(
                "option destinations: one topic per source (one durable subscription, subscriptionName)",
                option="destinations",
            )
        return cls(
            client_id=o.get("clientid") or DEFAULT_CURSOR,
            subscription_name=o.get("subscriptionname") or None,
            url=url,
            destinations=destinations,
            starting_offsets=_offsets_option(o, "startingoffsets", "earliest", ("earliest", "latest")),
            ending_offsets=_offsets_option(o, "endingoffsets", "latest", ("latest",)),
            body_type="string" if body == "string" else "binary",
            max_messages_per_trigger=_int(o, "maxmessagespertrigger", None),
            max_messages_per_partition=_int(o, "maxmessagesperpartition", 100_000) or 100_000,
            cursor=o.get("cursor", DEFAULT_CURSOR) or DEFAULT_CURSOR,
            ack_on_commit=_bool(o, "ackoncommit", True),
            fail_on_data_loss=_bool(o, "failondataloss", True),
            page_size=_int(o, "pagesize", 10_000) or 10_000,
            timeout=timeout,
        )


@attrs.frozen
class WriterOptions:
    """The writing options: ``destination`` (unless rows carry a ``destination`` column), ``batchSize`` messages
    per publish request, ``dedupe`` (the broker drops re-sent ids), ``writeId`` (the id prefix of a batch write;
    default: random per write)."""

    url: str
    destination: str | None
    batch_size: int = 1000
    dedupe: bool = True
    write_id: str | None = None
    persistent: bool = True
    timeout: float = 60.0

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> WriterOptions:
        o = _lower(options)
        dest = o.get("destination") or o.get("path") or None
        if dest is not None:
            dest = dest.strip()
            if dest.startswith("queue://"):
                dest = dest[len("queue://") :]
            if dest.startswith("topic://") or "," in dest or is_pattern(dest):
                raise InvalidConfiguration(f"option destination: one queue name, not {dest!r}", option="destination")
        return cls(
            url=_url(o),
            destination=dest,
            batch_size=_int(o, "batchsize", 1000) or 1000,
            dedupe=_bool(o, "dedupe", True),
            write_id=o.get("writeid") or None,
            persistent=_bool(o, "persistent", True),
            timeout=float(o.get("timeout", "60")),
        )


def is_pattern(spec: str) -> bool:
    """True for an ActiveMQ wildcard: a ``*`` or ``>`` segment."""
    return any(segment in ("*", ">") for segment in spec.split("."))


def resolve_destinations(specs: Iterable[str], queues: Iterable[str]) -> list[str]:
    """Queue names from ``specs``: plain names as they are (existing or not), wildcards matched against ``queues``
    (ActiveMQ syntax: ``*`` one segment, a final ``>`` the rest). Sorted, no duplicates."""
    names: set[str] = set()
    patterns = [s for s in specs if is_pattern(s)]
    names.update(s for s in specs if not is_pattern(s))
    if patterns:
        table: DestinationMap[bool] = DestinationMap(False, {p: True for p in patterns})
        names.update(q for q in queues if table.get(q))
    return sorted(names)


def make_offset(epoch: str, offsets: Mapping[str, int]) -> dict[str, object]:
    """A streaming offset: ``{"epoch": ..., "offsets": {queue: next seq}}``, queues sorted (Spark compares offsets
    as JSON strings, so the key order must be stable)."""
    return {"epoch": epoch, "offsets": {name: int(offsets[name]) for name in sorted(offsets)}}


def parse_offset(offset: Mapping[str, object] | str) -> tuple[str, dict[str, int]]:
    """(epoch, {queue: next seq}) from an offset dict or its JSON."""
    value = json.loads(offset) if isinstance(offset, str) else offset
    if (
        not isinstance(value, Mapping)
        or not isinstance(value.get("epoch"), str)
        or not isinstance(value.get("offsets"), Mapping)
    ):
        raise InvalidConfiguration(f"not a minibroker offset: {offset!r}")
    offsets = value["offsets"]
    assert isinstance(offsets, Mapping)
    epoch = value["epoch"]
    assert isinstance(epoch, str)
    return epoch, {str(k): int(v) for k, v in offsets.items()}


def fair_share(available: Mapping[str, int], limit: int, rotate: int = 0) -> dict[str, int]:
    """Share ``limit`` messages among destinations with ``available[d]`` each, fairly: every destination gets an equal
    share (or all it has), what one cannot use goes to the others. When fewer messages than destinations remain,
    the leftover singles start at position ``rotate`` (pass something that moves between triggers) so that no
    destination is always last."""
    alloc = {d: 0 for d in available}
    active = [d for d in sorted(available) if available[d] > 0]
    remaining = max(0, limit)
    while remaining > 0 and active:
        if remaining < len(active):
            start = rotate % len(active)
            for d in (active[start:] + active[:start])[:remaining]:
                alloc[d] += 1
            break
        per = remaining // len(active)
        still = []
        for d in active:
            give = min(per, available[d] - alloc[d])
            alloc[d] += give
            remaining -= give
            if alloc[d] < available[d]:
                still.append(d)
        active = still
    return alloc


def split_range(start: int, end: int, size: int) -> list[tuple[int, int]]:
    """``[start, end)`` in consecutive pieces of at most ``size``."""
    return [(a, min(a + size, end)) for a in range(start, end, max(1, size))]
