"""Bad data in a neutral modal file (.npz and .mat), read through a system file's
``modal = "panel.npz"``: each is one line naming the field, exit code 2."""

import re

import numpy as np
import pytest
from flexible_systems import simo_beam
from test_systemfile import CONTRACT

from titop_fmu.cli import main


def _shape(a):
    a["phi"] = a["phi"][:, :2, :]                          # a mode shape of 2 components for 3


def _mass(a):
    a["mass"] = a["mass"].copy()
    a["mass"][3, 4] += 0.5                                 # D_P not symmetric


def _omega(a):
    a["omega"] = a["omega"] * np.array([1, -1, 1, 1])


def _misspelled(a):
    a["omgea"] = a.pop("omega")


def _extra(a):
    a["K0x"] = a["K0t"]


def _residual(a):
    a["L"] = 10 * a["L"]                                   # more modal mass than the body has


CASES = {
    "a mode shape of the wrong size": (_shape, None, "phi: expected shape (1, 3, 4) for 4 modes and 1 nodes"),
    "a non-symmetric mass matrix": (_mass, None, "mass: the rigid mass D_P must be symmetric"),
    "a negative frequency": (_omega, None, "omega: the frequencies of the clamped modes must be positive"),
    "a misspelled field": (_misspelled, None, "omgea: not a field of the neutral modal file (did you mean 'omega'?)"),
    "an unknown field": (_extra, None, "K0x: not a field of the neutral modal file"),
    "a participation factor too large": (_residual, None, "L: the residual mass D_P - L^T L is not positive"),
    "a node off the body": (None, "ports = [2]", "ports: node 2 is not in the data, which has 1 node(s)"),
}


@pytest.mark.parametrize("suffix", [".npz", ".mat"])
@pytest.mark.parametrize("case", CASES)
def test_bad_modal_file_is_one_line_naming_the_field(case, suffix, tmp_path, no_run, capsys):
    change, ports, message = CASES[case]
    arrays = {k: v for k, v in simo_beam(4).arrays().items()}
    if change is not None:
        change(arrays)
    name = tmp_path / f"panel{suffix}"
    if suffix == ".npz":
        np.savez(name, **arrays)
    else:
        from scipy.io import savemat
        savemat(name, arrays, oned_as="column")
    text = re.sub(r"beam = \{.*\}\naxis.*\nelements.*\nmodes.*\n", "", CONTRACT)
    text = text.replace("ports = [10.0]", f'modal = "panel{suffix}"\nmodes = 4\n{ports or "ports = [1]"}')
    path = tmp_path / "s.toml"
    path.write_text(text)
    assert main(["simulate", str(path), "--out", str(tmp_path / "o.csv"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"units.beam.flexible.{message}" in err[0] and name.name in err[0], err
