"""Linear models and equilibria of closed loops (:class:`~titop_fmu.titop.closedloop.ClosedLoop`):
the plant's exact linearization (:class:`~.linearize.Linearizer`, its inputs those the
control units drive, its outputs those they read) interconnected with the control blocks'
own (:meth:`~titop_fmu.control.blocks.ControlBlock.linear`).

With ``s`` the signals that flow between them (the plant's outputs read, the blocks'
outputs), the plant ``dx' = A dx + B du``, ``dy = C dx + D du`` and the blocks
``dxc' = Ac dxc + Bc duc``, ``dyc = Cc dxc + Dc duc`` wired by selections ``du = P s + Pw w``
(``w`` the inputs the model keeps), ``duc = Q s + Qw w``: the signals solve
``(1 - M) s = N X + L w`` (``X = [dx; dxc]``), the closed loop is ``X' = F X + G w``. A
singular ``1 - M`` is an algebraic loop, refused as the simulation refuses it.

Time signals are held at their values at the operating time (0): they are not inputs of
the model unless named. A discrete block has no continuous linear model: it is refused,
with what to do instead.
"""

from __future__ import annotations

import numpy as np

from ..errors import SolverError, TitopError
from ..titop.closedloop import ClosedLoop
from .coordinates import CHART
from .linearizer import Linearizer
from .model import LinearModel


