"""The in-process engine of a system with time signals and control units: the TITOP plant
(its units as one :class:`~titop_fmu.system.System`, the loop solved exactly) closed by
control blocks (:mod:`titop_fmu.control.blocks`) and sensors, its inputs driven by time
signals (:mod:`titop_fmu.control.signals`).

One right-hand side holds every continuous state, the plant's and the blocks'. At a time
``t``: the signals' values; the plant's outputs that depend on its states alone (positions,
velocities, attitudes: what sensors read); the blocks' outputs in the order of their direct
feedthrough; the plant's inputs set and its derivatives (and its acceleration-level
outputs, in the same kernel call, when a block reads them); the blocks' derivatives. A
loop through direct feedthrough (a gain fed by a joint acceleration and driving that
joint's torque, two gains in a ring) is algebraic: it is refused, naming its path.

Discrete blocks hold their outputs between their sample instants and update them at the
instants (:meth:`~titop_fmu.control.blocks.ControlBlock.update`). The integrator runs from
event to event, an event being a sample instant or a breakpoint of a signal
(:meth:`~titop_fmu.control.signals.Signal.breakpoints`); within a piece the signals are
evaluated inside its open interval (:func:`~titop_fmu.control.signals.within`), so a step or
a table's row costs no accuracy. At an event the states are continuous; the discrete blocks
sample there in feedthrough order. A row of the output grid at an event shows the values
after it (the right limits).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..control.signals import within
from ..cosim import CoSystem
from ..cosim.control_unit import ControlSpec, control_spec, is_control_model
from ..cosim.engine import FileUnits
from ..cosim.names import port_of
from ..cosim.signals import resolve
from ..errors import ConnectionError_, SolverError
from ..topology import tree_order
from .twin import twin_and_warnings
from .records import Records
from .sensors import SensorSpec, master_view
from .units import declared_unit_type, is_titop


def acceleration_level(port: str, k: int) -> bool:
    """A TITOP block's output scalar that depends on the accelerations, and so on the plant's
    inputs: components 1-6 of a motion vector, a wrench, a joint's ``q[1]`` (qdd) or effort;
    the positions, velocities and attitudes depend on the states alone."""
    if port.endswith(".m"):
        return k <= 6
    if port == "joint.q":
        return k == 1
    return True


@dataclass
class _Node:
    """A control block as the engine evaluates it: where its inputs come from in the value
    vector ``V`` (``u``) and where its outputs go (``y``), its states' places."""

    name: str
    block: object
    u: np.ndarray
    y: np.ndarray
    x: slice
    d: slice
    sensor: SensorSpec | None = None      # a sensor of an inertial quantity: raw plant outputs -> quantity


