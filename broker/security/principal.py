"""Principals: who a connection is, as Kafka's DefaultKafkaPrincipalBuilder names it.

A principal is the string `Type:name` the authorizer, `super.users` and ACLs use (`User:alice`). PLAINTEXT
connections, and SSL ones without a client certificate, are `User:ANONYMOUS`; SASL ones are `User:` + the
authorization id of the mechanism; SSL ones with a client certificate are `User:` + the certificate's
distinguished name (RFC 2253, as Java's X500Principal.getName() writes it) mapped by
`ssl.principal.mapping.rules` (Kafka's SslPrincipalMapper).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

USER_TYPE = "User"
ANONYMOUS = "User:ANONYMOUS"
DEFAULT_MAPPING_RULES = "DEFAULT"


def user(name: str) -> str:
    return f"{USER_TYPE}:{name}"


class NoMatchingRule(ValueError):
    """No `ssl.principal.mapping.rules` rule applies to a certificate's name: the handshake is refused."""


# One rule: DEFAULT, or RULE:pattern/replacement/[LU] (a `/` inside pattern or replacement is escaped `\/`),
# or empty. Rules are separated by commas, whitespace around them ignored (Kafka's RULE_SPLITTER).
_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_PARSER = re.compile(_RULE)
_BACK_REFERENCE = re.compile(r"\$(\d+)")


@dataclass(frozen=True, slots=True)
class MappingRule:
    pattern: re.Pattern[str] | None  # None: DEFAULT (the name unchanged)
    replacement: str = ""
    case: str = ""  # "L" lower-case the result, "U" upper-case it

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        result = self.pattern.sub(lambda m: _expand(self.replacement, m), name)
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result


def _expand(replacement: str, match: re.Match[str]) -> str:
    """Java's replacement syntax: $N is group N (a number naming no group is shortened digit by digit, as
    Kafka does, and stays literal if none is left), \\x is x."""
    groups = match.re.groups
    out: list[str] = []
    i = 0
    while i < len(replacement):
        ch = replacement[i]
        if ch == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1])
            i += 2
            continue
        ref = _BACK_REFERENCE.match(replacement, i) if ch == "$" else None
        if ref is None:
            out.append(ch)
            i += 1
            continue
        digits = ref.group(1)
        # The longest prefix of the digits that names a group (Java reads as many digits as form a group).
        take = len(digits)
        while take > 0 and int(digits[:take]) > groups:
            take -= 1
        if take == 0:
            out.append(ref.group(0))
            i = ref.end()
            continue
        out.append(match.group(int(digits[:take])) or "")
        i += 1 + take
    return "".join(out)


def parse_mapping_rules(text: str | None) -> list[MappingRule]:
    """`ssl.principal.mapping.rules`: `DEFAULT` and `RULE:pattern/replacement/[LU]`, comma-separated."""
    text = DEFAULT_MAPPING_RULES if text is None else text
    rules: list[MappingRule] = []
    for m in _SPLITTER.finditer(text.strip()):
        rule = m.group(1)
        parsed = _PARSER.match(rule)
        if parsed is None or parsed.end() != len(rule):
            raise ValueError(f"Invalid rule: `{rule}`")
        if parsed.group(1):
            rules.append(MappingRule(None))
        elif parsed.group(2) is not None:
            try:
                pattern = re.compile(parsed.group(2))
            except re.error as exc:
                raise ValueError(f"Invalid rule: `{rule}`: {exc}") from None
            rules.append(MappingRule(pattern, parsed.group(3), parsed.group(4)))
        elif parsed.group(5):
            raise ValueError(f"Invalid rule: `{rule}`")
        if m.end() >= len(text.strip()):
            break
    return rules


class SslPrincipalMapper:
    def __init__(self, rules: str | None = None) -> None:
        self.rules = parse_mapping_rules(rules)

    def name(self, distinguished_name: str) -> str:
        for rule in self.rules:
            mapped = rule.apply(distinguished_name)
            if mapped is not None:
                return mapped
        raise NoMatchingRule(f"No rules apply to {distinguished_name}")


# -- certificate names -----------------------------------------------------------------------------------

# The attribute keywords Java's RFC 2253 names use; any other attribute is written as its OID with the
# hex of its DER value (`1.2.840.113549.1.9.1=#16...` for an e-mail address), as X500Principal does.
_KEYWORDS = {
    "2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
    "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID",
}
_SPECIAL = set(',=+"\\<>;')  # Java's RFC 2253 escapes '=' too


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in _SPECIAL or (i == 0 and ch in "# ") or (i == len(value) - 1 and ch == " "):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _der_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def _der_value(attribute: object) -> bytes:
    tag = int(attribute._type.value)  # type: ignore[attr-defined]  # cryptography's ASN.1 string type
    value = attribute.value  # type: ignore[attr-defined]
    if isinstance(value, bytes):
        raw = value
    elif tag == 30:  # BMPString
        raw = value.encode("utf-16-be")
    elif tag == 28:  # UniversalString
        raw = value.encode("utf-32-be")
    else:
        raw = value.encode("utf-8")
    return bytes([tag]) + _der_length(len(raw)) + raw


def distinguished_name(der_certificate: bytes) -> str:
    """The subject of a DER certificate as Java's X500Principal.getName() (RFC 2253) writes it: the
    relative names in reverse order, `CN=alice,OU=eng,O=Example,C=US`."""
    from cryptography import x509  # only SSL listeners that ask for client certificates need it

    subject = x509.load_der_x509_certificate(der_certificate).subject
    parts = []
    for rdn in reversed(list(subject.rdns)):
        avas = []
        for attribute in rdn:
            oid = attribute.oid.dotted_string
            keyword = _KEYWORDS.get(oid)
            if keyword is None:
                avas.append(f"{oid}=#{_der_value(attribute).hex()}")
            else:
                avas.append(f"{keyword}={_escape(str(attribute.value))}")
        parts.append("+".join(avas))
    return ",".join(parts)


def ssl_principal(der_certificate: bytes | None, mapper: SslPrincipalMapper) -> str:
    """The principal of an SSL connection: ANONYMOUS without a client certificate."""
    if der_certificate is None:
        return ANONYMOUS
    return user(mapper.name(distinguished_name(der_certificate)))
