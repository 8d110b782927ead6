"""Linear models through the units of a co-simulation (:func:`linearize_units`): the TITOP
FMUs through FMPy and ``fmi2GetDirectionalDerivative``, as FMI linearization tools do,
or the same blocks in process.

A co-simulation FMU has no state derivatives to give, and its ``doStep`` cannot be
differentiated exactly (small steps are a finite difference). The TITOP FMUs expose their
continuous states instead, as FMI 2.0 allows a co-simulation FMU to
(``ModelStructure/Derivatives``: local variables ``x.<state>`` and ``der(x.<state>)``),
and ``fmi2GetDirectionalDerivative`` then differentiates, exactly (the forward-mode
kernel inside the FMU), their outputs and state derivatives with respect to their
inputs and states: each unit's ``d [y; xdot] / d [u; x]`` at the operating point
(:meth:`~titop_fmu.cosim.protocol.Unit.state_space_derivatives`).

The system's model is then the interconnection of these linear models, in closed form:
with the couplings ``u = L y + E du`` (``L`` the connections, ``E`` the model's inputs among
the constant ones),

    dy = (1 - Dyu L)^-1 (Dyx dx + Dyu E du),   dxdot = Dxx dx + Dxu (L dy + E du),

which solves the algebraic loop of the wired blocks exactly. The operating point is the
units' own: each initialized from its parameters (a state given here is written into
their initial-state parameters ``q0, qd0, r0, Theta0, twist0``), the coupling inputs found
by Newton's method on ``u = L y(u)`` with the same derivatives. The bases' quaternions are
finally mapped to the minimal coordinates of :mod:`.coordinates`, as in process.
"""

from __future__ import annotations

import numpy as np

from ..cosim import CoSystem
from ..cosim.names import port_of
from ..errors import ConnectionError_, SolverError
from ..spatial import dcm_from_quat, euler_from_dcm
from ..titop.records import QUANTITIES
from ..titop.units import TitopUnits
from ..topology import tree_order
from .coordinates import CHART, Coordinates
from .model import LinearModel

#: the exposed states of a floating (or imposed-motion) base and of a joint, by their FMI names
BASE, JOINT = tuple(f"x.{s}" for s in ("v_x", "v_y", "v_z", "w_x", "w_y", "w_z", "r_x", "r_y", "r_z",
                                       "q_w", "q_x", "q_y", "q_z")), ("x.q", "x.qd")


def with_state(cs: CoSystem, states: dict) -> CoSystem:
    """A copy of ``cs`` whose units start at ``states`` (``{unit: its own state vector}``):
    the initial-state parameters of joints (``q0, qd0``) and bases (``twist0, r0, Theta0``)."""
    out = CoSystem()
    for name, spec in cs.units.items():
        params = dict(spec.parameters)
        x = states.get(name)
        if x is not None and len(x) == 2:
            params.update({"q0": float(x[0]), "qd0": float(x[1])})
        elif x is not None and len(x) == 13:
            Theta = euler_from_dcm(dcm_from_quat(x[9:13]))
            params.update({f"twist0[{i + 1}]": float(v) for i, v in enumerate(x[0:6])})
            params.update({f"r0[{i + 1}]": float(v) for i, v in enumerate(x[6:9])})
            params.update({f"Theta0[{i + 1}]": float(v) for i, v in enumerate(Theta)})
        out.add(name, spec.model, params)
    out.connections, out.links = list(cs.connections), list(cs.links)
    out.inputs, out.recorded = dict(cs.inputs), list(cs.recorded)
    return out


