"""``minibroker stat | head``: a command whose reader left ends quietly, as a Unix tool does (issue 43, item 7)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MINIBROKER = str(Path(sys.executable).with_name("minibroker"))


@pytest.mark.parametrize("buffered", [True, False], ids=["pipe-buffered", "unbuffered"])
def test_a_closed_pipe_ends_quietly(buffered: bool, tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader (head) is gone before the first line is written
    env = dict(os.environ)
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"  # the write itself meets the closed pipe, not the flush
    try:
        done = subprocess.run(
            [MINIBROKER, "redelivery-plan", "maximumRedeliveries=3"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 141
