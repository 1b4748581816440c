"""Every client with every mechanism it supports, over SASL_PLAINTEXT and SASL_SSL, and SSL with and without
client certificates: a message produced and consumed back; then refusals (wrong password, unknown user, bad
token, untrusted certificate)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
USERS = {"alice": "alice-secret", "bob": "bob-secret"}


def _topic() -> str:
    return f"sec-{uuid.uuid4().hex[:10]}"


# -- one produce/consume round trip per client ---------------------------------------------------------------

def kafka_python_roundtrip(bootstrap: str, settings: dict) -> bytes:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = _topic()
    producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10_000, **settings)
    try:
        producer.send(topic, b"hello kafka-python").get(timeout=30)
    finally:
        producer.close(timeout=5)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=20_000,
                             **settings)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        return next(iter(consumer)).value
    finally:
        consumer.close()


def confluent_roundtrip(bootstrap: str, settings: dict) -> bytes:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    topic = _topic()
    errors: list = []
    producer = Producer({"bootstrap.servers": bootstrap, "error_cb": errors.append, **settings})
    producer.produce(topic, b"hello confluent")
    assert producer.flush(30) == 0, errors
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                         **settings})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            return msg.value()
        raise AssertionError("no message")
    finally:
        consumer.close()


def aiokafka_roundtrip(bootstrap: str, settings: dict) -> bytes:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    async def main() -> bytes:
        topic = _topic()
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **settings)
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"hello aiokafka")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", **settings)
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, 0)])
            return (await asyncio.wait_for(consumer.getone(), 30)).value
        finally:
            await consumer.stop()

    return asyncio.run(main())


CLIENTS = {
    "kafka-python": (kafka_python_roundtrip, "kafka_python", b"hello kafka-python"),
    "confluent-kafka": (confluent_roundtrip, "confluent", b"hello confluent"),
    "aiokafka": (aiokafka_roundtrip, "aiokafka", b"hello aiokafka"),
}


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.minibroker(security="SASL_PLAINTEXT", users=USERS)
def test_sasl_plaintext(minibroker_server, client: str, mechanism: str) -> None:
    roundtrip, settings_of, expected = CLIENTS[client]
    settings = getattr(minibroker_server, settings_of)("alice", mechanism=mechanism)
    assert roundtrip(minibroker_server.bootstrap, settings) == expected


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.minibroker(security="SASL_SSL", users=USERS)
def test_sasl_ssl(minibroker_server, client: str, mechanism: str) -> None:
    roundtrip, settings_of, expected = CLIENTS[client]
    settings = getattr(minibroker_server, settings_of)("bob", mechanism=mechanism)
    assert roundtrip(minibroker_server.bootstrap, settings) == expected


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.minibroker(security="SSL")
def test_ssl_without_client_certificate(minibroker_server, client: str) -> None:
    roundtrip, settings_of, expected = CLIENTS[client]
    assert roundtrip(minibroker_server.bootstrap, getattr(minibroker_server, settings_of)(client_cert=False)) \
        == expected


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.minibroker(security="SSL", users={"carol": ""}, client_auth="required")
def test_ssl_with_client_certificate(minibroker_server, client: str) -> None:
    roundtrip, settings_of, expected = CLIENTS[client]
    settings = getattr(minibroker_server, settings_of)("carol", client_cert=True)
    assert roundtrip(minibroker_server.bootstrap, settings) == expected
    # The broker saw the certificate's principal.
    assert "User:carol" in minibroker_server.principals_seen()


# -- refusals --------------------------------------------------------------------------------------------------

def kafka_python_refused(bootstrap: str, settings: dict) -> str:
    """kafka-python retries a refused bootstrap until bootstrap_timeout_ms, then gives up."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    try:
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, bootstrap_timeout_ms=3_000, request_timeout_ms=5_000,
                                 **settings)
    except KafkaError as exc:
        return type(exc).__name__ + ": " + str(exc)
    try:
        consumer.topics()
    except KafkaError as exc:
        return type(exc).__name__ + ": " + str(exc)
    finally:
        consumer.close()
    raise AssertionError("kafka-python was let in")


