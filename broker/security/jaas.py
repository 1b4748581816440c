"""Kafka's JAAS configuration text: `sasl.jaas.config` values and JAAS files (`KafkaServer { ... };`).

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";

Each entry is a login module class, a control flag and `name=value` options (values quoted or bare words);
a JAAS file wraps entries in named sections. Only the options matter here: PLAIN's `user_NAME="password"`
and OAUTHBEARER's `unsecuredValidator*` on the server side, `username`/`password` (or the unsecured
login's claims) on the client side.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FLAGS = ("required", "requisite", "sufficient", "optional")


class JaasError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class LoginModule:
    class_name: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def plain_users(self) -> dict[str, str]:
        """PlainLoginModule's `user_NAME="password"` options: the users a PLAIN listener accepts."""
        return {k[5:]: v for k, v in self.options.items() if k.startswith("user_") and len(k) > 5}


def _tokens(text: str) -> list[str]:
    """Words, quoted strings (returned with a leading '"' to tell them apart), and the punctuation
    `{ } ; =`; `//` and `/* */` comments are skipped, as Java's StreamTokenizer does for JAAS files."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise JaasError("unterminated comment")
            i = end + 2
        elif ch in "{};=":
            out.append(ch)
            i += 1
        elif ch in "\"'":
            j = i + 1
            value = []
            while j < n and text[j] != ch:
                if text[j] == "\\" and j + 1 < n:
                    j += 1
                value.append(text[j])
                j += 1
            if j >= n:
                raise JaasError("unterminated quoted value")
            out.append('"' + "".join(value))
            i = j + 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in "{};=\"'":
                j += 1
            out.append(text[i:j])
            i = j
    return out


def _entries(tokens: list[str], pos: int, until: str | None) -> tuple[list[LoginModule], int]:
    modules: list[LoginModule] = []
    while pos < len(tokens) and tokens[pos] != until:
        class_name = tokens[pos]
        if class_name.startswith('"') or class_name in "{};=":
            raise JaasError(f"expected a login module class name, found {class_name!r}")
        if pos + 1 >= len(tokens) or tokens[pos + 1].lower() not in FLAGS:
            raise JaasError(f"login module {class_name} needs a control flag ({', '.join(FLAGS)})")
        flag = tokens[pos + 1].lower()
        pos += 2
        options: dict[str, str] = {}
        while pos < len(tokens) and tokens[pos] != ";":
            if pos + 2 >= len(tokens) or tokens[pos + 1] != "=":
                raise JaasError(f"expected name=value in the options of {class_name}")
            name, value = tokens[pos], tokens[pos + 2]
            if name.startswith('"') or value in "{};=":
                raise JaasError(f"bad option {name}={value} in {class_name}")
            options[name] = value[1:] if value.startswith('"') else value
            pos += 3
        if pos >= len(tokens):
            raise JaasError(f"login module {class_name} is not terminated with ';'")
        modules.append(LoginModule(class_name, flag, options))
        pos += 1
    return modules, pos


def parse_jaas_config(text: str) -> list[LoginModule]:
    """A `sasl.jaas.config` value: one or more login modules, each ending with `;`."""
    tokens = _tokens(text)
    modules, pos = _entries(tokens, 0, None)
    if not modules:
        raise JaasError("JAAS config has no login module")
    return modules


def parse_jaas_file(text: str) -> dict[str, list[LoginModule]]:
    """A JAAS file: `Section { module flag options; ... };` per section (KafkaServer, KafkaClient, ...)."""
    tokens = _tokens(text)
    sections: dict[str, list[LoginModule]] = {}
    pos = 0
    while pos < len(tokens):
        name = tokens[pos]
        if pos + 1 >= len(tokens) or tokens[pos + 1] != "{":
            raise JaasError(f"expected '{{' after section name {name!r}")
        modules, pos = _entries(tokens, pos + 2, "}")
        if pos >= len(tokens):
            raise JaasError(f"section {name} is not closed with '}}'")
        pos += 1
        if pos < len(tokens) and tokens[pos] == ";":
            pos += 1
        sections[name] = modules
    return sections
