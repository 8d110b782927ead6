"""The C table of a closed loop in a standalone assembly FMU: the ``TitopLoop`` (``fmu/csrc/
model.h``) of a :class:`~.closedloop.ClosedLoop`, compiled into the FMU's ``model.c``.

Its time signals compiled in (their values and breakpoints, :meth:`~titop_fmu.control.signals.
Signal.c_code`, :meth:`~titop_fmu.control.signals.Signal.c_breakpoints`, with the C helpers
they call), its control blocks' data (``fmu/csrc/control.c``; a noisy sensor's draws by the C
twin of :mod:`titop_fmu.control.noise`), and the loop's wiring as tables: the value vector's
slots (the ClosedLoop's), the tree's values the blocks read (a sensor of an inertial quantity
reads the quantity itself: ``tree.c``'s inertial, which the assembly's inertial outputs use
too), the tree's inputs the loop feeds, the constants, the evaluation order.
"""

from __future__ import annotations

import math

import numpy as np

from ..control.expressions import C_HELPERS, ExpressionError
from ..control.noise import C_SOURCE as C_NOISE
from ..control.signals import C_BREAKPOINTS, C_TABLE, ExpressionSignal, TableSignal
from ..cosim.names import port_of
from ..errors import ConnectionError_
from ..fmu.standalone import OUTPUT_QUANTITIES
from .assembly_unit import EVENT_TOLERANCE
from .closedloop import ClosedLoop

#: Model Exchange: the breakpoints of an expression (found by sampling) are looked for this far
#: ahead of an event [s], and the end of that window is an event too
WINDOW = 1.0


def inertial_source(entry, component: int, index: dict, first, outputs: dict) -> tuple:
    """The ``TitopOutput`` (model.h) of the component ``component`` of an inertial quantity
    ``entry`` (:class:`~.records.Entry`) of the body of a block (``index``: block indices;
    ``first(name)``: the value reference of a parameter's first scalar; ``outputs``: ``{(unit,
    output port): its first scalar in the kernel's outputs}``, where a flexible body's node
    finds its own motion vector ``ci.m``)."""
    if entry.quantity not in OUTPUT_QUANTITIES:
        raise ConnectionError_(f"{entry.ref!r}: a point's acceleration is not computed by the standalone assembly "
                               "FMU yet (export the pythonfmu kind, --fmu-kind pythonfmu)")
    node = entry.motion.node if entry.motion is not None else None
    if node is not None:                         # a flexible body's node: its own motion, X the node
        return OUTPUT_QUANTITIES[entry.quantity], component, index[entry.unit], -1, 1 + outputs[(entry.unit,
                                                                                                  f"{node}.m")]
    point = -1 if entry.point in (None, "p") else \
        first(f"{entry.unit}.{'com' if entry.point == 'com' else entry.point + '.r'}")
    return OUTPUT_QUANTITIES[entry.quantity], component, index[entry.unit], point, 0


class _Writer:
    """The C definitions of the table, and names for its arrays."""

    def __init__(self):
        self.code = []

    def array(self, name: str, ctype: str, values) -> str:
        """A static array of ``values`` (its name), or ``NULL`` if there are none."""
        values = list(values)
        if not values:
            return "NULL"
        text = ", ".join(_c_number(v) if ctype == "double" else str(int(v)) for v in values)
        self.code.append(f"static const {ctype} {name}[{len(values)}] = {{{text}}};\n")
        return name


def _c_number(v) -> str:
    v = float(v)
    return repr(v) if math.isfinite(v) else ("INFINITY" if v > 0 else "-INFINITY")


