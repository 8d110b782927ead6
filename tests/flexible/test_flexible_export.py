"""A system with a flexible body exported as one FMU (``titop-fmu export``; the number of modes
fixed in it): the spin-up beam's pythonfmu FMU in a strict FMPy host against the in-process run
of the same file (the C kernel, the loop solved exactly); the standalone kind, whose C layer has
no flexible body yet, refuses it in one line rather than write an FMU that fails at
initialisation."""

import numpy as np
import pytest
from hosts import recorded_names, strict_fmpy_run
from test_flexible_fmus import spinup

from titop_fmu.cli import main
from titop_fmu.simulation import read_file
from titop_fmu.titop import monolithic

H = 0.01


@pytest.mark.slow
def test_pythonfmu_kind_in_a_strict_fmpy_host_is_the_in_process_run(tmp_path):
    """Every call fmi2OK, nothing logged; the tip's position and elastic displacement within
    1e-6 m of the in-process run at every 0.01 s over 2 s."""
    path, fmu = spinup(tmp_path, 2.0), tmp_path / "spinup.fmu"
    assert main(["export", str(path), "--out", str(fmu), "--fmu-kind", "pythonfmu"]) == 0
    names = recorded_names(read_file(path).system)
    r = strict_fmpy_run(fmu, stop_time=2.0, output_interval=H, step_size=H, output=names)
    _, ref = monolithic.run(read_file(path).system, 2.0, H)
    err = np.abs(np.column_stack([r[n] for n in names]) - ref).max()
    print(f"\n[flexible export] spin-up beam, pythonfmu, strict FMPy host, 2 s: {err:.2g}")
    assert np.max(np.abs(ref[:, 4])) > 0.05 and err <= 1e-6


def test_standalone_kind_refuses_a_flexible_body_in_one_line(tmp_path, capsys):
    """Before, the export wrote an FMU whose C layer read the flexible body's modal data as a
    rigid body's inertia: fmi2ExitInitializationMode failed ('beam.inertia' not symmetric)."""
    out = tmp_path / "spinup.fmu"
    assert main(["export", str(spinup(tmp_path, 0.1)), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'beam' (welded_c1_f10)" in err[0] and "pythonfmu" in err[0] and not out.exists()
