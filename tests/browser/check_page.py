#!/usr/bin/env python3
"""Opens a page in headless Chromium (Debian's, driven by its chromedriver over the W3C
WebDriver protocol, standard library only) and prints one JSON object:

    {"console": [messages at level SEVERE or WARNING],
     "charts": {id: {"found", "width", "height", "ink", "png"}}}

`ink` is the share of the element's screenshot that is not its background colour: a chart
that did not draw is 0. Each screenshot is written to --shots/<id>.png. The caller (the
Rust test crates/lancet-cli/tests/report.rs) judges the result.

    check_page.py PAGE.html --chart ID [--chart ID ...] --shots DIR
"""

import argparse
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import zlib

CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1000,3000",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Driver:
    def __init__(self, chromedriver, chromium):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [chromedriver, f"--port={self.port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 30
        while True:
            try:
                self.call("GET", "/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        self.profile = tempfile.mkdtemp(prefix="lancet-chromium-")
        caps = {
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": chromium,
                        "args": CHROMIUM_ARGS + [f"--user-data-dir={self.profile}"],
                    },
                    "goog:loggingPrefs": {"browser": "ALL"},
                }
            }
        }
        created = self.call("POST", "/session", caps)
        if "sessionId" not in created:
            self.proc.terminate()
            raise RuntimeError(f"chromedriver made no session: {created}")
        self.session = created["sessionId"]

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())["value"]
        except urllib.error.HTTPError as e:
            return {"error": json.loads(e.read()).get("value", {})}

    def s(self, method, path, body=None):
        return self.call(method, f"/session/{self.session}{path}", body)

    def close(self):
        try:
            self.call("DELETE", f"/session/{self.session}")
        finally:
            self.proc.terminate()
            self.proc.wait(timeout=30)
            shutil.rmtree(self.profile, ignore_errors=True)


def png_pixels(data):
    """(width, height, rows of RGBA bytes) of an 8-bit RGB or RGBA PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            if depth != 8 or color not in (2, 6):
                raise ValueError(f"PNG of depth {depth}, colour type {color}")
            channels = 4 if color == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line) if channels == 4 else rgb_to_rgba(line))
        prev = line
    return width, height, rows


def rgb_to_rgba(line):
    out = bytearray()
    for i in range(0, len(line), 3):
        out += line[i : i + 3] + b"\xff"
    return bytes(out)


def ink(png):
    """Share of pixels differing from the top-left pixel (the background)."""
    width, height, rows = png_pixels(png)
    background = rows[0][:3]
    inked = sum(
        1
        for row in rows
        for x in range(0, width * 4, 4)
        if abs(row[x] - background[0]) + abs(row[x + 1] - background[1]) + abs(row[x + 2] - background[2]) > 24
    )
    return inked / max(1, width * height)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--chart", action="append", default=[])
    ap.add_argument("--shots", required=True)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    args = ap.parse_args()
    os.makedirs(args.shots, exist_ok=True)
    driver = Driver(args.chromedriver, args.chromium)
    out = {"console": [], "charts": {}}
    try:
        driver.s("POST", "/url", {"url": "file://" + os.path.abspath(args.page)})
        for _ in range(100):
            if driver.s("POST", "/execute/sync", {"script": "return document.readyState", "args": []}) == "complete":
                break
            time.sleep(0.1)
        for entry in driver.s("POST", "/se/log", {"type": "browser"}) or []:
            if isinstance(entry, dict) and entry.get("level") in ("SEVERE", "WARNING"):
                out["console"].append(entry.get("message", ""))
        for chart in args.chart:
            found = driver.s("POST", "/element", {"using": "css selector", "value": f"#{chart}"})
            if not isinstance(found, dict) or "error" in found or not found:
                out["charts"][chart] = {"found": False}
                continue
            element = next(iter(found.values()))
            rect = driver.s("GET", f"/element/{element}/rect")
            shot = base64.b64decode(driver.s("GET", f"/element/{element}/screenshot"))
            path = os.path.join(args.shots, f"{chart}.png")
            with open(path, "wb") as f:
                f.write(shot)
            out["charts"][chart] = {
                "found": True,
                "width": rect.get("width", 0),
                "height": rect.get("height", 0),
                "ink": ink(shot),
                "png": path,
            }
    finally:
        driver.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
