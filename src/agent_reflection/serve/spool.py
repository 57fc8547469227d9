"""The receiver's write-ahead log: an export is on disk (fsync'd) before it is acknowledged.

``reflect serve`` answers 200 only after the request's protobuf bytes are appended to the
current segment file of the spool folder and fsync'd; a writer thread then moves closed segments
into DuckDB and deletes each one once its rows are committed. So a slow, locked or dead
database, or a crash of the server itself, never loses an acknowledged export: the segments
still on disk are written on the next start. Rows are keyed by a hash of the record, so a
segment written twice (a crash between COMMIT and the delete) stores nothing twice.

A frame is ``signal byte, 8-byte arrival time (ns since the epoch), 4-byte length, payload,
4-byte CRC-32 of the payload`` (big-endian).
A torn last frame (the process died inside a write, before its fsync, so before the
acknowledgement) is ignored when the segment is read.
"""

from __future__ import annotations

import os
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

SIGNAL_CODES: Final = {"logs": 1, "metrics": 2, "traces": 3}
_SIGNALS: Final = {code: name for name, code in SIGNAL_CODES.items()}
_HEADER: Final = struct.Struct(">BQI")
_CRC: Final = struct.Struct(">I")
_SUFFIX: Final = ".otlp"
#: A segment is closed once it holds this many bytes, so the writer takes the backlog a few
#: exports at a time (about 3,000 Claude Code events a segment) and its memory is bounded by
#: a batch, not by how far behind it is.
DEFAULT_SEGMENT_BYTES: Final = 1024 * 1024


@dataclass(frozen=True)
class Frame:
    """One acknowledged export request: its signal, arrival time and protobuf bytes."""

    signal: str
    received_ns: int
    payload: bytes


class Spool:
    """Append-and-fsync segments in ``directory``; thread-safe."""

    def __init__(self, directory: Path, segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        existing = self.segments()
        self._next = (int(existing[-1].stem) + 1) if existing else 1
        self._current: BinaryIO | None = None
        self._current_path: Path | None = None
        self._closed_bytes = sum(p.stat().st_size for p in existing)
        self._current_bytes = 0

    def segments(self) -> list[Path]:
        """Every segment file on disk, oldest first."""
        return sorted(p for p in self.directory.glob(f"*{_SUFFIX}") if p.stem.isdigit())

    @property
    def pending_bytes(self) -> int:
        """Bytes acknowledged but not yet in the database."""
        return self._closed_bytes + self._current_bytes

    def append(self, signal: str, received_ns: int, payload: bytes) -> None:
        """Write one frame and fsync it; on return the export may be acknowledged."""
        frame = (
            _HEADER.pack(SIGNAL_CODES[signal], received_ns, len(payload))
            + payload
            + _CRC.pack(zlib.crc32(payload))
        )
        with self._lock:
            if self._current is None:
                self._current_path = self.directory / f"{self._next:012d}{_SUFFIX}"
                self._next += 1
                self._current = self._current_path.open("ab")
            self._current.write(frame)
            self._current.flush()
            os.fsync(self._current.fileno())
            self._current_bytes += len(frame)
            if self._current_bytes >= self.segment_bytes:
                self._close_current()

    def _close_current(self) -> None:
        """Close the segment being written (the caller holds the lock)."""
        if self._current is not None:
            self._current.close()
            self._current = None
            self._closed_bytes += self._current_bytes
            self._current_bytes = 0

    def rotate(self) -> list[Path]:
        """Close the segment being written; every closed segment, oldest first."""
        with self._lock:
            self._close_current()
            return self.segments()

    def done(self, segment: Path) -> None:
        """Forget a segment whose rows are committed."""
        with self._lock:
            size = segment.stat().st_size
            segment.unlink()
            self._closed_bytes = max(0, self._closed_bytes - size)

    def close(self) -> None:
        """Close the segment being written (it stays on disk, read on the next start)."""
        self.rotate()


def read_segment(segment: Path) -> Iterator[Frame]:
    """The frames of a segment; stops at a torn or corrupt tail."""
    data = segment.read_bytes()
    pos = 0
    while pos + _HEADER.size <= len(data):
        code, received_ns, length = _HEADER.unpack_from(data, pos)
        end = pos + _HEADER.size + length
        if code not in _SIGNALS or end + _CRC.size > len(data):
            return
        payload = data[pos + _HEADER.size : end]
        (crc,) = _CRC.unpack_from(data, end)
        if crc != zlib.crc32(payload):
            return
        yield Frame(_SIGNALS[code], received_ns, payload)
        pos = end + _CRC.size
