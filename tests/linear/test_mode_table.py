"""The modes of a linear model (LinearModel.modes, the table linearize prints): participation
factors checked against right and left eigenvectors taken independently, each from the null
space of ``A - lambda I`` (its residual checked), on free spacecraft whose rigid-body
eigenvalues are defective (Jordan blocks: ``eig`` gives nearly parallel eigenvectors there, and
``inv(V)`` polluted every mode's participation)."""

from pathlib import Path

import numpy as np
import pytest

from titop_fmu.cli import main
from titop_fmu.cosim import systemfile
from titop_fmu.linear import LinearModel, trim

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.filterwarnings("ignore::titop_fmu.errors.ParameterWarning")

#: a spacecraft as a user writes it, like examples/spacecraft.toml: a bus with a full inertia, two
#: solar-array wings on hinges (one on a yoke mounted at three Euler angles), a two-axis antenna
#: pointing mechanism (azimuth, elevation); oblique axes, springs and dampers in the joints
WINGS = """
links = [["bus.c1", "yoke.p"], ["yoke.c1", "wing1.p"], ["bus.c2", "wing2.p"], ["bus.c3", "az.p"], ["az.c1", "el.p"]]
record = ["wing1.joint.q[3]", "wing2.joint.q[3]", "az.joint.q[3]", "el.joint.q[3]"]
[units.bus]
model = "floating_base_c3"
mass = 800.0
inertia = [[600.0, 12.0, -8.0], [12.0, 700.0, 5.0], [-8.0, 5.0, 500.0]]
com = [0.02, -0.01, 0.05]
"c1.r" = [0.0, 1.1, 0.2]
"c2.r" = [0.0, -1.1, 0.2]
"c3.r" = [0.3, 0.2, 1.0]
gravity = [0.0, 0.0, 0.0]
Theta0 = [0.1, -0.2, 0.3]
twist0 = [0.0, 0.0, 0.0, 0.01, -0.02, 0.05]
[units.yoke]
model = "welded_c1"
mass = 4.0
inertia = [[0.2, 0.01, 0.0], [0.01, 0.05, 0.0], [0.0, 0.0, 0.2]]
com = [0.0, 0.3, 0.0]
"c1.r" = [0.0, 0.6, 0.0]
mount = [0.1, -0.05, 0.2]
gravity = [0.0, 0.0, 0.0]
[units.wing1]
model = "revolute_c0"
mass = 40.0
inertia = [[60.0, 1.0, 0.0], [1.0, 2.0, 0.3], [0.0, 0.3, 58.0]]
com = [0.1, 4.0, 0.05]
axis = [0.1, 0.0, 1.0]
k = 400.0
d = 4.0
gravity = [0.0, 0.0, 0.0]
[units.wing2]
model = "revolute_c0"
mass = 40.0
inertia = [[60.0, -1.0, 0.0], [-1.0, 2.0, 0.0], [0.0, 0.0, 58.0]]
com = [0.0, -4.0, 0.1]
axis = [0.0, 0.2, 1.0]
k = 500.0
d = 5.0
gravity = [0.0, 0.0, 0.0]
[units.az]
model = "revolute_c1"
mass = 5.0
inertia = [[0.1, 0.0, 0.0], [0.0, 0.1, 0.0], [0.0, 0.0, 0.1]]
com = [0.0, 0.0, 0.1]
"c1.r" = [0.0, 0.0, 0.2]
axis = [0.0, 0.1, 1.0]
k = 50.0
d = 2.0
gravity = [0.0, 0.0, 0.0]
[units.el]
model = "revolute_c0"
mass = 8.0
inertia = [[0.5, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 0.8]]
com = [0.1, 0.0, 0.3]
axis = [0.0, 1.0, 0.1]
k = 50.0
d = 2.0
gravity = [0.0, 0.0, 0.0]
"""


def null_vector(M):
    """The unit vector of the null space of ``M`` (its smallest singular value's), that value,
    and the next one (a simple eigenvalue: a gap)."""
    _, s, vh = np.linalg.svd(M)
    return vh[-1].conj(), s[-1], s[-2]


def classical_participation(A, lam):
    """``|v_i w_i| / |w^T v|`` for the simple eigenvalue ``lam``: ``v`` from the null space of
    ``A - lam I``, ``w`` of its transpose, both checked."""
    M = A - lam * np.eye(len(A))
    v, s, gap = null_vector(M)
    w, t, _ = null_vector(M.T)
    scale = np.linalg.norm(A)
    assert s <= 1e-12 * scale and t <= 1e-12 * scale and gap > 1e-6 * scale, (s, t, gap)
    assert np.linalg.norm(A @ v - lam * v) <= 1e-12 * scale and np.linalg.norm(w @ A - lam * w) <= 1e-12 * scale
    p = np.abs(v * w) / abs(w @ v)
    return p / p.sum()


