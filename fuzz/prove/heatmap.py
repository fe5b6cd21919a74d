"""The min-slack heatmap: row width minus worst write end, over page_size x attn_dcp_size.

A PNG (written with zlib and struct, a 5x7 pixel font inside: no plotting
library needed) and the same numbers as a markdown table.  Red cells are
violations (the worst write ends past the row), blue cells have slack, the
darker the further from zero (log scale); gray cells have no valid
configuration (UNO runs without DCP, for instance).
"""

from __future__ import annotations

import math
import os
import struct
import zlib

from fuzz.common.files import write_atomically

# 5x7 glyphs, rows top to bottom; text is drawn upper-case.
_FONT = {
    "A": ".###.|#...#|#...#|#####|#...#|#...#|#...#", "B": "####.|#...#|#...#|####.|#...#|#...#|####.",
    "C": ".###.|#...#|#....|#....|#....|#...#|.###.", "D": "####.|#...#|#...#|#...#|#...#|#...#|####.",
    "E": "#####|#....|#....|####.|#....|#....|#####", "F": "#####|#....|#....|####.|#....|#....|#....",
    "G": ".###.|#...#|#....|#.###|#...#|#...#|.####", "H": "#...#|#...#|#...#|#####|#...#|#...#|#...#",
    "I": ".###.|..#..|..#..|..#..|..#..|..#..|.###.", "J": "..###|...#.|...#.|...#.|...#.|#..#.|.##..",
    "K": "#...#|#..#.|#.#..|##...|#.#..|#..#.|#...#", "L": "#....|#....|#....|#....|#....|#....|#####",
    "M": "#...#|##.##|#.#.#|#.#.#|#...#|#...#|#...#", "N": "#...#|#...#|##..#|#.#.#|#..##|#...#|#...#",
    "O": ".###.|#...#|#...#|#...#|#...#|#...#|.###.", "P": "####.|#...#|#...#|####.|#....|#....|#....",
    "Q": ".###.|#...#|#...#|#...#|#.#.#|#..#.|.##.#", "R": "####.|#...#|#...#|####.|#.#..|#..#.|#...#",
    "S": ".####|#....|#....|.###.|....#|....#|####.", "T": "#####|..#..|..#..|..#..|..#..|..#..|..#..",
    "U": "#...#|#...#|#...#|#...#|#...#|#...#|.###.", "V": "#...#|#...#|#...#|#...#|#...#|.#.#.|..#..",
    "W": "#...#|#...#|#...#|#.#.#|#.#.#|#.#.#|.#.#.", "X": "#...#|#...#|.#.#.|..#..|.#.#.|#...#|#...#",
    "Y": "#...#|#...#|.#.#.|..#..|..#..|..#..|..#..", "Z": "#####|....#|...#.|..#..|.#...|#....|#####",
    "0": ".###.|#...#|#..##|#.#.#|##..#|#...#|.###.", "1": "..#..|.##..|..#..|..#..|..#..|..#..|.###.",
    "2": ".###.|#...#|....#|...#.|..#..|.#...|#####", "3": "#####|...#.|..#..|...#.|....#|#...#|.###.",
    "4": "...#.|..##.|.#.#.|#..#.|#####|...#.|...#.", "5": "#####|#....|####.|....#|....#|#...#|.###.",
    "6": "..##.|.#...|#....|####.|#...#|#...#|.###.", "7": "#####|....#|...#.|..#..|.#...|.#...|.#...",
    "8": ".###.|#...#|#...#|.###.|#...#|#...#|.###.", "9": ".###.|#...#|#...#|.####|....#|...#.|.##..",
    "-": ".....|.....|.....|.###.|.....|.....|.....", "_": ".....|.....|.....|.....|.....|.....|#####",
    ".": ".....|.....|.....|.....|.....|.##..|.##..", ",": ".....|.....|.....|.....|.##..|..#..|.#...",
    ":": ".....|.##..|.##..|.....|.##..|.##..|.....", "(": "...#.|..#..|.#...|.#...|.#...|..#..|...#.",
    ")": ".#...|..#..|...#.|...#.|...#.|..#..|.#...", "=": ".....|.....|#####|.....|#####|.....|.....",
    "@": ".###.|#...#|....#|.##.#|#.#.#|#.#.#|.###.", "/": ".....|....#|...#.|..#..|.#...|#....|.....",
    "<": "...#.|..#..|.#...|#....|.#...|..#..|...#.", ">": ".#...|..#..|...#.|....#|...#.|..#..|.#...",
    "+": ".....|..#..|..#..|#####|..#..|..#..|.....", " ": ".....|.....|.....|.....|.....|.....|.....",
    "?": ".###.|#...#|....#|...#.|..#..|.....|..#..",
}
_GLYPHS = {ch: [row for row in rows.split("|")] for ch, rows in _FONT.items()}
SCALE = 2  # font pixels per glyph pixel
ADVANCE = 6 * SCALE  # glyph width plus one column of spacing
LINE = 10 * SCALE

