"""`--log-format json`: each line a JSON object with the record's fields."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

from broker.log_format import JsonFormatter


def test_json_lines_carry_extra_fields_and_exceptions():
    record = logging.LogRecord("broker.server", logging.WARNING, __file__, 1, "closing %s", ("peer",), None)
    record.connection = "127.0.0.1:1"
    event = json.loads(JsonFormatter().format(record))
    assert event["level"] == "WARNING" and event["logger"] == "broker.server"
    assert event["message"] == "closing peer" and event["connection"] == "127.0.0.1:1"
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", None, sys.exc_info())
    assert "ValueError: boom" in json.loads(JsonFormatter().format(record))["exception"]


def test_the_broker_logs_json(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "broker", "--listen", "127.0.0.1:0", "--data-dir",
                             str(tmp_path), "--log-format", "json"], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if "minibroker ready" in line:
                break
        proc.terminate()
        _, rest = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    events = [json.loads(line) for line in lines + rest.splitlines(keepends=True) if line.startswith("{")]
    assert any(e["logger"] == "broker.server.server" and "listening on" in e["message"] for e in events)
    assert any(e["message"] == "broker stopped" for e in events)
