"""``minibroker.plugins.redelivery`` is :mod:`minibroker.plugins.filters.redelivery` (plugins/ is grouped by
kind): this public name stays, as the same module object."""

import sys
from typing import TYPE_CHECKING

from .filters import redelivery as _module

if TYPE_CHECKING:
    from .filters.redelivery import *  # noqa: F403 - what type checkers see under this name

sys.modules[__name__] = _module
