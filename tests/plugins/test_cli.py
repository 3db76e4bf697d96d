"""The ``minibroker`` command's rough edges (issue 20): every mistake is one clear line and a non-zero exit, limits
are never silently replaced, data-directory problems come before the URL, ``--version``, and a refused ``stat``
says which options it wants."""

from __future__ import annotations

import importlib.metadata
import socket
import sys
from pathlib import Path

import pytest
from support.servekit import MINIBROKER, run, serve

import minibroker
from minibroker.__main__ import main


def one_line(err: str) -> str:
    """The single line of ``err`` (the test fails on a traceback or anything else around it)."""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


# -- --version ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [(MINIBROKER,), (sys.executable, "-m", "minibroker")])
async def test_version(command: tuple[str, ...], tmp_path: Path) -> None:
    code, out, err = await run(*command, "--version", cwd=tmp_path)
    assert (code, err) == (0, "")
    assert out == f"minibroker {importlib.metadata.version('minibroker')}\n"
    assert out.split()[1] == minibroker.__version__


# -- redelivery-plan ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("maximumRedelivries=3", "unknown redelivery policy option 'maximumRedelivries'"),
        ("maximumRedeliveries=abc", "redelivery policy maximumRedeliveries='abc': expected an integer"),
        (
            "maximumRedeliveries=-5",
            "redelivery policy maximumRedeliveries='-5': expected -1 (unlimited) or a count >= 0",
        ),
    ],
)
async def test_redelivery_plan_bad_option_is_one_line(option: str, message: str, tmp_path: Path) -> None:
    code, out, err = await run(MINIBROKER, "redelivery-plan", option, cwd=tmp_path)
    assert (code, out) == (1, "")
    assert one_line(err).startswith(f"minibroker redelivery-plan: {message}")


async def test_redelivery_plan_without_equals_is_a_usage_error(tmp_path: Path) -> None:
    code, out, err = await run(MINIBROKER, "redelivery-plan", "maximumRedeliveries", cwd=tmp_path)
    assert (code, out) == (2, "")
    assert one_line(err) == "minibroker redelivery-plan: expected NAME=VALUE, got 'maximumRedeliveries'"


async def test_log_level_debug_shows_the_traceback(tmp_path: Path) -> None:
    code, out, err = await run(MINIBROKER, "redelivery-plan", "--log-level", "debug", "nope=1", cwd=tmp_path)
    assert (code, out) == (1, "")
    assert err.startswith("Traceback") and "InvalidConfiguration" in err
    assert err.splitlines()[-1].startswith("minibroker redelivery-plan: unknown redelivery policy option 'nope'")


async def test_redelivery_plan_still_prints_the_plan(tmp_path: Path) -> None:
    code, out, err = await run(MINIBROKER, "redelivery-plan", "maximumRedeliveries=1", cwd=tmp_path)
    assert (code, err) == (0, "")
    assert out.strip().splitlines()[-1] == "2 deliveries within 1.0 s, then ActiveMQ.DLQ"


# -- serve: limits and the data directory, refused before the URL -----------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--max-connections", "0"], "max_connections must be at least 1, not 0"),
        (["--max-frame-size", "0"], "max_frame_size must be at least 1024 bytes, not 0"),
    ],
)
async def test_a_zero_limit_is_refused_not_replaced(options: list[str], message: str, tmp_path: Path) -> None:
    code, out, err = await run(MINIBROKER, "serve", "--port", "0", *options, cwd=tmp_path)
    assert (code, out) == (1, "")
    assert one_line(err) == f"minibroker serve: {message}"


