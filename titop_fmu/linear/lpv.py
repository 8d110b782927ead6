"""Families of linear models along a scheduling parameter (:func:`family` -> :class:`Family`):
an LPV model on a grid, with its interpolation and the interpolation's error measured.

The parameter is a state held at each grid value (a joint angle ``"arm.q"``, a spin rate
``"hub.w_y"``), an input (``"balloon.ext.w[2]"``), or anything that makes a new system (a
mass: ``family(lambda m: balloon.system({"m_P2": m}), "m_P2", grid)``). The equilibrium
is continued along the grid (each search starts from the previous equilibrium), and
every model is in the same basis: the same states, inputs and outputs, each base's
attitude in the chart centred on its own equilibrium (:mod:`.coordinates`).

Between grid points the matrices are interpolated linearly in the parameter
(:meth:`Family.at`). At every mid-point the exact model is computed too (its own
equilibrium, continued from the left grid point) and the interpolation's error reported,
``max |M_interpolated - M_exact| / max |M_exact|`` per matrix (:attr:`Family.errors`).

Files (:meth:`Family.save`): as a :class:`~.model.LinearModel`'s, with ``grid`` and
``parameter``; ``A, B, C, D, x0, u0, y0`` stacked along the grid: in ``.mat`` as MATLAB's
arrays of models (``A(:, :, k)`` at ``grid(k)``, ``ss(A, B, C, D)`` is then the LPV array),
in ``.npz`` first (``A[k]``); the mid-point errors as ``midpoint_errors`` (one row per
interval, columns A, B, C, D).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import TitopError
from .coordinates import Coordinates
from .linearize import as_system
from .model import LinearModel, load_arrays, save_arrays
from .trim import default_free, trim

MATRICES = ("A", "B", "C", "D")


@dataclass
class Family:
    """Linear models on a grid of a scheduling parameter, in one basis."""

    parameter: str
    grid: np.ndarray
    models: list                                   # LinearModel per grid point
    errors: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))   # per interval: A, B, C, D

    def __post_init__(self):
        self.grid = np.asarray(self.grid, dtype=float)

    @property
    def states(self):
        return self.models[0].states

    @property
    def inputs(self):
        return self.models[0].inputs

    @property
    def outputs(self):
        return self.models[0].outputs

    def stacked(self, name) -> np.ndarray:
        """``(len(grid), ...)``: the attribute ``name`` of every model."""
        return np.array([getattr(m, name) for m in self.models])

    def at(self, value) -> LinearModel:
        """The model at ``value`` by linear interpolation between the grid points around it
        (``x0`` interpolated too; its attitude components are then not a unit quaternion)."""
        g = self.grid
        if not g[0] <= value <= g[-1]:
            raise TitopError(f"{self.parameter} = {value:g} is outside the grid [{g[0]:g}, {g[-1]:g}]")
        k = min(int(np.searchsorted(g, value, side="right")) - 1, len(g) - 2) if len(g) > 1 else 0
        if len(g) == 1:
            return self.models[0]
        w = (value - g[k]) / (g[k + 1] - g[k])
        a, b = self.models[k], self.models[k + 1]
        mix = {n: (1 - w) * getattr(a, n) + w * getattr(b, n) for n in (*MATRICES, "x0", "u0", "y0", "xdot0")}
        return LinearModel(mix["A"], mix["B"], mix["C"], mix["D"], a.states, a.inputs, a.outputs, mix["x0"],
                           mix["u0"], mix["y0"], mix["xdot0"], a.x0_names, a.chart)

    def errors_table(self) -> str:
        rows = [f"{'interval of ' + self.parameter:>32}  " + "  ".join(f"{'err ' + n:>9}" for n in MATRICES)]
        for (lo, hi), e in zip(zip(self.grid[:-1], self.grid[1:]), self.errors):
            rows.append(f"{f'[{lo:.6g}, {hi:.6g}]':>32}  " + "  ".join(f"{x:9.2e}" for x in e))
        return "\n".join(rows)

    def save(self, path):
        mat = str(path).endswith(".mat")
        d = self.models[0].arrays()
        for n in (*MATRICES, "x0", "u0", "y0", "xdot0"):
            v = self.stacked(n)
            d[n] = np.moveaxis(v, 0, -1) if mat else v                # MATLAB: the grid last
        d.update(grid=self.grid, parameter=self.parameter, midpoint_errors=self.errors)
        save_arrays(path, d)

    @classmethod
    def load(cls, path) -> Family:
        d = load_arrays(path)
        mat = str(path).endswith(".mat")
        grid = np.atleast_1d(d["grid"])
        stacked = {}
        for n in (*MATRICES, "x0", "u0", "y0", "xdot0"):
            v = np.asarray(d[n])
            if mat:
                v = v.reshape(v.shape[:2] + (len(grid),)) if n in MATRICES else v.reshape(-1, len(grid))
                v = np.moveaxis(v, -1, 0)
            stacked[n] = v.reshape(len(grid), -1) if n not in MATRICES else v
        models = [LinearModel(*(stacked[n][k] for n in MATRICES), d["StateName"], d["InputName"], d["OutputName"],
                              *(stacked[n][k] for n in ("x0", "u0", "y0", "xdot0")), d["x0_names"], d["chart"])
                  for k in range(len(grid))]
        errors = np.asarray(d["midpoint_errors"], dtype=float).reshape(-1, 4)
        return cls(str(d["parameter"]), grid, models, errors)


def _relative(a, b) -> float:
    scale = float(np.max(np.abs(b), initial=0.0))
    return float(np.max(np.abs(a - b), initial=0.0)) / scale if scale > 0 else float(np.max(np.abs(a), initial=0.0))


def family(system, parameter: str, grid, *, free=None, inputs=None, outputs=None, state=None,
           midpoints: bool = True) -> Family:
    """The linear models at the equilibria along ``grid`` of ``parameter`` (module docstring).

    ``system``: a :class:`~titop_fmu.system.System` or :class:`~titop_fmu.cosim.CoSystem`
    (``parameter`` a state or input name), or a callable ``value -> system`` (``parameter``
    just names it). ``free``: the equilibrium's free unknowns (default: every joint position
    and velocity and base attitude, less a scheduled state); ``inputs``, ``outputs``: the
    models' (:func:`~.linearize.linearize`); ``state``: where the first search starts.
    ``midpoints``: compute the exact models at the mid-points and the interpolation errors."""
    grid = np.asarray(grid, dtype=float)
    if grid.ndim != 1 or len(grid) < 1 or np.any(np.diff(grid) <= 0):
        raise TitopError("the grid must be one or more increasing values")
    make = system if callable(system) else (lambda _value, _s=system: _s)

    def point(value, start, found):
        """The equilibrium and model at ``value``, the search starting at ``start`` with the
        free inputs at ``found``."""
        s, recorded = as_system(make(value))
        coords = Coordinates(s)
        y = s.initial_state() if start is None else np.array(start, dtype=float)
        given = dict(found)
        unknowns = list(free) if free is not None else None
        if not callable(system):
            given[parameter] = value
            if parameter in coords.index:
                if unknowns is None:
                    unknowns = [u for u in default_free(coords) if u != parameter]
                elif parameter in unknowns:
                    raise TitopError(f"the scheduling parameter {parameter} cannot be free")
        eq = trim(s, y, unknowns, given)
        names = recorded if outputs is None else outputs
        model = eq.linearize(inputs, names)
        return eq, model

    models, equilibria = [], []
    start, found = state, {}
    for value in grid:
        eq, model = point(value, start, found)
        if models and (model.states, model.inputs, model.outputs) != (models[0].states, models[0].inputs,
                                                                         models[0].outputs):
            raise TitopError(f"the model at {parameter} = {value:g} has other states, inputs or outputs")
        models.append(model)
        equilibria.append(eq)
        start, found = eq.state, eq.inputs
    fam = Family(parameter, grid, models)
    if midpoints and len(grid) > 1:
        errors = []
        for k in range(len(grid) - 1):
            mid = 0.5 * (grid[k] + grid[k + 1])
            _, exact = point(mid, equilibria[k].state, equilibria[k].inputs)
            guess = fam.at(mid)
            errors.append([_relative(getattr(guess, n), getattr(exact, n)) for n in MATRICES])
        fam.errors = np.array(errors)
    return fam