class ClosedLoopLinearizer:
    """The derivatives of a :class:`ClosedLoop` with named inputs and outputs (see the module
    docstring): :meth:`at` ``(Y)`` gives the closed loop's minimal state derivative and
    ``A, B, C, D`` at the states ``Y`` (the plant's, then the blocks')."""

    def __init__(self, loop: ClosedLoop, inputs=None, outputs=()):
        discrete = [n.name for n in loop.nodes if n.block.discrete]
        if discrete:
            raise TitopError(f"linearize: {discrete[0]!r} is a discrete block (sample_time): a linear model here "
                             "is continuous; linearize the plant alone (its inputs and outputs named) and discretize "
                             "with the controller, or give the controller's continuous equivalent")
        self.loop = loop
        self.slot_name = {}                                  # V slot -> plant output name (read by blocks)
        names = {v: key for key, v in loop.out_index.items()}
        for s, k in loop.plant_reads.items():
            unit, scalar = names[k]
            self.slot_name[s] = f"{unit}.{scalar}"
        fed = []                                              # plant inputs fed by blocks and signals
        for array, k, s in loop.plant_feeds:
            fed.append((_input_name(loop, array, k), s))
        self.fed = fed
        sensed = [q for n in loop.nodes if n.sensor is not None for q in n.sensor.entry.labels]
        plant_out = list(dict.fromkeys(list(self.slot_name.values()) + sensed))
        self.external, self.block_inputs = [], []             # kept inputs: plant inputs, or blocks' constants
        for name in (inputs or []):
            unit = name.partition(".")[0]
            if unit in loop._node:
                self.block_inputs += [(f"{unit}.{s}", unit, s) for s in _scalars(loop, unit, name, "input")]
            else:
                self.external.append(name)
        self.user_outputs = list(outputs)
        plant_user = [o for o in outputs if o.partition(".")[0] not in loop._node]
        self.plant_outputs = list(dict.fromkeys(plant_out + plant_user))
        loop.use_kernel()
        self.lin = Linearizer(loop.plant, [n for n, _ in fed] + self.external, self.plant_outputs)
        self.n_fed = len(fed)
        self.nc = sum(n.block.n_x for n in loop.nodes)
        self.input_names = self.lin.input_names[self.n_fed:] + [n for n, *_ in self.block_inputs]
        self.output_names = [label for o in outputs for label in self._output_labels(o)]

    def _output_labels(self, ref):
        unit = ref.partition(".")[0]
        if unit in self.loop._node:
            return [f"{unit}.{s}" for s in _scalars(self.loop, unit, ref, "output")]
        return [n for n in self.lin.output_names if n == ref or n.startswith(ref + "[")
                or n.rpartition("[")[0] == ref]

    @property
    def state_names(self) -> list:
        return list(self.lin.coords.state_names) + [f"{n.name}.x[{i + 1}]" for n in self.loop.nodes
                                                      for i in range(n.block.n_x)]

    def at(self, Y, outputs: bool = True, w=None) -> dict:
        """``{"xdot", "A", "B"[, "y", "C", "D"]}`` at the states ``Y`` (the kept inputs at ``w``,
        default their current values)."""
        loop, lin = self.loop, self.lin
        n_plant = loop.plan.n_states
        d = loop.initial_discrete()
        _, V, _ = loop.evaluate(0.0, Y, d, (0.0, np.inf), derivatives=False)
        u = lin.u
        for j, (_, s) in enumerate(self.fed):
            u[j] = V[s]
        lin.set_inputs(u)
        r = lin.at(Y[:n_plant])
        n, m_fed = lin.coords.n, self.n_fed
        # the signals s: the plant's outputs (its C, D rows), then every block's outputs
        p_rows = {name: i for i, name in enumerate(lin.output_names)}
        blocks = [(node, node.block.linear(0.0, Y[node.x], d[node.d], loop._inputs(node, V))) for node in loop.nodes]
        n_p = len(p_rows)
        offsets, k = {}, n_p
        for node, _ in blocks:
            offsets[node.name] = k
            k += node.block.n_y
        n_s, nc, n_w = k, self.nc, len(self.input_names)
        M, N, L = np.zeros((n_s, n_s)), np.zeros((n_s, n + nc)), np.zeros((n_s, n_w))
        producer = {}
        for node, _ in blocks:
            for i, slot in enumerate(node.y):
                producer[slot] = offsets[node.name] + i

        def signal(slot):
            """The row of ``s`` a value slot is (or a sensed quantity's), or None (a signal or a
            constant: held)."""
            if isinstance(slot, tuple):
                return p_rows[slot[1]]
            if slot in producer:
                return producer[slot]
            name = self.slot_name.get(slot)
            return p_rows[name] if name is not None else None
        # plant rows: dy = C dx + D_fed du_fed + D_w w, du_fed = selection of s
        Bf, Df = r["B"][:, :m_fed], r["D"][:, :m_fed]
        Pf = np.zeros((m_fed, n_s))
        for j, (_, slot) in enumerate(self.fed):
            row = signal(slot)
            if row is not None:
                Pf[j, row] = 1.0
        ext = slice(m_fed, m_fed + len(self.lin.input_names) - m_fed)
        M[:n_p] = Df @ Pf
        N[:n_p, :n] = r["C"]
        L[:n_p, :ext.stop - ext.start] = r["D"][:, ext]
        # block rows: dyc = Cc dxc + Dc duc, duc = selection of s (+ kept block inputs)
        kept = {(unit, s): len(self.lin.input_names) - m_fed + i for i, (_, unit, s) in enumerate(self.block_inputs)}
        xc = 0
        Qs = []
        for node, (Ac, Bc, Cc, Dc) in blocks:
            Q = np.zeros((node.block.n_u, n_s))
            Qw = np.zeros((node.block.n_u, n_w))
            t = loop.types[node.name]
            for i, slot in enumerate(self._input_slots(node)):
                row = signal(slot) if slot is not None else None
                if row is not None:
                    Q[i, row] = 1.0
                key = (node.name, t.input_names[i]) if i < len(t.input_names) else None
                if key in kept:
                    Qw[i, kept[key]] = 1.0
            rows = slice(offsets[node.name], offsets[node.name] + node.block.n_y)
            M[rows] = Dc @ Q
            N[rows, n + xc:n + xc + node.block.n_x] = Cc
            L[rows] = Dc @ Qw
            Qs.append((node, Q, Qw, Ac, Bc, xc))
            xc += node.block.n_x
        try:
            S = np.linalg.solve(np.eye(n_s) - M, np.hstack([N, L]))
        except np.linalg.LinAlgError:
            raise SolverError("the closed loop's signals are singular: an algebraic loop") from None
        SX, SW = S[:, :n + nc], S[:, n + nc:]
        F = np.zeros((n + nc, n + nc))
        G = np.zeros((n + nc, n_w))
        F[:n, :n] = r["A"]
        F[:n] += Bf @ Pf @ SX
        G[:n, :ext.stop - ext.start] = r["B"][:, ext]
        G[:n] += Bf @ Pf @ SW
        for node, Q, Qw, Ac, Bc, x0 in Qs:
            rows = slice(n + x0, n + x0 + node.block.n_x)
            F[rows, n + x0:n + x0 + node.block.n_x] = Ac
            F[rows] += Bc @ Q @ SX
            G[rows] = Bc @ (Q @ SW + Qw)
        xdot = np.concatenate([r["xdot"], np.concatenate([n_.block.derivative(0.0, Y[n_.x], d[n_.d],
                                                                                loop._inputs(n_, V))
                                                          for n_ in loop.nodes if n_.block.n_x] or [np.zeros(0)])])
        res = {"xdot": xdot, "A": F, "B": G}
        if outputs:
            y0 = np.concatenate([r["y"], V[[slot for node, _ in blocks for slot in node.y]]]) if blocks else r["y"]
            names = list(p_rows) + [f"{node.name}.{o}" for node, _ in blocks for o in loop.types[node.name].output_names]
            pick = [names.index(o) for o in self.output_names]
            res.update(y=y0[pick], C=SX[pick], D=SW[pick])
        return res

    def _input_slots(self, node):
        """Where each of the block's inputs comes from: a value slot, or for a sensor of an
        inertial quantity the plant's linear outputs of that quantity, by name."""
        if node.sensor is None:
            return list(node.u)
        return [("sensed", q) for q in node.sensor.entry.labels]

    def model(self, Y) -> LinearModel:
        r = self.at(Y)
        return LinearModel(r["A"], r["B"], r["C"], r["D"], self.state_names, self.input_names, self.output_names,
                           np.array(Y, dtype=float), self.lin.u[self.n_fed:], r["y"], r["xdot"],
                           self.loop.plant.state_names() + [f"{n.name}.x[{i + 1}]" for n in self.loop.nodes
                                                                  for i in range(n.block.n_x)],
                           CHART)


