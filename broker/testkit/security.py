"""Secured test brokers: a throw-away CA and certificates (trustme), the broker's settings for one listener,
and ready-made client settings for kafka-python, confluent-kafka and aiokafka.

    kit = SecurityKit("SASL_SSL", users={"alice": "secret"}, directory=tmp_path)
    broker = BrokerThread(data_dir, listeners=kit.listeners(), security=kit.broker_settings())
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, **kit.kafka_python("alice"))

Users are PLAIN users and SCRAM users (both mechanisms; `scram_credentials()` gives what to store) of
the broker; OAUTHBEARER uses Kafka's unsecured tokens (the clients' own unsecured token builders, or
`unsecured_token`). SSL client certificates name their user in the CN, and the broker maps
`CN=alice,...` to `User:alice` (`ssl.principal.mapping.rules`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
MAPPING_RULES = "RULE:^CN=([^,]*).*$/$1/,DEFAULT"
SCRAM_ITERATIONS = 4096


class SecurityKit:
    """A secured listener's makings: a throw-away CA and the broker's certificate (for SSL and SASL_SSL), the
    broker's Kafka-named settings (`broker_settings()`), the users' SCRAM credentials, and each client's settings
    for the listener (`kafka_python()`, `confluent()`, `aiokafka()`). `BrokerThread(security=..., users=...)`
    makes one."""

    def __init__(self, protocol: str = "SASL_PLAINTEXT", users: Mapping[str, str] | None = None, *,
                 directory: Path | str, client_auth: str = "none", mechanisms: tuple[str, ...] = MECHANISMS,
                 listener_name: str | None = None, hosts: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")) -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"security must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
        self.protocol = protocol
        self.users = dict(users or {})
        self.client_auth = client_auth
        self.mechanisms = mechanisms
        self.listener_name = listener_name or protocol
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.hosts = hosts
        self._ca: Any = None
        if self.uses_ssl:
            self._make_certificates()

    @property
    def uses_ssl(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    # -- certificates -------------------------------------------------------------------------------------
    def _make_certificates(self) -> None:
        import trustme

        self._ca = trustme.CA(organization_name="minibroker test CA")
        self._ca.cert_pem.write_to_path(str(self.ca_file))
        server = self._ca.issue_cert(*self.hosts, common_name="minibroker")
        server.private_key_and_cert_chain_pem.write_to_path(str(self.directory / "broker.pem"))

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.pem"

    def client_certificate(self, user: str) -> tuple[Path, Path]:
        """(certificate file, key file) of a client certificate with CN=user, signed by the test CA."""
        if self._ca is None:
            raise RuntimeError("client certificates need an SSL listener")
        cert_path, key_path = self.directory / f"client-{user}.crt", self.directory / f"client-{user}.key"
        if not cert_path.exists():
            cert = self._ca.issue_cert(f"{user}.client", common_name=user, organization_name="minibroker tests")
            cert.private_key_pem.write_to_path(str(key_path))
            with open(cert_path, "wb") as f:
                for blob in cert.cert_chain_pems:
                    f.write(blob.bytes())
        return cert_path, key_path

    def untrusted_client_certificate(self, user: str) -> tuple[Path, Path]:
        """A client certificate from another CA, which the broker does not trust."""
        import trustme

        cert = trustme.CA().issue_cert(f"{user}.client", common_name=user)
        cert_path, key_path = self.directory / f"stranger-{user}.crt", self.directory / f"stranger-{user}.key"
        cert.private_key_pem.write_to_path(str(key_path))
        cert.cert_chain_pems[0].write_to_path(str(cert_path))
        return cert_path, key_path

    # -- the broker's side --------------------------------------------------------------------------------
    def broker_settings(self) -> dict[str, str]:
        """The Kafka-named settings (`--override NAME=VALUE`) of the secured listener."""
        prefix = f"listener.name.{self.listener_name.lower()}."
        out: dict[str, str] = {}
        if self.uses_ssl:
            out[prefix + "ssl.keystore.location"] = str(self.directory / "broker.pem")
            out[prefix + "ssl.truststore.location"] = str(self.ca_file)
            out[prefix + "ssl.client.auth"] = self.client_auth
            out[prefix + "ssl.principal.mapping.rules"] = MAPPING_RULES
        if self.uses_sasl:
            out[prefix + "sasl.enabled.mechanisms"] = ",".join(self.mechanisms)
            users = " ".join(f'user_{name}="{_escape(password)}"' for name, password in self.users.items())
            out[prefix + "plain.sasl.jaas.config"] = \
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
        return out

    def scram_credentials(self) -> dict[str, dict[str, tuple[bytes, bytes, int]]]:
        """{user: {mechanism: (salt, salted password, iterations)}}: what AlterUserScramCredentials would
        store for the users (the test kit stores them before the broker answers its first request)."""
        out: dict[str, dict[str, tuple[bytes, bytes, int]]] = {}
        for name, password in self.users.items():
            creds = {}
            for mechanism, digest in (("SCRAM-SHA-256", "sha256"), ("SCRAM-SHA-512", "sha512")):
                salt = os.urandom(16)
                creds[mechanism] = (salt, hashlib.pbkdf2_hmac(digest, password.encode(), salt, SCRAM_ITERATIONS),
                                    SCRAM_ITERATIONS)
            out[name] = creds
        return out

    # -- the clients' side --------------------------------------------------------------------------------
    def _pick(self, user: str | None, password: str | None, mechanism: str | None) -> tuple[str, str, str]:
        if user is None:
            if not self.users:
                raise ValueError("this broker has no users: name one")
            user = next(iter(self.users))
        if password is None:
            password = self.users.get(user, "")
        return user, password, mechanism or "PLAIN"

    def kafka_python(self, user: str | None = None, password: str | None = None, mechanism: str | None = None,
                     client_cert: bool | None = None) -> dict[str, Any]:
        """Settings for kafka-python's KafkaProducer / KafkaConsumer / KafkaAdminClient."""
        out: dict[str, Any] = {"security_protocol": self.protocol}
        if self.uses_ssl:
            out.update(ssl_cafile=str(self.ca_file), ssl_check_hostname=True)
            if self._wants_cert(client_cert):
                cert, key = self.client_certificate(user or next(iter(self.users), "client"))
                out.update(ssl_certfile=str(cert), ssl_keyfile=str(key))
        if self.uses_sasl:
            user, password, mechanism = self._pick(user, password, mechanism)
            out["sasl_mechanism"] = mechanism
            if mechanism == "OAUTHBEARER":
                from kafka.net.sasl.oauth import AbstractTokenProvider

                class Provider(AbstractTokenProvider):
                    def token(self) -> str:
                        return unsecured_token({"sub": user})

                out["sasl_oauth_token_provider"] = Provider()
            else:
                out.update(sasl_plain_username=user, sasl_plain_password=password)
        return out

    def confluent(self, user: str | None = None, password: str | None = None, mechanism: str | None = None,
                  client_cert: bool | None = None) -> dict[str, str]:
        """Settings for confluent-kafka (librdkafka) Producer / Consumer / AdminClient."""
        out = {"security.protocol": self.protocol.lower()}
        if self.uses_ssl:
            out["ssl.ca.location"] = str(self.ca_file)
            out["ssl.endpoint.identification.algorithm"] = "https"
            if self._wants_cert(client_cert):
                cert, key = self.client_certificate(user or next(iter(self.users), "client"))
                out.update({"ssl.certificate.location": str(cert), "ssl.key.location": str(key)})
        if self.uses_sasl:
            user, password, mechanism = self._pick(user, password, mechanism)
            out["sasl.mechanisms"] = mechanism
            if mechanism == "OAUTHBEARER":
                # librdkafka's own unsecured JWT builder (no oauth_cb, method "default")
                out["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
                out["sasl.oauthbearer.config"] = f"principal={user}"
            else:
                out.update({"sasl.username": user, "sasl.password": password})
        return out

    def aiokafka(self, user: str | None = None, password: str | None = None, mechanism: str | None = None,
                 client_cert: bool | None = None) -> dict[str, Any]:
        """Settings for aiokafka's AIOKafkaProducer / AIOKafkaConsumer."""
        out: dict[str, Any] = {"security_protocol": self.protocol}
        if self.uses_ssl:
            from aiokafka.helpers import create_ssl_context

            cert = key = None
            if self._wants_cert(client_cert):
                cert, key = self.client_certificate(user or next(iter(self.users), "client"))
            out["ssl_context"] = create_ssl_context(cafile=str(self.ca_file), certfile=cert and str(cert),
                                                    keyfile=key and str(key))
        if self.uses_sasl:
            user, password, mechanism = self._pick(user, password, mechanism)
            out["sasl_mechanism"] = mechanism
            if mechanism == "OAUTHBEARER":
                from aiokafka.abc import AbstractTokenProvider

                class Provider(AbstractTokenProvider):
                    async def token(self) -> str:
                        return unsecured_token({"sub": user})

                out["sasl_oauth_token_provider"] = Provider()
            else:
                out.update(sasl_plain_username=user, sasl_plain_password=password)
        return out

    def _wants_cert(self, client_cert: bool | None) -> bool:
        if client_cert is None:
            return self.protocol == "SSL" and self.client_auth != "none"
        return client_cert


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def unsecured_token(claims: dict[str, Any], lifetime_s: int = 3600) -> str:
    """An unsigned JWT (`alg: none`) as Kafka's unsecured OAUTHBEARER login makes, for the broker's unsecured
    validator."""
    def b64(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    now = int(time.time())
    return f"{b64({'alg': 'none'})}.{b64({'iat': now, 'exp': now + lifetime_s, **claims})}."


def main(argv: list[str] | None = None) -> int:
    """`python -m broker.testkit.security DIR [--host NAME]... [--user NAME]...`: a throw-away CA (ca.pem), the
    broker's key and certificate chain (broker.pem) and client certificates (client-NAME.crt/.key) for trying
    SSL listeners out (`make certs`). Not for production: the CA's key is not kept."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m broker.testkit.security", description=main.__doc__)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--host", action="append", default=[], help="a name or address of the broker (repeatable)")
    parser.add_argument("--user", action="append", default=[], help="a client certificate with CN=NAME")
    args = parser.parse_args(argv)
    kit = SecurityKit("SSL", directory=args.directory, hosts=tuple(args.host or ["localhost", "127.0.0.1", "::1"]))
    for user in args.user:
        kit.client_certificate(user)
    print(f"wrote {kit.ca_file}, {args.directory / 'broker.pem'} and {len(args.user)} client certificate(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