def confluent_refused(bootstrap: str, settings: dict) -> str:
    from confluent_kafka import KafkaError, KafkaException, Producer

    errors: list = []
    producer = Producer({"bootstrap.servers": bootstrap, "error_cb": errors.append, **settings})
    try:
        producer.list_topics(timeout=1)
    except KafkaException as exc:
        errors.append(exc.args[0])
    deadline = time.monotonic() + 10
    auth: list = []
    while not auth and time.monotonic() < deadline:
        producer.poll(0.2)  # error_cb is served by poll
        # A refused TLS 1.3 client certificate shows as a closed connection (_TRANSPORT) after the handshake.
        auth = [e for e in errors if e.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL, KafkaError._TRANSPORT)]
    assert auth, f"confluent-kafka was let in or failed otherwise: {errors}"
    return auth[0].str()


def aiokafka_refused(bootstrap: str, settings: dict) -> str:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    async def main() -> str:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=5_000, **settings)
        try:
            await producer.start()
        except (KafkaError, OSError) as exc:
            return type(exc).__name__ + ": " + str(exc)
        finally:
            await producer.stop()
        raise AssertionError("aiokafka was let in")

    return asyncio.run(main())


REFUSED = {"kafka-python": (kafka_python_refused, "kafka_python"), "confluent-kafka": (confluent_refused, "confluent"),
           "aiokafka": (aiokafka_refused, "aiokafka")}


@pytest.mark.parametrize("client", list(REFUSED))
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.minibroker(security="SASL_PLAINTEXT", users=USERS)
def test_wrong_password_and_unknown_user_are_refused(minibroker_server, client: str, mechanism: str) -> None:
    refused, settings_of = REFUSED[client]
    for user, password in (("alice", "wrong"), ("mallory", "alice-secret")):
        settings = getattr(minibroker_server, settings_of)(user, password=password, mechanism=mechanism)
        assert refused(minibroker_server.bootstrap, settings)
    outcomes = minibroker_server.authentications()
    assert outcomes.get(("SASL_PLAINTEXT", mechanism, "failed"), 0) >= 2 and minibroker_server.principals_seen() == {}
    minibroker_server.wait_until(lambda: minibroker_server.open_connections() == 0 or None, 15, "connections closed")


@pytest.mark.parametrize("client", list(REFUSED))
@pytest.mark.minibroker(security="SASL_SSL", users=USERS)
def test_untrusted_ca_is_refused_by_the_client(minibroker_server, tmp_path, client: str) -> None:
    """A client that does not trust the broker's CA (its own CA instead) fails the TLS handshake."""
    import trustme

    other_ca = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other_ca))
    refused, settings_of = REFUSED[client]
    settings = getattr(minibroker_server, settings_of)("alice")
    if client == "kafka-python":
        settings["ssl_cafile"] = str(other_ca)
    elif client == "confluent-kafka":
        settings["ssl.ca.location"] = str(other_ca)
    else:
        from aiokafka.helpers import create_ssl_context

        settings["ssl_context"] = create_ssl_context(cafile=str(other_ca))
    assert refused(minibroker_server.bootstrap, settings)


@pytest.mark.parametrize("client", list(REFUSED))
@pytest.mark.minibroker(security="SSL", users={"carol": ""}, client_auth="required")
def test_missing_or_untrusted_client_certificate(minibroker_server, client: str) -> None:
    refused, settings_of = REFUSED[client]
    kit = minibroker_server.security
    assert refused(minibroker_server.bootstrap, getattr(minibroker_server, settings_of)(client_cert=False))
    assert minibroker_server.authentications().get(("SSL", "SSL", "failed"), 0) >= 1
    cert, key = kit.untrusted_client_certificate("carol")
    settings = getattr(minibroker_server, settings_of)("carol", client_cert=False)
    if client == "kafka-python":
        settings.update(ssl_certfile=str(cert), ssl_keyfile=str(key))
    elif client == "confluent-kafka":
        settings.update({"ssl.certificate.location": str(cert), "ssl.key.location": str(key)})
    else:
        from aiokafka.helpers import create_ssl_context

        settings["ssl_context"] = create_ssl_context(cafile=str(kit.ca_file), certfile=str(cert), keyfile=str(key))
    assert refused(minibroker_server.bootstrap, settings)
    assert minibroker_server.principals_seen() == {}


# -- KIP-368 with real clients ------------------------------------------------------------------------------

