"""A co-simulation system: units, parameters, connections; its checks and its
algebraic-loop structure.

:class:`CoSystem` is the description (a small Python API; :mod:`.systemfile`
reads the same thing from a file). :func:`analyse` checks it against the unit
types (before anything is instantiated) and compiles a :class:`Structure`:

* every connected input ("coupling input") and its source output;
* the scalar dependency graph: input -> output inside a unit (the units'
  declared direct feedthrough, e.g. FMI ``<ModelStructure>``), output -> input
  along a connection. Its strongly connected components with a cycle are the
  algebraic loops (Tarjan);
* tearing: per loop, a set of coupling inputs whose removal leaves no cycle
  (greedy on in-degree x out-degree, then made minimal);
* two evaluation schedules over the torn, acyclic graph: the outputs that do
  not depend on a torn variable (evaluated once per communication point) and
  those that do (evaluated at every Newton iteration). A schedule is a list of
  unit calls "set these inputs, read these outputs", batched per unit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConnectionError_
from .units import FunctionSpec, UnitType, port_of

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class UnitSpec:
    """One unit of a system: ``model`` is a TITOP FMU model identifier
    (``"revolute_c1"``), the path of an ``.fmu`` file, or a :class:`FunctionSpec`."""

    name: str
    model: object
    parameters: dict = field(default_factory=dict)      # FMI scalar name -> value


def expand_parameters(params: dict) -> dict:
    """``{"com": [0, -1, 0], "inertia": [[..]], "c1.r": [..], "mass": 2}`` ->
    FMI scalar names ``com[1]``, ``inertia[1,1]``, ``c1.r[1]``, ``mass``."""
    out = {}
    for name, value in params.items():
        a = np.asarray(value)
        if a.dtype == object or a.dtype.kind in "US":
            out[name] = value
        elif a.ndim == 0:
            out[name] = value.item() if hasattr(value, "item") else value
        else:
            for index in np.ndindex(*a.shape):
                out[f"{name}[{','.join(str(i + 1) for i in index)}]"] = a[index].item()
    return out


class CoSystem:
    """Units, their parameters, the connections between them, constant inputs and
    the outputs to record.

    >>> s = CoSystem()
    >>> s.add("base", "floating_base_c1", mass=10, inertia=np.eye(3), **{"c1.r": [0, -1, 0]})
    >>> s.add("arm", "revolute_c0", mass=1, com=[0, -1, 0])
    >>> s.link("base.c1", "arm.p")          # base.c1.m -> arm.p.m and arm.p.w -> base.c1.w
    >>> s.set_input("base.ext.w", [0, 107.91, 0, 0, 0, 0])
    >>> s.record("arm.joint.q[3]")

    Nothing is checked against the units' variables until :func:`analyse`.
    """

    def __init__(self):
        self.units: dict[str, UnitSpec] = {}
        self.connections: list[tuple[str, str]] = []
        self.links: list[tuple[str, str]] = []
        self.inputs: dict[str, object] = {}
        self.recorded: list[str] = []

    def add(self, name: str, model, parameters: dict | None = None, **kw) -> str:
        """Add a unit; parameters as ``parameters={...}`` and/or keywords, vectors and
        matrices allowed (``com=[0, -1, 0]``, ``**{"c1.r": [0, -2, 0]}``)."""
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConnectionError_(f"unit name {name!r} must be an identifier (letters, digits, _)")
        if name in self.units:
            raise ConnectionError_(f"unit name {name!r} is already used")
        if not isinstance(model, (str, FunctionSpec)) and not hasattr(model, "__fspath__"):
            raise ConnectionError_(f"unit {name!r}: model must be a TITOP model identifier, an .fmu path "
                                   f"or a FunctionSpec, got {model!r}")
        params = dict(parameters or {})
        params.update(kw)
        self.units[name] = UnitSpec(name, model, expand_parameters(params))
        return name

    def connect(self, output: str, input: str):
        """Connect ``"unit.output"`` to ``"unit.input"``: scalars (``a.y[2]``) or
        whole ports (``a.c1.m`` -> ``b.p.m``, sizes must match)."""
        self.connections.append((output, input))

    def link(self, child_port: str, parent_port: str):
        """TITOP link: the child port ``"A.ci"`` of a block to the parent port ``"B.p"``
        of another: ``A.ci.m -> B.p.m`` and ``B.p.w -> A.ci.w``."""
        self.links.append((child_port, parent_port))
        self.connect(f"{child_port}.m", f"{parent_port}.m")
        self.connect(f"{parent_port}.w", f"{child_port}.w")

    def set_input(self, ref: str, value):
        """Give an unconnected input (scalar or port) a constant value."""
        self.inputs[ref] = value

    def record(self, *refs: str):
        """Outputs (scalars or ports) to record, in order."""
        self.recorded.extend(refs)


# -- compiled structure ----------------------------------------------------------------

@dataclass
class Op:
    """One unit call of a schedule: set inputs ``set_idx`` (local) from the global output
    vector at ``set_src``, then read outputs ``get_idx`` (local) into ``get_pos``."""

    unit: int
    set_idx: np.ndarray
    set_src: np.ndarray
    get_idx: np.ndarray
    get_pos: np.ndarray


@dataclass
class Loop:
    """One algebraic loop: its units, coupling inputs, and torn coupling inputs."""

    index: int
    units: list
    inputs: np.ndarray          # coupling-input positions in the loop
    torn: np.ndarray            # torn coupling-input positions
    label: str = ""


@dataclass
class Structure:
    """A checked system, as index arrays (see the module docstring)."""

    unit_names: list
    types: list                         # UnitType per unit
    out_offset: np.ndarray              # global output index of unit j's output 0
    n_out: int
    cin_unit: np.ndarray                # per coupling input k: unit, local input index
    cin_local: np.ndarray
    cin_src: np.ndarray                 # global output index feeding it
    cin_angle: np.ndarray               # bool: attitude angle (average/extrapolate modulo 2 pi)
    unit_cin: list                      # per unit: coupling-input positions (sorted by local index)
    constants: list                     # per unit: {input name: value}
    loops: list
    torn: np.ndarray                    # all torn coupling inputs
    pre: list                           # Op schedule, independent of torn values
    loop_ops: list                      # Op schedule depending on torn values
    full: list                          # Op schedule of every output, torn values given
    recorded: list                      # [(label, global output index)]
    dep_in: list                        # per unit: per output, local input indices
    cin_state: np.ndarray = None        # bool: coupling input outside every loop (a function of states)

    @property
    def n_cin(self):
        return len(self.cin_unit)

    def describe(self) -> str:
        lines = [f"{len(self.unit_names)} units, {self.n_cin} coupling inputs, {len(self.loops)} algebraic loop(s)"]
        for lp in self.loops:
            lines.append(f"  {lp.label}: {len(lp.inputs)} coupling inputs, {len(lp.torn)} torn: "
                         + ", ".join(self.cin_label(k) for k in lp.torn))
        return "\n".join(lines)

    def cin_label(self, k) -> str:
        j = self.cin_unit[k]
        return f"{self.unit_names[j]}.{self.types[j].input_names[self.cin_local[k]]}"

    def out_label(self, g) -> str:
        j = int(np.searchsorted(self.out_offset, g, side="right") - 1)
        return f"{self.unit_names[j]}.{self.types[j].output_names[g - self.out_offset[j]]}"


def _split(ref: str, units: dict):
    name, dot, var = ref.partition(".")
    if not dot or not var:
        raise ConnectionError_(f"{ref!r}: expected 'unit.variable'")
    if name not in units:
        raise ConnectionError_(f"unknown unit {name!r} in {ref!r}; units: {', '.join(units) or 'none'}")
    return name, var


def _resolve(ref: str, types: dict, causality: str) -> tuple[str, list]:
    """``(unit, [scalar names])`` of a reference with the given causality, or a clear error."""
    name, var = _split(ref, types)
    t: UnitType = types[name]
    scalars = t.scalars(var, causality)
    if scalars:
        return name, scalars
    other = "output" if causality == "input" else "input"
    if t.scalars(var, other):
        raise ConnectionError_(f"{ref!r} is an {other} of {name!r} ({t.name}); a connection goes from an "
                               "output to an input")
    v = t.variables.get(var)
    if v is not None:
        raise ConnectionError_(f"{ref!r} is a {v.causality} of {name!r} ({t.name}), not an {causality}")
    ports = ", ".join(t.ports(causality))
    raise ConnectionError_(f"{name!r} ({t.name}) has no {causality} {var!r}; its {causality}s: {ports}")


def analyse(system: CoSystem, types: dict) -> Structure:
    """Check ``system`` against its unit types (``{unit name: UnitType}``) and compile
    its :class:`Structure`; every problem is a :class:`ConnectionError_` naming it."""
    if not system.units:
        raise ConnectionError_("the system has no unit")
    names = list(system.units)
    index = {n: j for j, n in enumerate(names)}
    tlist = [types[n] for n in names]

    # parameters
    for n, spec in system.units.items():
        t = types[n]
        for p in spec.parameters:
            v = t.variables.get(p)
            if v is None or v.causality not in ("parameter", "calculatedParameter"):
                if v is not None:
                    raise ConnectionError_(f"{n}.{p} is a {v.causality}, not a parameter")
                base = port_of(p)[0].split("[")[0]
                known = sorted({re.sub(r"\[.*\]$", "", q) for q in t.parameter_names})
                hint = f" (did you mean {base}[...]?)" if base in known else ""
                raise ConnectionError_(f"{n!r} ({t.name}) has no parameter {p!r}{hint}; parameters: "
                                       + ", ".join(known))

    # connections, scalar by scalar
    src_of: dict[tuple, tuple] = {}
    for out_ref, in_ref in system.connections:
        a, outs = _resolve(out_ref, types, "output")
        b, ins = _resolve(in_ref, types, "input")
        if len(outs) != len(ins):
            raise ConnectionError_(f"size mismatch: {out_ref} has {len(outs)} scalar(s), {in_ref} has {len(ins)}")
        for o, i in zip(outs, ins):
            to, ti = types[a].variables[o], types[b].variables[i]
            if to.type != ti.type:
                raise ConnectionError_(f"type mismatch: {a}.{o} is {to.type}, {b}.{i} is {ti.type}")
            if to.type != "Real":
                raise ConnectionError_(f"{a}.{o} -> {b}.{i}: only Real variables can be coupled, not {to.type}")
            if to.unit and ti.unit and to.unit != ti.unit:
                raise ConnectionError_(f"unit mismatch: {a}.{o} is in {to.unit}, {b}.{i} in {ti.unit}")
            key = (b, i)
            if key in src_of:
                prev = src_of[key]
                raise ConnectionError_(f"input {b}.{i} is connected twice (from {prev[0]}.{prev[1]} and {a}.{o})")
            src_of[key] = (a, o)

    # constant inputs
    constants = [dict() for _ in names]
    for ref, value in system.inputs.items():
        b, ins = _resolve(ref, types, "input")
        v = np.atleast_1d(np.asarray(value, dtype=float))
        if v.shape != (len(ins),):
            raise ConnectionError_(f"input {ref} takes {len(ins)} value(s), got {v.size}")
        if not np.all(np.isfinite(v)):
            raise ConnectionError_(f"input {ref} must be finite, got {v.tolist()}")
        for i, x in zip(ins, v):
            if (b, i) in src_of:
                raise ConnectionError_(f"input {b}.{i} is both connected and set to a value")
            constants[index[b]][i] = float(x)

    # dangling required inputs
    missing = []
    for n in names:
        t = types[n]
        for i in sorted(t.required, key=t.input_index.get):
            if (n, i) not in src_of and i not in constants[index[n]]:
                missing.append(f"{n}.{i}")
    if missing:
        ports = sorted({m.split("[")[0] for m in missing})
        raise ConnectionError_("dangling required input(s): " + ", ".join(ports)
                               + " (connect them; set a free child port's wrench c<i>.w to zero explicitly)")

    _check_tree(src_of, names)

    # coupling inputs
    out_offset = np.zeros(len(names), dtype=int)
    k = 0
    for j, t in enumerate(tlist):
        out_offset[j] = k
        k += len(t.output_names)
    n_out = k
    keys = sorted(src_of, key=lambda key: (index[key[0]], types[key[0]].input_index[key[1]]))
    cin_unit = np.array([index[b] for b, _ in keys], dtype=int)
    cin_local = np.array([types[b].input_index[i] for b, i in keys], dtype=int)
    cin_src = np.array([out_offset[index[src_of[key][0]]] + types[src_of[key][0]].output_index[src_of[key][1]]
                        for key in keys], dtype=int)
    cin_angle = np.array([i in types[b].angle_inputs for b, i in keys], dtype=bool)
    unit_cin = [np.flatnonzero(cin_unit == j) for j in range(len(names))]

    dep_in = [[np.asarray(d, dtype=int) for d in t.dependencies] for t in tlist]
    loops, torn = _loops_and_tearing(names, tlist, dep_in, out_offset, cin_unit, cin_local, cin_src)
    pre, loop_ops, full, tainted = _schedules(tlist, dep_in, out_offset, n_out, cin_unit, cin_local, cin_src,
                                              unit_cin, torn)
    cin_state = ~tainted[cin_src]           # coupling inputs that are functions of the states alone

    recorded = []
    for ref in system.recorded:
        a, outs = _resolve(ref, types, "output")
        for o in outs:
            recorded.append((f"{a}.{o}", int(out_offset[index[a]] + types[a].output_index[o])))

    return Structure(names, tlist, out_offset, n_out, cin_unit, cin_local, cin_src, cin_angle, unit_cin,
                     constants, loops, torn, pre, loop_ops, full, recorded, dep_in, cin_state)


def _check_tree(src_of, names):
    """The motion links (``A.ci.m -> B.p.m``) must form a forest: a directed cycle
    is a kinematic loop, which only a loop-closure block can close."""
    children = {n: set() for n in names}
    for (b, i), (a, o) in src_of.items():
        if port_of(i)[0].endswith(".m") and port_of(o)[0].endswith(".m") and a != b:
            children[a].add(b)
        elif a == b and port_of(i)[0].endswith(".m") and port_of(o)[0].endswith(".m"):
            raise ConnectionError_(f"{a} feeds its own motion input {a}.{i}: a cycle in the tree topology")
    color = {n: 0 for n in names}
    stack_path = []

    def visit(n):
        color[n] = 1
        stack_path.append(n)
        for c in sorted(children[n]):
            if color[c] == 1:
                cyc = stack_path[stack_path.index(c):] + [c]
                raise ConnectionError_("cycle in the tree topology: " + " -> ".join(cyc)
                                       + " (close kinematic loops with a loop_closure unit)")
            if color[c] == 0:
                visit(c)
        stack_path.pop()
        color[n] = 2

    for n in names:
        if color[n] == 0:
            visit(n)


# -- graph algorithms ------------------------------------------------------------------------

def strongly_connected(n_nodes: int, succ: list) -> list:
    """Tarjan's strongly connected components (iterative), in reverse topological order."""
    index = [-1] * n_nodes
    low = [0] * n_nodes
    on = [False] * n_nodes
    stack, comps, counter = [], [], 0
    for root in range(n_nodes):
        if index[root] >= 0:
            continue
        work = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on[root] = True
        while work:
            v, i = work[-1]
            if i < len(succ[v]):
                work[-1] = (v, i + 1)
                w = succ[v][i]
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on[w] = True
                    work.append((w, 0))
                elif on[w]:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    u = work[-1][0]
                    low[u] = min(low[u], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on[w] = False
                        comp.append(w)
                        if w == v:
                            break
                    comps.append(comp)
    return comps


def _feeds(cin_src) -> dict:
    """Global output -> the coupling inputs it feeds."""
    feeds = {}
    for m, g in enumerate(cin_src):
        feeds.setdefault(int(g), []).append(m)
    return feeds


def _reverse_dependencies(tlist, dep_in) -> list:
    """Per unit, per local input: the local outputs that depend on it directly."""
    rev = []
    for j, t in enumerate(tlist):
        r = [[] for _ in t.input_names]
        for o, deps in enumerate(dep_in[j]):
            for i in deps:
                r[i].append(o)
        rev.append(r)
    return rev


def _coupling_graph(tlist, dep_in, out_offset, cin_unit, cin_local, cin_src):
    """Graph on coupling inputs only: k -> m if an output that input k feeds directly
    (same unit) is the source of coupling input m."""
    n = len(cin_unit)
    feeds, rev = _feeds(cin_src), _reverse_dependencies(tlist, dep_in)
    succ = []
    for k in range(n):
        j, i = cin_unit[k], cin_local[k]
        s = []
        for o in rev[j][i]:
            s.extend(feeds.get(int(out_offset[j] + o), ()))
        succ.append(sorted(set(s)))
    return succ


def _has_cycle(nodes, succ, removed):
    sub = [m for m in nodes if m not in removed]
    pos = {m: i for i, m in enumerate(sub)}
    ssucc = [[pos[w] for w in succ[m] if w in pos] for m in sub]
    comps = strongly_connected(len(sub), ssucc)
    return [[sub[i] for i in c] for c in comps if len(c) > 1 or (c and c[0] in ssucc[c[0]])]


def _loops_and_tearing(names, tlist, dep_in, out_offset, cin_unit, cin_local, cin_src):
    """Algebraic loops (cyclic strongly connected components of the coupling-input graph)
    and their tearing.

    Tearing is chosen at unit level so that evaluating a loop is a single sweep,
    one call per unit: the loop's units are put in an order and every coupling
    input of the loop fed by a unit at the same or a later place is torn. The
    order minimises the number of torn scalars (exhaustively up to 8 units,
    greedily beyond), ties broken by the declaration order of the units.
    """
    succ = _coupling_graph(tlist, dep_in, out_offset, cin_unit, cin_local, cin_src)
    comps = strongly_connected(len(succ), succ)
    cyclic = [sorted(c) for c in comps if len(c) > 1 or c[0] in succ[c[0]]]
    cyclic.sort(key=lambda c: c[0])
    out_unit = np.searchsorted(out_offset, cin_src, side="right") - 1
    loops, all_torn = [], []
    for li, comp in enumerate(cyclic):
        units = sorted({int(cin_unit[m]) for m in comp})
        # weight[a][b]: loop scalars flowing from unit a to unit b
        weight = {}
        for m in comp:
            a, b = int(out_unit[m]), int(cin_unit[m])
            weight[(a, b)] = weight.get((a, b), 0) + 1
        order = _unit_order(units, weight)
        place = {u: i for i, u in enumerate(order)}
        torn = sorted(m for m in comp if place[int(out_unit[m])] >= place[int(cin_unit[m])])
        label = f"loop {li + 1} ({', '.join(names[j] for j in units)})"
        loops.append(Loop(li, [names[j] for j in units], np.array(comp, dtype=int),
                          np.array(torn, dtype=int), label))
        all_torn.extend(torn)
    return loops, np.array(sorted(all_torn), dtype=int)


def _unit_order(units, weight):
    """An order of ``units`` with few scalars flowing backwards (or to the same unit)."""
    def cost(order):
        place = {u: i for i, u in enumerate(order)}
        return sum(w for (a, b), w in weight.items() if place[a] >= place[b])

    if len(units) <= 8:
        import itertools
        best = min(itertools.permutations(units), key=lambda o: (cost(o), o))
        return list(best)
    order, left = [], set(units)                        # greedy (Eades-Lin-Smyth flavour)
    while left:
        def score(u):
            out_w = sum(w for (a, b), w in weight.items() if a == u and b in left and b != u)
            in_w = sum(w for (a, b), w in weight.items() if b == u and a in left and a != u)
            return (in_w - out_w, u)
        u = min(left, key=score)
        order.append(u)
        left.discard(u)
    return order


def _schedules(tlist, dep_in, out_offset, n_out, cin_unit, cin_local, cin_src, unit_cin, torn):
    """``(pre, loop)`` schedules of unit calls (see the module docstring)."""
    torn_set = set(int(k) for k in torn)
    cin_of = {}                                         # (unit, local input) -> coupling input
    for k, (j, i) in enumerate(zip(cin_unit, cin_local)):
        cin_of[(int(j), int(i))] = k
    # outputs depending (transitively) on a torn variable
    tainted = np.zeros(n_out, dtype=bool)
    feeds, rev = _feeds(cin_src), _reverse_dependencies(tlist, dep_in)
    stack = list(torn_set)
    seen = set(stack)
    while stack:
        k = stack.pop()
        j, i = int(cin_unit[k]), int(cin_local[k])
        for o in rev[j][i]:
            g = int(out_offset[j] + o)
            if not tainted[g]:
                tainted[g] = True
                for m in feeds.get(g, ()):
                    if m not in seen and m not in torn_set:
                        seen.add(m)
                        stack.append(m)
    all_out = np.arange(n_out)
    pre, is_set = _greedy(tlist, dep_in, out_offset, cin_src, unit_cin, cin_local, cin_of, torn_set,
                          targets=set(all_out[~tainted].tolist()), computed=set(), taint_torn=True, is_set=set())
    loop, _ = _greedy(tlist, dep_in, out_offset, cin_src, unit_cin, cin_local, cin_of, torn_set,
                      targets=set(all_out[tainted].tolist()), computed=set(all_out[~tainted].tolist()),
                      taint_torn=False, is_set=is_set)
    full, _ = _greedy(tlist, dep_in, out_offset, cin_src, unit_cin, cin_local, cin_of, torn_set,
                      targets=set(all_out.tolist()), computed=set(), taint_torn=False, is_set=set())
    return pre, loop, full, tainted


def _greedy(tlist, dep_in, out_offset, cin_src, unit_cin, cin_local, cin_of, torn_set, targets, computed,
            taint_torn, is_set):
    """Schedule: repeatedly take the unit with ready outputs (all the inputs they
    depend on known), set its known coupling inputs not set yet, read them."""
    ops = []
    is_set = set(is_set)
    computed = set(computed)
    todo = set(targets)

    def known(j, i):
        k = cin_of.get((j, i))
        if k is None:
            return True                                 # constant input
        if k in torn_set:
            return not taint_torn
        return int(cin_src[k]) in computed

    n_units = len(tlist)
    remaining = [set(int(out_offset[j] + o) for o in range(len(t.output_names))) & todo
                 for j, t in enumerate(tlist)]
    while todo:
        ready_by_unit = []
        for j, t in enumerate(tlist):
            ready = [o for o in range(len(t.output_names))
                     if int(out_offset[j] + o) in todo and all(known(j, int(i)) for i in dep_in[j][o])]
            ready_by_unit.append(ready)
        # prefer a unit all of whose outputs still to compute are ready: one call per unit
        whole = [j for j in range(n_units) if ready_by_unit[j] and len(ready_by_unit[j]) == len(remaining[j])]
        some = [j for j in range(n_units) if ready_by_unit[j]]
        if not some:                                    # cannot happen on an acyclic torn graph
            raise ConnectionError_("internal: no evaluation order for outputs "
                                   + ", ".join(str(g) for g in sorted(todo)[:5]))
        j = whole[0] if whole else some[0]
        ready = ready_by_unit[j]
        ks = [int(k) for k in unit_cin[j] if int(k) not in torn_set and int(k) not in is_set
              and int(cin_src[k]) in computed]
        is_set.update(ks)
        ops.append(Op(j, np.array([cin_local[k] for k in ks], dtype=int),
                      np.array([cin_src[k] for k in ks], dtype=int),
                      np.array(ready, dtype=int), out_offset[j] + np.array(ready, dtype=int)))
        for o in ready:
            g = int(out_offset[j] + o)
            computed.add(g)
            todo.discard(g)
            remaining[j].discard(g)
    # coupling inputs fed by these outputs but read by no scheduled output are set by the master
    return ops, is_set
