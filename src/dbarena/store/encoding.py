"""How the store writes and reads values: UTC timestamps, compressed raw outputs, ids in
chunks below SQLite's limit on parameters (JSON is decoded, and checked, by edge.py)."""

from __future__ import annotations

import uuid
import zlib
from datetime import datetime, timezone
from typing import Iterator, TypeVar

from dbarena.errors import StoreError

RUN_NAMESPACE = uuid.UUID("6f2b8a0e-5d1c-4e8f-9a3b-2c7d4e5f6a10")  # dbarena's, for runs older than schema 11


def pack(text: str) -> bytes:
    return zlib.compress(text.encode(), 6)


def unpack(codec: str, blob: bytes) -> str:
    if codec != "zlib":
        raise StoreError(f"raw output compressed with {codec!r}, which this dbarena cannot read: upgrade dbarena")
    return zlib.decompress(blob).decode()


T = TypeVar("T")


def chunks(ids: list[T], size: int = 900) -> Iterator[list[T]]:
    # Below SQLite's smallest default limit on bound parameters (999 before 3.32).
    for i in range(0, len(ids), size):
        yield ids[i:i + size]


def utc(ts: datetime) -> str:
    return ts.astimezone(timezone.utc).isoformat(timespec="seconds")


def now_utc() -> datetime:
    return datetime.now(timezone.utc)
