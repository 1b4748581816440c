"""ApiVersions of every version profile against the release itself: the ranges and features a client sees."""

from __future__ import annotations

from typing import Any

from tests.reference.harness import Session, scenario

PROFILE_RELEASES = ("3.7", "3.8", "3.9", "4.0", "4.1", "4.2", "4.3", "4.4")
# Features whose protocols minibroker does not serve yet (docs/compatibility/kafka4.md, "Not served yet"): not offered.
NOT_OFFERED = {"eligible.leader.replicas.version"}


def served_view(release: str, step: str, answer: Any) -> Any:
    """Kafka's ApiVersions answer cut to what minibroker serves: APIs it does not serve left out, each range
    cut to the versions it serves (Produce keeps advertising v0, KAFKA-18659), features it does not offer
    left out. 3.7-3.9 list Kafka 4's group protocols as an early-access feature, off unless configured: the
    3.x profiles leave them out."""
    from broker.config.kafka_versions import KAFKA4_APIS
    from broker.server.dispatch import table

    if not isinstance(answer, dict) or "api_keys" not in answer:
        return answer
    served = table()
    keys = []
    for entry in answer["api_keys"]:
        api = served.get(entry["api_key"])
        if api is None or entry["max_version"] < api.min_version or (
                release.startswith("3.") and entry["api_key"] in KAFKA4_APIS):
            continue
        keys.append({**entry, "min_version": max(entry["min_version"], api.advertised_range[0]),
                     "max_version": min(entry["max_version"], api.max_version)})
    out = {**answer, "api_keys": keys}
    for name in ("supported_features", "finalized_features"):
        if out.get(name) is not None:
            out[name] = [f for f in out[name] if f["name"] not in NOT_OFFERED]
    return out


def api_versions_table(answer: dict[str, Any]) -> dict[int, tuple[int, int]]:
    """{api_key: (min, max)} of an ApiVersions answer: the form of broker/kafka_versions.py's tables."""
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}


def _highest(release: str) -> int:
    return 3 if release in ("3.7", "3.8") else 4


@scenario(releases=PROFILE_RELEASES, kafka_view=served_view)
def api_versions(s: Session) -> None:
    """ApiVersions v0, the release's highest version, a bad client software name and an unknown version."""
    s.request("v0", 18, 0, {})
    v = _highest(s.release)
    s.request(f"v{v}", 18, v, {"client_software_name": "reference-harness", "client_software_version": "1.0"})
    s.request("v3 bad software name", 18, 3, {"client_software_name": "bad name!", "client_software_version": "1"})
    from protocol.schema import message

    body = message("ApiVersionsRequest").encode(3, {"client_software_name": "x", "client_software_version": "1"})
    s.send_raw("unknown version 127", 18, 127, body)
    s.receive()