def _input_name(loop: ClosedLoop, array, k) -> str:
    for (unit, port), v in loop.plant.values.items():
        if v is array:
            size = loop.plant.blocks[unit].inputs.get(port, 1)
            return f"{unit}.{port}[{k + 1}]" if size > 1 else f"{unit}.{port}"
    raise AssertionError("a fed input with no value array")          # pragma: no cover


def _scalars(loop, unit, ref, causality):
    scalars = loop.types[unit].scalars(ref.partition(".")[2], causality)
    if not scalars:
        ports = loop.types[unit].ports(causality)
        raise TitopError(f"{ref}: {unit!r} has no {causality} {ref.partition('.')[2]!r}; {causality}s: "
                         f"{', '.join(ports)}")
    return scalars


def linearize_closed_loop(cs, state=None, inputs=None, outputs=None) -> LinearModel:
    """The linear model of the closed loop of ``cs`` (a :class:`~titop_fmu.cosim.CoSystem` with
    control units) at ``state`` (the plant's states, then the blocks'; default the initial
    states); ``inputs`` and ``outputs`` as :func:`~.linearize.linearize`'s (names of the plant's
    and of the blocks': ``"ctrl.y"``, ``"err.u1"``)."""
    loop = ClosedLoop(cs)
    lin = ClosedLoopLinearizer(loop, inputs or [], cs.recorded if outputs is None else outputs)
    Y = loop.initial_state() if state is None else np.asarray(state, dtype=float)
    if Y.shape != (loop.plan.n_states + lin.nc,):
        raise TitopError(f"the state has {Y.size} values; the closed loop has {loop.plan.n_states + lin.nc}")
    return lin.model(Y)
