"""The tests of a run that tests/test_suite.py interrupts with one Ctrl-C (not a test_*.py
file: the suite itself never collects them). The first runs the command line in process for
long; the second must not run."""

import os
from pathlib import Path

from titop_fmu.cli import main

MARK = Path(os.environ.get("TITOP_TEST_MARK", "mark"))


def test_a_long_run_of_the_command_line_in_process(tmp_path):
    MARK.with_suffix(".started").touch()
    main(["simulate", "balloon", "--stop", "1000", "--out", str(tmp_path / "x.csv"), "--quiet",
          *os.environ.get("TITOP_TEST_ARGS", "").split()])


def test_the_next_one():
    MARK.with_suffix(".next").touch()
