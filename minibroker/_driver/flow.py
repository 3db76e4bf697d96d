"""Producer flow control at the edge: senders waiting for room in a queue over its memory limit.

The core counts the bytes each queue holds (``Queue.memory``) and refuses a send to a full queue
(:class:`~minibroker.errors.LimitExceeded`). Whether a producer waits instead is decided in the driver's world, by
``Broker.admit``, which every edge (in-process, TCP, STOMP) asks before a send: a send that must wait parks a
future per queue; after every driver call that may have freed memory (acks,
commits, purges, expiry), :meth:`SpaceWaiters.wake` releases the futures of queues that have room again, and each
sender checks again (another may have filled the queue first). The wait follows the broker's clock, so a
``ManualClock`` test sees the timeout in virtual time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from ..clock import Clock, TimerHandle
from ..errors import LimitExceeded
from ..message import Destination, DestinationKind

if TYPE_CHECKING:
    from .._core.broker import BrokerCore
    from .broker import Broker

__all__ = ["Admission", "SpaceWaiters", "own_fill"]


class Admission:
    """A send that must wait for room (:meth:`Broker.admit`): ``await`` it before sending; awaiting it twice waits
    twice. Not awaiting it costs nothing (no coroutine is made until then). Made once per held send, so it lives
    with flow control, which the driver loads anyway."""

    __slots__ = ("_broker", "destination")

    def __init__(self, broker: Broker, destination: Destination) -> None:
        self._broker = broker
        self.destination = destination

    def __await__(self) -> Generator[Any, None, None]:
        return self._broker._wait_for_space(self.destination).__await__()

    def __repr__(self) -> str:
        return f"<Admission waiting for room in {self.destination}>"


class SpaceWaiters:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        #: queue name -> the futures of the senders waiting for room in it (empty: nobody waits)
        self.waiting: dict[str, list[asyncio.Future[None]]] = {}

    def __len__(self) -> int:
        return sum(len(futures) for futures in self.waiting.values())

    async def wait(self, queue: str, deadline: float | None) -> bool:
        """Wait until :meth:`wake` finds room in ``queue`` (True) or the clock reaches ``deadline`` (False)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        futures = self.waiting.setdefault(queue, [])
        futures.append(future)
        timer: TimerHandle | None = None
        timed_out = False

        def expire() -> None:
            nonlocal timed_out
            if not future.done():
                timed_out = True
                future.set_result(None)

        if deadline is not None:
            timer = self.clock.call_at(deadline, expire)
        try:
            await future
        finally:
            if timer is not None:
                timer.cancel()
            waiting = self.waiting.get(queue)
            if waiting is not None:
                if future in waiting:
                    waiting.remove(future)
                if not waiting:
                    del self.waiting[queue]
        return not timed_out

    def wake(self, has_space: Callable[[str], bool]) -> None:
        """Release the waiters of every queue that has room now."""
        for queue, futures in list(self.waiting.items()):
            if has_space(queue):
                for future in futures:
                    if not future.done():
                        future.set_result(None)

    def fail_all(self, error: BaseException) -> None:
        """The broker stops: every waiting sender gets ``error``."""
        for futures in self.waiting.values():
            for future in futures:
                if not future.done():
                    future.set_exception(error)


def own_fill(core: BrokerCore, destination: Destination, transaction_id: int) -> LimitExceeded | None:
    """The error for a transacted send to a full queue that its own transaction's sends fill (or the broker's
    system memory limit): a transaction's bytes are freed only by its commit or rollback, which its producer cannot
    ask for while its send waits, so the wait would never end. None: others hold the room, waiting may get it."""
    txn = core.transactions.get(transaction_id)
    if txn is None:
        return None  # not a transaction of this broker: the send itself says so
    limit = core.queues[destination.name].policy.memory_limit
    usage = core.usage
    here = everywhere = 0
    for message in txn.sends:
        if message.destination.kind is DestinationKind.QUEUE:
            size = message.size_estimate()
            everywhere += size
            if message.destination.name == destination.name:
                here += size
    if limit and here >= limit:
        held, what = here, f"memory limit {limit}"
    elif usage.full and everywhere >= usage.limit:
        held, what = everywhere, f"system memory limit {usage.limit}"
    else:
        return None
    return LimitExceeded(
        f"Usage Manager Memory Limit reached on {destination}: transaction {transaction_id} alone holds {held} "
        f"bytes ({what}); only its commit or rollback can free them",
        destination=str(destination),
        limit=limit or usage.limit,
        transaction_id=transaction_id,
    )
