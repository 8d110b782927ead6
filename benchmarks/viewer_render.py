"""What the 3-D views cost: the HTML file's size and the time the page takes to draw one frame
in Chromium (headless, software rasterization, no GPU).

    python benchmarks/viewer_render.py [--frames 300] [--repeats 3] [--size 1200x800]

For the balloon (20 s), examples/two_branch.toml (10 s) and examples/spacecraft.toml (20 s,
seven bodies), each run in process: the view is written, then opened ``--repeats`` times
with ``#bench=N`` (the page draws N frames spread over the run, each rasterized, a pixel read
back after it, and keeps the mean time per frame). A frame must take well under 16.7 ms for
playback at 60 frames per second.
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from titop_fmu.cli import main

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = {"balloon": "balloon", "two_branch": str(ROOT / "examples" / "two_branch.toml"),
           "spacecraft": str(ROOT / "examples" / "spacecraft.toml")}
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")


def frame_ms(exe, page: Path, frames: int, size: str) -> float:
    with tempfile.TemporaryDirectory() as profile:
        out = subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={size.replace('x', ',')}",
                              "--dump-dom", f"{page.resolve().as_uri()}#t=0&bench={frames}"],
                             capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'data-render-ms="([^"]+)"', out)
    if not m:
        raise RuntimeError(f"no timing in the page's DOM ({page})")
    return float(m.group(1))


def run(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--size", default="1200x800", help="window size, WIDTHxHEIGHT")
    args = ap.parse_args(argv)
    exe = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if exe is None:
        sys.exit("no Chromium (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'system':12s} {'file kB':>8s}  ms per frame ({args.frames} frames, {args.size}), each repeat")
        for name, system in SYSTEMS.items():
            page = Path(tmp) / f"{name}.html"
            if main(["animate", system, "--out", str(page), "--quiet"]) != 0:
                sys.exit(f"animate {system} failed")
            times = [frame_ms(exe, page, args.frames, args.size) for _ in range(args.repeats)]
            print(f"{name:12s} {page.stat().st_size / 1000:8.0f}  " + "  ".join(f"{x:.2f}" for x in times))


if __name__ == "__main__":
    run()
