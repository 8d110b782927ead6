"""What loading an FMU leaves on disk: its files are unzipped into the process's temporary
folder, only those a run needs, and removed when the process exits."""

import json
import os
import subprocess
import sys

from fmu_fixtures import fmu_dir, fmu_paths, kind, kind_paths, standalone_paths  # noqa: F401

RUN = """
import json, os, sys
from titop_fmu.cosim.fmpy_unit import FMUUnit
u = FMUUnit("b", sys.argv[1])
u.setup({}, 0.0)
u.do_step(0.0, 1e-3)
u.terminate()
print(json.dumps(sorted(os.path.relpath(os.path.join(d, f), sys.argv[2]).replace(os.sep, "/").split("/", 2)[-1]
                        for d, _, fs in os.walk(sys.argv[2]) for f in fs)))
"""


def test_a_process_leaves_no_unzipped_fmu_behind(kind_paths, tmp_path):
    """A process that ran an FMU (of each kind) unzipped its model description, its resources
    and the binary of this platform, not its sources nor the other platforms' binaries, and
    left the temporary folder as it found it (every run used to leave about 1 MB there)."""
    from fmpy import platform
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", RUN, str(kind_paths["revolute_c1"]), str(tmp_path)], env=env,
                         capture_output=True, text=True, check=True).stdout
    files = json.loads(out.splitlines()[-1])
    assert "modelDescription.xml" in files
    assert f"binaries/{platform}/revolute_c1.so" in files
    assert not [f for f in files if f.startswith("sources/") or
                (f.startswith("binaries/") and not f.startswith(f"binaries/{platform}/"))]
    assert list(tmp_path.iterdir()) == []
