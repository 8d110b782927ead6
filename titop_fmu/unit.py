"""One TITOP block as a co-simulation unit, in process.

This is exactly what an FMU of the block computes (the FMU adapter wraps a
:class:`BlockUnit`), and the in-process implementation of the master's unit
interface: scalar inputs are set, outputs read (direct feedthrough: outputs
always reflect the current inputs), and :meth:`BlockUnit.do_step` integrates
the block's states over a communication step with the inputs held constant.

Scalar variable names follow the FMUs: an input or output port ``name`` of
size 1 is the scalar ``name``; of size ``n > 1`` the scalars
``name[1] .. name[n]`` (e.g. ``p.m[1]`` .. ``p.m[18]``).
"""

from __future__ import annotations

import numpy as np

from .blocks.base import Block
from .errors import SolverError
from .integrators import dopri5


def scalar_names(name: str, size: int) -> list[str]:
    return [name] if size == 1 else [f"{name}[{i}]" for i in range(1, size + 1)]


def flat_names(spec: dict) -> list[str]:
    """Scalar names of a ``{port: size}`` spec, in order."""
    return [s for name, size in spec.items() for s in scalar_names(name, size)]


class BlockUnit:
    """A block, its states, its current inputs and its time.

    ``rtol``/``atol`` are the tolerances of the internal Dormand-Prince 5(4)
    integrator over one communication step.
    """

    def __init__(self, block: Block, rtol: float = 1e-10, atol: float = 1e-10):
        self.block = block
        self.rtol, self.atol = rtol, atol
        self.input_spec = block.inputs
        self.output_spec = block.outputs_spec
        self.input_names = flat_names(self.input_spec)
        self.output_names = flat_names(self.output_spec)
        self._in_slices = _slices(self.input_spec)
        self._out_slices = _slices(self.output_spec)
        self.reset()

    # -- state ---------------------------------------------------------------
    def reset(self, t0: float = 0.0):
        self.t = float(t0)
        self.x = self.block.initial_state()
        self.u = np.zeros(len(self.input_names))
        self.h_guess = None
        self._y = None
        self._kin = self._kin_key = None

    def get_state(self):
        """An opaque copy of everything that determines the future (exact restore)."""
        return (self.t, self.x.copy(), self.u.copy(), self.h_guess)

    def set_state(self, state):
        t, x, u, h = state
        self.t, self.x, self.u, self.h_guess = t, x.copy(), u.copy(), h
        self._y = None

    # -- inputs / outputs ----------------------------------------------------------
    def set_inputs(self, values, idx=None):
        """Set all scalar inputs (array in :attr:`input_names` order), or those at the
        positions ``idx``. A non-finite value raises and changes nothing."""
        values = np.asarray(values, dtype=float)
        if not np.isfinite(values).all():
            names = self.input_names if idx is None else [self.input_names[i] for i in np.atleast_1d(idx)]
            bad = [n for n, v in zip(names, np.atleast_1d(values)) if not np.isfinite(v)]
            raise SolverError(f"non-finite input(s) {bad}")
        if idx is None:
            self.u = values.copy()
        else:
            self.u[idx] = values
        self._y = None

    def set_input(self, name: str, value):
        """Set one input port (``"p.m"``) or one scalar (``"p.m[3]"``)."""
        if name in self._in_slices:
            v = np.atleast_1d(np.asarray(value, dtype=float))
        else:
            v = float(value)
        if not np.all(np.isfinite(v)):
            raise SolverError(f"non-finite input {name}")
        if name in self._in_slices:
            self.u[self._in_slices[name]] = v
        else:
            self.u[self.input_names.index(name)] = v
        self._y = None

    def input_dict(self) -> dict:
        return {n: self.u[s] for n, s in self._in_slices.items()}

    def outputs(self) -> np.ndarray:
        """All scalar outputs (in :attr:`output_names` order) for the current inputs and states.

        The kinematic stage depends only on the states and the twist/pose part of
        the parent motion inputs: it is kept while they do not change, so that a
        change of acceleration-level inputs alone (a loop iteration, a Jacobian
        column) costs only the acceleration stage."""
        if self._y is None:
            b, u = self.block, self.input_dict()
            key = np.concatenate([self.x] + [u[f"{p}.m"][6:18] for p in b.parent_ports]).tobytes()
            if key != self._kin_key:
                self._kin = b.kinematics(self.x, {p: u[f"{p}.m"] for p in b.parent_ports})
                self._kin_key = key
            out = b.assemble_outputs(self.x, self._kin, b.acceleration_stage(self._kin, b.acceleration_inputs(u)))
            y = np.empty(len(self.output_names))
            for name, s in self._out_slices.items():
                y[s] = out[name]
            self._y = y
        return self._y

    def output(self, name: str) -> np.ndarray:
        return self.outputs()[self._out_slices[name]]

    # -- time ----------------------------------------------------------------
    def do_step(self, h: float):
        """Advance the states by ``h`` with the current inputs held constant."""
        if self.block.n_states:
            u = self.input_dict()
            f = self.block.derivative_function(u)
            self.x, self.h_guess, _ = dopri5(f, self.x, h, self.rtol, self.atol, self.h_guess)
            self.x = self.block.project_state(self.x)
        self.t += h
        self._y = None

    # -- structure -------------------------------------------------------------
    def dependencies(self, seed: int = 0) -> dict:
        """``{output scalar: [input scalars it depends on]}`` (direct feedthrough).

        Found by perturbing each input at two random states and inputs and
        looking for any change of each output: a block computes outputs that do
        not depend on an input without touching it, so independence shows as
        bit-identical values.
        """
        rng = np.random.default_rng(seed)
        deps = np.zeros((len(self.output_names), len(self.input_names)), dtype=bool)
        saved = self.get_state()
        try:
            for _ in range(2):
                self.x = self.block.initial_state() + 0.1 * rng.standard_normal(self.block.n_states)
                self.x = self.block.project_state(self.x)
                u0 = rng.standard_normal(len(self.input_names)) * 0.3
                self.set_inputs(u0)
                y0 = self.outputs().copy()
                for j in range(len(self.input_names)):
                    u = u0.copy()
                    u[j] += 0.1 + abs(u0[j])
                    self.set_inputs(u)
                    deps[:, j] |= self.outputs() != y0
        finally:
            self.set_state(saved)
        return {o: [self.input_names[j] for j in np.flatnonzero(deps[i])]
                for i, o in enumerate(self.output_names)}


def _slices(spec: dict) -> dict:
    out, k = {}, 0
    for name, size in spec.items():
        out[name] = slice(k, k + size)
        k += size
    return out
