"""A PNG encoder with nothing but the standard library, for hosts that
rasterise their own views (headless FreeCAD has no renderer of its own)."""

from __future__ import annotations

from typing import Iterable

import struct
import zlib


def encode_png(width: int, height: int, rows: Iterable[bytes]) -> bytes:
    """Encodes RGB rows (bytes of width*3 each) as a PNG."""
    raw = b"".join(b"\x00" + bytes(r) for r in rows)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
            chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))
