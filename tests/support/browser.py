"""A real browser for the tests of the HTML views: Chromium headless (Debian's ``chromium``),
its console messages read from its log, screenshots as RGB arrays. Without Chromium the tests
that need it skip with the reason."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: what Chromium must not do in a test: fetch, update, sync, use a profile of its own
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--hide-scrollbars")
#: a console message of the page, as Chromium logs it: ``INFO:CONSOLE(12)] "text", source: ...``
CONSOLE = re.compile(r"CONSOLE[:(]\d*\)?\]? (.*)")


def chromium() -> str:
    """The Chromium executable, else the test skips with the reason."""
    for name in NAMES:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium (apt-get install chromium): the HTML view is not tested in a browser")


def run(url: str, *args, budget_ms=3000, size=(900, 600)) -> tuple:
    """``(stdout, console messages)`` of Chromium loading ``url`` with a fresh profile, its
    timers run for ``budget_ms`` of virtual time."""
    exe = chromium()
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        proc = subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
                               f"--virtual-time-budget={budget_ms}", *args, url],
                              capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout, [m.group(1) for m in map(CONSOLE.search, proc.stderr.splitlines()) if m]


def url(path: Path, fragment: str = "") -> str:
    return Path(path).resolve().as_uri() + (f"#{fragment}" if fragment else "")


def dom(path: Path, fragment: str = "") -> tuple:
    """``(the page's DOM after its scripts ran, console messages)``."""
    return run(url(path, fragment), "--dump-dom")


def screenshot(path: Path, fragment: str, out: Path, size=(900, 600)) -> tuple:
    """``(RGB image (h, w, 3) uint8, console messages)`` of the page at ``fragment``."""
    from PIL import Image
    _, console = run(url(path, fragment), f"--screenshot={out}", size=size)
    return np.asarray(Image.open(out).convert("RGB")), console


def scene_of(path: Path) -> dict:
    """The scene JSON inlined in a view (``<script type="application/json" id="scene">``)."""
    text = Path(path).read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="scene">(.*?)</script>', text, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))