def hover_model():
    """examples/spacecraft_hover.toml at its hovering equilibrium: gravity balanced by the thrust,
    eight defective zero eigenvalues."""
    eq = trim(systemfile.read(ROOT / "examples" / "spacecraft_hover.toml").system)
    return eq.linearize()


def test_dominant_states_are_the_null_space_vectors_participation():
    """Every oscillating mode of the hovering spacecraft: its shares are the classical
    participation factors of its right and left eigenvectors taken from the null spaces (they
    were polluted by the inverse of the eigenvector matrix, nearly singular at the rigid-body
    Jordan blocks: bus.w_z 49 % instead of 41 %, link2.qd ranked before link2.q)."""
    model = hover_model()
    assert model.count_zero() == 8
    checked = 0
    for mode in model.modes():
        if mode.frequency == 0:
            continue
        p = classical_participation(model.A, mode.eigenvalue)
        for name, share in mode.dominant:
            assert share == pytest.approx(p[model.states.index(name)], abs=1e-9), (mode, name)
        top = sorted(p, reverse=True)[:len(mode.dominant)]
        assert [s for _, s in mode.dominant] == pytest.approx(top, abs=1e-9)
        checked += 1
    assert checked == 7


def test_participation_does_not_depend_on_the_states_units():
    """States in other units (A -> D A D^-1, D diagonal from 1e-3 to 1e3): every mode's shares are
    the same, the rigid-body ones included (to 1e-6: the scaling's condition number is 1e6)."""
    model = hover_model()
    modes = model.modes()
    rng = np.random.default_rng(3)
    for _ in range(5):
        d = 10.0 ** rng.uniform(-3, 3, len(model.A))
        scaled = LinearModel(d[:, None] * model.A / d[None, :], model.B, model.C, model.D, model.states,
                             model.inputs, model.outputs).modes()
        assert len(scaled) == len(modes)
        for a, b in zip(modes, scaled):
            assert b.eigenvalue == pytest.approx(a.eigenvalue, abs=1e-6)
            theirs = dict(b.dominant)
            common = [n for n, _ in a.dominant if n in theirs]
            assert len(common) >= len(a.dominant) - 1, (a, b)             # a tie may change the last one
            for name, share in a.dominant:
                if name in theirs:
                    assert theirs[name] == pytest.approx(share, abs=1e-6), (a, b)


def test_a_spacecraft_with_two_wings_at_rest(tmp_path, capsys):
    """The user's command: at rest, the bus free, its twelve zero eigenvalues (six Jordan blocks:
    position and attitude integrate velocity and rate). Nothing depends on the bus's position and
    attitude, and its velocity and rate enter only their own integrals: every left eigenvector of
    a flexible mode is zero on the bus's states, so the bus takes no part in the wing and antenna
    modes (participation 0); the zero modes are the bus's twelve states, each its twelfth."""
    (tmp_path / "sc.toml").write_text(WINGS)
    out = tmp_path / "lin.npz"
    assert main(["linearize", str(tmp_path / "sc.toml"), "--set", "bus.twist0=[0,0,0,0,0,0]", "--trim",
                 "--out", str(out)]) == 0
    table = capsys.readouterr().out
    model = LinearModel.load(out)
    bus = [i for i, n in enumerate(model.states) if n.startswith("bus.")]
    assert len(bus) == 12 and model.count_zero() == 12
    zero_line = next(line for line in table.splitlines() if line.strip().startswith("0 (x12)"))
    assert sorted(zero_line.split("-  ")[1].split(", ")) == sorted(model.states[i] for i in bus)
    modes = model.modes()
    for mode in modes:
        if mode.frequency == 0:
            assert sorted(n for n, _ in mode.dominant) == sorted(model.states[i] for i in bus)
            assert [s for _, s in mode.dominant] == pytest.approx([1 / 12] * 12, abs=1e-9)
            continue
        p = classical_participation(model.A, mode.eigenvalue)
        assert p[bus].max() <= 1e-9, mode
        assert not any(n.startswith("bus.") for n, _ in mode.dominant), mode
        assert [s for _, s in mode.dominant] == pytest.approx(sorted(p, reverse=True)[:len(mode.dominant)], abs=1e-9)
    wings = [m for m in modes if m.frequency and m.dominant[0][0].startswith("wing")]
    assert len(wings) == 2 and {m.dominant[0][0] for m in wings} == {"wing1.q", "wing2.q"}
