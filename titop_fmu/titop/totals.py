"""The whole system's invariants as record entries (docs/system-files.md, "Recording outputs"):

* ``system.com`` (3, m): the centre of mass ``G`` of the system, ``[IG]_Ri``;
* ``system.momentum`` (6): ``[p; H_I]``, the linear momentum (kg m/s) and the angular
  momentum (kg m^2/s) about the origin ``I`` of ``R_i``, both in ``R_i``;
* ``system.com.momentum`` (6): ``[p; H_G]``, the same about the centre of mass ``G``
  (``H_G = H_I - [IG] x p``);
* ``system.energy`` (4, J): ``[E, T, V, U]``: the total ``E = T + V + U``, the kinetic energy
  ``T``, the potential ``V`` of gravity and of the constant loads, the elastic energy ``U``
  of the joint springs and loop closures (:mod:`titop_fmu.invariants`).

They sum the shares of every TITOP body, each from its motion vector at ``P``
(:class:`~.records.BodyMotion`): the same outputs the inertial quantities of bodies are
computed from, so that the in-process engine computes them at its states and the
co-simulation master from the outputs it records (:meth:`~.records.Records.finish`).

The constant loads are the inputs nothing feeds and no time signal gives: a forward joint's
effort ``joint.tau`` (potential ``-tau q``) and the force part of a floating base's ``ext.w``
in ``R_i`` (``ext_frame = 0``: potential ``-F . [IP]_Ri``). The work of every other load
(a torque at a base, a load in a body frame, a time signal, a controller, a damper) is not a
potential: it changes ``E``.

A flexible body's share needs its modal states (eqs. (F17), (F18) of docs/flexible-bodies.md),
which no output carries: a total of a system with one is refused, naming the entry and the unit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from .. import invariants as inv
from ..blocks import FlexibleBody, FloatingBase, LoopClosure
from ..blocks.joints import _JointBody
from ..cosim import CoSystem
from ..cosim.engine import is_fmu_path
from ..cosim.names import port_of
from ..cosim.signals import is_signal
from ..errors import ConnectionError_
from ..spatial import cross, inertial_position

#: the name of the system in a record list
SYSTEM = "system"
#: the totals: the SI unit of each component and what they are
TOTALS = {
    "com": (("m",) * 3, "centre of mass G of the system, in R_i"),
    "momentum": (("kg.m/s",) * 3 + ("kg.m2/s",) * 3,
                 "[p; H_I]: linear momentum, angular momentum about the origin I of R_i, in R_i"),
    "com.momentum": (("kg.m/s",) * 3 + ("kg.m2/s",) * 3,
                     "[p; H_G]: linear momentum, angular momentum about the centre of mass G, in R_i"),
    "energy": (("J",) * 4, "[E, T, V, U]: total mechanical energy, kinetic, potential of gravity and "
                           "constant loads, elastic (joint springs, loop closures)"),
}
#: what each component is
COMPONENTS = {
    "com": ("x_G", "y_G", "z_G"),
    "momentum": ("p_x", "p_y", "p_z", "H_I,x", "H_I,y", "H_I,z"),
    "com.momentum": ("p_x", "p_y", "p_z", "H_G,x", "H_G,y", "H_G,z"),
    "energy": ("E = T + V + U", "kinetic T", "potential V", "elastic U"),
}
#: where :meth:`TotalEntry.value` keeps the sums of an instant (beside the bodies' motions)
_SUMS = (SYSTEM, "sums")
_TOTAL = re.compile(r"^" + SYSTEM + r"\.(" + "|".join(re.escape(q) for q in sorted(TOTALS, key=len, reverse=True))
                    + r")(?:\[(\d+)\])?$")


@dataclass(frozen=True)
class TotalEntry:
    """One ``record`` entry of :data:`TOTALS` (the attributes of :class:`~.records.Entry`
    that the record tables read) and what its value is summed from."""

    ref: str
    quantity: str
    select: tuple
    labels: tuple
    units: tuple
    description: str
    bodies: tuple = field(default=(), repr=False)      # (BodyMotion, block)
    springs: tuple = field(default=(), repr=False)     # (unit, joint block)
    closures: tuple = field(default=(), repr=False)    # (unit, block, source of l.m, source of r.m)
    loads: dict = field(default_factory=dict, repr=False)   # {(unit, port): constant value}
    unit: str = SYSTEM
    port: None = None

    def needs(self) -> set:
        out = {n for motion, _ in self.bodies for n in motion.needs()}
        out |= {(u, "joint.q") for u, _ in self.springs}
        out |= {(u, "joint.q") for u, port in self.loads if port == "joint.tau"}
        return out | {s for _, _, *sides in self.closures for s in sides if s is not None}

    def constants(self, cs: CoSystem) -> dict:
        out = dict(self.loads)
        for motion, _ in self.bodies:
            out.update(motion.constants(cs))
        for unit, _, *sides in self.closures:
            out.update({(unit, f"{p}.m"): np.asarray(cs.inputs[f"{unit}.{p}.m"], dtype=float)
                        for p, s in zip("lr", sides) if s is None})
        return out

    def value(self, outs: dict, inputs: dict, motions: dict) -> np.ndarray:
        """Its value at one instant from the units' outputs ``outs`` and the constant inputs
        ``inputs`` (the loads read there when given, so that a run's own values are taken);
        ``motions`` keeps the bodies' motion vectors, and the sums, for the other entries of
        the instant."""
        if _SUMS not in motions:
            motions[_SUMS] = self.sums(outs, inputs, motions)
        sums, elastic, loads = motions[_SUMS]
        com = sums[inv.MOMENT] / sums[inv.MASS] if sums[inv.MASS] > 0 else np.zeros(3)
        p, H = sums[inv.LINEAR], sums[inv.ANGULAR]
        if self.quantity == "com":
            out = com
        elif self.quantity == "momentum":
            out = np.concatenate([p, H])
        elif self.quantity == "com.momentum":
            out = np.concatenate([p, H - cross(com, p)])
        else:
            potential = sums[inv.GRAVITY] + loads
            out = np.array([sums[inv.KINETIC] + potential + elastic, sums[inv.KINETIC], potential, elastic])
        return out[list(self.select)]

    def sums(self, outs: dict, inputs: dict, motions: dict) -> tuple:
        """``(the bodies' summed :func:`~titop_fmu.invariants.body_totals`, the elastic energy,
        the loads' potential)`` at one instant."""
        sums, elastic, loads = np.zeros(inv.SIZE), 0.0, 0.0
        for motion, block in self.bodies:
            if motion.unit not in motions:
                motions[motion.unit] = motion(outs, inputs)
            sums += inv.body_totals(block.body, block.g, motions[motion.unit])
        for unit, block in self.springs:
            elastic += inv.spring_energy(block, outs[unit]["joint.q"][2])
        for unit, block, *sides in self.closures:
            m = [outs[s[0]][s[1]] if s is not None else inputs[(unit, f"{p}.m")] for p, s in zip("lr", sides)]
            elastic += inv.closure_energy(block, block.kinematics(None, {"l": np.asarray(m[0], dtype=float),
                                                                          "r": np.asarray(m[1], dtype=float)}).dx)
        for (unit, port), value in self.loads.items():
            value = np.asarray(inputs.get((unit, port), value), dtype=float)
            if port == "joint.tau":
                loads -= value[0] * outs[unit]["joint.q"][2]
            else:
                loads += inv.load_potential(value[0:3], inertial_position(motions[unit]))
        return sums, elastic, loads


def total_component(label: str) -> tuple | None:
    """``(SI unit, description)`` of the column ``label`` of a total (``system.energy[1]``),
    None if it names no total's component."""
    m = _TOTAL.match(label)
    if m is None or m.group(2) is None or not 1 <= int(m.group(2)) <= len(TOTALS[m.group(1)][0]):
        return None
    k = int(m.group(2)) - 1
    return TOTALS[m.group(1)][0][k], f"system: {COMPONENTS[m.group(1)][k]}"


def refuse(records, what: str):
    """A :class:`ConnectionError_` for the first total among the entries of ``records``:
    ``what`` (an exported FMU, a linear model, a sensor) does not compute them."""
    for e in records.entries:
        if isinstance(e, TotalEntry):
            raise ConnectionError_(f"{e.ref!r}: {what} does not compute the system's totals (system.momentum, "
                                   "system.energy, system.com): the in-process engine and the co-simulation "
                                   "master record them")


def total_entry(ref: str, records) -> TotalEntry | None:
    """The :class:`TotalEntry` of ``ref`` if it names one of :data:`TOTALS` (``system.momentum``,
    ``system.energy[1]``) in a system that has no unit named ``system``; None otherwise. Its
    bodies, springs, loop closures and loads resolved against ``records``
    (:class:`~.records.Records`); a :class:`ConnectionError_` names what is wrong."""
    cs = records.cs
    if not ref.startswith(SYSTEM + ".") or SYSTEM in cs.units:
        return None
    m = _TOTAL.match(ref)
    if m is None:
        names = ", ".join(f"{SYSTEM}.{q}" for q in TOTALS)
        raise ConnectionError_(f"record {ref!r}: the system records {names} (a unit named {SYSTEM!r} would "
                               "take the name)")
    quantity, k = m.group(1), m.group(2)
    units, description = TOTALS[quantity]
    if k is not None and not 1 <= int(k) <= len(units):
        raise ConnectionError_(f"record {ref!r}: {SYSTEM}.{quantity} has {len(units)} components, [1] .. "
                               f"[{len(units)}]")
    select = (int(k) - 1,) if k is not None else tuple(range(len(units)))
    bodies, springs, closures, loads = [], [], [], {}
    for name, spec in cs.units.items():
        if isinstance(spec.model, str) and is_fmu_path(spec.model):
            raise ConnectionError_(f"record {ref!r}: the system's totals sum its TITOP bodies; the unit {name!r} "
                                   "is an FMU file, whose bodies they cannot see")
        block = records.block(name)
        if isinstance(block, LoopClosure):
            closures.append((name, block, records.feeding(ref, name, "l"), records.feeding(ref, name, "r")))
        elif block is not None:
            if isinstance(block.body, FlexibleBody):
                raise ConnectionError_(f"record {ref!r}: the unit {name!r} has a flexible body, whose share of the "
                                       "system's totals needs its modal states, which the records do not read: "
                                       "record its ports' motion (c1.m) and elastic displacement (c1.u) instead")
            bodies.append((records.motion(ref, name, block), block))
            if isinstance(block, _JointBody) and block.k:
                springs.append((name, block))
            load = constant_load(cs, name, block)
            if load is not None:
                loads[load[0]] = load[1]
    return TotalEntry(ref, quantity, select, tuple(f"{SYSTEM}.{quantity}[{i + 1}]" for i in select),
                      tuple(units[i] for i in select), f"{SYSTEM}: {description}", tuple(bodies), tuple(springs),
                      tuple(closures), loads)


def constant_load(cs: CoSystem, unit: str, block):
    """``((unit, port), value)`` of the load of ``block`` that has a potential when it is
    constant (a forward joint's ``joint.tau``, a floating base's ``ext.w`` in ``R_i``), if
    nothing feeds it and no time signal gives it; else None."""
    if isinstance(block, _JointBody) and block.mode == "forward":
        port, size = "joint.tau", 1
    elif isinstance(block, FloatingBase) and block.ext_frame == "inertial":
        port, size = "ext.w", 6
    else:
        return None
    ref = f"{unit}.{port}"
    if any(port_of(target)[0] == ref for _, target in cs.connections):
        return None
    value = np.zeros(size)
    for name, v in cs.inputs.items():
        base, k = port_of(name)
        if base != ref:
            continue
        if is_signal(v):
            return None
        if k:
            value[k - 1] = float(v)
        else:
            value[:] = np.ravel(np.asarray(v, dtype=float))
    return (unit, port), value