WHITE, BLACK, GRAY, GRID = (255, 255, 255), (0, 0, 0), (200, 200, 200), (120, 120, 120)
RED_LIGHT, RED_DARK = (252, 187, 161), (165, 15, 21)
BLUE_LIGHT, BLUE_DARK = (239, 243, 255), (8, 69, 148)


class Canvas:
    """An RGB image in a bytearray, with rectangles and text."""

    def __init__(self, width: int, height: int, background=WHITE):
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def rect(self, x: int, y: int, w: int, h: int, color) -> None:
        x0, y0, x1, y1 = max(0, x), max(0, y), min(self.width, x + w), min(self.height, y + h)
        if x1 <= x0 or y1 <= y0:
            return
        line = bytes(color) * (x1 - x0)
        for yy in range(y0, y1):
            start = (yy * self.width + x0) * 3
            self.pixels[start:start + len(line)] = line

    def text(self, x: int, y: int, s: str, color=BLACK) -> None:
        for i, ch in enumerate(s.upper()):
            glyph = _GLYPHS.get(ch, _GLYPHS["?"])
            for gy, row in enumerate(glyph):
                for gx, bit in enumerate(row):
                    if bit == "#":
                        self.rect(x + i * ADVANCE + gx * SCALE, y + gy * SCALE, SCALE, SCALE, color)

    def png(self) -> bytes:
        raw = b"".join(b"\x00" + bytes(self.pixels[y * self.width * 3:(y + 1) * self.width * 3])
                       for y in range(self.height))

        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)  # 8-bit RGB
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def text_width(s: str) -> int:
    return len(s) * ADVANCE - SCALE


def _mix(a, b, t: float):
    return tuple(round(x + (y - x) * t) for x, y in zip(a, b))


def slack_color(value: int | None, low: int, high: int):
    """Red for a violation (negative slack), blue for slack; log scale, darker further from zero."""
    if value is None:
        return GRAY
    if value < 0:
        return _mix(RED_LIGHT, RED_DARK, math.log1p(-value) / math.log1p(max(1, -low)))
    return _mix(BLUE_LIGHT, BLUE_DARK, math.log1p(value) / math.log1p(max(1, high)))


def _ink(color):
    return WHITE if sum(color) < 3 * 140 else BLACK


def _axes(heat: dict[tuple[int, int], int], axes=None) -> tuple[list[int], list[int]]:
    """(page sizes, dcp sizes): the swept ones if given (cells without a configuration show gray)."""
    if axes is not None:
        return sorted(set(axes[0])), sorted(set(axes[1]))
    return sorted({p for p, _ in heat}), sorted({d for _, d in heat})


