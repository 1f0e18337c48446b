"""Draws the extension's icon (media/icon.png, 128x128): a loop around a checked box.

Pure Python (zlib + struct), so the icon can be redrawn without an image library:
    python3 scripts/make_icon.py
"""

import math
import struct
import zlib
from pathlib import Path

SIZE = 128
BG = (30, 41, 59)  # slate
RING = (56, 189, 248)  # sky
BOX = (226, 232, 240)
CHECK = (74, 222, 128)  # green


def pixel(x: float, y: float) -> tuple[int, int, int, int]:
    c = SIZE / 2
    dx, dy = x - c, y - c
    # rounded square background
    r, half = 22, SIZE / 2 - 2
    qx, qy = max(abs(dx) - (half - r), 0), max(abs(dy) - (half - r), 0)
    if math.hypot(qx, qy) > r:
        return (0, 0, 0, 0)
    color = BG
    d = math.hypot(dx, dy)
    angle = math.degrees(math.atan2(dy, dx)) % 360
    if 44 <= d <= 52 and not (300 <= angle <= 335):  # the loop, open where its arrow is
        color = RING
    # arrow head at the loop's gap
    ax, ay = c + 48 * math.cos(math.radians(300)), c + 48 * math.sin(math.radians(300))
    if abs(x - ax) + abs(y - ay) < 11 and y > ay - 2:
        color = RING
    # the box
    if abs(dx) <= 24 and abs(dy) <= 24 and (abs(dx) >= 19 or abs(dy) >= 19):
        color = BOX
    # the check mark: two thick strokes
    def near(px: float, py: float, x1: float, y1: float, x2: float, y2: float) -> float:
        vx, vy = x2 - x1, y2 - y1
        t = max(0.0, min(1.0, ((px - x1) * vx + (py - y1) * vy) / (vx * vx + vy * vy)))
        return math.hypot(px - (x1 + t * vx), py - (y1 + t * vy))

    if near(x, y, c - 13, c + 1, c - 3, c + 11) < 4.5 or near(x, y, c - 3, c + 11, c + 16, c - 12) < 4.5:
        color = CHECK
    return (*color, 255)


def png(path: Path) -> None:
    rows = []
    for y in range(SIZE):
        row = bytearray([0])
        for x in range(SIZE):
            row.extend(pixel(x + 0.5, y + 0.5))
        rows.append(bytes(row))
    raw = zlib.compress(b"".join(rows), 9)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b""))


if __name__ == "__main__":
    png(Path(__file__).resolve().parents[1] / "media" / "icon.png")
