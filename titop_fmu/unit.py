"""One TITOP block as a co-simulation unit, in process.

This is exactly what an FMU of the block computes (the FMU adapter wraps a
:class:`BlockUnit`), and it implements the co-simulation
:class:`~titop_fmu.cosim.protocol.Unit` protocol directly: scalar inputs are set,
outputs read (direct feedthrough: outputs always reflect the current inputs),
and :meth:`~titop_fmu.cosim.protocol.Unit.do_step` integrates the block's states
over a communication step with the inputs held constant.

Scalar variable names are FMI structured names (:mod:`titop_fmu.cosim.names`):
an input or output port ``name`` of size 1 is the scalar ``name``; of size
``n > 1`` the scalars ``name[1] .. name[n]`` (e.g. ``p.m[1]`` .. ``p.m[18]``).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .blocks.base import Block
from .cosim.names import port_names
from .cosim.numerics import wrap
from .cosim.protocol import Unit
from .errors import SolverError
from .integrators import dopri5
from .kernel import BlockKernel, KernelUnavailable


def check_finite(names, idx, values):
    """``values`` for the inputs ``names[idx]`` as a float array; a non-finite one raises
    :class:`SolverError` naming the inputs."""
    values = np.asarray(values, dtype=float)
    if not np.isfinite(values).all():
        picked = np.atleast_1d(np.asarray(names, dtype=object)[idx])
        bad = [n for n, v in zip(picked, np.atleast_1d(values)) if not np.isfinite(v)]
        raise SolverError(f"non-finite input(s) {bad}")
    return values


class IntegratedUnit(Unit):
    """States ``x`` integrated by Dormand-Prince 5(4) over each communication step with the
    inputs ``u`` held, outputs with direct feedthrough: what a block (:class:`BlockUnit`)
    and a whole assembly of blocks (:mod:`titop_fmu.titop.assembly`) have in common.

    Subclasses give the states, derivatives and outputs (:meth:`_initial_state`,
    :meth:`_derivative_function`, :meth:`_evaluate_outputs`, :meth:`_project`);
    ``rtol``/``atol`` are the tolerances of the integrator over one communication step;
    ``name`` and ``type`` (a :class:`~titop_fmu.cosim.protocol.UnitType`) are what a
    co-simulation master sees.
    """

    #: ``set_inputs(unit.ALL, values)`` sets every input
    ALL = slice(None)

    def __init__(self, input_spec: dict, output_spec: dict, rtol: float = 1e-10, atol: float = 1e-10,
                 name: str = "unit", type=None):
        super().__init__()
        self.name, self.type = name, type
        self.rtol, self.atol = rtol, atol
        self.input_spec, self.output_spec = dict(input_spec), dict(output_spec)
        self.input_names = port_names(self.input_spec)
        self.output_names = port_names(self.output_spec)
        self._in_slices = _slices(self.input_spec)
        self._out_slices = _slices(self.output_spec)
        self.reset()

    # -- what a subclass computes ------------------------------------------------------
    def _initial_state(self) -> np.ndarray:
        raise NotImplementedError

    def _derivative_function(self):
        """``f(x) = xdot`` with the current inputs held."""
        raise NotImplementedError

    def _evaluate_outputs(self) -> np.ndarray:
        """All scalar outputs (in :attr:`output_names` order) at ``self.x``, ``self.u``."""
        raise NotImplementedError

    def _project(self, x) -> np.ndarray:
        """``x`` brought back onto the state manifold after a step (e.g. unit quaternions)."""
        return x

    def _integrate(self, h):
        """``(x after h, next step-size guess)`` with the current inputs held: dopri5."""
        x, h_next, _ = dopri5(self._derivative_function(), self.x, h, self.rtol, self.atol, self.h_guess)
        return x, h_next

    # -- state ---------------------------------------------------------------
    def reset(self, t0: float = 0.0):
        self.t = float(t0)
        self.u = np.zeros(len(self.input_names))
        self.x = self._initial_state()
        self.h_guess = None
        self._y = None

    def _setup(self, inputs: dict, t0: float):
        self.reset(t0)
        if inputs:
            self.set_inputs([self.input_names.index(n) for n in inputs], list(inputs.values()))

    def _get_state(self):
        """An opaque copy of everything that determines the future (exact restore)."""
        return (self.t, self.x.copy(), self.u.copy(), self.h_guess)

    def _set_state(self, state):
        t, x, u, h = state
        self.t, self.x, self.u, self.h_guess = t, x.copy(), u.copy(), h
        self._y = None

    # -- inputs / outputs ----------------------------------------------------------
    def _set_inputs(self, idx, values):
        """Set the scalar inputs at the positions ``idx`` (:attr:`ALL`: every one, in
        :attr:`input_names` order). A non-finite value raises and changes nothing."""
        self.u[idx] = check_finite(self.input_names, idx, values)
        self._y = None

    def _get_outputs(self, idx):
        return self.outputs()[idx]

    def state_derivatives(self) -> np.ndarray:
        """``xdot`` at the current states and inputs."""
        return self._derivative_function()(self.x) if self.x.size else np.zeros(0)

    def set_input(self, name: str, value):
        """Set one input port (``"p.m"``) or one scalar (``"p.m[3]"``)."""
        idx = self._in_slices.get(name)
        self.set_inputs(idx if idx is not None else [self.input_names.index(name)], np.atleast_1d(value))

    def input_dict(self) -> dict:
        return {n: self.u[s] for n, s in self._in_slices.items()}

    def outputs(self) -> np.ndarray:
        """All scalar outputs (in :attr:`output_names` order) for the current inputs and
        states (kept until either changes)."""
        if self._y is None:
            self._y = self._evaluate_outputs()
        return self._y

    def output(self, name: str) -> np.ndarray:
        return self.outputs()[self._out_slices[name]]

    # -- time ----------------------------------------------------------------
    def _do_step(self, t: float, h: float):
        """Advance the states from ``t`` by ``h`` with the current inputs held constant
        (the models are autonomous: ``t`` is bookkeeping)."""
        self.t = float(t)
        if self.x.size:
            self.x, self.h_guess = self._integrate(h)
            self.x = self._project(self.x)
        self.t += h
        self._y = None

    def _trial_steps(self, t, h, in_idx, held, end, out_idx):
        """:meth:`~titop_fmu.cosim.protocol.Unit.trial_steps`: each column from the state
        found, which is then restored (the values checked once: what :meth:`_set_state`,
        :meth:`_set_inputs`, :meth:`_do_step`, :meth:`_set_inputs` and :meth:`outputs` give,
        to the bit)."""
        held = np.asarray(held, dtype=float)
        for column in held.T[~np.isfinite(held).all(axis=0)][:1]:      # the first with a non-finite value
            check_finite(self.input_names, in_idx, column)
        end = check_finite(self.input_names, in_idx, end)
        saved = self._get_state()
        Y = np.empty((len(np.arange(len(self.output_names))[out_idx]), held.shape[1]))
        try:
            for j in range(held.shape[1]):
                self._set_state(saved)
                self.u[in_idx] = held[:, j]
                self._y = None
                self._do_step(t, h)
                self.u[in_idx] = end
                self._y = None
                Y[:, j] = self.outputs()[out_idx]
        finally:
            self._set_state(saved)
        return Y

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
        saved = self._get_state()
        try:
            for _ in range(2):
                x0 = self._initial_state()
                self.x = self._project(x0 + 0.1 * rng.standard_normal(x0.size))
                u0 = rng.standard_normal(len(self.input_names)) * 0.3
                self._set_inputs(self.ALL, u0)
                y0 = self.outputs().copy()
                for j in range(len(self.input_names)):
                    u = u0.copy()
                    u[j] += 0.1 + abs(u0[j])
                    self._set_inputs(self.ALL, u)
                    deps[:, j] |= self.outputs() != y0
        finally:
            self._set_state(saved)
        return {o: [self.input_names[j] for j in np.flatnonzero(deps[i])]
                for i, o in enumerate(self.output_names)}

    def state_dependencies(self, seed: int = 0) -> tuple:
        """``(outputs x states, derivatives x states, derivatives x inputs)``: boolean matrices of
        what the outputs and the state derivatives depend on (the structure a Model Exchange FMU
        declares), found as :meth:`dependencies` finds the direct feedthrough: each state and
        input perturbed at two random states and inputs, any change of a value a dependency."""
        rng = np.random.default_rng(seed)
        n_x, n_u, n_y = self.x.size, len(self.input_names), len(self.output_names)
        out_x, dx_x, dx_u = (np.zeros(shape, dtype=bool) for shape in ((n_y, n_x), (n_x, n_x), (n_x, n_u)))
        saved = self._get_state()

        def at(x):
            self.x, self._y = x, None
            return self.outputs().copy(), self.state_derivatives()

        try:
            for _ in range(2):
                x0 = self._project(self._initial_state() + 0.1 * rng.standard_normal(n_x))
                u0 = rng.standard_normal(n_u) * 0.3
                self._set_inputs(self.ALL, u0)
                y0, d0 = at(x0)
                for j in range(n_x):
                    x = x0.copy()
                    x[j] += 0.1 + abs(x0[j])
                    y, d = at(x)
                    out_x[:, j] |= y != y0
                    dx_x[:, j] |= d != d0
                for j in range(n_u):
                    u = u0.copy()
                    u[j] += 0.1 + abs(u0[j])
                    self._set_inputs(self.ALL, u)
                    dx_u[:, j] |= at(x0)[1] != d0
        finally:
            self._set_state(saved)
        return out_x, dx_x, dx_u


class BlockUnit(IntegratedUnit):
    """A block, its states, its current inputs and its time.

    ``kernel``: its state derivatives, outputs and directional derivatives on the C kernel
    (``"c"``), on the NumPy block (``"numpy"``), or on the kernel when it covers the block
    and can run here (``"auto"``; :attr:`kernel` says which)."""

    def __init__(self, block: Block, rtol: float = 1e-10, atol: float = 1e-10, name: str = "block", type=None,
                 kernel: str = "auto"):
        if kernel not in ("auto", "c", "numpy"):
            raise ValueError(f"kernel must be 'auto', 'c' or 'numpy', got {kernel!r}")
        self.block = block
        super().__init__(block.inputs, block.outputs_spec, rtol, atol, name, type)
        self._kernel = self._dual = None
        if kernel != "numpy":
            try:
                self._kernel = BlockKernel(block, self._in_slices, len(self.output_names))
            except KernelUnavailable:
                if kernel == "c":
                    raise

    def dependencies(self, seed: int = 0) -> dict:
        """:meth:`IntegratedUnit.dependencies`, measured on the NumPy block (the reference)
        whatever computes the outputs: a dependency that exists in rounding only (the
        parent's ``x`` force on its ``z`` acceleration through ``P m P^T``) shows in the
        bits at random, differently on the kernel, and the declared structure stays the
        reference's."""
        k, self._kernel = self._kernel, None
        try:
            return super().dependencies(seed)
        finally:
            self._kernel = k

    @property
    def kernel(self) -> str:
        """``"c"`` or ``"numpy"``: what computes the derivatives and outputs."""
        return "numpy" if self._kernel is None else "c"

    def reset(self, t0: float = 0.0):
        super().reset(t0)
        self._kin = self._kin_key = None

    @cached_property
    def _affine_inputs(self) -> np.ndarray:
        """Positions of the acceleration-level inputs: the spatial accelerations
        ``*.m[1..6]`` of the parent ports, and every other input."""
        pos = np.ones(len(self.input_names), dtype=bool)
        for p in self.block.parent_ports:
            pos[self._in_slices[f"{p}.m"].start + 6:self._in_slices[f"{p}.m"].stop] = False
        return np.flatnonzero(pos)

    @cached_property
    def _state_level_inputs(self) -> np.ndarray:
        """Positions of the twist/pose inputs ``*.m[7..18]`` of the parent ports (the others'
        complement)."""
        return np.setdiff1d(np.arange(len(self.input_names)), self._affine_inputs)

    @cached_property
    def _angle_outputs(self) -> np.ndarray:
        """Positions of the outputs that are Euler angles: components 16..18 of the motion outputs."""
        return np.array([i for c in self.block.child_ports
                         for i in range(self._out_slices[f"{c}.m"].start + 15, self._out_slices[f"{c}.m"].stop)],
                        dtype=int)

    def _initial_state(self):
        return self.block.initial_state()

    def _project(self, x):
        return self.block.project_state(x)

    def _derivative_function(self):
        k = self._kernel
        if k is None:
            return self.block.derivative_function(self.input_dict())
        np.copyto(k.u, self.u)                  # held over the step
        return k.derivatives

    def _integrate(self, h):
        k = self._kernel
        if k is None:
            return super()._integrate(h)
        np.copyto(k.u, self.u)                  # held over the step
        return k.step(self.x, h, self.rtol, self.atol, self.h_guess)

    def _kinematics(self, u):
        """The kinematic stage, which depends only on the states and the twist/pose part of
        the parent motion inputs: it is kept while they do not change, so that a change of
        acceleration-level inputs alone (a loop iteration, a Jacobian column) costs only
        the acceleration stage."""
        b = self.block
        key = np.concatenate([self.x] + [u[f"{p}.m"][6:18] for p in b.parent_ports]).tobytes()
        if key != self._kin_key:
            self._kin = b.kinematics(self.x, {p: u[f"{p}.m"] for p in b.parent_ports})
            self._kin_key = key
        return self._kin

    def _flat(self, out: dict) -> np.ndarray:
        y = np.empty(len(self.output_names))
        for name, s in self._out_slices.items():
            y[s] = out[name]
        return y

    def _evaluate_outputs(self):
        k = self._kernel
        if k is not None:
            np.copyto(k.u, self.u)
            return k.outputs(self.x)
        b, u = self.block, self.input_dict()
        kin = self._kinematics(u)
        return self._flat(b.assemble_outputs(self.x, kin, b.acceleration_stage(kin, b.acceleration_inputs(u))))

    def _column(self, kin, acc, c):
        """The outputs at column ``c`` of an acceleration stage on a batch (a ``(n, 1)``
        entry does not depend on the batch)."""
        return self._flat(self.block.assemble_outputs(self.x, kin, {n: v[:, c if v.shape[1] > 1 else 0]
                                                                  for n, v in acc.items()}))

    def _directional_derivatives(self, out_idx, in_idx, seeds):
        """``dy[out_idx] = (dy/du)[out_idx, in_idx] seeds`` at the current states and inputs,
        for each column of ``seeds`` (``(len(in_idx), k)``).

        Along the acceleration-level inputs (``*.m[1..6]``, child wrenches, joint
        efforts) the block is affine (:meth:`~titop_fmu.blocks.base.Block.accelerations`):
        the acceleration stage evaluated on the batch ``[0, seed]`` gives the
        derivatives exactly, to rounding (on the kernel: the outputs with those inputs at
        the seed less the outputs with them at 0). Along the twist and pose inputs
        (``*.m[7..18]``, which enter the kinematic stage and never an algebraic loop
        of TITOP blocks) they are central differences (step ``1e-6`` of the seed's
        scale; about 1e-10 relative), Euler-angle outputs differenced on the circle.
        """
        in_idx = np.arange(len(self.input_names))[in_idx]
        S = np.zeros((len(self.input_names), np.shape(seeds)[1]))
        S[in_idx] = seeds
        k = S.shape[1]
        a_pos = self._affine_inputs
        dY = np.zeros((len(self.output_names), k))
        # exact: the affine stage on the batch [0, seed], one seed at a time (as an FMU is
        # asked, so that both give the same bits: a product's rounding depends on the batch width)
        exact = [j for j in range(k) if np.any(S[a_pos, j])]
        if exact and self._kernel is not None:              # the same differences on the kernel
            kern = self._kernel
            np.copyto(kern.u, self.u)
            kern.u[a_pos] = 0.0
            y0 = kern.outputs(self.x)
            for j in exact:
                kern.u[a_pos] = S[a_pos, j]
                dY[:, j] = kern.outputs(self.x) - y0
        elif exact:
            b = self.block
            kin = self._kinematics(self.input_dict())
            batch = np.zeros((len(self.input_names), 2))
            a_in = b.acceleration_inputs({n: batch[s] for n, s in self._in_slices.items()})    # views of batch
            y0 = None
            for j in exact:
                batch[a_pos, 1] = S[a_pos, j]
                acc = b.accelerations(kin, a_in)
                if y0 is None:                                  # column 0: the seed 0, the same for all
                    y0 = self._column(kin, acc, 0)
                dY[:, j] = self._column(kin, acc, 1) - y0
        state_level = self._state_level_inputs
        if np.any(S[state_level]):                              # central differences
            saved, kin_saved = self.u.copy(), (self._kin, self._kin_key)
            try:
                for j in range(k):
                    s = np.zeros(len(self.input_names))
                    s[state_level] = S[state_level, j]
                    if not s.any():
                        continue
                    d = 1e-6 * max(1.0, float(np.abs(saved[state_level]).max())) / float(np.abs(s).max())
                    self.u = saved + d * s
                    self._y = None
                    yp = self.outputs().copy()
                    self.u = saved - d * s
                    self._y = None
                    dy = yp - self.outputs()
                    dy[self._angle_outputs] = wrap(dy[self._angle_outputs])
                    dY[:, j] += dy / (2 * d)
            finally:                            # the inputs and their kinematics as they were
                self.u = saved
                self._y = None
                self._kin, self._kin_key = kin_saved
        return dY[out_idx]


    def _get_states(self):
        return np.concatenate([self.x, self.state_derivatives()])

    def _state_space_derivatives(self, out_idx, in_idx, seeds):
        """``d [y; xdot] / d [u; x]`` (``out_idx`` over the outputs then the state derivatives,
        ``in_idx`` over the inputs then the states) times ``seeds`` at the current states and
        inputs, exact: the block on the forward-mode kernel (:class:`~titop_fmu.dual.DualBlock`)."""
        if self._dual is None:
            from .dual import DualBlock
            try:
                self._dual = DualBlock(self.block, self._in_slices, len(self.output_names))
            except KernelUnavailable as e:
                raise SolverError(f"derivatives with respect to the states need the forward-mode kernel: {e}") \
                    from None
        n_in = len(self.input_names)
        S = np.zeros((n_in + self.x.size, np.shape(seeds)[1]))
        S[np.arange(len(S))[in_idx]] = seeds
        dout, dxdot, code = self._dual.derivatives(self.x, self.u, S)
        if code:
            raise SolverError("the block's accelerations are singular or not finite at this state")
        return np.vstack([dout, dxdot])[out_idx]

def _slices(spec: dict) -> dict:
    out, k = {}, 0
    for name, size in spec.items():
        out[name] = slice(k, k + size)
        k += size
    return out
