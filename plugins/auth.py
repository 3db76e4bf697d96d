"""``minibroker.plugins.auth`` is :mod:`minibroker.plugins.filters.auth` (plugins/ is grouped by kind): this public name
stays, as the same module object."""

import sys
from typing import TYPE_CHECKING

from .filters import auth as _module

if TYPE_CHECKING:
    from .filters.auth import *  # noqa: F403 - what type checkers see under this name

sys.modules[__name__] = _module
