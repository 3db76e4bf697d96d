"""``minibroker doctor``: would ``minibroker serve`` start with these settings, or, with ``--url``, does that broker
answer this login?

A CI job or a developer can ask before starting a broker (or when a client cannot reach one) instead of reading a
failed run's logs. Each check prints one line, ``ok`` or ``FAIL`` and what it found, and the command exits 1 when one
failed. Nothing is started and nothing is made: a data directory that does not exist yet is only checked to be
creatable. Unlike ``serve``, it also reads the stored messages, so an unreadable store shows here, not after the URL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
from importlib.metadata import version
from pathlib import Path

from minibroker._data_dir_lock import data_dir_in_use, in_use_message
from minibroker._defaults import check_limits
from minibroker.errors import AccessDenied, MinibrokerError
from minibroker.tls import TlsSettings

from .admin import ask_broker
from .binding import close_all, listen
from .cli import USER_HINT, ServeSettings

__all__ = ["doctor_main"]


class _Report:
    """The checks' lines, printed as they come (a slow check shows where it is)."""

    def __init__(self) -> None:
        self.failures = 0

    def ok(self, text: str) -> None:
        print(f"ok    {text}", flush=True)

    def fail(self, text: str) -> None:
        print(f"FAIL  {text}", flush=True)
        self.failures += 1

    def warn(self, text: str) -> None:
        """Allowed, probably not meant: said, not counted as a failure."""
        print(f"warn  {text}", flush=True)


def doctor_main(args: argparse.Namespace) -> int:
    report = _Report()
    report.ok(f"minibroker {version('minibroker')}, Python {platform.python_version()}, attrs {version('attrs')}")
    if args.url is not None:
        _check_broker(report, args)
    else:
        _check_serve_settings(report, args)
    return 1 if report.failures else 0


def _check_serve_settings(report: _Report, args: argparse.Namespace) -> None:
    try:
        settings = ServeSettings(args)
    except (MinibrokerError, ValueError) as exc:  # the config file: nothing else can be judged without it
        report.fail(f"config: {exc}")
        return
    if args.config is not None:
        report.ok(f"config {args.config}")
    try:
        check_limits(settings.max_frame_size, settings.max_connections)
    except ValueError as exc:
        report.fail(f"limits: {exc}")
    else:
        report.ok(f"limits: frames up to {settings.max_frame_size} bytes, {settings.max_connections} connections")
    _check_port(report, "tcp", settings.host, settings.port)
    for scheme, port in (
        ("stomp", settings.stomp_port),
        ("ssl", settings.ssl_port),
        ("stomp+ssl", settings.stomp_ssl_port),
        ("mqtt", settings.mqtt_port),
        ("mqtt+ssl", settings.mqtt_ssl_port),
        ("http", settings.http_port),
        ("https", settings.https_port),
    ):
        if port is not None:
            _check_port(report, scheme, settings.host, port)
    if settings.tls is not None:
        _check_tls(report, settings.tls)
    _check_data_dir(report, settings.data_dir, wait_for_lock=settings.wait_for_lock)
    for warning in settings.config.warnings() if settings.config is not None else ():
        report.warn(f"config: {warning}")


def _check_tls(report: _Report, tls: TlsSettings) -> None:
    from minibroker.tls import server_context

    try:
        server_context(tls)
    except MinibrokerError as exc:
        report.fail(f"tls: {exc}")
    else:
        report.ok(f"tls: certificate {tls.cert} loads (client certificates: {tls.client_auth})")


def _check_port(report: _Report, scheme: str, host: str, port: int) -> None:
    what = f"{scheme} port {host}:{port}"
    try:
        close_all(listen(host, port))
    except (OSError, ValueError) as exc:
        report.fail(f"{what}: {exc}")
    else:
        report.ok(f"{what}: free" if port else f"{what}: a free port will be picked")


def _check_data_dir(report: _Report, directory: str | os.PathLike[str] | None, *, wait_for_lock: bool = False) -> None:
    if directory is None:
        report.ok("data directory: none (persistent messages are kept in memory)")
        return
    name = os.fspath(directory)
    what = f"data directory {name}"
    if not name:
        report.fail("data directory: the data directory must be named (an empty path is not one)")
    elif not os.path.exists(directory):
        problem = _why_not_creatable(Path(directory))
        if problem is None:
            report.ok(f"{what}: does not exist yet (serve makes it)")
        else:
            report.fail(f"{what}: cannot be made: {problem}")
    elif not os.path.isdir(directory):
        report.fail(f"{what}: not a directory")
    elif (in_use := data_dir_in_use(directory)) is not None:
        held = in_use == in_use_message(directory)
        if held and wait_for_lock:  # a shared-storage slave: waiting is what it is for
            report.warn(f"{what}: {in_use}: serve waits for it as a slave (--wait-for-lock) until that broker stops")
        else:
            report.fail(f"{what}: {in_use}")
    else:
        _check_store(report, what, directory)


def _why_not_creatable(path: Path) -> str | None:
    """Why ``os.makedirs(path)`` would fail, found without making anything: the nearest existing ancestor must be a
    directory this process may write in."""
    ancestor = path.absolute().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is not a directory"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"no permission to write in {ancestor}"
    return None


def _check_store(report: _Report, what: str, directory: str | os.PathLike[str]) -> None:
    """Open the store and read every message as the broker will at start (decoding included)."""
    from minibroker.store import DATABASE_NAME, SqliteStore

    if not (Path(directory) / DATABASE_NAME).exists():
        report.ok(f"{what}: no messages stored yet")
        return
    try:
        store = SqliteStore(directory)
        try:
            state = store.load()
        finally:
            store.close()
    except MinibrokerError as exc:
        report.fail(f"{what}: {exc}")
        return
    queues = {stored.queue for stored in state.messages}
    report.ok(
        f"{what}: {_count(len(state.messages), 'persistent message')} in {_count(len(queues), 'queue')}, "
        f"{len(state.scheduled)} scheduled"
    )


def _check_broker(report: _Report, args: argparse.Namespace) -> None:
    what = f"broker at {args.url}"
    try:
        queues = asyncio.run(ask_broker(args, lambda link: link.list_queues()))
    except (MinibrokerError, OSError) as exc:
        hint = f" {USER_HINT}" if isinstance(exc, AccessDenied) and args.user is None else ""
        report.fail(f"{what}: {exc}{hint}")
    else:
        login = "anonymous" if args.user is None else f"as {args.user}"
        report.ok(f"{what}: answers ({login}), {_count(len(queues), 'queue')} readable")


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}{'' if n == 1 else 's'}"
