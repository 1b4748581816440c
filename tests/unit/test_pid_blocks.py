"""Producer-id block arithmetic, its JSON form, and the embedded (no ZooKeeper) block store."""

from __future__ import annotations

import subprocess
import sys

import pytest

from zk.pid_blocks import (
    INT64_MAX,
    ProducerIdBlock,
    ProducerIdsExhaustedError,
    decode_block,
    encode_block,
    next_block,
)
from zk.store import LocalBlockStore, parse_zookeeper_address


def test_first_and_next_blocks() -> None:
    first = next_block(None, 3)
    assert (first.first, first.last, first.broker_id) == (0, 999, 3)
    second = next_block(first, 5)
    assert (second.first, second.last, second.broker_id) == (1000, 1999, 5)


def test_exhaustion_is_fatal() -> None:
    last_possible = ProducerIdBlock(0, INT64_MAX - 1999)
    assert next_block(last_possible, 0).last == INT64_MAX
    with pytest.raises(ProducerIdsExhaustedError):
        next_block(ProducerIdBlock(0, INT64_MAX - 999), 0)


def test_json_round_trip() -> None:
    block = ProducerIdBlock(7, 4000)
    assert encode_block(block) == b'{"version":1,"broker":7,"block_start":"4000","block_end":"4999"}'
    assert decode_block(encode_block(block)) == block
    assert decode_block(b"") is None
    with pytest.raises(ValueError):
        decode_block(b'{"version":1}')


def test_zookeeper_address_with_chroot() -> None:
    assert parse_zookeeper_address("zk:2181") == ("zk:2181", "")
    assert parse_zookeeper_address("a:1,b:2/kafka/x") == ("a:1,b:2", "/kafka/x")


def test_local_store_never_reuses_a_block_across_instances(tmp_path) -> None:
    path = tmp_path / "producer_id_block.json"
    seen = [LocalBlockStore(path).claim_next_block(0).first for _ in range(3)]
    seen.append(LocalBlockStore(path).claim_next_block(0).first)  # a "restart"
    assert seen == [0, 1000, 2000, 3000]


def test_local_store_racing_processes(tmp_path) -> None:
    code = ("import sys; from zk.store import LocalBlockStore; s = LocalBlockStore(sys.argv[1]); "
            "print(' '.join(str(s.claim_next_block(0).first) for _ in range(20)))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "b.json")], stdout=subprocess.PIPE,
                              text=True) for _ in range(4)]
    firsts = sorted(int(x) for p in procs for x in p.communicate(timeout=60)[0].split())
    assert firsts == [i * 1000 for i in range(80)]
