"""``minibroker.plugins.factories`` is :mod:`minibroker.plugins.testing.factories` (plugins/ is grouped by kind): this
public name stays, as the same module object."""

import sys
from typing import TYPE_CHECKING

from .testing import factories as _module

if TYPE_CHECKING:
    from .testing.factories import *  # noqa: F403 - what type checkers see under this name

sys.modules[__name__] = _module