async def test_a_file_where_the_data_directory_should_be(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a directory")
    code, out, err = await run(MINIBROKER, "serve", "--port", "0", "--data-dir", "data", cwd=tmp_path)
    assert (code, out) == (1, "")
    assert one_line(err) == (
        "minibroker serve: the data directory data is a file, not a directory: name a directory (it is made)"
    )


async def test_a_data_directory_that_cannot_be_created(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    code, out, err = await run(MINIBROKER, "serve", "--port", "0", "--data-dir", "file/data", cwd=tmp_path)
    assert (code, out) == (1, "")
    assert one_line(err).startswith("minibroker serve: cannot open the message store in file/data: ")


async def test_a_new_data_directory_is_created_and_used(tmp_path: Path) -> None:
    served = await serve(tmp_path, "--data-dir", "new/data")
    try:
        assert (tmp_path / "new" / "data").is_dir()  # made before the URL was printed
    finally:
        assert await served.stop() == 0
    assert (tmp_path / "new" / "data" / "minibroker.sqlite3").is_file()


# -- stat, purge, browse against a broker with users --------------------------------------------------------------


async def test_a_refused_stat_hints_at_user(tmp_path: Path) -> None:
    (tmp_path / "broker.toml").write_text('[users.admin]\npassword = "pw"\ngroups = ["admins"]\n')
    served = await serve(tmp_path, "--config", "broker.toml")
    try:
        env = {"PATH": str(Path(MINIBROKER).parent)}  # no $MINIBROKER_USER from the caller's environment
        for command in (["stat"], ["purge", "q"], ["browse", "q"]):
            code, out, err = await run(MINIBROKER, *command, "--url", served.url, cwd=tmp_path, env=env)
            assert (code, out) == (1, "")
            line = one_line(err)
            assert line.startswith(f"minibroker {command[0]}: User name [null] or password is invalid.")
            assert "--user" in line and "MINIBROKER_USER" in line
        # with a user name the refusal is the broker's text alone: the options were given
        code, out, err = await run(
            MINIBROKER, "stat", "--url", served.url, "--user", "admin", "--password", "x", cwd=tmp_path, env=env
        )
        assert (code, out) == (1, "")
        assert one_line(err) == "minibroker stat: User name [admin] or password is invalid."
        code, out, err = await run(
            MINIBROKER, "stat", "--url", served.url, "--user", "admin", "--password", "pw", cwd=tmp_path, env=env
        )
        assert (code, err) == (0, "")
    finally:
        assert await served.stop() == 0


@pytest.mark.parametrize("command", [["stat"], ["purge", "q"], ["browse", "q"]])
async def test_client_commands_take_log_level(command: list[str], tmp_path: Path) -> None:
    code, out, err = await run(MINIBROKER, *command, "--url", "tcp://127.0.0.1:1", "--log-level", "debug", cwd=tmp_path)
    assert (code, out) == (1, "")
    assert "Traceback" in err and err.splitlines()[-1].startswith(f"minibroker {command[0]}: cannot connect to")


async def test_an_empty_data_directory_name_is_refused(tmp_path: Path) -> None:
    code, out, err = await run(MINIBROKER, "serve", "--port", "0", "--data-dir", "", cwd=tmp_path)
    assert (code, out) == (1, "")
    assert one_line(err) == "minibroker serve: the data directory must be named (an empty path is not one)"


def test_a_host_that_does_not_resolve_is_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_such_host(host: str | None, *args: object, **kwargs: object) -> list[object]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    assert main(["serve", "--host", "no-such-host.invalid", "--port", "0"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert one_line(err) == (
        f"minibroker serve: [Errno {socket.EAI_NONAME}] cannot resolve host "
        "'no-such-host.invalid': Name or service not known"
    )


async def test_serve_shows_the_traceback_of_an_early_error_under_debug(tmp_path: Path) -> None:
    code, out, err = await run(MINIBROKER, "serve", "--port", "70000", "--log-level", "debug", cwd=tmp_path)
    assert (code, out) == (1, "")
    assert err.startswith("Traceback") and err.splitlines()[-1] == "minibroker serve: port must be 0-65535, not 70000"


class TestRoughEdges:
    """issue 32, item 7: the command line's last rough edges."""

    def test_bare_minibroker_prints_the_help(self, capsys: pytest.CaptureFixture[str]) -> None:
        from minibroker.plugins.server.cli import main

        assert main([]) == 0
        assert "usage: minibroker" in capsys.readouterr().out

    def test_an_unknown_option_of_a_subcommand_shows_that_subcommand_s_usage(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from minibroker.plugins.server.cli import main

        with pytest.raises(SystemExit) as exit_info:
            main(["stat", "--bogus"])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("usage: minibroker stat") and "unrecognized arguments: --bogus" in err

    def test_max_frame_size_takes_a_size_as_broker_toml_does(self) -> None:
        from minibroker.plugins.server.cli import build_parser

        parser = build_parser()
        assert parser.parse_args(["serve", "--max-frame-size", "4 MiB"]).max_frame_size == 4 * 2**20
        assert parser.parse_args(["serve", "--max-frame-size", "65536"]).max_frame_size == 65536
