"""The request header's version (v2 from a request's first flexible version) from protocol.header's own table,
which must say what Kafka's message definitions say for every api key."""

from __future__ import annotations

import pytest

from protocol.header import FLEXIBLE_FROM, ApiKey, request_header_version, request_spec


@pytest.mark.parametrize("api_key", list(ApiKey), ids=lambda k: k.name)
def test_the_table_of_first_flexible_versions_is_kafkas(api_key: ApiKey) -> None:
    spec = request_spec(api_key)
    expected = spec.flexible_versions[0] if spec is not None and spec.flexible_versions is not None else None
    assert FLEXIBLE_FROM.get(api_key) == expected


def test_header_versions() -> None:
    assert request_header_version(ApiKey.API_VERSIONS, 2) == 1
    assert request_header_version(ApiKey.API_VERSIONS, 3) == 2
    assert request_header_version(ApiKey.SASL_HANDSHAKE, 1) == 1
    assert request_header_version(9999, 0) == 1
