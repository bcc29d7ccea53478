"""Make every icon size from the one source, trainer/resources/icons/dragonfarm.svg.

    python packaging/make_icons.py

Writes trainer/resources/icons/dragonfarm.png (256 px, the window icon),
dragonfarm-<N>.png, dragonfarm.ico (Windows: 16-256 px) and dragonfarm.icns
(macOS: 16-1024 px). Uses Qt's SVG renderer offscreen, so it needs only
PySide6; the .ico and .icns containers (PNG entries) are written here.
"""
from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[1]
ICONS = ROOT / "trainer" / "resources" / "icons"
SOURCE = ICONS / "dragonfarm.svg"
PNG_SIZES = (16, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# icns element types with PNG data: (type, pixel size)
ICNS_TYPES = (("icp4", 16), ("icp5", 32), ("icp6", 64), ("ic07", 128), ("ic08", 256), ("ic09", 512),
              ("ic10", 1024), ("ic11", 32), ("ic12", 64), ("ic13", 256), ("ic14", 512))


def render_png(svg: Path, size: int) -> bytes:
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication([])  # noqa: F841 - keeps Qt's GUI parts alive
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"{svg} is not a valid SVG")
    image = QImage(size, size, QImage.Format_ARGB32)
    image.fill(Qt.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.Antialiasing)
    painter.setRenderHint(QPainter.SmoothPixmapTransform)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.WriteOnly)
    image.save(buffer, "PNG")
    buffer.close()
    return bytes(data)


def ico_bytes(pngs: dict[int, bytes]) -> bytes:
    """An .ico holding PNG images (supported since Windows Vista)."""
    sizes = sorted(pngs)
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = len(header) + 16 * len(sizes)
    entries, blobs = b"", b""
    for size in sizes:
        blob = pngs[size]
        side = 0 if size >= 256 else size          # 0 means 256 in an ICONDIRENTRY
        entries += struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(blob), offset)
        offset += len(blob)
        blobs += blob
    return header + entries + blobs


def icns_bytes(pngs: dict[int, bytes]) -> bytes:
    body = b"".join(kind.encode("ascii") + struct.pack(">I", len(pngs[size]) + 8) + pngs[size]
                    for kind, size in ICNS_TYPES)
    return b"icns" + struct.pack(">I", len(body) + 8) + body


def main() -> int:
    sizes = sorted(set(PNG_SIZES) | set(ICO_SIZES) | {size for _, size in ICNS_TYPES})
    pngs = {size: render_png(SOURCE, size) for size in sizes}
    for size in PNG_SIZES:
        (ICONS / f"dragonfarm-{size}.png").write_bytes(pngs[size])
    (ICONS / "dragonfarm.png").write_bytes(pngs[256])
    (ICONS / "dragonfarm.ico").write_bytes(ico_bytes({size: pngs[size] for size in ICO_SIZES}))
    (ICONS / "dragonfarm.icns").write_bytes(icns_bytes(pngs))
    for path in sorted(ICONS.iterdir()):
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
