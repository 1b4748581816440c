"""The decoded protocol trace: one event per request and one per response, with the connection, the client's id
and software (from its ApiVersions request), the API and version, the correlation id, the decoded fields
(record payloads summarised: batches, records, bytes, base offsets), the error codes of the answer and its
latency.

Events go to a file (`--trace FILE`, one JSON line each) and/or stay in memory for the console's live trace
(`--console`): the newest `keep` of them, and a copy to each watcher. The file is buffered and a background
task flushes it twice a second (and at shutdown), so tracing costs an encoding per request and no system call;
off, it costs nothing.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import struct
import time
import uuid
from typing import IO, Any

import trio

from protocol.header import ErrorCode

_BATCH = struct.Struct(">qi")  # base offset, batch length
_RECORDS_COUNT = struct.Struct(">i")  # at byte 57 of a v2 batch
MAX_ITEMS = 50  # longer lists are cut (with a count) so that one Metadata answer does not flood the trace


def summarize_records(data: bytes | memoryview | None) -> dict[str, Any] | None:
    """Batches, records and bytes of a record set, from batch headers; the payloads are not dumped."""
    if data is None:
        return None
    data = bytes(data)
    pos, batches, records, offsets = 0, 0, 0, []
    while pos + 61 <= len(data):
        base_offset, length = _BATCH.unpack_from(data, pos)
        batches += 1
        records += max(_RECORDS_COUNT.unpack_from(data, pos + 57)[0], 0)
        if len(offsets) < 10:
            offsets.append(base_offset)
        pos += 12 + length
    return {"bytes": len(data), "batches": batches, "records": records, "base_offsets": offsets}


def plain(value: Any, key: str = "", depth: int = 0) -> Any:
    """A decoded request or response as JSON-able data."""
    if depth > 8:
        return "..."
    if key == "records" or key == "records_set":
        return summarize_records(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return {"bytes": len(value)}
    if isinstance(value, uuid.UUID):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: plain(v, k, depth + 1) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list | tuple):
        items = [plain(v, key, depth + 1) for v in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"... {len(value) - MAX_ITEMS} more")
        return items
    return str(value)


def error_names(response: Any, depth: int = 0) -> list[str]:
    """The non-zero error codes of an answer, by name."""
    out: list[str] = []
    if isinstance(response, dict):
        for key, item in response.items():
            if key.endswith("error_code") and item:
                out.append(ErrorCode(item).name if item in ErrorCode._value2member_map_ else str(item))
            elif isinstance(item, list) and depth < 3:
                for element in item:
                    out += error_names(element, depth + 1)
    return out


class Tracer:
    def __init__(self, path: str | None = None, *, keep: int = 0) -> None:
        """`path`: the JSON-lines file (None: none); `keep`: how many recent events stay in memory."""
        self.path = path
        self._file: IO[str] | None = None if path is None else \
            open(path, "a", buffering=1 << 16)  # noqa: SIM115 - closed by close()
        self.recent: collections.deque[dict[str, Any]] = collections.deque(maxlen=keep)
        # each watcher's receiving end -> the sending end events go to
        self._watchers: dict[trio.MemoryReceiveChannel[dict[str, Any]], trio.MemorySendChannel[dict[str, Any]]] = {}

    def write(self, event: dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(json.dumps(event, default=str) + "\n")
        self.recent.append(event)
        for watcher in self._watchers.values():
            try:
                watcher.send_nowait(event)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # a watcher that does not keep up misses events; the broker never waits for it

    def watch(self, buffer: int = 1000) -> trio.MemoryReceiveChannel[dict[str, Any]]:
        """The events from now on, until `unwatch`."""
        send, receive = trio.open_memory_channel[dict[str, Any]](buffer)
        self._watchers[receive] = send
        return receive

    def unwatch(self, receive: trio.MemoryReceiveChannel[dict[str, Any]]) -> None:
        send = self._watchers.pop(receive, None)
        if send is not None:
            send.close()
        receive.close()

    def request(self, peer: str, client: dict[str, Any], api: str, version: int, correlation_id: int,
                request: Any) -> None:
        self.write({"ts": time.time(), "dir": "request", "connection": peer, **client, "api": api,
                    "version": version, "correlation_id": correlation_id, "fields": plain(request)})

    def response(self, peer: str, client: dict[str, Any], api: str, version: int, correlation_id: int,
                 response: Any, latency_s: float, note: str | None = None) -> None:
        event = {"ts": time.time(), "dir": "response", "connection": peer, **client, "api": api, "version": version,
                 "correlation_id": correlation_id, "latency_ms": round(latency_s * 1000, 3),
                 "errors": error_names(response), "fields": plain(response)}
        if note:
            event["note"] = note
        self.write(event)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        for watcher in self._watchers.values():
            watcher.close()
        self._watchers.clear()
