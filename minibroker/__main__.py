"""``python -m minibroker`` and the ``minibroker`` command."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from minibroker.plugins.server.cli import main as cli_main

    return int(cli_main(argv))


if __name__ == "__main__":
    sys.exit(main())
