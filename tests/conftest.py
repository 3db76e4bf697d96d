"""Shared test setup: makes the helper modules in ``tests/support`` (``scriptrunner``) importable.

This file lives in ``tests/``, not at the repository root, so the source tree never shadows the installed package.
"""

from __future__ import annotations

import sys
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))
