"""Out of file descriptors (EMFILE on accept): asyncio stops accepting on the socket, reports it through the loop's
exception handler with a traceback, and tries again a second later, for every listening socket, for as long as it
lasts. The listeners make that one warning per interval with the count since (issue 41, item 4)."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from typing import Any

import pytest
from support.waiting import until

from minibroker import Broker, ManualClock
from minibroker.plugins.server.tcp import start_server

TIMEOUT = 5.0


class OutOfDescriptors(socket.socket):
    """A listening socket whose accept fails as a process out of file descriptors does."""

    def accept(self) -> tuple[socket.socket, Any]:
        raise OSError(errno.EMFILE, "Too many open files")


def listening() -> OutOfDescriptors:
    sock = OutOfDescriptors(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(100)
    sock.setblocking(False)
    return sock


async def test_running_out_of_descriptors_is_one_warning_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.get_running_loop()
    caplog.set_level(logging.WARNING)
    async with Broker(clock=ManualClock(autojump=True)) as broker:
        sock = listening()
        server = await start_server(broker, sock=sock)
        client = socket.create_connection(sock.getsockname())  # waits in the backlog: the accept fails
        try:
            await asyncio.wait_for(until(lambda: "cannot accept connections" in caplog.text), TIMEOUT)
            # asyncio tries again every second, and every listening socket reports its own: the same report again
            failure = {"message": "socket.accept() out of system resource", "exception": OSError(errno.EMFILE, "x")}
            for _ in range(20):
                loop.call_exception_handler(failure)
            reports = [r for r in caplog.records if "accept" in r.getMessage()]
            assert len(reports) == 1, [r.getMessage() for r in reports]
            assert reports[0].levelno == logging.WARNING and "Too many open files" in reports[0].getMessage()
            assert not any(r.exc_info for r in reports)  # no traceback
        finally:
            client.close()
            await server.close()


async def test_other_loop_errors_still_reach_the_handler_before(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    try:
        async with Broker(clock=ManualClock(autojump=True)) as broker:
            server = await start_server(broker, port=0)
            loop.call_exception_handler({"message": "something else"})
            await server.close()
        assert [c["message"] for c in seen] == ["something else"]
    finally:
        loop.set_exception_handler(previous)