class _Layout:
    """The units' scalars in one vector each: inputs, outputs, exposed states."""

    def __init__(self, units: dict):
        self.units = units
        self.inp, self.out, self.x = {}, {}, {}
        ni = no = nx = 0
        for name, u in units.items():
            t = u.type
            self.inp[name], self.out[name], self.x[name] = (slice(ni, ni + len(t.input_names)),
                                                            slice(no, no + len(t.output_names)),
                                                            slice(nx, nx + len(t.states)))
            ni, no, nx = ni + len(t.input_names), no + len(t.output_names), nx + len(t.states)
        self.n_in, self.n_out, self.n_x = ni, no, nx

    def input_index(self, ref) -> list:
        """``[(scalar name, position in the inputs)]`` of an input scalar or port ``unit.name``."""
        return self._index(ref, "input", self.inp)

    def output_index(self, ref) -> list:
        """``[(scalar name, position in the outputs)]`` of an output scalar or port."""
        return self._index(ref, "output", self.out)

    def _index(self, ref, causality, offsets):
        unit, _, var = ref.partition(".")
        u = self.units.get(unit)
        names = u.type.scalars(var, causality) if u is not None else []
        if not names:
            hint = ("; a body's inertial quantities are linearized in process (titop_fmu.linear.linearize)"
                    if port_of(var)[0].rpartition(".")[2] in QUANTITIES else "")
            raise ConnectionError_(f"unknown {causality} {ref!r}{hint}")
        index = u.type.input_index if causality == "input" else u.type.output_index
        return [(f"{unit}.{n}", offsets[unit].start + index[n]) for n in names]

def linearize_units(cs: CoSystem, units=None, state: dict | None = None, inputs=None, outputs=None,
                    tol: float = 1e-13, max_iter: int = 30) -> LinearModel:
    """The linear model of the co-simulation system ``cs`` through its units (module
    docstring): ``units`` their factory (default: the TITOP FMUs, :class:`TitopUnits`),
    ``state`` the units' own states at the operating point (default: their initial states),
    ``inputs`` and ``outputs`` names of unit scalars or ports (default: every unconnected
    input but motion vectors; the record list)."""
    units = TitopUnits("fmu") if units is None else units
    if state:
        cs = with_state(cs, state)
    types = units.unit_types(cs)
    made = {}
    try:
        for name, spec in cs.units.items():
            made[name] = units.make_unit(name, spec.model, spec.parameters)
        return _linearize(cs, made, types, inputs, outputs, tol, max_iter)
    finally:
        for u in made.values():
            u.terminate()


