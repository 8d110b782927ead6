"""The commands of docs/animation.md run as written (from a folder holding the examples)."""

import shlex
from pathlib import Path

import pytest

from titop_fmu.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "animation.md"


def commands() -> list:
    """The lines of the doc's ``sh`` blocks, comments removed."""
    out, inside = [], False
    for line in DOC.read_text().splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```sh"
            continue
        if inside and line.strip():
            out.append(shlex.split(line, comments=True))
    return out


@pytest.mark.slow
def test_the_commands_of_the_animation_guide_run(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    cmds = commands()
    assert len(cmds) >= 5 and all(c[0] == "titop-fmu" for c in cmds)
    for argv in cmds:
        assert main(argv[1:] + ["--quiet"] * (argv[1] in ("simulate", "animate"))) == 0, argv
        for option in ("--out", "--animate"):
            if option in argv:
                assert (tmp_path / argv[argv.index(option) + 1]).stat().st_size > 1000, argv
    assert (ROOT / "docs" / "animation.png").stat().st_size < 60_000