class ClosedLoop:
    """A plant of TITOP units closed by control units, driven by time signals (see the
    module docstring). Built from a :class:`~titop_fmu.cosim.CoSystem`; :meth:`simulate`."""

    def __init__(self, cs: CoSystem, solver: str = "recursive"):
        self.cs = cs
        view = master_view(cs)
        others = [n for n, s in view.units.items() if not is_titop(s.model) and not is_control_model(s.model)
                  and not isinstance(s.model, (ControlSpec, SensorSpec))]
        if others:
            raise ConnectionError_(f"unit {others[0]!r}: an FMU runs through the co-simulation master only "
                                   "(--engine fmu)")
        titop = [n for n, s in view.units.items() if is_titop(s.model)]
        types = {n: declared_unit_type(view.units[n].model) for n in titop}
        types.update(FileUnits().unit_types(_only(view, [n for n in view.units if n not in types])))
        self.types = types
        constants, self.signals = resolve(view, types)
        self.constants = constants              # the constant inputs, {ref: value}
        plant_cs = _only(view, titop)
        plant_cs.links = list(view.links)
        plant_cs.inputs = {r: v for r, v in constants.items() if r.partition(".")[0] in titop}
        links = {(a, b) for c, p in view.links for a, b in ((f"{c}.m", f"{p}.m"), (f"{p}.w", f"{c}.w"))}
        self.wires = [(src, dst) for src, dst in view.connections if (src, dst) not in links]
        #: the input ports (unit, port) a signal or a connection feeds, of every unit
        self.fed_ports = {(n, port_of(s)[0]) for n, s in self.signals} | \
            {(dst.partition(".")[0], port_of(dst.partition(".")[2])[0]) for _, dst in self.wires}
        # every input port of the plant not linked exists as an array the kernel reads (zero where
        # nothing is given): those signals and blocks feed, those an exported FMU's host sets
        given = {(r.partition(".")[0], port_of(r.partition(".")[2])[0]) for r in plant_cs.inputs}
        linked = {dst for _, dst in links}
        for unit in titop:
            for port, names in types[unit].ports("input").items():
                if f"{unit}.{port}" not in linked and (unit, port) not in given:
                    plant_cs.inputs[f"{unit}.{port}"] = [0.0] * len(names)
        self.plant, self.warnings = twin_and_warnings(_expanded(plant_cs, types), solver)
        self.plan = self.plant.plan()
        self._layout()
        self._wire(view, titop, constants)
        self._order()
        self._kernel = None

    def use_kernel(self, kernel: str = "auto"):
        """Evaluate the plant on the C kernel (``"c"``), the NumPy blocks (``"numpy"``) or the
        kernel where it can run (``"auto"``), as :meth:`~titop_fmu.system.System.simulate`."""
        self._kernel = self.plant._on_kernel(kernel, self.plan.kernel)

    # -- structure ----------------------------------------------------------------------------
    def _layout(self):
        """Where each plant output scalar sits in the plant's flat outputs (the kernel's order)."""
        self.out_index, k = {}, 0
        for n in self.plan.order:
            for port, size in self.plant.blocks[n].outputs_spec.items():
                for c in range(size):
                    self.out_index[(n, f"{port}[{c + 1}]" if size > 1 else port)] = k + c
                k += size
        self.n_out = k

    def _wire(self, view, titop, constants):
        """The value vector ``V``: the signals, the plant outputs read, the blocks' outputs, the
        constants feeding blocks; per block its inputs' and outputs' places in it; per fed plant
        input its source."""
        slots = {}

        def slot(key):
            if key not in slots:
                slots[key] = len(slots)
            return slots[key]

        self.signal_slots = [(slot(("signal", n, s)), sig) for (n, s), sig in self.signals.items()]
        self.nodes, nx, nd = [], self.plan.n_states, 0
        for name, spec in view.units.items():
            if name in titop:
                continue
            block = spec.model.block if isinstance(spec.model, (ControlSpec, SensorSpec)) else \
                control_spec(name, spec.model, spec.parameters).block
            t = self.types[name]
            y = np.array([slot(("out", name, o)) for o in t.output_names], dtype=int)
            sensor = spec.model if isinstance(spec.model, SensorSpec) else None
            u = np.zeros(len(t.input_names), dtype=int)
            self.nodes.append(_Node(name, block, u, y, slice(nx, nx + block.n_x), slice(nd, nd + len(block.d0())),
                                    sensor))
            nx, nd = nx + block.n_x, nd + len(block.d0())
        self.n_x, self.n_d = nx, nd
        node = {n.name: n for n in self.nodes}
        self._fed = {n.name: set() for n in self.nodes}          # their input scalars fed so far
        self.plant_reads, self.constant_slots = {}, []           # V slot -> plant output index; constants
        self.plant_feeds = []                                    # (array, component, V slot)

        def source(ref):
            unit, _, var = ref.partition(".")
            if unit in titop:
                key = (unit, var)
                if key not in self.out_index:
                    raise ConnectionError_(f"connection from {ref}: not an output scalar of {unit!r}")
                s = slot(("plant", unit, var))
                self.plant_reads[s] = self.out_index[key]
                return s
            return slot(("out", unit, var))

        for src, dst in self.wires:
            a, outs = _scalars(src, self.types, "output")
            b, ins = _scalars(dst, self.types, "input")
            for o, i in zip(outs, ins):
                s = source(f"{a}.{o}")
                self._feed(b, i, s, node, titop)
        for (n, scalar), _ in self.signals.items():
            self._feed(n, scalar, slot(("signal", n, scalar)), node, titop)
        for ref, value in constants.items():
            unit, _, var = ref.partition(".")
            if unit in node:
                _, ins = _scalars(ref, self.types, "input")
                for i, v in zip(ins, np.atleast_1d(np.asarray(value, dtype=float))):
                    s = slot(("const", unit, i))
                    self.constant_slots.append((s, float(v)))
                    self._feed(unit, i, s, node, titop)
        for n in self.nodes:         # an input nothing feeds (an exported FMU's host sets it): a constant 0
            for i in set(self.types[n.name].input_names) - self._fed[n.name]:
                s = slot(("const", n.name, i))
                self.constant_slots.append((s, 0.0))
                self._feed(n.name, i, s, node, titop)
        self.n_values = len(slots)
        self.slots = slots                  # ("signal" | "plant" | "out" | "const", unit, scalar) -> its place in V
        self.acceleration_slots = {s for s, k in self.plant_reads.items()
                                   if acceleration_level(*_port_component(self._plant_name(k)))}

    def _plant_name(self, k):
        if not hasattr(self, "_names"):
            self._names = {v: key for key, v in self.out_index.items()}
        return self._names[k][1]

    def _feed(self, unit, scalar, s, node, titop):
        if unit in titop:
            port, k = port_of(scalar)
            self.plant_feeds.append((self.plant.values[(unit, port)], max(k - 1, 0), s))
        else:
            n = node[unit]
            n.u[self.types[unit].input_index[scalar]] = s
            self._fed[unit].add(scalar)

    def _order(self):
        """The blocks in the order of their direct feedthrough, with the plant's
        acceleration stage (``"plant"``) among them; an algebraic loop is an error."""
        producer = {}
        for n in self.nodes:
            for s in n.y:
                producer[s] = n.name
        feeds_plant = {producer[s] for _, _, s in self.plant_feeds if s in producer}
        needs = {n.name: set() for n in self.nodes}
        needs["plant"] = feeds_plant
        for n in self.nodes:
            if n.block.feedthrough:
                for s in n.u:
                    if s in producer:
                        needs[n.name].add(producer[s])
                    elif s in self.acceleration_slots and _reads_accelerations(n):
                        needs[n.name].add("plant")
        # the plant stage runs once its feeders are done: every block feeding it must come first,
        # whatever its feedthrough; and a loop through it is algebraic only through feedthrough
        children = {k: [] for k in needs}
        for k, deps in needs.items():
            for d in deps:
                children[d].append(k)
        try:
            self.order = tree_order(children)
        except ConnectionError_ as e:
            path = str(e).partition(": ")[2]
            raise ConnectionError_(f"algebraic loop through control units: {path} (each reads its input at once; "
                                   "'plant' is the plant's accelerations: put in the loop a block without direct "
                                   "feedthrough, such as a sampled sensor or a filter)") from None
        self._node = {n.name: n for n in self.nodes}
        self.reads_accelerations = any(s in self.acceleration_slots for n in self.nodes if _reads_accelerations(n)
                                       for s in n.u)
        self._block_start, k = {}, 0
        for n in self.plan.order:
            self._block_start[n] = k
            k += sum(self.plant.blocks[n].outputs_spec.values())

    # -- evaluation ---------------------------------------------------------------------------
    def initial_state(self) -> np.ndarray:
        return np.concatenate([self.plant.initial_state()] + [n.block.x0() for n in self.nodes])

    def initial_discrete(self) -> np.ndarray:
        return np.concatenate([np.zeros(0)] + [n.block.d0() for n in self.nodes])

    def evaluate(self, t, Y, d, piece=(-np.inf, np.inf), derivatives=True) -> tuple:
        """``(Ydot, V, plant outputs)`` at ``t`` (brought into the open interval ``piece`` for
        the signals), the states ``Y`` and the discrete states ``d``."""
        y = Y[:self.plan.n_states]
        V = np.zeros(self.n_values)
        ts = within(t, *piece)
        for s, sig in self.signal_slots:
            V[s] = v = sig.value(ts)
            if not math.isfinite(v):
                raise SolverError(f"the signal {sig.description!r} is {v} at t = {ts:.9g}")
        for s, v in self.constant_slots:
            V[s] = v
        out = None
        if self.plant_reads and (self.nodes or not derivatives):
            out = self._plant_outputs(y)
            self._read(V, out)
        ydot = None
        for name in self.order:
            if name == "plant":
                ydot, out = self._plant_stage(y, V, out)
                continue
            n = self._node[name]
            V[n.y] = self._output(n, t, Y, d, V)
        if ydot is None:
            ydot, out = self._plant_stage(y, V, out)
        if not derivatives:
            return None, V, out
        Ydot = np.empty_like(Y)
        Ydot[:self.plan.n_states] = ydot
        for n in self.nodes:
            if n.block.n_x:
                Ydot[n.x] = n.block.derivative(t, Y[n.x], d[n.d], self._inputs(n, V))
        return Ydot, V, out

    def _inputs(self, n, V):
        u = V[n.u]
        return n.sensor.measure(u) if n.sensor is not None else u

    def _output(self, n, t, Y, d, V):
        return n.block.output(t, Y[n.x], d[n.d], self._inputs(n, V))

    def _plant_stage(self, y, V, out):
        for array, k, s in self.plant_feeds:
            array[k] = V[s]
        if self._kernel is not None:
            ydot, full, code = self._kernel.derivatives_and_outputs(y)
            if code:
                raise SolverError({1: "the algebraic loop is singular", 2: "the loop's solution is not finite"}[code])
        else:
            ydot, full = self.plant.rhs(0.0, y), self._numpy_outputs(y)
        if self.reads_accelerations:
            self._read(V, full)
        return ydot, full

    def _plant_outputs(self, y):
        if self._kernel is not None:
            out, code = self._kernel.outputs(y)
            if code:
                raise SolverError("the plant's loop cannot be solved at this state")
            return out
        return self._numpy_outputs(y)

    def _numpy_outputs(self, y):
        outs = self.plant.outputs(y)
        return np.concatenate([np.ravel(outs[n][p]) for n in self.plan.order for p in self.plant.blocks[n].outputs_spec])

    def _read(self, V, out):
        for s, k in self.plant_reads.items():
            V[s] = out[k]

    def update(self, t, Y, d) -> np.ndarray:
        """The discrete states after the sample instants at ``t`` (right limits of the signals),
        the blocks sampled in feedthrough order, each seeing the updates before it."""
        d = d.copy()
        due = {n.name for n in self.nodes if n.block.discrete and _is_sample(n.block, t)}
        if not due:
            return d
        _, V, _ = self.evaluate(t, Y, d, (t, np.inf), derivatives=False)
        for name in self.order:
            if name in due:
                n = self._node[name]
                d[n.d] = n.block.update(t, n.block.sample_index(t), Y[n.x], d[n.d], self._inputs(n, V))
                _, V, _ = self.evaluate(t, Y, d, (t, np.inf), derivatives=False)
        return d

    def events(self, stop: float) -> np.ndarray:
        """The events in ``(0, stop]``: signals' breakpoints and blocks' sample instants."""
        return self.events_in(0.0, stop)

    def events_in(self, t0: float, t1: float) -> np.ndarray:
        """The events in ``(t0, t1]``, sorted."""
        times = [s.breakpoints(t0, t1) for _, s in self.signal_slots]
        times += [n.block.samples(t0, t1) for n in self.nodes if n.block.discrete]
        times = np.unique(np.concatenate(times + [np.zeros(0)]))
        return times[(times > t0) & (times <= t1)]

    # -- simulation ---------------------------------------------------------------------------
    def simulate(self, t_stop: float, dt: float = 0.01, rtol: float = 1e-11, atol: float = 1e-11,
                 method: str = "DOP853", progress: bool = False, kernel: str = "auto"):
        """Integrate from event to event (see the module docstring) and sample every ``dt`` and
        at ``t_stop``: a :class:`ClosedLoopTrajectory`. A piece starts with the step size the
        last one ended with (no new step-size search at every sample of a discrete block)."""
        from scipy.integrate._ivp.ivp import METHODS
        from ..cosim.numerics import single_threaded_blas
        from ..system import output_grid
        self.use_kernel(kernel)
        grid = output_grid(t_stop, dt)
        Y = self.initial_state()
        d = self.update(0.0, Y, self.initial_discrete())
        events = self.events(grid[-1])
        bounds = np.unique(np.concatenate([[0.0], events, [grid[-1]]]))
        rows, nfev, h, start = [], 0, None, time.perf_counter()
        bar = _bar(progress, grid[-1])
        try:
            with single_threaded_blas():
                for a, b in zip(bounds[:-1], bounds[1:]):
                    last = b == bounds[-1]
                    here = grid[(grid >= a) & (grid < b)]

                    def f(t, Y, d=d, piece=(a, b)):
                        return self.evaluate(t, Y, d, piece)[0]
                    solver = METHODS[method](f, a, Y, b, rtol=rtol, atol=atol,
                                             first_step=None if h is None else min(h, b - a))
                    k = 0
                    while k < len(here) and here[k] == a:           # a row at the piece's start
                        rows.append((a, Y.copy(), d, (a, b)))
                        k += 1
                    while solver.status == "running":
                        message = solver.step()
                        if solver.status == "failed":
                            raise SolverError(f"integration failed at t={solver.t}: {message}")
                        if k < len(here) and here[k] <= solver.t:
                            dense = solver.dense_output()
                            while k < len(here) and here[k] <= solver.t:
                                rows.append((here[k], Y if here[k] == a else dense(here[k]), d, (a, b)))
                                k += 1
                    nfev += solver.nfev
                    h = solver.h_abs if solver.h_abs > 0 else h
                    Y = solver.y
                    if not np.all(np.isfinite(Y)):
                        raise SolverError(f"the states are not finite at t = {b:g}")
                    d = self.update(b, Y, d)
                    if last:                                         # the last row, after its events
                        rows.append((b, Y.copy(), d, (b, np.inf)))
                    if bar is not None:
                        bar.update(b - bar.n)
        finally:
            if bar is not None:
                bar.close()
        t, ys, ds, pieces = zip(*rows)
        return ClosedLoopTrajectory(self, np.array(t), np.array(ys), np.array(ds).reshape(len(t), -1), list(pieces),
                                    nfev, time.perf_counter() - start, "numpy" if self._kernel is None else "c")

    # -- outputs ------------------------------------------------------------------------------
    def recorded(self, tr, records: Records | None = None) -> np.ndarray:
        """The recorded outputs of the system (its ``record`` list) at the rows of ``tr``: the
        plant's outputs and inertial quantities, the control units' outputs."""
        records = records or Records(self.cs, self.types)
        rows = [self.outputs_of(t, Y, d, records, piece) for t, Y, d, piece in zip(tr.t, tr.y, tr.d, tr.pieces)]
        return np.array(rows).reshape(len(tr.t), -1)

    def outputs_of(self, t, Y, d, records: Records, piece=(-np.inf, np.inf)) -> np.ndarray:
        """The values of the entries of ``records`` at ``t``, the states ``Y`` and ``d``."""
        outs = {n: {p: v.reshape(1, -1) for p, v in ports.items()}
                for n, ports in self.port_values(t, Y, d, piece).items()}
        return records.table(outs, 1, self.plant.values)[0]

    def port_values(self, t, Y, d, piece=(-np.inf, np.inf)) -> dict:
        """``{unit: {output port: values}}`` of every unit at ``t`` (in the piece ``piece``), the
        states ``Y`` and ``d``: the plant's outputs, the control units' outputs."""
        _, V, out = self.evaluate(t, Y, d, piece, derivatives=False)
        outs = {}
        for n in self.plan.order:
            start = self._block_start[n]
            for port, size in self.plant.blocks[n].outputs_spec.items():
                outs.setdefault(n, {})[port] = out[start:start + size]
                start += size
        for node in self.nodes:
            t_out = self.types[node.name]
            for port, names in t_out.ports("output").items():
                outs.setdefault(node.name, {})[port] = V[node.y[[t_out.output_index[o] for o in names]]]
        return outs

    @property
    def state_names(self) -> list:
        """The names of the states: the plant's (``block.state``), then the blocks'
        (``ctrl.x[1]``)."""
        plant = [f"{n}.{x}" for n in self.plan.order for x in self.plant.blocks[n].state_names]
        return plant + [f"{n.name}.x[{i + 1}]" for n in self.nodes for i in range(n.block.n_x)]

    def input_setters(self, ref: str) -> list:
        """``[(scalar name, set(value))]`` of the free input ``ref`` (a scalar or a port): an input
        of the plant that no signal or block feeds, or a control unit's constant input."""
        unit, _, var = ref.partition(".")
        if unit not in self.types:
            raise ConnectionError_(f"input {ref}: unknown unit {unit!r}")
        scalars = self.types[unit].scalars(var, "input")
        if not scalars:
            raise ConnectionError_(f"input {ref}: {unit!r} has no input {var!r}; inputs: "
                                   + ", ".join(self.types[unit].ports("input")))
        out = []
        for s in scalars:
            if unit in self._node:
                slot = self._node[unit].u[self.types[unit].input_index[s]]
                k = next((i for i, (c, _) in enumerate(self.constant_slots) if c == slot), None)
                if k is None:
                    raise ConnectionError_(f"input {unit}.{s} is fed by a connection or a signal: not a free input")
                out.append((f"{unit}.{s}", lambda v, k=k, slot=slot: self.constant_slots.__setitem__(k, (slot, v))))
                continue
            port, c = port_of(s)
            array = self.plant.values.get((unit, port))
            if array is None or any(a is array and i == max(c - 1, 0) for a, i, _ in self.plant_feeds):
                raise ConnectionError_(f"input {unit}.{s}: not a free input of the plant (fed, or not given a "
                                       "value in [inputs]: give it one, 0 say)")
            out.append((f"{unit}.{s}", lambda v, a=array, i=max(c - 1, 0): a.__setitem__(i, v)))
        return out


