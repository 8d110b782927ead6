"""A system with a flexible body exported as one FMU (``titop-fmu export``; the number of modes
fixed in it, the modal data FMI parameters), of both kinds: the spin-up beam
(examples/spinup_beam.toml) against the in-process run of the same file (the C kernel, the loop
solved exactly). The standalone kind (C only) in FMPy (co-simulation and Model Exchange), in the
strict C host started by ``env -i`` and, for win64, under Wine; the pythonfmu kind in a strict
FMPy host."""

import subprocess

import numpy as np
import pytest
from c_host import harness, harness_args, strict_outputs, under_wine, windows_harness  # noqa: F401
from hosts import recorded_names, strict_fmpy_run
from test_flexible_fmus import spinup

from titop_fmu.cli import main
from titop_fmu.simulation import read_file
from titop_fmu.titop import monolithic

from fmpy import read_model_description, simulate_fmu  # noqa: E402  (c_host skips without FMPy)

H = 0.01
STOP = 20.0

pytestmark = pytest.mark.slow          # an export (about 20 s) and a 20 s run in each host


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """``(system file, standalone FMU)`` of the spin-up beam over 20 s, exported once."""
    folder = tmp_path_factory.mktemp("spinup")
    path, fmu = spinup(folder, STOP), folder / "spinup_beam.fmu"
    assert main(["export", str(path), "--out", str(fmu)]) == 0
    return path, fmu


_RUNS = {}


def in_process(path, stop):
    if stop not in _RUNS:
        _RUNS[stop] = monolithic.run(read_file(path).system, stop, H)[1]
    return _RUNS[stop]


def test_standalone_kind_in_the_strict_c_host_is_the_in_process_run(harness, exported, tmp_path):
    """``env -i``, no Python: every call fmi2OK, nothing logged, the state round trip exact; the
    tip's position and elastic displacement and the hub's angles within 1e-6 m (rad) of the
    in-process run at every 0.01 s over 20 s (measured 3.2e-11)."""
    path, fmu = exported
    md = read_model_description(str(fmu))
    names = recorded_names(read_file(path).system)
    recorded = [[v.name for v in md.modelVariables if v.causality == "output"].index(n) for n in names]
    y = strict_outputs(harness, fmu, tmp_path, int(round(STOP / H)))
    ref = in_process(path, STOP)
    err = np.abs(y[:, recorded] - ref).max()
    print(f"\n[flexible export] spin-up beam, standalone, strict C host, 20 s: {err:.2g} "
          f"(in-plane deflection up to {np.abs(ref[:, 4]).max():.3g} m)")
    assert np.abs(ref[:, 4]).max() > 0.05 and err <= 1e-6


def test_standalone_kind_in_fmpy_co_simulation_and_model_exchange(exported):
    """FMPy as a strict host (co-simulation, 0.01 s steps) within 1e-6 m; FMPy's CVode at
    rtol 1e-12 integrating the FMU's states (Model Exchange, the time events of the hub's
    signal met) within 1e-5 m, over 20 s (measured 2.1e-11 and 5e-9)."""
    path, fmu = exported
    names = recorded_names(read_file(path).system)
    ref = in_process(path, STOP)
    cs = strict_fmpy_run(fmu, stop_time=STOP, output_interval=H, step_size=H, output=names)
    me = simulate_fmu(str(fmu), fmi_type="ModelExchange", solver="CVode", relative_tolerance=1e-12, stop_time=STOP,
                      output_interval=H, output=names)
    me = me[[np.flatnonzero(np.abs(me["time"] - s) <= 1e-9 * max(1.0, s))[-1] for s in H * np.arange(len(ref))]]
    err_cs, err_me = (np.abs(np.column_stack([r[n] for n in names]) - ref).max() for r in (cs, me))
    print(f"\n[flexible export] spin-up beam, standalone, FMPy, 20 s: co-simulation {err_cs:.2g}, "
          f"Model Exchange {err_me:.2g}")
    assert err_cs <= 1e-6 and err_me <= 1e-5


def test_win64_binaries_under_wine_give_the_linux64_outputs(harness, exported, tmp_path):
    """The spin-up beam over 2 s in the C host: the win64 binary (the host built with MinGW-w64,
    under Wine) gives the linux64 one's outputs to 1e-12 of the largest (measured 8.3e-16)."""
    exe = windows_harness(tmp_path)
    _, fmu = exported
    md = read_model_description(str(fmu))
    outputs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
    args = [a.replace(f"{tmp_path}/", "") for a in harness_args(fmu, tmp_path, outputs=outputs, steps=200)]
    (tmp_path / "args.txt").write_text("\n".join(args) + "\n")
    linux = subprocess.run(["env", "-i", str(harness), "@args.txt"], capture_output=True, text=True, timeout=300,
                           cwd=tmp_path)
    win = under_wine(exe, ["@args.txt"], tmp_path)
    assert linux.returncode == win.returncode == 0, win.stdout[-2000:] + win.stderr[-2000:]
    values = {k: np.array([float(line.split()[-1]) for line in r.stdout.splitlines() if line.startswith("y ")])
              for k, r in (("linux", linux), ("win", win))}
    assert values["win"].shape == values["linux"].shape == (201 * len(outputs),)
    diff = np.abs(values["win"] - values["linux"]).max() / np.abs(values["linux"]).max()
    print(f"\n[flexible export] spin-up beam, win64 under Wine vs linux64, 2 s: {diff:.2g} of the largest output")
    assert diff <= 1e-12


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
