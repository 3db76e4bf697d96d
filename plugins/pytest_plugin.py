"""``minibroker.plugins.pytest_plugin`` is :mod:`minibroker.plugins.testing.pytest_plugin` (plugins/ is grouped
by kind): this public name stays, as the same module object."""

import sys
from typing import TYPE_CHECKING

from .testing import pytest_plugin as _module

if TYPE_CHECKING:
    from .testing.pytest_plugin import *  # noqa: F403 - what type checkers see under this name

sys.modules[__name__] = _module
