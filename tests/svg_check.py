"""tests/svg_check.py: check a gpulua SVG timeline, then render it and check the picture.

    python3 tests/svg_check.py TIMELINE.svg OUT.png [--json TRACE.json] [--streams N]
                               [--kinds h2d,d2h,kernel] [--flows N]
The SVG must be well-formed XML with an <svg> root; hold a labelled row per
stream (at least N; with --json, one for every track of that Chrome trace of
the same run), a device band, a bar (rect class "op kK") with a <title> for
each kind of work named in --kinds, and its legend entry; at least N arrows
(class "flow") with titles; a title line with the total span; axis labels with
units ("12 ms"), increasing and round (multiples of 1, 2 or 5 times a power of
ten). It is then rendered to OUT.png with rsvg-convert (Debian package
librsvg2-bin), and the PNG (decoded here, no imaging library needed) must be
the SVG's size, not blank, and show each kind's colour in its rows. Prints
"1 passed, 0 failed" or the problems.
"""
import json
import math
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib

NS = "{http://www.w3.org/2000/svg}"
KINDS = {"h2d": 0, "d2h": 1, "d2d": 2, "fill": 3, "kernel": 4, "graph": 5, "gemm": 6, "collective": 7}

args = sys.argv[1:]


def opt(name, default=None):
    return args[args.index(name) + 1] if name in args else default


svg_path, png_path = args[0], args[1]
want_streams = int(opt("--streams", "1"))
want_flows = int(opt("--flows", "0"))
want_kinds = [k for k in opt("--kinds", "").split(",") if k]
problems = []

try:
    root = ET.parse(svg_path).getroot()
except ET.ParseError as e:
    print(f"problem: {svg_path} is not well-formed XML: {e}")
    print("0 passed, 1 failed")
    sys.exit(1)
if root.tag != NS + "svg":
    problems.append(f"the root element is {root.tag}, not an SVG <svg>")


def classes(el):
    return (el.get("class") or "").split()


def texts(cls):
    return [el for el in root.iter(NS + "text") if cls in classes(el)]


def own_text(el):  # the element's text without its <title>
    return (el.text or "") + "".join(c.tail or "" for c in el)


def title_of(el):
    t = el.find(NS + "title")
    return t.text if t is not None and t.text else ""


# rows, devices
rows = [own_text(t).strip() for t in texts("stream")]
if len(rows) < want_streams:
    problems.append(f"{len(rows)} stream rows, wanted at least {want_streams}: {rows}")
if len(set(rows)) != len(rows):
    problems.append(f"a stream has two rows: {rows}")
if not texts("device"):
    problems.append("no device band")
