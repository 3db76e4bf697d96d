"""``minibroker doctor``: one line per check of what ``serve`` would need (or of the broker at ``--url``), exit 1 when
one failed, and nothing made or started."""

from __future__ import annotations

from pathlib import Path

from support.servekit import MINIBROKER, run, serve

from minibroker.client import connect


def checks(out: str) -> dict[str, str]:
    """The report's lines by what they check (the text before the first ": "), without the version line."""
    lines = out.splitlines()
    assert lines[0].startswith("ok    minibroker ")
    return {line[6:].split(": ", 1)[0]: line for line in lines[1:]}


async def test_good_settings_pass_and_nothing_is_made(tmp_path: Path) -> None:
    code, out, err = await run(
        MINIBROKER, "doctor", "--port", "0", "--stomp-port", "0", "--data-dir", "new/data", cwd=tmp_path
    )
    assert (code, err) == (0, "")
    found = checks(out)
    assert set(found) == {"limits", "tcp port 127.0.0.1:0", "stomp port 127.0.0.1:0", "data directory new/data"}
    assert all(line.startswith("ok    ") for line in found.values())
    assert found["data directory new/data"].endswith("does not exist yet (serve makes it)")
    assert list(tmp_path.iterdir()) == []


async def test_every_problem_is_a_fail_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    code, out, _ = await run(
        MINIBROKER, "doctor", "--port", "0", "--max-frame-size", "0", "--data-dir", "file/data", cwd=tmp_path
    )
    assert code == 1
    found = checks(out)
    assert found["limits"] == "FAIL  limits: max_frame_size must be at least 1024 bytes, not 0"
    assert found["data directory file/data"] == (
        f"FAIL  data directory file/data: cannot be made: {tmp_path / 'file'} is not a directory"
    )
    (tmp_path / "broker.toml").write_text("[limits]\nmax_conections = 3\n")
    code, out, _ = await run(MINIBROKER, "doctor", "--config", "broker.toml", cwd=tmp_path)
    assert code == 1 and checks(out)["config"].startswith("FAIL  config: ")
    assert "max_conections" in out


async def test_an_unreadable_store_fails_before_serve_would_print_its_url(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "minibroker.sqlite3").write_text("a text file, not SQLite")
    code, out, _ = await run(MINIBROKER, "doctor", "--port", "0", "--data-dir", "data", cwd=tmp_path)
    assert code == 1
    assert checks(out)["data directory data"].endswith("file is not a database")


async def test_a_running_broker_holds_its_port_and_directory_and_answers(tmp_path: Path) -> None:
    (tmp_path / "broker.toml").write_text(
        '[users.admin]\npassword = "pw"\ngroups = ["admins"]\n'
        '[[authorization]]\ndestination = ">"\nread = ["admins"]\n'
        'write = ["admins"]\nadmin = ["admins"]\n'
    )
    served = await serve(tmp_path, "--config", "broker.toml", "--data-dir", "data")
    try:
        async with await connect(served.url, user="admin", password="pw") as conn:
            producer = await (await conn.create_session()).create_producer("orders")
            await producer.send("kept", persistent=True)
        port = served.url.rsplit(":", 1)[1]
        code, out, _ = await run(MINIBROKER, "doctor", "--port", port, "--data-dir", "data", cwd=tmp_path)
        assert code == 1
        found = checks(out)
        assert found[f"tcp port 127.0.0.1:{port}"].startswith("FAIL  ")
        assert found[f"tcp port 127.0.0.1:{port}"].endswith("address already in use")
        assert (
            found["data directory data"] == "FAIL  data directory data: the message store in data is in use by "
            "another broker"
        )
        env = {"PATH": str(Path(MINIBROKER).parent)}
        code, out, _ = await run(MINIBROKER, "doctor", "--url", served.url, cwd=tmp_path, env=env)
        assert code == 1
        line = checks(out)[f"broker at {served.url}"]
        assert line.startswith("FAIL  ") and "User name [null] or password is invalid." in line and "--user" in line
        code, out, _ = await run(
            MINIBROKER, "doctor", "--url", served.url, "--user", "admin", "--password", "pw", cwd=tmp_path, env=env
        )
        assert code == 0
        line = checks(out)[f"broker at {served.url}"]
        assert line == f"ok    broker at {served.url}: answers (as admin), 1 queue readable"
    finally:
        assert await served.stop() == 0
    code, out, _ = await run(MINIBROKER, "doctor", "--port", "0", "--data-dir", "data", cwd=tmp_path)
    assert code == 0
    assert checks(out)["data directory data"] == (
        "ok    data directory data: 1 persistent message in 1 queue, 0 scheduled"
    )
