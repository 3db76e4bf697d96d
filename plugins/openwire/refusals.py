"""What the OpenWire edge refuses, worded as :func:`minibroker.refusals.refuse` words its refusals.

These rows belong in :data:`minibroker.features.FEATURES` (the fidelity matrix's OpenWire rows, issue 44); until
they are there, they live here, with the same message shape (``Unsupported feature [<id>]: ...``) so that a client
reading the ExceptionResponse, and :class:`~minibroker.errors.UnsupportedFeature`'s ``feature``, see the same thing.
"""

from __future__ import annotations

from typing import Final

from minibroker.errors import UnsupportedFeature

__all__ = ["OPENWIRE_REFUSALS", "refuse_openwire"]

#: feature id -> (the input, why it is refused)
OPENWIRE_REFUSALS: Final[dict[str, tuple[str, str]]] = {
    "openwire-xa-transaction": (
        "an XA transaction (XATransactionId, TransactionInfo PREPARE/END/RECOVER/FORGET/two-phase commit)",
        "minibroker has local transactions only",
    ),
    "openwire-network-bridge": (
        "a network bridge or broker-to-broker command (BrokerInfo from a client, duplex or network "
        "ConnectionInfo, network subscriptions, MessageDispatchNotification, BrokerSubscriptionInfo)",
        "minibroker is a single broker",
    ),
    "openwire-blob-message": ("a BlobMessage", "minibroker does not fetch or store blobs"),
    "openwire-nested-property": (
        "a message property holding a map or a list (ActiveMQ's nested properties)",
        "minibroker's property values are JMS primitives",
    ),
    "openwire-replay": ("a ReplayCommand or a PartialCommand (reliable UDP)", "minibroker speaks TCP only"),
    "openwire-control-command": (
        "a ControlCommand, or a ConsumerControl that closes, flushes, starts or stops a consumer or changes the "
        "prefetch of one that may hold messages",
        "minibroker's connections cannot change a subscription in place (a failover client's restore is done)",
    ),
    "openwire-unknown-command": ("a command the broker never receives", "it has no meaning sent to a broker"),
}


def refuse_openwire(feature_id: str, value: object) -> UnsupportedFeature:
    """The error for ``value``, an input of the refused row ``feature_id`` (raise it)."""
    what, why = OPENWIRE_REFUSALS[feature_id]
    return UnsupportedFeature(
        f"Unsupported feature [{feature_id}]: {what} ({value!r}) is not supported by minibroker: {why}",
        feature=feature_id,
        value=value,
    )
