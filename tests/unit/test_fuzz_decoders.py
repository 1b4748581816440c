"""The short fuzzing run of `make test` (`make fuzz` runs a million inputs): request frames of every API
and version, and record batches, mutated or random, must only ever raise the parser's own error."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import DecodeError
from tests.fuzz import corpus, run, targets


def test_seeds_are_valid_requests():
    for frame in run.seeds(random.Random(0), per_version=1):
        targets.request_frame(frame)  # raises on a seed the broker would refuse


def test_mutated_requests_and_batches():
    for seed in (1, 2):
        found = run.fuzz_in_process(25_000, seed)
        assert found.inputs == 25_000
        assert found.rejected > 1000  # the mutations do reach the decoders' error paths
        assert not found.crashes, found.crashes[:3]


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_as_a_request(data: bytes):
    try:
        targets.request_frame(corpus.reframe(b"\0\0\0\0" + data))
    except DecodeError:
        pass


@settings(max_examples=2000, deadline=None)
@given(st.binary(min_size=0, max_size=300))
def test_random_bytes_as_record_batches(data: bytes):
    targets.record_batches(data)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(corpus.served_versions()))
def test_every_api_with_random_values_and_a_mutation(seed: int, api_version: tuple[int, int]):
    rng = random.Random(seed)
    frame = corpus.valid_request(*api_version, rng)
    targets.request_frame(frame)
    try:
        targets.request_frame(corpus.reframe(corpus.mutate(frame, rng)))
    except DecodeError:
        pass
