"""The common shape of every TITOP block (pure, FMI-free).

A block is a *model*: parameters fixed at construction, no mutable state.
States ``x`` and inputs ``u`` are passed in, outputs and derivatives come out
(as in Pinocchio, the model is kept apart from the data).

Ports, named as in the FMUs:

* a **parent port** ``p`` (loop closure: ``l`` and ``r``): motion vector
  ``p.m`` (18) in, projected in the parent's frame; wrench ``p.w`` (6) out,
  applied by this block on its parent, same frame;
* **child ports** ``c1, c2, ...``: wrench ``ci.w`` (6) in, applied by the child
  on this block; motion vector ``ci.m`` (18) out; both in this block's frame;
* block-specific inputs and outputs (``ext.w``, ``joint.tau``, ``joint.q``, ...).

Evaluation comes in two stages, as in the paper's block diagrams:

1. :meth:`Block.kinematics` -- everything that depends only on states, poses and
   twists (DCMs, gravity in the body frame, the non-linear wrench
   ``C(x') D x'``, the twist/pose part of the child motion vectors);
2. :meth:`Block.accelerations` -- the part that is *affine* in the
   acceleration-level inputs (spatial accelerations ``*.a`` = ``*.m[0:6]``,
   wrenches, joint efforts). It accepts ``(n, k)`` batches, which is how the
   in-process system obtains the exact linear algebraic loop with one call.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np



def col(v):
    """A vector as a ``(n, 1)`` column, so that it broadcasts against ``(n, k)`` batches
    (a ``(n, k)`` batch is kept as it is)."""
    v = np.asarray(v)
    return v if v.ndim == 2 else v.reshape(-1, 1)


class Block:
    """Interface of a TITOP block. Subclasses fill the class attributes in ``__init__``."""

    #: parent ports (motion in, wrench out)
    parent_ports: tuple = ()
    #: child ports (wrench in, motion out)
    child_ports: tuple = ()
    #: other inputs: name -> size; they are acceleration-level (affine) inputs
    extra_inputs: dict = {}
    #: other outputs: name -> size
    extra_outputs: dict = {}
    #: required inputs (no default); the others default to zero
    optional_inputs: tuple = ()
    state_names: tuple = ()
    #: the block reads its children's wrenches only as their sum transported to its point
    #: ``P``, ``sum_i tau_CiP^T W_Ci`` (eq. (13)), and sends each child ``tau_CiP`` times one
    #: acceleration of its own (eqs. (14), (23)); its ``body.tau_c`` holds the ``tau_CiP``.
    #: The recursive loop solve then condenses any number of linked children as one.
    children_through_sum: bool = False

    # -- to implement ------------------------------------------------------
    def initial_state(self) -> np.ndarray:
        return np.zeros(0)

    def kinematics(self, x, m_parents: dict, outputs: bool = True) -> SimpleNamespace:
        """State-level quantities. ``m_parents[port]`` is the 18-vector at each parent
        port (its acceleration part is ignored). Must set ``kin.m_out``: the
        twist/pose part of every motion output (accelerations left at 0); with
        ``outputs=False`` only what the state derivatives need (``m_out`` may be empty,
        and :meth:`accelerations` may then give only what :meth:`derivatives` uses)."""
        raise NotImplementedError

    def accelerations(self, kin, u: dict) -> dict:
        """Acceleration-level outputs, affine in ``u``: ``u`` maps ``port.a`` (6, k) for
        parent ports, ``port.w`` (6, k) for child ports and the extra inputs
        ((n, k) arrays) to a dict with ``port.w`` for parent ports, ``port.a``
        for every motion output, and block-specific entries."""
        raise NotImplementedError

    def derivatives(self, x, kin, acc: dict) -> np.ndarray:
        """State derivatives, ``acc`` being the solved acceleration stage (1-D arrays)."""
        return np.zeros(0)

    def extra_output_values(self, x, kin, acc: dict) -> dict:
        """Values of :attr:`extra_outputs` (1-D arrays)."""
        return {}

    def project_state(self, x) -> np.ndarray:
        """Bring ``x`` back onto the state manifold after a step (e.g. unit quaternion)."""
        return x

    # -- derived -----------------------------------------------------------
    @property
    def n_states(self):
        return len(self.state_names)

    @property
    def inputs(self) -> dict:
        """All inputs: name -> size."""
        d = {f"{p}.m": 18 for p in self.parent_ports}
        d.update({f"{c}.w": 6 for c in self.child_ports})
        d.update(self.extra_inputs)
        return d

    @property
    def outputs_spec(self) -> dict:
        """All outputs: name -> size."""
        d = {f"{p}.w": 6 for p in self.parent_ports}
        d.update({f"{c}.m": 18 for c in self.child_ports})
        d.update(self.extra_outputs)
        return d

    def acceleration_inputs(self, u: dict) -> dict:
        """The acceleration-level part of full inputs ``u``, as ``(n, 1)`` columns (or
        ``(n, k)`` batches for inputs given as batches)."""
        a = {f"{p}.a": col(u[f"{p}.m"][0:6]) for p in self.parent_ports}
        a.update({f"{c}.w": col(u[f"{c}.w"]) for c in self.child_ports})
        a.update({n: col(u[n]) for n in self.extra_inputs})
        return a

    def evaluate(self, x, u: dict, outputs: bool = True):
        """``(kin, acc)`` for full inputs ``u`` (1-D arrays, one per input name)."""
        kin = self.kinematics(x, {p: u[f"{p}.m"] for p in self.parent_ports}, outputs)
        return kin, self.acceleration_stage(kin, self.acceleration_inputs(u))

    def acceleration_stage(self, kin, a_in: dict) -> dict:
        """The acceleration stage for one column of inputs (:meth:`acceleration_inputs`),
        as 1-D arrays."""
        return {k: v[:, 0] for k, v in self.accelerations(kin, a_in).items()}

    def outputs(self, x, u: dict) -> dict:
        """All outputs for states ``x`` and full inputs ``u`` (the FMU's view of the block)."""
        kin, acc = self.evaluate(x, u)
        return self.assemble_outputs(x, kin, acc)

    def assemble_outputs(self, x, kin, acc) -> dict:
        out = {}
        for name, m in kin.m_out.items():
            m = m.copy()
            m[0:6] = acc[name[:-2] + ".a"]
            out[name] = m
        for p in self.parent_ports:
            out[f"{p}.w"] = acc[f"{p}.w"]
        out.update(self.extra_output_values(x, kin, acc))
        return out

    def state_derivatives(self, x, u: dict) -> np.ndarray:
        """``xdot`` for states ``x`` and full inputs ``u``."""
        return self.derivative_function(u)(x)

    def derivative_function(self, u: dict):
        """``f(x) = xdot`` with the inputs ``u`` held (a communication step); what depends
        on the inputs alone is prepared once."""
        m_parents = {p: u[f"{p}.m"] for p in self.parent_ports}
        a_in = self.acceleration_inputs(u)

        def f(x):
            kin = self.kinematics(x, m_parents, outputs=False)
            return self.derivatives(x, kin, self.acceleration_stage(kin, a_in))
        return f

    def default_inputs(self) -> dict:
        """Zero value for every input."""
        return {n: np.zeros(s) for n, s in self.inputs.items()}


class BodyBlock(Block):
    """A block with a body, rigid (:class:`~titop_fmu.blocks.body.RigidBody`) or flexible
    (:class:`~titop_fmu.blocks.flexible.FlexibleBody`): the body's own states follow the
    block's (``own_states``), its outputs the block's (a flexible body's ``ci.u``), and the
    acceleration stage gives its modal accelerations (``modal.qdd``) and its children's."""

    own_states: tuple = ()

    @property
    def children_through_sum(self):
        """A rigid body reads its children's wrenches as their sum at ``P`` (eq. (13)); a
        flexible body each on its own (eq. (F13))."""
        return self.body.children_through_sum

    def _attach(self, body):
        self.body = body
        self.child_ports = body.child_ports()
        self.n_own = len(self.own_states)
        self.state_names = tuple(self.own_states) + tuple(body.state_names)
        self.extra_outputs = {**getattr(self, "own_outputs", type(self).extra_outputs), **body.extra_outputs}

    def own_initial_state(self) -> np.ndarray:
        return np.zeros(0)

    def initial_state(self):
        return np.concatenate([self.own_initial_state(), self.body.initial_state()])

    def own_derivatives(self, x, kin, acc) -> np.ndarray:
        return np.zeros(0)

    def derivatives(self, x, kin, acc):
        own = self.own_derivatives(x, kin, acc)
        return own if not self.body.n_modes else np.concatenate([own, self.body.derivatives(x[self.n_own:], kin, acc)])

    def own_output_values(self, x, kin, acc) -> dict:
        return {}

    def extra_output_values(self, x, kin, acc):
        return {**self.own_output_values(x, kin, acc), **self.body.output_values(kin)}

    def _body_kinematics(self, m_P, P_ai, x, outputs, **extra):
        """The body's state level (``kin``) at its motion vector ``m_P`` and DCM ``P_a/i``."""
        return self.body.kinematics(self.g, self.child_ports, m_P, P_ai, outputs, x[self.n_own:], **extra)

    def _body_outputs(self, acc, kin, a, modal):
        """Add the modal accelerations and, with outputs, the children's accelerations for the
        body's spatial acceleration ``a`` at ``P``."""
        if modal is not None:
            acc["modal.qdd"] = modal
        if kin.outputs:
            acc.update(self.body.child_accelerations(kin, a, modal, self.child_ports))
        return acc