def _linearize(cs, made, types, inputs, outputs, tol, max_iter):
    lay = _Layout(made)
    for name, u in made.items():
        if tuple(u.type.states) not in (BASE, JOINT, ()):
            raise ConnectionError_(f"unit {name!r} exposes states {u.type.states} without minimal coordinates")
    # the connections, scalar to scalar: input position <- output position
    src = {}
    for o_ref, i_ref in cs.connections:
        outs, ins = lay.output_index(o_ref), lay.input_index(i_ref)
        if len(outs) != len(ins):
            raise ConnectionError_(f"connection {o_ref} -> {i_ref}: {len(outs)} outputs to {len(ins)} inputs")
        src.update({i: o for (_, i), (_, o) in zip(ins, outs)})
    connected = np.array(sorted(src), dtype=int)
    L = np.zeros((lay.n_in, lay.n_out))
    L[connected, [src[i] for i in connected]] = 1.0
    constant = {}
    for ref, value in cs.inputs.items():
        for (_, i), v in zip(lay.input_index(ref), np.atleast_1d(np.asarray(value, dtype=float))):
            constant[i] = v
    for name, u in made.items():                            # initialization with the constant inputs
        t = u.type
        u.setup({n: constant[lay.inp[name].start + k] for k, n in enumerate(t.input_names)
                 if lay.inp[name].start + k in constant}, 0.0)
    if inputs is None:
        inputs = [f"{name}.{n}" for name, u in made.items() for k, n in enumerate(u.type.input_names)
                  if lay.inp[name].start + k not in src and ".m[" not in n]
    chosen = [x for ref in inputs for x in lay.input_index(ref)]
    if outputs is None:                             # the record list's unit outputs (not inertial quantities)
        outputs = [ref for ref in cs.recorded if lay.units.get(ref.partition(".")[0]) is not None
                   and lay.units[ref.partition(".")[0]].type.scalars(ref.partition(".")[2], "output")]
    picked = [x for ref in outputs for x in lay.output_index(ref)]

    # the operating point: u = L y(u) on the connected inputs (Newton, the units' derivatives)
    u_all = np.zeros(lay.n_in)
    for i, v in constant.items():
        u_all[i] = v

    every = {name: (np.arange(len(u.type.input_names)), np.arange(len(u.type.output_names)))
             for name, u in made.items()}

    def set_and_read(u_vec):
        y = np.empty(lay.n_out)
        for name, unit in made.items():
            unit.set_inputs(every[name][0], u_vec[lay.inp[name]])
            y[lay.out[name]] = unit.get_outputs(every[name][1])
        return y

    def jacobians():
        """The block-diagonal ``d [y; xdot] / d [u; x]`` of all units."""
        Dyu, Dyx = np.zeros((lay.n_out, lay.n_in)), np.zeros((lay.n_out, lay.n_x))
        Dxu, Dxx = np.zeros((lay.n_x, lay.n_in)), np.zeros((lay.n_x, lay.n_x))
        for name, unit in made.items():
            t = unit.type
            ni, no, nx = len(t.input_names), len(t.output_names), len(t.states)
            if nx:
                J = unit.state_space_derivatives(np.arange(no + nx), np.arange(ni + nx), np.eye(ni + nx))
            else:
                J = unit.directional_derivatives(np.arange(no), np.arange(ni), np.eye(ni))
            i, o, x = lay.inp[name], lay.out[name], lay.x[name]
            Dyu[o, i], Dyx[o, x] = J[:no, :ni], J[:no, ni:]
            Dxu[x, i], Dxx[x, x] = J[no:, :ni], J[no:, ni:]
        return Dyu, Dyx, Dxu, Dxx

    y = set_and_read(u_all)
    for it in range(max_iter + 1):
        r = u_all[connected] - y[[src[i] for i in connected]]
        if np.max(np.abs(r), initial=0.0) <= tol * max(1.0, np.max(np.abs(y), initial=0.0)):
            break
        if it == max_iter:
            raise SolverError(f"the coupling inputs did not converge: residual {np.max(np.abs(r)):.3g}")
        Dyu = jacobians()[0]
        J = np.eye(len(connected)) - (L @ Dyu)[np.ix_(connected, connected)]
        u_all[connected] -= np.linalg.solve(J, r)
        y = set_and_read(u_all)

    Dyu, Dyx, Dxu, Dxx = jacobians()
    m = len(chosen)
    E = np.zeros((lay.n_in, m))
    E[[i for _, i in chosen], np.arange(m)] = 1.0
    solved = np.linalg.solve(np.eye(lay.n_out) - Dyu @ L, np.hstack([Dyx, Dyu @ E]))
    dy_dx, dy_du = solved[:, :lay.n_x], solved[:, lay.n_x:]
    A_nat = Dxx + Dxu @ L @ dy_dx
    B_nat = Dxu @ (L @ dy_du + E)
    rows = [o for _, o in picked]

    # the units' states to the minimal coordinates, in the monolithic engine's order (parents first)
    layout, values, rates = [], np.zeros(lay.n_x), np.zeros(lay.n_x)
    children = {name: [] for name in made}
    for child_port, parent_port in cs.links:
        children[child_port.partition(".")[0]].append(parent_port.partition(".")[0])
    for name in tree_order(children, "links"):
        unit, nx = made[name], len(made[name].type.states)
        if nx:
            v = unit.get_states()
            values[lay.x[name]], rates[lay.x[name]] = v[:nx], v[nx:]
            layout.append((name, "base" if nx == 13 else "joint", lay.x[name]))
    coords = Coordinates(layout=layout)
    T = coords.tangent(values)
    n = coords.n
    minimal = np.hstack([np.eye(n), np.zeros((n, m))])
    xdot, J = coords.rates(values, rates, np.hstack([A_nat @ T, B_nat]), minimal)
    names = [f"{name}.{s[2:]}" for name, _, _ in layout for s in made[name].type.states]
    native = np.concatenate([np.arange(sl.start, sl.stop) for _, _, sl in layout] or [np.zeros(0, dtype=int)])
    return LinearModel(J[:, :n], J[:, n:], dy_dx[rows] @ T, dy_du[rows], list(coords.state_names),
                       [nm for nm, _ in chosen], [nm for nm, _ in picked], values[native],
                       u_all[[i for _, i in chosen]],
                       y[rows], xdot, names, CHART)
