"""The commands that ask a running broker (``minibroker stat``, ``browse``, ``purge``) and what they share: the
connection from ``--url``/``--user``/``--password`` and the tables they print. Kept apart from ``cli.py``, which
``minibroker serve`` imports on its launch path."""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False  # not typing's: importing typing costs a few ms of every launch
if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from typing import Any, TypeVar

    from minibroker import QueueStatistics
    from minibroker.message import Body
    from minibroker.transport.tcp_link import TcpLink

    T = TypeVar("T")

__all__ = ["ask_broker", "browse", "format_table", "open_link", "purge", "stat"]


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> str:
    """Columns sized to their widest cell; the first column left-aligned, the others right-aligned (or as ``align``
    says: one ``l`` or ``r`` per column)."""
    cells = [list(map(str, header)), *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for row in cells:
        lines.append(
            "  ".join(
                c.ljust(w) if (align[i] == "l" if align else i == 0) else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
        )
    return "\n".join(lines)


async def open_link(args: argparse.Namespace) -> TcpLink:
    from minibroker.transport.tcp_link import TcpLink

    link = await TcpLink.open_url(args.url)
    await link.open(None, args.user, args.password)
    return link


async def ask_broker(args: argparse.Namespace, request: Callable[[TcpLink], Awaitable[T]]) -> T:
    """Connect to ``--url``, run ``request`` on the link and close it."""
    link = await open_link(args)
    try:
        return await request(link)
    finally:
        await link.close(-1)


async def stat(args: argparse.Namespace) -> int:
    async def request(link: TcpLink) -> tuple[list[QueueStatistics], dict[str, int], Any]:
        queues = await link.list_queues()
        depths = await _dead_letter_depths(link, [q.name for q in queues if "DLQ" in q.name])
        return queues, depths, await link.list_topics()

    queues, dead, (topics, durables, scheduled) = await ask_broker(args, request)
    rows = [(q.name, q.size, q.inflight, q.enqueued, q.dequeued, q.consumers, dead.get(q.name, 0)) for q in queues]
    print(format_table(("queue", "size", "in flight", "enqueued", "dequeued", "consumers", "dlq depth"), rows))
    if not rows:
        print("(no queues)")
    if topics:
        print()
        print(
            format_table(
                ("topic", "enqueued", "dequeued", "consumers"),
                [(t.name, t.enqueued, t.dequeued, t.consumers) for t in topics],
            )
        )
    if durables:
        print()
        print(
            format_table(
                ("durable subscription", "client id", "topic", "active", "pending"),
                [(d.name, d.client_id, d.topic, "yes" if d.active else "no", d.pending) for d in durables],
                "lllrr",
            )
        )
    if scheduled:
        print()
        print(f"scheduled: {scheduled} message{'' if scheduled == 1 else 's'} waiting in the scheduler")
    return 0


async def _dead_letter_depths(link: TcpLink, dead_letter_queues: Sequence[str]) -> dict[str, int]:
    """How many messages each queue has in dead-letter queues, by the dead letters' original destination (read
    without consuming them, a page at a time)."""
    from minibroker.transport.commands import ReadRange

    depths: dict[str, int] = {}
    for name in dead_letter_queues:
        seq = 0
        while True:
            page = await link.request(ReadRange(name, seq, None, 1000))
            for entry in page.entries:
                origin = entry.message.original_destination
                if origin is not None:
                    depths[origin.name] = depths.get(origin.name, 0) + 1
            if len(page.entries) < 1000:
                break
            seq = page.entries[-1].seq + 1
    return depths


async def purge(args: argparse.Namespace) -> int:
    from minibroker.transport.commands import Purge

    count = await ask_broker(args, lambda link: link.request(Purge(args.queue)))
    print(f"purged {count} message{'' if count == 1 else 's'} from {args.queue}")
    return 0


def _preview(body: Body, width: int = 60) -> str:
    from minibroker.message import body_as_bytes

    text = body if isinstance(body, str) else body_as_bytes(body).decode("utf-8", "backslashreplace")
    text = text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return text if len(text) <= width else text[: width - 3] + "..."


async def browse(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 0:
        print("minibroker browse: --limit must be >= 0", file=sys.stderr)
        return 2
    from minibroker.transport.commands import Browse

    messages = await ask_broker(args, lambda link: link.request(Browse(args.queue)))
    total = len(messages)
    if args.limit is not None:
        messages = messages[: args.limit]
    rows = [
        (
            m.message_id,
            m.priority,
            "persistent" if m.persistent else "non-persistent",
            ", ".join(f"{k}={v!r}" for k, v in sorted(m.properties.items())) or "-",
            _preview(m.body),
        )
        for m in messages
    ]
    print(format_table(("message id", "priority", "delivery", "properties", "body"), rows, "lrlll"))
    shown = f"{len(rows)} of {total}" if len(rows) != total else str(total)
    print(f"({shown} message{'' if total == 1 else 's'} in {args.queue})")
    return 0
