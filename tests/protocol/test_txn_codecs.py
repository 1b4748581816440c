"""The hand-written codecs of the transaction APIs (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
TxnOffsetCommit) agree with the construct specs, which tests/protocol/test_messages.py checks against
kafka-python, for every version served: decoded requests field by field (every truncation an error), encoded
responses byte for byte."""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.server.dispatch import lookup
from protocol.header import ApiKey
from protocol.messages import add_offsets_to_txn, add_partitions_to_txn, end_txn, init_producer_id, txn_offset_commit
from protocol.schema import DecodeError, message
from tests.protocol.test_messages import _same, _strategy

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CODECS: dict[str, tuple[ApiKey, ModuleType]] = {
    "InitProducerId": (ApiKey.INIT_PRODUCER_ID, init_producer_id),
    "AddPartitionsToTxn": (ApiKey.ADD_PARTITIONS_TO_TXN, add_partitions_to_txn),
    "AddOffsetsToTxn": (ApiKey.ADD_OFFSETS_TO_TXN, add_offsets_to_txn),
    "EndTxn": (ApiKey.END_TXN, end_txn),
    "TxnOffsetCommit": (ApiKey.TXN_OFFSET_COMMIT, txn_offset_commit),
}
CASES = [(name, version) for name, (key, _) in CODECS.items()
         for version in range(lookup(key).min_version, lookup(key).max_version + 1)]
IDS = [f"{name}-v{version}" for name, version in CASES]


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_the_dispatch_table_uses_them() -> None:
    for key, module in CODECS.values():
        assert lookup(key).codec == module.__name__.rpartition(".")[2]


@pytest.mark.parametrize(("name", "version"), CASES, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_request_decoder(name: str, version: int, data: st.DataObject) -> None:
    spec = message(f"{name}Request")
    codec = CODECS[name][1]
    value = data.draw(_strategy(spec, version))
    encoded = spec.encode(version, value)
    decoded = _plain(codec.decode_request(version, b"xx" + encoded, 2))
    assert _same(value, decoded)
    # What the handlers read of a field the version lacks is the generic codec's default.
    assert _same(dict(spec.decode(version, encoded)), decoded)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(DecodeError):
        codec.decode_request(version, encoded[:cut])


@pytest.mark.parametrize(("name", "version"), CASES, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_response_encoder(name: str, version: int, data: st.DataObject) -> None:
    spec = message(f"{name}Response")
    value = data.draw(_strategy(spec, version))
    assert CODECS[name][1].encode_response(version, value) == spec.encode(version, value)
