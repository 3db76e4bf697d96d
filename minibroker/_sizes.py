"""Sizes as people write them (``"64 MiB"``, ``"512kb"``, ``4096``): one parser for ``broker.toml`` and the command
line. Standard library only: ``minibroker serve`` reads its options before it imports the broker."""

from __future__ import annotations

import re

__all__ = ["parse_size"]

_UNITS = {"": 1, "b": 1, "kb": 1000, "kib": 1024, "mb": 1000**2, "mib": 1024**2, "gb": 1000**3, "gib": 1024**3}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: object) -> int:
    """Bytes from an integer or a string such as ``"64 MiB"``, ``"512kb"``, ``"1.5 GB"``."""
    if isinstance(value, bool):
        raise ValueError("expected a size (bytes or a string like '64 MiB'), not a boolean")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"a size cannot be negative ({value})")
        return value
    if isinstance(value, str):
        m = _SIZE.match(value)
        if m is not None and m.group(2).lower() in _UNITS:
            return int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    raise ValueError(f"expected a size (bytes or a string like '64 MiB'), not {value!r}")