def render(heat: dict[tuple[int, int], int], title: str, axes=None) -> Canvas:
    """Columns: page_size; rows: attn_dcp_size; each cell its min slack."""
    pages, dcps = _axes(heat, axes)
    values = list(heat.values()) or [0]
    low, high = min(values), max(values)
    cell_w = max(text_width(str(v)) for v in values + pages + [-1, "N/A"]) + 8 * SCALE
    cell_h = LINE + 4 * SCALE
    pad = 8 * SCALE
    label_w = text_width("DCP 16") + pad
    title_lines = [f"MIN SLACK: {title}".upper(), "ROW WIDTH - WORST WRITE END, IN COLUMNS",
                   "ROWS: ATTN_DCP_SIZE   COLUMNS: PAGE_SIZE"]
    top = pad + LINE * (len(title_lines) + 2)
    grid_w, grid_h = cell_w * len(pages), cell_h * len(dcps)
    legend_h = 5 * LINE
    notes = ["RED: THE WORST WRITE ENDS PAST THE ROW (VIOLATION)", "BLUE: SLACK (LOG SCALE)   GRAY: NO VALID CONFIGURATION"]
    width = max(pad + label_w + grid_w + pad, 2 * pad + max(text_width(t) for t in title_lines + notes))
    height = top + LINE + grid_h + pad + legend_h
    c = Canvas(width, height)
    for i, line in enumerate(title_lines):
        c.text(pad, pad + i * LINE, line)
    x0, y0 = pad + label_w, top + LINE
    c.text(x0, top - LINE, "PAGE_SIZE ->")
    c.text(pad, top - LINE, "DCP")
    c.text(pad, top, "V")
    for j, p in enumerate(pages):
        c.text(x0 + j * cell_w + (cell_w - text_width(str(p))) // 2, top, str(p))
    for i, d in enumerate(dcps):
        y = y0 + i * cell_h
        c.text(pad, y + 2 * SCALE, str(d))
        for j, p in enumerate(pages):
            v = heat.get((p, d))
            color = slack_color(v, low, high)
            x = x0 + j * cell_w
            c.rect(x, y, cell_w, cell_h, GRID)
            c.rect(x + 1, y + 1, cell_w - 2, cell_h - 2, color)
            s = "N/A" if v is None else str(v)
            c.text(x + (cell_w - text_width(s)) // 2, y + 2 * SCALE, s, _ink(color))
    # Legend: the two scales with their ends, and what gray means.
    ly = y0 + grid_h + pad
    bar_w = (width - 2 * pad) // 2 - pad
    for k in range(bar_w):
        t = k / max(1, bar_w - 1)
        c.rect(pad + k, ly, 1, LINE, _mix(RED_DARK, RED_LIGHT, t) if low < 0 else GRAY)
        c.rect(pad + bar_w + pad + k, ly, 1, LINE, _mix(BLUE_LIGHT, BLUE_DARK, t))
    c.text(pad, ly + LINE + SCALE, f"{min(low, -1)}" if low < 0 else "NO VIOLATION")
    c.text(pad + bar_w - text_width("-1"), ly + LINE + SCALE, "-1" if low < 0 else "")
    c.text(pad + bar_w + pad, ly + LINE + SCALE, "0")
    c.text(pad + 2 * bar_w + pad - text_width(str(high)), ly + LINE + SCALE, str(max(high, 0)))
    for i, note in enumerate(notes):
        c.text(pad, ly + (2 + i) * LINE + 2 * SCALE, note)
    return c


def markdown_table(heat: dict[tuple[int, int], int], title: str, axes=None) -> str:
    """The same numbers as a markdown table; violations in bold."""
    pages, dcps = _axes(heat, axes)
    lines = [f"Min slack (row width - worst write end, columns): {title}. Negative (bold): the worst write "
             f"ends past the row, a violation.", "",
             "| attn_dcp_size \\ page_size | " + " | ".join(map(str, pages)) + " |",
             "|---|" + "---:|" * len(pages)]
    for d in dcps:
        cells = []
        for p in pages:
            v = heat.get((p, d))
            cells.append("n/a" if v is None else f"**{v}**" if v < 0 else str(v))
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_heatmap(path: str, heat: dict[tuple[int, int], int], *, title: str, axes=None) -> str:
    """Write PATH (PNG) and PATH with .md (the table); returns the table's path.

    ``axes``: (page sizes, dcp sizes) to lay out; default: those in ``heat``.
    """
    md = os.path.splitext(path)[0] + ".md"
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    with open(path, "wb") as f:
        f.write(render(heat, title, axes).png())
    write_atomically(md, markdown_table(heat, title, axes))
    return md
