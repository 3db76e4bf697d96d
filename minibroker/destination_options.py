"""``consumer.*`` options in a consumer's destination name (``orders?consumer.exclusive=true``), read in one place
for every edge (the native client, STOMP SUBSCRIBE), as ActiveMQ's ``ActiveMQMessageConsumer`` reads them: the
physical destination is the name before ``?``; each ``consumer.x`` option sets ``ConsumerInfo.x``; options without
the ``consumer.`` prefix are ignored; an option that cannot be set fails the consumer."""

from __future__ import annotations

import attrs

from .errors import InvalidConfiguration
from .message import Destination

__all__ = ["ConsumerOptions", "split_consumer_options"]

#: options ActiveMQ honours that minibroker does not reproduce: refused by their features.py rows
REFUSED_OPTIONS = ("retroactive", "maximumPendingMessageLimit", "networkSubscription")


@attrs.frozen(slots=True)
class ConsumerOptions:
    """What the options set; None: not given (the consumer keeps its own setting)."""

    prefetch: int | None = None
    priority: int | None = None
    exclusive: bool | None = None
    selector: str | None = None
    no_local: bool | None = None


def _as_int(value: str) -> int | None:
    try:
        return int(value.strip())
    except ValueError:
        return None


def split_consumer_options(dest: Destination) -> tuple[Destination, ConsumerOptions]:
    """The physical destination and the options of ``dest``'s name; a name without ``?`` comes back as it is.

    Raises InvalidConfiguration for options ActiveMQ cannot set (its ConfigurationException) and UnsupportedFeature
    for those minibroker cannot honour."""
    name, sep, query = dest.name.partition("?")
    if not sep:
        return dest, ConsumerOptions()
    from urllib.parse import unquote  # with ipaddress, about 10M instructions: only names with options pay

    from .refusals import refuse  # refusals imports message, which this module imports too

    found: dict[str, int | bool | str] = {}
    unknown: dict[str, str] = {}
    for part in query.split("&"):
        if not part:
            continue
        key, _, raw = part.partition("=")
        key, value = unquote(key), unquote(raw)
        if not key.startswith("consumer."):
            continue  # ActiveMQ extracts only the consumer.* options
        option = key[len("consumer.") :]
        if option in REFUSED_OPTIONS:
            raise refuse(f"destination-option-{option}", str(dest))
        if option in ("prefetchSize", "priority"):
            number = _as_int(value)
            if number is None:
                unknown[key] = value
            else:
                found[option] = number
        elif option in ("exclusive", "noLocal", "dispatchAsync"):
            found[option] = value.strip().lower() == "true"  # Boolean.valueOf
        elif option == "selector":
            found[option] = value
        else:
            unknown[key] = value
    if unknown:
        listed = ", ".join(f"{k}={v}" for k, v in unknown.items())
        raise InvalidConfiguration(
            f"There are {len(unknown)} consumer options that couldn't be set on the consumer. Check the options are "
            f"spelled correctly. Unknown parameters=[{{{listed}}}]. This consumer cannot be started.",
            option=", ".join(unknown),
            value=str(dest),
        )
    prefetch, priority = found.get("prefetchSize"), found.get("priority")
    exclusive, no_local, selector = found.get("exclusive"), found.get("noLocal"), found.get("selector")
    options = ConsumerOptions(
        prefetch=prefetch if isinstance(prefetch, int) and not isinstance(prefetch, bool) else None,
        priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else None,
        exclusive=exclusive if isinstance(exclusive, bool) else None,
        selector=selector if isinstance(selector, str) else None,
        no_local=no_local if isinstance(no_local, bool) else None,
    )
    return Destination(dest.kind, name), options
