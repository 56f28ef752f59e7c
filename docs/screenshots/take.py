"""Screenshots of the built site as a reader sees it, at a phone's width (390 px) and a laptop's (1400 px).

Usage: ``python docs/screenshots/take.py HTML_DIR OUT_DIR [PAGE ...]`` with Chromium on the path, after
``sphinx-build docs HTML_DIR``. Pages are paths under ``HTML_DIR`` (default: :data:`PAGES` and every results page).
For each page and width it writes ``<page>-<width>-top.png`` (the first screen) and, where the page has a figure,
``<page>-<width>-figure.png`` (the screen around its first figure), and prints the page's scroll width against its
client width: a page wider than its window scrolls sideways as a whole, which the site must never do.

Headless Chromium cannot open a window narrower than 500 px, so the widths are set through the DevTools protocol
(``Emulation.setDeviceMetricsOverride``), spoken over a minimal WebSocket client written here with the standard
library, so that the script needs nothing beyond Python and Chromium.
"""

import base64
import io
import json
import os
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

#: The pages every set of screenshots covers, besides the results pages.
PAGES = ("index.html", "getting-started.html", "guide/phases/6-search.html", "cli.html", "cli/learner-learn.html",
         "results/index.html")
WIDTHS = {390: 844, 1400: 900}  # width -> window height (CSS pixels)
PORT = 9333


class DevTools:
    """One page of a headless Chromium, driven through the DevTools protocol over a WebSocket."""

    def __init__(self, url):
        host, _, path = url.removeprefix("ws://").partition("/")
        name, port = host.split(":")
        self.sock = socket.create_connection((name, int(port)), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        response = b""
        while b"\r\n\r\n" not in response:
            response += self.sock.recv(4096)
        if b" 101 " not in response.split(b"\r\n")[0]:
            raise ConnectionError(f"DevTools refused the WebSocket: {response[:200]!r}")
        self.buffer = response.split(b"\r\n\r\n", 1)[1]
        self.calls = 0

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def _send(self, text):
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        head = struct.pack("!BB", 0x81, 0x80 | n) if n < 126 else (
            struct.pack("!BBH", 0x81, 0x80 | 126, n) if n < 1 << 16 else struct.pack("!BBQ", 0x81, 0x80 | 127, n))
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _receive(self):
        message = b""
        while True:
            first, second = self._read(2)
            n = second & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            message += self._read(n)
            if first & 0x80:  # the final fragment
                return json.loads(message)

    def call(self, method, **params):
        """Send one command and return its result (events in between are skipped)."""
        self.calls += 1
        self._send(json.dumps({"id": self.calls, "method": method, "params": params}))
        while True:
            reply = self._receive()
            if reply.get("id") == self.calls:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def evaluate(self, expression):
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")


def _small_png(png, path):
    """Write the screenshot ``png`` with a palette of 128 colours, a fraction of its size in the repository
    (Pillow comes with matplotlib)."""
    from PIL import Image

    Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=128).save(path, optimize=True)


def shoot(tools, url, width, out, stem):
    """The screenshots of one page at one width; returns ``(scroll width, client width, shots written)``."""
    tools.call("Emulation.setDeviceMetricsOverride", width=width, height=WIDTHS[width], deviceScaleFactor=1,
               mobile=width < 800)
    tools.call("Page.navigate", url=url)
    time.sleep(2.0)  # the theme's scripts and MathJax settle
    scroll, client = json.loads(tools.evaluate(
        "JSON.stringify([document.documentElement.scrollWidth, document.documentElement.clientWidth])"))
    written = []
    for tag, script in (("top", "window.scrollTo(0, 0)"),
                        ("figure", "(() => { const i = document.querySelector('article img');"
                                   " if (!i) return false; i.scrollIntoView({block: 'center'}); return true; })()")):
        if tools.evaluate(script) is False:
            continue
        time.sleep(0.5)
        png = base64.b64decode(tools.call("Page.captureScreenshot", format="png")["data"])
        path = Path(out) / f"{stem}-{width}-{tag}.png"
        _small_png(png, path)
        written.append(path.name)
    return scroll, client, written


def main(argv):
    html, out, pages = Path(argv[0]).resolve(), Path(argv[1]), argv[2:]
    if not pages:
        pages = list(PAGES) + sorted(p.relative_to(html).as_posix()
                                     for p in (html / "results" / "generated").glob("*.html"))
    out.mkdir(parents=True, exist_ok=True)
    browser = subprocess.Popen(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                f"--remote-debugging-port={PORT}", "--remote-allow-origins=*", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wide = []
    try:
        for _ in range(100):
            try:
                targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{PORT}/json"))
                break
            except OSError:
                time.sleep(0.2)
        else:
            raise RuntimeError("Chromium's DevTools did not answer")
        tools = DevTools(next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"])
        tools.call("Page.enable")
        for page in pages:
            stem = page.removesuffix(".html").replace("/", "_")
            for width in WIDTHS:
                scroll, client, written = shoot(tools, (html / page).as_uri(), width, out, stem)
                print(f"{page} at {width} px: scroll width {scroll} of {client}; {', '.join(written)}")
                if scroll > client:
                    wide.append(f"{page} at {width} px")
    finally:
        browser.terminate()
    if wide:
        print("pages wider than their window:", "; ".join(wide))
    return 1 if wide else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
