"""``titop-fmu export SYSTEM --standalone``: the assembly FMU with a binary in C only.

The same contract as the pythonfmu assembly FMU (:mod:`.export`, :mod:`.assembly`: the same
variables, value references, ModelStructure, default experiment and vendor function), the
model computed by the standalone FMUs' C layer (:mod:`titop_fmu.fmu.standalone`,
``fmu/csrc/``): the kernel's tree of the whole system, its loop solved exactly inside
``titop_evaluate`` (as :class:`titop_fmu.kernel.CompiledRHS` runs it in process), each unit's
block data computed from the FMI parameters ``<unit>.<name>`` with the blocks' checks and
messages, the states integrated over a communication step by the kernel's DOPRI5
(``titop_step``) and the bases' quaternions normalised after it.

Its table (``model.c``, :func:`assembly_table`) lays out the system's blocks as the kernel takes
them (parents first, :meth:`titop_fmu.system.System.plan`), the free ports as the FMU's inputs,
and the output map: per FMU output, which of the blocks' outputs it is.

The FMU also declares **Model Exchange**: its continuous states are the system's states (the
variables ``<unit>.x.<state>`` and ``der(<unit>.x.<state>)``, appended after the co-simulation's
so that its value references stay), their derivatives the kernel's, no event indicators; the
structure of the derivatives is measured on the in-process twin
(:meth:`~titop_fmu.unit.IntegratedUnit.state_dependencies`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ..errors import TitopError
from ..fmu import catalog
from ..fmu.build import describe, validate
from ..fmu.model_description import N_PARAMETER_SETS, add_model_exchange, measure_dependencies
from ..fmu.standalone import (OPTIONS, OUTPUT_QUANTITIES, TITOP_VALUE, TOOL, Compiler, block_spec, c_table,
                               compilers, first_scalars, package)
from .assembly import AssemblyInterface, random_parameters
from .loop_table import inertial_source, loop_table


def _twin(iface: AssemblyInterface):
    """The in-process assembly unit at the default parameters and its system's plan."""
    unit, _ = iface.make_unit(iface.defaults())              # (its parameter warnings are returned)
    unit.set_inputs(unit.ALL, [v.start for v in iface.variables if v.causality == "input"])
    return unit, unit.system.plan()


def state_variables(iface: AssemblyInterface) -> list:
    """The system's continuous states as ``(name, unit, unit of the derivative, description)``,
    in the kernel's order, named as a block FMU names them (:func:`catalog.state_variables`)
    under their unit: ``<unit>.x.<state>`` (``balloon.x.q_w``, ``pendulum1.x.q``); then a closed
    loop's control units' states, ``<unit>.x[k]`` (no unit: the user's signals)."""
    unit, plan = _twin(iface)
    kind = {n: catalog.parse_identifier(m)[0] for n, m in iface.units}
    out = []
    for n in plan.order:
        variables = catalog.state_variables(kind[n], unit.system.blocks[n].state_names)
        half = len(variables) // 2                                 # the states, then their derivatives
        out += [(f"{n}.{x.name}", x.unit, dx.unit, f"{n}: {x.description}")
                for x, dx in zip(variables[:half], variables[half:])]
    for node in getattr(unit, "loop", None) and unit.loop.nodes or ():
        out += [(f"{node.name}.x[{k + 1}]", None, None, f"{node.name}: state {k + 1} of the "
                 f"{unit.loop.types[node.name].name}") for k in range(node.block.n_x)]
    return out


