#!/usr/bin/env python3
"""A headless Chromium screenshot of the documentation site's landing page.

Serves SITE_DIR on a free loopback port (python -m http.server, stopped afterwards), takes
the screenshot into OUT_PNG (1280x900) and checks that it was written.

Usage: site_shot.py SITE_DIR OUT_PNG
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    site, out = Path(argv[0]), Path(argv[1])
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("site_shot: chromium not found", file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(site)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/"
        for _ in range(100):  # up to 10 s for the server to listen
            try:
                urllib.request.urlopen(url, timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        with tempfile.TemporaryDirectory() as profile:
            subprocess.run(
                [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", f"--user-data-dir={profile}", f"--screenshot={out.resolve()}",
                 "--window-size=1280,900", url],
                check=True, timeout=120, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        server.terminate()
        server.wait(timeout=10)
    if not out.exists() or out.stat().st_size == 0:
        print(f"site_shot: no screenshot written to {out}", file=sys.stderr)
        return 1
    print(f"site_shot: {out} ({out.stat().st_size} bytes) of {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
