"""Startup time: a single broker with an empty data dir answers its first ApiVersions without loading what only
later requests need (the other handlers, the hand-written codecs, the coordinators, the partition logs, the
cluster and security code); those load on first use, or with the coordinators shortly after the listeners."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A fresh interpreter starts the server (as `python -m broker` does, without the command line), sends one
# ApiVersions v0 and prints the modules loaded once it is answered; the coordinators' delayed start is put off
# so that a slow machine cannot make it part of the answer.
_PROBE = r"""
import json, struct, sys, tempfile
import trio
from broker.config.options import BrokerConfig, Listener
from broker.server import server as server_module

async def main(data_dir):
    server_module.COORDINATOR_START_DELAY_S = 3600
    server = server_module.Server(BrokerConfig(listeners=[Listener("127.0.0.1", 0)], data_dir=data_dir))
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        stream = await trio.open_tcp_stream(*server.listen_addresses[0])
        body = struct.pack(">hhih", 18, 0, 1, -1)
        await stream.send_all(struct.pack(">i", len(body)) + body)
        answer = b""
        while len(answer) < 4 or len(answer) < 4 + struct.unpack(">i", answer[:4])[0]:
            answer += await stream.receive_some()
        print(json.dumps(sorted(sys.modules)))
        server.shutdown()

with tempfile.TemporaryDirectory() as data_dir:
    trio.run(main, data_dir)
"""

# Loaded later, never for the first answer.
NOT_AT_STARTUP = (
    "coordinator",
    "broker.services.coordinator_runtime",
    "broker.services.groups",
    "broker.services.transactions",
    "broker.services.share_partitions",
    "broker.services.share_coordinator",
    "broker.services.share_persister",
    "broker.services.marker_writer",
    "broker.services.fetch_sessions",
    "protocol.schema",
    "construct",
    "broker.cluster",
    "broker.security.tls",
    "broker.security.sasl",
    "broker.security.authenticator",
    "broker.log.append",
    "broker.log.partition_log",
    "broker.log.segment",
    "broker.log.cleaner",
    "broker.log.producer_state",
    "broker.log.producer_snapshot",
    "protocol.records",
    "protocol.messages.produce",
    "protocol.messages.fetch",
    "kazoo",
    "cramjam",
    # the HTTP services (admin endpoint, schema registry, console) load only when asked for
    "broker.http",
    "starlette",
    "hypercorn",
    "jinja2",
)


def _loaded_at_first_answer() -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_first_api_versions_answer_loads_only_what_it_needs() -> None:
    loaded = _loaded_at_first_answer()
    early = [m for m in loaded if any(m == name or m.startswith(name + ".") for name in NOT_AT_STARTUP)]
    assert early == [], f"loaded before the first ApiVersions answer: {early}"
    handlers = [m for m in loaded if m.startswith("broker.handlers.")]
    assert handlers == ["broker.handlers.api_versions", "broker.handlers.context"]
