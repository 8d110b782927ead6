"""The project's files point at nothing outside the repository: the balloon scenario is
docs/balloon-scenario.md, and every relative link of the documentation exists."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: files allowed to name a folder beside the checkout: CI finds the MSL there
OUTSIDE = {".ci/run"}


def tracked():
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / p for p in out.splitlines() if p not in OUTSIDE and ROOT / p != Path(__file__)]


def test_nothing_cites_a_file_outside_the_repository():
    bad = []
    for path in tracked():
        if path.suffix in (".png", ".csv", ".fmu", ".so") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            if re.search(r"(?<![\w/.])shared/", line):
                bad.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "\n".join(bad)


def test_the_documentation_links_exist():
    bad = []
    for path in [p for p in tracked() if p.suffix == ".md"]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            if not (path.parent / target).exists():
                bad.append(f"{path.relative_to(ROOT)}: {target}")
    assert not bad, "\n".join(bad)
