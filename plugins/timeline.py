"""``minibroker.plugins.timeline`` is :mod:`minibroker.plugins.testing.timeline` (plugins/ is grouped by kind): this
public name stays, as the same module object."""

import sys
from typing import TYPE_CHECKING

from .testing import timeline as _module

if TYPE_CHECKING:
    from .testing.timeline import *  # noqa: F403 - what type checkers see under this name

sys.modules[__name__] = _module