@dataclass
class ClosedLoopTrajectory:
    """A run of a :class:`ClosedLoop`: per row of the output grid its time, continuous states
    (the plant's, then the blocks'), discrete states and the piece between events it lies in."""

    system: ClosedLoop
    t: np.ndarray
    y: np.ndarray
    d: np.ndarray
    pieces: list
    nfev: int
    wall: float
    kernel: str = "numpy"


def _reads_accelerations(node) -> bool:
    """The block reads the plant's acceleration-level outputs: any block reading them, but a
    sensor of a position, velocity or attitude, whose motion-vector inputs carry accelerations
    it does not use."""
    return node.sensor is None or node.sensor.reads_accelerations


def _bar(progress, total):
    if not progress:
        return None
    from tqdm import tqdm
    return tqdm(total=float(total), delay=1.0, unit="s(sim)",
                bar_format="{l_bar}{bar}| {n:.2f}/{total:.2f} s [{elapsed}<{remaining}]")


def _is_sample(block, t) -> bool:
    """``t`` is one of the block's instants, ``offset + k sample_time`` as :meth:`events` computes
    them: exactly (two blocks' instants one ulp apart, 3 x 0.1 and 0.3, are two events, each
    block sampled once)."""
    k = block.sample_index(t)
    return k >= 0 and block.offset + k * block.sample_time == t


