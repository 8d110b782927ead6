"""The guide cannot rot: every command and code block of README.md and docs/*.md runs as
written, page by page, in a fresh folder holding the examples (tests/support/guide.py says
how blocks are read and marked), and the files its commands name are written."""

import pytest

from guide import ROOT, Reader, blocks, commands, pages

#: pages plain ``pytest`` runs too (the others are slow): the first ones a user reads, and those
#: whose blocks run in a second
QUICK = {"README.md", "tutorial.md", "system-files.md", "index.md", "architecture.md"}
#: fence languages that would escape the runner: write ``sh``, ``console`` or ``python``
ALIASES = {"bash", "shell", "shell-session", "zsh", "py", "python3", "pycon", "ipython"}


def runnable(page) -> bool:
    return any(b.runs or "file" in b.marks for b in blocks(page))


def params():
    return [pytest.param(page, id=str(page.relative_to(ROOT)),
                         marks=() if page.name in QUICK else pytest.mark.slow)
            for page in pages() if runnable(page)]


@pytest.mark.parametrize("page", params())
def test_the_page_runs_as_written(page, tmp_path):
    reader = Reader(tmp_path)
    reader.follow(page)
    if reader.left_out:
        pytest.skip("; ".join(f"{b.where} not run: {reason}" for b, reason in reader.left_out))


def test_every_block_is_run_or_says_why_not():
    bad = []
    for page in pages():
        for b in blocks(page):
            where = f"{b.where} ({b.lang or 'no language'})"
            if b.lang in ALIASES:
                bad.append(f"{where}: write sh, console or python, which the tests run")
            if "not run" in b.marks and not b.marks["not run"]:
                bad.append(f"{where}: <!-- not run: ... --> gives no reason")
            if b.runs and b.lang != "python" and not commands(b):
                bad.append(f"{where}: a block to run holds no command")
    assert not bad, "\n".join(bad)


def test_the_files_the_guide_writes_are_the_examples():
    """A file a page has the reader write under examples/ is the repository's, byte for byte."""
    bad = []
    for page in pages():
        for b in blocks(page):
            path = b.marks.get("file", "")
            if path.startswith("examples/") and (ROOT / path).read_text(encoding="utf-8") != b.text:
                bad.append(f"{b.where}: differs from {path}")
    assert not bad, "\n".join(bad)


def test_the_toml_blocks_are_toml():
    tomllib = pytest.importorskip("tomllib")                 # Python >= 3.11
    bad = []
    for page in pages():
        for b in blocks(page):
            if b.lang == "toml":
                try:
                    tomllib.loads(b.text)
                except tomllib.TOMLDecodeError as e:
                    bad.append(f"{b.where}: {e}")
    assert not bad, "\n".join(bad)


def test_ci_runs_the_readme_install_and_test_commands():
    """.ci/run installs the project and runs the tests exactly as the README tells a reader."""
    ci = {line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()}
    readme = [c.text.split(" #")[0].strip() for b in blocks(ROOT / "README.md") if b.lang == "sh"
              for c in commands(b)]
    install = [c for c in readme if c.startswith("pip install -e \".[")]
    tests = [c for c in readme if c.startswith("pytest")]
    assert install and tests and not (set(install + tests) - ci), (install, tests)


def test_the_guide_pictures_stay_small():
    big = [f"{p.relative_to(ROOT)}: {p.stat().st_size // 1000} kB" for p in (ROOT / "docs").glob("*.png")
           if p.stat().st_size > 400_000]
    assert not big, "\n".join(big)
