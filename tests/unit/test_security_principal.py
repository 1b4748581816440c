"""Principals of SSL connections: Kafka's ssl.principal.mapping.rules and certificate names."""

from __future__ import annotations

import pytest

from broker.security.principal import (
    ANONYMOUS,
    NoMatchingRule,
    SslPrincipalMapper,
    distinguished_name,
    parse_mapping_rules,
    ssl_principal,
)


def test_default_rule_keeps_the_name() -> None:
    assert SslPrincipalMapper().name("CN=alice,OU=eng,O=Example") == "CN=alice,OU=eng,O=Example"
    assert SslPrincipalMapper("DEFAULT").name("CN=x") == "CN=x"


def test_rule_with_groups_and_case() -> None:
    rules = ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, "
             "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, "
             "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, DEFAULT")
    mapper = SslPrincipalMapper(rules)
    assert mapper.name("CN=kafka-server1,OU=ServiceUsers,O=Org,C=US") == "kafka-server1"
    assert mapper.name("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Palo,ST=CA,C=US") == "duke@javasoft"
    assert mapper.name("OU=x,CN=alice,O=y") == "ALICE"
    assert mapper.name("O=only") == "O=only"


def test_rules_over_several_lines_and_escaped_slashes() -> None:
    rules = parse_mapping_rules("RULE:^CN=([^,]*)\\/x.*$/$1/,\n  DEFAULT")
    assert len(rules) == 2
    assert SslPrincipalMapper("RULE:^CN=([^,]*)\\/x.*$/$1/,\n DEFAULT").name("CN=a/x,O=b") == "a"


def test_back_reference_beyond_the_groups_stays_literal() -> None:
    assert SslPrincipalMapper("RULE:^CN=(.*)$/$1-$2/").name("CN=bob") == "bob-$2"
    assert SslPrincipalMapper("RULE:^CN=(.*)$/$12/").name("CN=bob") == "bob2"


def test_no_matching_rule() -> None:
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper("RULE:^CN=(.*),O=x$/$1/").name("CN=a,O=y")


@pytest.mark.parametrize("rules", ["RULE:^CN=(.*)$/$1/X/", "nonsense", "RULE:^CN=(.*$/$1/"])
def test_invalid_rules_are_refused(rules: str) -> None:
    with pytest.raises(ValueError):
        SslPrincipalMapper(rules)


def test_certificate_name_in_java_order() -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("client.example", common_name="alice", organization_name="Example, Inc.",
                         organization_unit_name="eng")
    from cryptography import x509

    der = x509.load_pem_x509_certificate(cert.cert_chain_pems[0].bytes()).public_bytes(
        __import__("cryptography.hazmat.primitives.serialization", fromlist=["Encoding"]).Encoding.DER)
    assert distinguished_name(der) == "CN=alice,OU=eng,O=Example\\, Inc."
    assert ssl_principal(der, SslPrincipalMapper("RULE:^CN=([^,]*),.*$/$1/")) == "User:alice"
    assert ssl_principal(None, SslPrincipalMapper()) == ANONYMOUS


def test_other_attributes_as_oid_and_der_hex() -> None:
    pytest.importorskip("cryptography")
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import Encoding
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
                      x509.NameAttribute(NameOID.EMAIL_ADDRESS, "a@b.c"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, 'Ex, "Inc" <x>;y+z=w\\'),
                      x509.NameAttribute(NameOID.COMMON_NAME, "#lead ")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    # As Java's X500Principal.getName() writes it (checked with a JVM): IA5String (tag 0x16) "a@b.c" as hex,
    # special characters, a leading '#' and a trailing space escaped.
    assert distinguished_name(cert.public_bytes(Encoding.DER)) == \
        'CN=\\#lead\\ ,O=Ex\\, \\"Inc\\" \\<x\\>\\;y\\+z\\=w\\\\,1.2.840.113549.1.9.1=#16056140622e63,C=US'