def loop_table(loop: ClosedLoop, position: dict, internal: list, n_inputs: int, index: dict, first,
               outputs: dict) -> tuple:
    """``(C definitions, TitopLoop initializer)`` of ``loop``: ``position`` ``{(unit, port): its
    first input position}`` of the kernel's inputs (the FMU's, then the loop's own: the plant's
    ports that signals and blocks feed, whose values ``internal`` lists), constants compiled in
    appended to ``internal``; ``index`` ``{unit: block index}``; ``first(name)``: the value
    reference of a parameter's first scalar; ``outputs`` as :func:`inertial_source` takes them."""
    w = _Writer()
    signals = []
    for i, ((unit, scalar), (slot, signal)) in enumerate(zip(loop.signals, loop.signal_slots)):
        try:
            w.code.append(signal.c_code(f"signal{i}") + signal.c_breakpoints(f"signal{i}"))
        except ExpressionError as e:
            raise ConnectionError_(f"input {unit}.{scalar}: its signal has no C form for the standalone FMU: {e}") \
                from None
        signals.append(f"{{signal{i}, signal{i}_next, {slot}, {int(isinstance(signal, ExpressionSignal))}}}")
    ports = {id(array): key for key, array in loop.plant.values.items()}
    feeds = [(position[ports[id(array)]] + k, slot) for array, k, slot in loop.plant_feeds]
    constants = []
    key = {v: k for k, v in loop.slots.items()}
    for slot, value in loop.constant_slots:
        _, unit, scalar = key[slot]
        port = port_of(scalar)[0]
        if (unit, port) in position and position[(unit, port)] < n_inputs:         # an input of the FMU
            constants.append((slot, position[(unit, port)] + loop.types[unit].scalars(port, "input").index(scalar)))
        else:                                                                       # compiled in
            constants.append((slot, n_inputs + len(internal)))
            internal.append(value)
    reads = [(slot, (0, k, -1, -1)) for slot, k in loop.plant_reads.items()]
    n_values, controls, noise = loop.n_values, [], False
    for i, n in enumerate(loop.nodes):
        u = n.u
        if n.sensor is not None:                   # the inertial quantity itself, read from the tree
            entry = n.sensor.entry
            u = np.arange(n_values, n_values + len(entry.select))
            reads += [(s, inertial_source(entry, c, index, first, outputs)) for s, c in zip(u, entry.select)]
            n_values += len(u)
        b = n.block
        seed = getattr(b, "seed", 0)
        noisy = b.c_kind == "TITOP_SENSOR" and bool(np.any(b.noise))
        noise |= noisy
        controls.append(f"{{{b.c_kind}, {len(u)}, {len(n.y)}, {b.n_x}, {len(b.d0())}, {n.x.start}, {n.d.start}, "
                        f"{w.array(f'control{i}_u', 'int', u)}, {w.array(f'control{i}_y', 'int', n.y)}, "
                        f"{_c_number(b.sample_time or 0.0)}, {_c_number(b.offset)}, "
                        f"{w.array(f'control{i}_p', 'double', b.c_data())}, UINT64_C({seed}), "
                        f"{'titop_gaussian' if noisy else 'NULL'}}}")
    order = [-1 if name == "plant" else [n.name for n in loop.nodes].index(name) for name in loop.order]
    x0 = np.concatenate([np.zeros(0)] + [n.block.x0() for n in loop.nodes])
    head = ("#include <math.h>\n#include <stdint.h>\n\n" + C_HELPERS
            + (C_TABLE if any(isinstance(s, TableSignal) for s in loop.signals.values()) else "")
            + C_BREAKPOINTS + (C_NOISE if noise else ""))
    parts = [
        str(n_values),
        str(len(signals)), _struct_array(w, "signals", "TitopSignal", signals),
        str(len(constants)), w.array("constants", "int", [v for c in constants for v in c]),
        str(len(reads)), w.array("read_slots", "int", [s for s, _ in reads]),
        _struct_array(w, "reads", "TitopOutput", ["{" + ", ".join(map(str, r)) + "}" for _, r in reads]),
        str(int(loop.reads_accelerations)),
        str(len(feeds)), w.array("feeds", "int", [v for f in feeds for v in f]),
        str(len(controls)), _struct_array(w, "controls", "TitopControl", controls),
        str(len(order)), w.array("order", "int", order),
        str(len(x0)), w.array("x0", "double", x0),
        str(loop.n_d), w.array("d0", "double", loop.initial_discrete()),
        str(len(internal)), w.array("internal", "double", internal),
        _c_number(EVENT_TOLERANCE), _c_number(WINDOW)]
    return head + "".join(w.code), "{" + ", ".join(parts) + "}"


def _struct_array(w: _Writer, name: str, ctype: str, items: list) -> str:
    if not items:
        return "NULL"
    w.code.append(f"static const {ctype} {name}[] = {{\n    " + ",\n    ".join(items) + "\n};\n")
    return name