def assembly_table(iface: AssemblyInterface, guid: str) -> str:
    """The C table (``model.c``) of the assembly ``iface``: the kernel's tree of its system,
    its inputs and the output map."""
    unit, plan = _twin(iface)
    system = unit.system
    index = {n: i for i, n in enumerate(plan.order)}
    first = first_scalars(iface)
    position, k = {}, 0                           # (unit, input port) -> input position
    for p in iface.inputs:
        position[(p.unit, p.port)] = k
        k += p.size
    loop, internal = getattr(unit, "loop", None), []         # a closed loop: the kernel's inputs it feeds
    for (n, port), values in (loop.plant.values.items() if loop else ()):
        if (n, port) not in position:
            position[(n, port)] = k + len(internal)
            internal += list(values)
    blocks = []
    for n in plan.order:
        b = system.blocks[n]
        parents = []
        for p in b.parent_ports:
            j = plan.parent_link.get((n, p))
            link = None if j is None else system.links[j]
            parents.append(None if link is None else
                           (index[link.parent], system.blocks[link.parent].child_ports.index(link.child_port)))
        children = [None if (j := plan.child_link.get((n, c))) is None else index[system.links[j].child]
                    for c in b.child_ports]
        inputs = {port: position[(u, port)] for u, port in position if u == n}
        blocks.append(block_spec(b, plan.state_slices[n].start, inputs, lambda f, n=n: first.get(f"{n}.{f}"),
                                 parents, children, unit=n))
    source, k = {}, 0                             # (unit, output port) -> its first scalar in the kernel's outputs
    for n in plan.order:
        for port, size in system.blocks[n].outputs_spec.items():
            source[(n, port)] = k
            k += size
    entries = {e.ref: e for e in iface.records(iface.cosystem(iface.defaults()), loop).entries}
    missing = [e.ref for e in entries.values() if e.quantity is not None and e.quantity not in OUTPUT_QUANTITIES]
    if missing:
        raise TitopError(f"record {missing[0]!r}: a point's acceleration is not an output of the standalone "
                         "assembly FMU yet (export the pythonfmu kind, --fmu-kind pythonfmu, or record the "
                         "accelerations of the motion vectors, p.m[1..6])")
    table = None if loop is None else loop_table(loop, position, internal, len(iface.input_names), index, first.get,
                                                source)
    outputs = []                                  # TitopOutput (model.h)
    for p in iface.outputs:
        components = range(p.size) if p.component is None else [p.component]
        if p.record:                              # an inertial quantity of a body (records.inertial)
            outputs += [inertial_source(entries[p.record], c, index, first.get, source) for c in components]
        elif p.unit not in system.blocks:         # a control unit's output: a value of the loop
            names = loop.types[p.unit].scalars(p.port, "output")
            outputs += [(TITOP_VALUE, loop.slots[("out", p.unit, names[c])], -1, -1) for c in components]
        else:
            outputs += [(OUTPUT_QUANTITIES[None], source[(p.unit, p.port)] + c, -1, -1) for c in components]
    states = state_variables(iface)
    variables = [(v.name, v.type, v.causality, v.start) for v in iface.variables] + \
        [(name, "Real", "local", None) for name, *_ in states] + \
        [(f"der({name})", "Real", "local", None) for name, *_ in states]
    return c_table(iface.model_identifier, guid, iface.description, variables, iface.n_params,
                   len(iface.input_names), len(iface.output_names), blocks, len(states),
                   (first["rtol"], first["atol"]), check_order=[index[n] for n, _ in iface.units],
                   n_kernel_outputs=k, outputs=outputs, derivatives=False, model_exchange=True, loop=table)


def state_structure(iface: AssemblyInterface, n_sets: int = N_PARAMETER_SETS, seed: int = 0) -> tuple:
    """``(outputs x states, derivatives x states, derivatives x inputs)``: what the outputs and
    the state derivatives depend on, united over ``n_sets`` random parameter sets
    (:meth:`~titop_fmu.unit.IntegratedUnit.state_dependencies` of the in-process twin)."""
    rng = np.random.default_rng(seed)
    found = None
    for s in range(n_sets):
        unit, _ = iface.make_unit(random_parameters(iface, rng))
        deps = unit.state_dependencies(seed + s)
        found = deps if found is None else tuple(a | b for a, b in zip(found, deps))
    return found


def export_standalone(out: Path, slave, iface: AssemblyInterface, experiment: dict) -> Path:
    """Write the standalone assembly FMU ``out`` of ``iface`` (``slave``: its pythonfmu slave,
    which describes its co-simulation variables) with the default experiment ``experiment``.
    A flexible body's modal data are FMI parameters (``<unit>.flex.omega``, ...), its number of
    modes fixed in the FMU; the C layer checks them (``fmu/csrc/flexible_body.c``)."""
    n_out, states = len(iface.output_names), state_variables(iface)
    on_inputs, on_params = measure_dependencies(iface, sample=random_parameters, extra=lambda unit: np.concatenate(
        [unit.x, unit.state_derivatives()]))
    x0_on_p, dx0_on_p = on_params[n_out:n_out + len(states)], on_params[n_out + len(states):]
    structure = state_structure(iface)
    with tempfile.TemporaryDirectory(prefix="titop_export_") as tmp:
        return package(out, iface.model_identifier, lambda parts: describe(
            slave, iface, on_inputs, on_params[:n_out], parts, experiment, OPTIONS,
            extend=lambda root: add_model_exchange(root, states, *structure, x0_on_p, dx0_on_p), tool=TOOL),
            lambda guid: assembly_table(iface, guid), Compiler(Path(tmp), compilers()), check=validate)
