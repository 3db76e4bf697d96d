"""What the OpenWire edge refuses: the rows ``openwire-*`` of :data:`minibroker.features.FEATURES` (the fidelity
matrix's OpenWire rows), worded by :func:`minibroker.refusals.refuse` as every edge's refusals are, so a client
reading the ExceptionResponse and :class:`~minibroker.errors.UnsupportedFeature`'s ``feature`` see the same thing.
"""

from __future__ import annotations

from minibroker.errors import UnsupportedFeature
from minibroker.refusals import refuse

__all__ = ["refuse_openwire"]


def refuse_openwire(feature_id: str, value: object) -> UnsupportedFeature:
    """The error for ``value``, an input of the refused row ``feature_id`` (raise it)."""
    return refuse(feature_id, value)
