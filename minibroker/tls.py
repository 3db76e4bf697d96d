"""TLS for the listeners (ActiveMQ's ``ssl://`` and ``stomp+ssl://`` transports): one home for the settings and the
server-side ``ssl.SSLContext`` built from them, shared by ``minibroker serve``, ``broker.toml`` and the fixtures.

ActiveMQ takes its key and certificate from a Java key store and asks for client certificates with the transport
options ``needClientAuth`` / ``wantClientAuth``; here they are PEM files and ``client_auth = "need" | "want" |
"none"``. ``ca`` is the PEM bundle client certificates are checked against (required for ``want`` and ``need``).
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import attrs

from .errors import InvalidConfiguration

__all__ = ["CLIENT_AUTH", "TlsSettings", "server_context"]

#: ``client_auth`` values, and the ``ssl`` verify mode each means
CLIENT_AUTH = {"none": ssl.CERT_NONE, "want": ssl.CERT_OPTIONAL, "need": ssl.CERT_REQUIRED}


@attrs.frozen(slots=True)
class TlsSettings:
    """PEM files for a TLS listener: the server's certificate chain and key, and how client certificates are asked
    for (``client_auth``, ActiveMQ's ``needClientAuth``/``wantClientAuth``) and checked (``ca``)."""

    cert: Path
    key: Path | None = None
    ca: Path | None = None
    client_auth: str = "none"

    def __attrs_post_init__(self) -> None:
        if self.client_auth not in CLIENT_AUTH:
            raise InvalidConfiguration(
                f"client_auth: expected none, want or need, not {self.client_auth!r}",
                option="client_auth",
                value=self.client_auth,
            )
        if self.client_auth != "none" and self.ca is None:
            raise InvalidConfiguration(
                f"client_auth = {self.client_auth!r} needs a CA file (ca) to check client certificates against",
                option="ca",
            )


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """A server-side context (TLS 1.2 or later) from ``settings``; :class:`InvalidConfiguration` naming the file that
    cannot be read or used."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(os.fspath(settings.cert), None if settings.key is None else os.fspath(settings.key))
    except (OSError, ssl.SSLError) as exc:
        files = str(settings.cert) + ("" if settings.key is None else f" / {settings.key}")
        raise InvalidConfiguration(
            f"TLS certificate {files}: {getattr(exc, 'strerror', None) or exc}", option="cert", value=str(settings.cert)
        ) from None
    if settings.ca is not None:
        try:
            context.load_verify_locations(cafile=os.fspath(settings.ca))
        except (OSError, ssl.SSLError) as exc:
            raise InvalidConfiguration(
                f"TLS CA file {settings.ca}: {getattr(exc, 'strerror', None) or exc}",
                option="ca",
                value=str(settings.ca),
            ) from None
    context.verify_mode = CLIENT_AUTH[settings.client_auth]
    return context