if opt("--json"):
    events = json.load(open(opt("--json")))["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
    tracks = {names[(e["pid"], e["tid"])] for e in events if e.get("ph") == "X"}
    missing = sorted(tracks - set(rows))
    if missing:
        problems.append(f"tracks of the trace without a row: {missing} (rows: {rows})")

# bars, legend, arrows
bars = [r for r in root.iter(NS + "rect") if "op" in classes(r)]
legend = [own_text(t) for g in root.iter(NS + "g") if "legend" in classes(g) for t in g.iter(NS + "text")]
colours = {}
style = "".join(s.text or "" for s in root.iter(NS + "style"))
for k, colour in re.findall(r"\.k(\d)\{fill:(#[0-9a-fA-F]{6})\}", style):
    colours[int(k)] = colour
for kind in want_kinds:
    k = KINDS[kind]
    mine = [b for b in bars if f"k{k}" in classes(b)]
    if not mine:
        problems.append(f"no bar of kind {kind} (class k{k})")
    elif not all(title_of(b) for b in mine):
        problems.append(f"a bar of kind {kind} has no <title>")
    elif not all(float(b.get("width")) > 0 for b in mine):
        problems.append(f"a bar of kind {kind} has no width")
    if not any(kind in t for t in legend):
        problems.append(f"the legend does not name {kind}: {legend}")
    if k not in colours:
        problems.append(f"no colour for kind {kind} in the style")
def luminance(colour):
    r, g, b = bytes.fromhex(colour[1:])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


if len(set(colours.values())) != len(colours):
    problems.append(f"two kinds of work share a colour: {colours}")
for k, colour in colours.items():
    if luminance(colour) > 0.8:
        problems.append(f"kind k{k}'s colour {colour} is too light to see on white")
flows = [l for l in root.iter(NS + "line") if "flow" in classes(l) and title_of(l)]
if len(flows) < want_flows:
    problems.append(f"{len(flows)} arrows with a title, wanted at least {want_flows}")

# the title and the axis
title = " ".join(own_text(t) for t in texts("title"))
if not re.search(r"gpulua timeline: [0-9.]+ (us|ms|s) ", title):
    problems.append(f"the title does not give the total span: '{title}'")
ticks = {}
for t in texts("tick"):
    m = re.fullmatch(r"(\d+(?:\.\d{1,3})?) (us|ms|s)", own_text(t))
    if not m:
        problems.append(f"an axis label without a number and a unit: '{own_text(t)}'")
        continue
    ticks.setdefault(t.get("y"), []).append((float(t.get("x")), float(m.group(1)), m.group(2)))
if not ticks:
    problems.append("no axis labels")
for y, row in ticks.items():
    row.sort()
    values = [v for _, v, _ in row]
    if len(row) < 3:
        problems.append(f"only {len(row)} labels on the axis at y={y}")
    if len({u for _, _, u in row}) != 1:
        problems.append(f"the axis at y={y} mixes units: {row}")
    if any(b <= a for a, b in zip(values, values[1:])):
        problems.append(f"the axis labels at y={y} do not increase left to right: {values}")
    gaps = [b - a for a, b in zip(values, values[1:]) if b > a]
    if gaps:  # every label a multiple of a round step not much below the smallest gap
        d = min(gaps)
        steps = [m * 10 ** e for e in range(-4, 8) for m in (1, 2, 5) if d / 5 - 1e-9 <= m * 10 ** e <= d + 1e-9]
        if not any(all(abs(v / s - round(v / s)) < 1e-6 for v in values) for s in steps):
            problems.append(f"the axis labels at y={y} are not round: {values}")


# render and look at the picture
def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, head = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = head
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"a PNG this check does not decode (depth {depth}, colour type {ctype}, interlace {interlace})")
    bpp = 4 if ctype == 6 else 3
    raw, stride = zlib.decompress(idat), w * bpp
    pixels, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        pixels.append(bytes(line))
        prev = line
    return w, h, bpp, pixels


rsvg = shutil.which("rsvg-convert")
if not rsvg:
    problems.append("rsvg-convert not found: install the Debian package librsvg2-bin to render the timeline")
else:
    r = subprocess.run([rsvg, "-o", png_path, svg_path], capture_output=True, text=True)
    if r.returncode != 0:
        problems.append(f"rsvg-convert failed ({r.returncode}): {r.stderr.strip()}")
    else:
        w, h, bpp, pixels = read_png(png_path)
        if (w, h) != (int(float(root.get("width", "0"))), int(float(root.get("height", "0")))):
            problems.append(f"the picture is {w}x{h}, the SVG says {root.get('width')}x{root.get('height')}")
        # the kinds' colours are counted in the rows only (the legend has them too)
        backs = [r for r in root.iter(NS + "rect") if {"even", "odd"} & set(classes(r))]
        top = min((float(r.get("y")) for r in backs), default=0)
        bottom = max((float(r.get("y")) + float(r.get("height")) for r in backs), default=0)
        counts, inked = {}, 0
        for y, line in enumerate(pixels):
            for i in range(0, len(line), bpp):
                px = line[i:i + 3]
                if bpp == 4 and line[i + 3] < 128:
                    continue  # transparent: background
                if px != b"\xff\xff\xff":
                    inked += 1
                if top <= y < bottom:
                    counts[px] = counts.get(px, 0) + 1
        if inked < 0.02 * w * h:
            problems.append(f"the picture is nearly blank: {inked} of {w * h} pixels are not white")
        for kind in want_kinds:
            colour = colours.get(KINDS[kind])
            if colour and counts.get(bytes.fromhex(colour[1:]), 0) < 20:
                problems.append(f"the picture shows hardly any {kind} ({colour}): "
                                f"{counts.get(bytes.fromhex(colour[1:]), 0)} pixels")
        shown = ", ".join(f"{k} {counts.get(bytes.fromhex(colours[KINDS[k]][1:]), 0)}" for k in want_kinds
                          if KINDS[k] in colours)
        print(f"{png_path}: {w}x{h}, {100 * inked / (w * h):.1f}% inked; pixels of each kind in the rows: {shown}")

print(f"{len(rows)} rows, {len(bars)} bars, {len(flows)} arrows, {sum(len(v) for v in ticks.values())} axis labels")
if problems:
    for p in problems[:20]:
        print("problem:", p)
    print("0 passed, 1 failed")
    sys.exit(1)
print("1 passed, 0 failed")
