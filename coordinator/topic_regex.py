"""Regular expression subscriptions of KIP-848 consumer groups (ConsumerGroupHeartbeat SubscribedTopicRegex).

Kafka compiles them with RE2/J and matches whole topic names (`Matcher.matches`). Python's `re` is used here,
with full matching, after refusing what RE2 has no syntax for, so that a pattern Kafka rejects with
INVALID_REGULAR_EXPRESSION is rejected here too: backreferences (`\\1`, `(?P=name)`), lookaround (`(?=`, `(?!`,
`(?<=`, `(?<!`), atomic groups and possessive quantifiers (`(?>`, `*+`, `++`, `?+`), conditionals (`(?(1)`).
Where the engines still differ: RE2's Unicode classes `\\pL`, `\\p{Greek}` and `\\PN` and `\\Q...\\E` quoting
are refused by Python's `re` (so such a subscription is INVALID_REGULAR_EXPRESSION here, valid on Kafka);
RE2 treats `\\Z` as an error and `$` without (?m) as end of text only, where Python's `$` also matches before
a final newline (topic names cannot contain one, so matches agree); `(?i)` case folding follows Unicode
simple folding in both. Matching runs in Python's backtracking engine, not in RE2's linear time: the patterns
come from the group's own clients.
"""

from __future__ import annotations

import re
from functools import lru_cache

_RE2_UNSUPPORTED = re.compile(
    r"\\[1-9]"            # backreference
    r"|\(\?P=\w+\)"       # named backreference
    r"|\(\?<?[=!]"        # lookahead / lookbehind
    r"|\(\?>"             # atomic group
    r"|\(\?\("            # conditional
    r"|(?<!\\)[*+?}]\+"   # possessive quantifier
)


class InvalidRegex(ValueError):
    pass


def _strip_escapes_in_classes(pattern: str) -> str:
    """The pattern with escaped characters blanked, so `\\\\1` (a backslash then 1) is not a backreference."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\" and i + 1 < len(pattern) and pattern[i + 1] == "\\":
            out.append("__")
            i += 2
            continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


@lru_cache(maxsize=256)
def compile_regex(pattern: str) -> re.Pattern[str]:
    """The compiled pattern, or InvalidRegex with Kafka's message."""
    unsupported = _RE2_UNSUPPORTED.search(_strip_escapes_in_classes(pattern))
    if unsupported is not None:
        raise InvalidRegex(f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: "
                           f"unsupported construct `{unsupported.group(0)}`.")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise InvalidRegex(f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {exc}.") from None


def matching_topics(pattern: str, topics: list[str]) -> frozenset[str]:
    try:
        compiled = compile_regex(pattern)
    except InvalidRegex:
        return frozenset()
    return frozenset(name for name in topics if compiled.fullmatch(name))