def _only(cs: CoSystem, names) -> CoSystem:
    """The units ``names`` of ``cs`` alone (no connection, input or record)."""
    out = CoSystem()
    out.units = {n: cs.units[n] for n in names}
    return out


def _expanded(cs: CoSystem, types) -> CoSystem:
    """``cs`` with every input given per whole port (scalars gathered into their ports, the
    other components zero), as :meth:`~titop_fmu.system.System.set_input` takes them."""
    out = CoSystem()
    out.units, out.links, out.connections, out.recorded = cs.units, cs.links, cs.connections, cs.recorded
    ports = {}
    for ref, value in cs.inputs.items():
        unit, _, var = ref.partition(".")
        port, k = port_of(var)
        size = len(types[unit].scalars(port, "input"))
        whole = ports.setdefault(f"{unit}.{port}", np.zeros(size))
        if k:
            whole[k - 1] = float(value)
        else:
            whole[:] = np.atleast_1d(np.asarray(value, dtype=float))
    out.inputs = {ref: v.tolist() for ref, v in ports.items()}
    return out


def _scalars(ref, types, causality) -> tuple:
    unit, _, var = ref.partition(".")
    return unit, types[unit].scalars(var, causality)


def _port_component(name: str) -> tuple:
    port, k = port_of(name)
    return port, k or 1
