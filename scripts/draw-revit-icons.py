#!/usr/bin/env python3
"""Draws the pyRevit buttons' icons (icon.png in each .pushbutton folder):
32 x 32 RGBA, a rounded tile in Nexus's blue with a white mark per button
(connect: a plug arrow in, disconnect: a cross, status: a dot and bar).
Standard library only; run it again after changing a mark."""
import os
import struct
import zlib

SIZE = 32
BLUE = (37, 99, 235, 255)
WHITE = (255, 255, 255, 255)
CLEAR = (0, 0, 0, 0)
PANEL = os.path.join(os.path.dirname(__file__), "..", "hosts", "revit", "Nexus.extension", "Nexus.tab", "Nexus.panel")


def tile(x, y):
    r = 6
    cx = min(max(x, r), SIZE - 1 - r)
    cy = min(max(y, r), SIZE - 1 - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def connect(x, y):
    arrow = 8 <= x <= 20 and 14 <= y <= 17
    head = 18 <= x <= 24 and abs(y - 15.5) <= (24 - x) * 0.9
    return arrow or head


def disconnect(x, y):
    return 8 <= x <= 23 and 8 <= y <= 23 and (abs(x - y) <= 1.5 or abs(x + y - 31) <= 1.5)


def status(x, y):
    dot = (x - 10.5) ** 2 + (y - 15.5) ** 2 <= 12
    bar = 16 <= x <= 24 and 14 <= y <= 17
    return dot or bar


def png(mark):
    rows = b""
    for y in range(SIZE):
        rows += b"\x00"
        for x in range(SIZE):
            px = WHITE if tile(x, y) and mark(x, y) else BLUE if tile(x, y) else CLEAR
            rows += bytes(px)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


for name, mark in (("Connect", connect), ("Disconnect", disconnect), ("Status", status)):
    path = os.path.join(PANEL, name + ".pushbutton", "icon.png")
    with open(path, "wb") as f:
        f.write(png(mark))
    print(path, os.path.getsize(path), "bytes")
