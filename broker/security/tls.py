"""TLS contexts from Kafka's `ssl.*` settings (Kafka's SslFactory / DefaultSslEngineFactory, in Python's ssl).

Key stores: PEM (a file with the private key and certificate chain, or the PEM text itself in
`ssl.keystore.key` + `ssl.keystore.certificate.chain`) and PKCS12; trust stores: PEM (a file, or the text in
`ssl.truststore.certificates`) and PKCS12. Java's JKS format is refused with a way to convert it.
`ssl.client.auth` none|requested|required, `ssl.enabled.protocols` (TLSv1.2, TLSv1.3), `ssl.cipher.suites`
by their IANA names as Java writes them (TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384).
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass

CLIENT_AUTH = ("none", "requested", "required")
PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3,
             "TLSv1.1": ssl.TLSVersion.TLSv1_1, "TLSv1": ssl.TLSVersion.TLSv1}

# IANA (Java) names of the TLS 1.2 suites OpenSSL offers, and OpenSSL's names for them.
TLS12_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "DHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256": "DHE-RSA-AES256-SHA256",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256": "DHE-RSA-AES128-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA256": "AES256-SHA256",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
}
TLS13_SUITES = ("TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256",
                "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256")


class TlsConfigError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class SslSettings:
    """Kafka's ssl.* settings of one listener (or of the broker's own client side)."""

    keystore_type: str = "PEM"
    keystore_location: str | None = None
    keystore_password: str | None = None
    key_password: str | None = None
    keystore_key: str | None = None  # PEM text of the private key
    keystore_certificate_chain: str | None = None  # PEM text of the certificate chain
    truststore_type: str = "PEM"
    truststore_location: str | None = None
    truststore_password: str | None = None
    truststore_certificates: str | None = None  # PEM text of trusted certificates
    client_auth: str = "none"
    enabled_protocols: str = "TLSv1.2,TLSv1.3"
    cipher_suites: str = ""
    endpoint_identification_algorithm: str = "https"  # client side: check the server's host name
    principal_mapping_rules: str = "DEFAULT"

    @classmethod
    def from_lookup(cls, get: Callable[[str], str | None]) -> SslSettings:
        """Built from Kafka-named settings: `get("ssl.keystore.location")` -> value or None."""
        values = {}
        for name in cls.__dataclass_fields__:
            value = get("ssl." + name.replace("_", "."))
            if value is not None:
                values[name] = value
        return cls(**values)

    @property
    def has_keystore(self) -> bool:
        return bool(self.keystore_location or self.keystore_certificate_chain)


def _protocols(settings: SslSettings) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    names = [p.strip() for p in settings.enabled_protocols.split(",") if p.strip()]
    if not names:
        raise TlsConfigError("ssl.enabled.protocols names no protocol")
    unknown = [n for n in names if n not in PROTOCOLS]
    if unknown:
        raise TlsConfigError(f"ssl.enabled.protocols: unknown protocol(s) {', '.join(unknown)} "
                             f"(known: {', '.join(PROTOCOLS)})")
    versions = sorted(PROTOCOLS[n] for n in names)
    return versions[0], versions[-1]


def _apply_protocols_and_ciphers(ctx: ssl.SSLContext, settings: SslSettings) -> None:
    lowest, highest = _protocols(settings)
    suites = [s.strip() for s in settings.cipher_suites.split(",") if s.strip()]
    if suites:
        unknown = [s for s in suites if s not in TLS12_SUITES and s not in TLS13_SUITES]
        if unknown:
            raise TlsConfigError(f"ssl.cipher.suites: unknown or unsupported suite(s) {', '.join(unknown)}")
        tls12 = [TLS12_SUITES[s] for s in suites if s in TLS12_SUITES]
        if tls12:
            ctx.set_ciphers(":".join(tls12))
        elif highest < ssl.TLSVersion.TLSv1_3:
            raise TlsConfigError("ssl.cipher.suites names no suite of the protocols in ssl.enabled.protocols")
        else:
            lowest = max(lowest, ssl.TLSVersion.TLSv1_3)  # only TLS 1.3 suites named
        if not any(s in TLS13_SUITES for s in suites):
            # No TLS 1.3 suite named: as in Java, TLS 1.3 cannot be negotiated. (OpenSSL's TLS 1.3 suites
            # cannot be narrowed from Python; naming any of them keeps all of them.)
            if lowest >= ssl.TLSVersion.TLSv1_3:
                raise TlsConfigError("ssl.cipher.suites names no suite of the protocols in ssl.enabled.protocols")
            highest = min(highest, ssl.TLSVersion.TLSv1_2)
    ctx.minimum_version = lowest
    ctx.maximum_version = highest


@contextlib.contextmanager
def _private_file(data: bytes) -> Iterator[str]:
    """A file only this user can read, for ssl's loaders that take paths; removed right after use."""
    fd, path = tempfile.mkstemp(prefix="minibroker-key-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        yield path
    finally:
        os.unlink(path)


def _pkcs12(path: str, password: str | None) -> tuple[bytes, bytes, list[bytes]]:
    """(private key PEM, certificate PEM, [other certificates' PEM]) of a PKCS12 store."""
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, pkcs12

    with open(path, "rb") as f:
        key, cert, extra = pkcs12.load_key_and_certificates(f.read(), password.encode() if password else None)
    key_pem = b"" if key is None else key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    cert_pem = b"" if cert is None else cert.public_bytes(Encoding.PEM)
    return key_pem, cert_pem, [c.public_bytes(Encoding.PEM) for c in extra]


def _refuse_jks(kind: str, store_type: str) -> None:
    if store_type.upper() == "JKS":
        raise TlsConfigError(f"ssl.{kind}.type JKS is Java's own format: convert it with `keytool -importkeystore "
                             f"-srckeystore FILE.jks -destkeystore FILE.p12 -deststoretype PKCS12` and use PKCS12")
    if store_type.upper() not in ("PEM", "PKCS12"):
        raise TlsConfigError(f"ssl.{kind}.type must be PEM or PKCS12, not {store_type}")


def _load_keystore(ctx: ssl.SSLContext, settings: SslSettings) -> None:
    _refuse_jks("keystore", settings.keystore_type)
    password = settings.key_password or settings.keystore_password or None
    try:
        if settings.keystore_certificate_chain:
            if not settings.keystore_key:
                raise TlsConfigError("ssl.keystore.certificate.chain needs ssl.keystore.key")
            data = (settings.keystore_key.strip() + "\n" + settings.keystore_certificate_chain.strip() + "\n").encode()
            with _private_file(data) as path:
                ctx.load_cert_chain(path, password=password)
        elif settings.keystore_type.upper() == "PKCS12":
            assert settings.keystore_location is not None
            key, cert, extra = _pkcs12(settings.keystore_location, settings.keystore_password)
            with _private_file(key + cert + b"".join(extra)) as path:
                ctx.load_cert_chain(path)
        else:
            assert settings.keystore_location is not None
            ctx.load_cert_chain(settings.keystore_location, password=password)
    except (ssl.SSLError, OSError, ValueError) as exc:
        if isinstance(exc, TlsConfigError):
            raise
        raise TlsConfigError(f"cannot load the key store ({settings.keystore_location or 'ssl.keystore.key'}): "
                             f"{exc}") from None


def _load_truststore(ctx: ssl.SSLContext, settings: SslSettings) -> bool:
    """Trust the configured certificates; False when none are configured."""
    _refuse_jks("truststore", settings.truststore_type)
    try:
        if settings.truststore_certificates:
            ctx.load_verify_locations(cadata=settings.truststore_certificates)
        elif settings.truststore_location:
            if settings.truststore_type.upper() == "PKCS12":
                key, cert, extra = _pkcs12(settings.truststore_location, settings.truststore_password)
                ctx.load_verify_locations(cadata=(cert + b"".join(extra)).decode())
            else:
                ctx.load_verify_locations(cafile=settings.truststore_location)
        else:
            return False
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise TlsConfigError(f"cannot load the trust store ({settings.truststore_location or 'certificates'}): "
                             f"{exc}") from None
    return True


def server_context(settings: SslSettings) -> ssl.SSLContext:
    """The context of an SSL or SASL_SSL listener."""
    if settings.client_auth not in CLIENT_AUTH:
        raise TlsConfigError(f"ssl.client.auth must be one of {', '.join(CLIENT_AUTH)}, not {settings.client_auth}")
    if not settings.has_keystore:
        raise TlsConfigError("an SSL listener needs ssl.keystore.location (or ssl.keystore.certificate.chain and "
                             "ssl.keystore.key)")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.options |= ssl.OP_NO_COMPRESSION
    _apply_protocols_and_ciphers(ctx, settings)
    _load_keystore(ctx, settings)
    if settings.client_auth != "none":
        if not _load_truststore(ctx, settings):
            ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        ctx.verify_mode = ssl.CERT_REQUIRED if settings.client_auth == "required" else ssl.CERT_OPTIONAL
    return ctx


def client_context(settings: SslSettings) -> ssl.SSLContext:
    """The context of a connection this broker opens (inter-broker), or of a test client."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _apply_protocols_and_ciphers(ctx, settings)
    if not _load_truststore(ctx, settings):
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    ctx.check_hostname = settings.endpoint_identification_algorithm.lower() == "https"
    if settings.has_keystore:
        _load_keystore(ctx, settings)
    return ctx
