"""`make fuzz`: mutated requests of every API and version, and mutated record batches, through the
broker's decoders in-process (fast), then a socket phase against a real broker that must keep serving.

    python -m tests.fuzz.run                 # 1,000,000 in-process inputs + 20,000 over sockets
    FUZZ_INPUTS=50000 python -m tests.fuzz.run --seed 7

Prints the figures; exits non-zero with the first findings (input bytes in hex) when any input raised
something other than the parser's own error."""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import traceback
from dataclasses import dataclass, field

from tests.fuzz import corpus, targets


@dataclass
class Findings:
    inputs: int = 0
    rejected: int = 0  # raised the parser's own error: the expected outcome for most mutants
    crashes: list[tuple[str, bytes, str]] = field(default_factory=list)

    def record(self, target: str, data: bytes, exc: BaseException) -> None:
        if len(self.crashes) < 20:
            self.crashes.append((target, data, "".join(traceback.format_exception_only(exc)).strip()))


def seeds(rng: random.Random, per_version: int = 3) -> list[bytes]:
    frames = []
    for api_key, version in corpus.served_versions():
        for i in range(per_version):
            frames.append(corpus.valid_request(api_key, version, rng, correlation_id=i))
    return frames


def fuzz_in_process(inputs: int, seed: int) -> Findings:
    rng = random.Random(seed)
    frames = seeds(rng)
    batches = [corpus.random_batch(rng) for _ in range(200)]
    found = Findings()
    for i in range(inputs):
        if i % 5 == 4:
            name, fn, data = "record_batches", targets.record_batches, corpus.mutate(rng.choice(batches), rng)
        else:
            frame = corpus.mutate(rng.choice(frames), rng)
            name, fn, data = "request_frame", targets.request_frame, corpus.reframe(frame)
        found.inputs += 1
        try:
            fn(data)
        except targets.EXPECTED:
            found.rejected += 1
        except Exception as exc:
            found.record(name, data, exc)
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=int, default=int(os.environ.get("FUZZ_INPUTS", 1_000_000)))
    ap.add_argument("--socket-inputs", type=int, default=int(os.environ.get("FUZZ_SOCKET_INPUTS", 20_000)))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_SEED", 1)))
    ns = ap.parse_args(argv)
    started = time.perf_counter()
    found = fuzz_in_process(ns.inputs, ns.seed)
    elapsed = time.perf_counter() - started
    print(f"in-process: {found.inputs:,} inputs in {elapsed:.0f} s ({found.inputs / elapsed:,.0f}/s), "
          f"{found.rejected:,} rejected with the parser's error, {len(found.crashes)} findings")
    for target, data, error in found.crashes[:5]:
        print(f"  {target}: {error}\n    input: {data.hex()}")
    socket_ok = True
    if ns.socket_inputs:
        from tests.fuzz.socket_fuzz import fuzz_broker

        started = time.perf_counter()
        report = fuzz_broker(ns.socket_inputs, ns.seed)
        print(f"sockets: {report.sent:,} inputs over {report.connections:,} connections in "
              f"{time.perf_counter() - started:.0f} s, {report.answered_bytes:,} bytes answered; "
              f"witness answered {report.witness_answers:,} times; "
              f"broker errors logged {len(report.errors)}; connections left open {report.left_open}")
        for line in report.errors[:5]:
            print(f"  {line}")
        socket_ok = report.ok
        from tests.fuzz.sasl_fuzz import fuzz_sasl_broker

        started = time.perf_counter()
        sasl = fuzz_sasl_broker(max(1, ns.socket_inputs // 4), ns.seed)
        print(f"SASL frames: {sasl.sent:,} inputs over {sasl.connections:,} connections in "
              f"{time.perf_counter() - started:.0f} s, {sasl.answered_bytes:,} bytes answered; authenticated "
              f"witness answered {sasl.witness_answers:,} times; broker errors logged {len(sasl.errors)}; "
              f"connections left open {sasl.left_open}")
        for line in sasl.errors[:5]:
            print(f"  {line}")
        socket_ok = socket_ok and sasl.ok
    return 0 if not found.crashes and socket_ok else 1


if __name__ == "__main__":
    sys.exit(main())