def _produce_for(client: str, broker, seconds: float) -> int:  # noqa: ANN001
    """Produce one message at a time for `seconds`; returns how many were acknowledged."""
    end = time.monotonic() + seconds
    sent = 0
    if client == "confluent-kafka":
        from confluent_kafka import Producer

        errors: list = []
        producer = Producer({"bootstrap.servers": broker.bootstrap, **broker.confluent("alice")})
        while time.monotonic() < end:
            producer.produce("reauth", b"x", on_delivery=lambda err, msg: err and errors.append(err))
            assert producer.flush(10) == 0 and not errors, errors
            sent += 1
            time.sleep(0.05)
        return sent
    if client == "kafka-python":
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, **broker.kafka_python("alice"))
        while time.monotonic() < end:
            producer.send("reauth", b"x").get(10)
            sent += 1
            time.sleep(0.05)
        producer.close()
        return sent
    from aiokafka import AIOKafkaProducer

    async def main() -> int:
        count = 0
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, **broker.aiokafka("alice"))
        await producer.start()
        try:
            while time.monotonic() < end:
                await producer.send_and_wait("reauth", b"x")
                count += 1
                await asyncio.sleep(0.05)
        finally:
            await producer.stop()
        return count

    return asyncio.run(main())


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.minibroker(security="SASL_PLAINTEXT", users=USERS, security_settings={"connections.max.reauth.ms": "1500"})
def test_sessions_are_reauthenticated_or_closed(minibroker_server, client: str) -> None:
    """connections.max.reauth.ms=1500 while a client produces for 4 s: kafka-python and librdkafka
    re-authenticate on their connections (KIP-368); aiokafka does not, so the broker closes its expired
    sessions and it reconnects. Every message is acknowledged either way."""
    assert _produce_for(client, minibroker_server, 4.0) > 10
    outcomes = minibroker_server.authentications()
    expired = outcomes.get(("SASL_PLAINTEXT", "PLAIN", "expired"), 0)
    assert outcomes[("SASL_PLAINTEXT", "PLAIN", "ok")] >= 3
    assert expired == 0 if client != "aiokafka" else expired >= 1


# -- OAUTHBEARER with signed JWTs checked against a JWKS served over HTTP ---------------------------------------

@pytest.fixture
def jwks_server(tmp_path):  # noqa: ANN201
    """An RSA key and an HTTP server publishing its JWKS (what an identity provider's jwks_uri serves)."""
    import functools
    import http.server
    import json
    import threading

    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update(kid="idp-1", use="sig", alg="RS256")
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [jwk]}))
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield key, f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    server.shutdown()


def _signed_token(key, subject: str, **claims) -> str:  # noqa: ANN001
    import jwt

    now = int(time.time())
    return jwt.encode({"sub": subject, "iat": now, "exp": now + 600, "aud": "kafka", **claims}, key,
                      algorithm="RS256", headers={"kid": "idp-1"})


def test_oauthbearer_jwt_from_a_jwks_url(jwks_server, tmp_path) -> None:
    from cryptography.hazmat.primitives.asymmetric import rsa

    from broker.testkit import BrokerThread

    key, url = jwks_server
    settings = {"sasl.oauthbearer.jwks.endpoint.url": url, "sasl.oauthbearer.expected.audience": "kafka"}
    with BrokerThread(tmp_path / "data", security="SASL_PLAINTEXT", sasl_mechanisms=("OAUTHBEARER",),
                      security_settings=settings) as broker:
        from confluent_kafka import Producer

        def oauth_cb(token: str):  # noqa: ANN202
            return lambda _config: (token, time.time() + 600)

        base = {"bootstrap.servers": broker.bootstrap, "security.protocol": "sasl_plaintext",
                "sasl.mechanisms": "OAUTHBEARER"}
        producer = Producer({**base, "oauth_cb": oauth_cb(_signed_token(key, "svc-billing"))})
        producer.produce("jwt", b"signed")
        assert producer.flush(30) == 0
        assert broker.principals_seen().keys() == {"User:svc-billing"}
        # A token signed by another key, and one for another audience: refused.
        stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        for token in (_signed_token(stranger, "mallory"), _signed_token(key, "svc-billing", aud="other")):
            assert confluent_refused(broker.bootstrap, {"security.protocol": "sasl_plaintext",
                                                        "sasl.mechanisms": "OAUTHBEARER",
                                                        "oauth_cb": oauth_cb(token)})
        assert broker.authentications()[("SASL_PLAINTEXT", "OAUTHBEARER", "failed")] >= 2
        assert broker.principals_seen().keys() == {"User:svc-billing"}
