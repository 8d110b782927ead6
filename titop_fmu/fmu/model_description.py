"""The parts of ``modelDescription.xml`` that pythonfmu does not write.

pythonfmu's :meth:`Fmi2Slave.to_xml` gives the variables and an ``<Outputs>``
list without dependencies, so a tool has to assume every output depends on
every input (PythonFMU issue #258), and no ``<InitialUnknowns>``, which FMI 2.0
requires and ``fmpy validate`` checks. :func:`finalize` adds

* ``<UnitDefinitions>`` and a ``unit`` on every Real variable;
* descriptions, exact start values (``repr`` of the float), a default experiment
  (with a ``tolerance``);
* ``<ModelStructure>``: ``<Outputs>`` with the direct-feedthrough dependencies
  on inputs, ``<InitialUnknowns>`` (every output) with their dependencies on
  inputs and parameters;
* a GUID derived from the content (the build is deterministic).

Dependencies are *measured* on the in-process unit (:meth:`BlockUnit.dependencies`
perturbs each input and looks for bit changes of each output), at generic
random parameters (full inertia, non-axis-aligned joint axis, mount angles,
non-zero spring/damper ...), as the union over a few such parameter sets: the
declaration must hold for any parameter value a user may set, and a structural
zero is zero for all of them.
"""

from __future__ import annotations

import uuid
import warnings
from xml.etree.ElementTree import Element, SubElement

import numpy as np

from ..cosim.fmpy_unit import VENDOR_FUNCTIONS, VENDOR_TOOL
from .catalog import TOLERANCES, Interface
from .flexible import is_modal_array, random_values

#: SI base-unit exponents of every unit used by the FMUs
UNITS = {
    "1": {},
    "kg": {"kg": 1},
    "kg.m": {"kg": 1, "m": 1},
    "kg.m2": {"kg": 1, "m": 2},
    "m": {"m": 1},
    "rad": {"rad": 1},
    "m/s": {"m": 1, "s": -1},
    "rad/s": {"rad": 1, "s": -1},
    "m/s2": {"m": 1, "s": -2},
    "rad/s2": {"rad": 1, "s": -2},
    "1/s": {"s": -1},
    "N": {"kg": 1, "m": 1, "s": -2},
    "N.m": {"kg": 1, "m": 2, "s": -2},
    "N.s": {"kg": 1, "m": 1, "s": -1},
    "N/m": {"kg": 1, "s": -2},
    "N.s/m": {"kg": 1, "s": -1},
    "N/rad": {"kg": 1, "m": 1, "s": -2, "rad": -1},
    "N.s/rad": {"kg": 1, "m": 1, "s": -1, "rad": -1},
    "N.m/rad": {"kg": 1, "m": 2, "s": -2, "rad": -1},
    "N.m.s/rad": {"kg": 1, "m": 2, "s": -1, "rad": -1},
}

#: ``tolerance``: the default of the FMUs' ``rtol``; a host that passes it (or another) to
#: ``fmi2SetupExperiment`` sets the FMU's integrator tolerances (``rtol`` and ``atol``) with it
DEFAULT_EXPERIMENT = {"startTime": "0", "stopTime": "1", "tolerance": repr(float(TOLERANCES[0].default)),
                      "stepSize": "0.01"}

#: number of random parameter sets whose dependencies are united
N_PARAMETER_SETS = 3

_GUID_NAMESPACE = uuid.UUID("6f1c3f3e-5b8e-4f57-9a43-2f7d0c1b8a61")


# -- dependencies -------------------------------------------------------------------------

def random_parameters(iface: Interface, rng) -> list:
    """Generic random scalar parameter values for ``iface`` (valid, no special structure; a
    flexible body's, a random beam's)."""
    v = list(iface.defaults())
    pos = {name: k for k, (name, *_rest) in enumerate(iface.param_scalars)}

    def put(name, values):
        values = np.ravel(values)
        p = next(p for p in iface.params if p.name == name)
        names = [s[0] for s in p.scalars()]
        for n, x in zip(names, values):
            v[pos[n]] = float(x)

    flexible = {} if iface.n_modes is None else random_values(iface.n_children, iface.n_modes, rng)
    for p in iface.params:
        if p.name in flexible:
            if p.type != "Integer":
                put(p.name, flexible[p.name])
        elif p.name == "mass":
            put("mass", 1.0 + 2.0 * rng.random())
        elif p.name == "inertia":
            A = rng.standard_normal((3, 3))
            put("inertia", A @ A.T + np.eye(3))
        elif p.name in ("K", "D"):
            A = rng.standard_normal((6, 6))
            put(p.name, A @ A.T + np.eye(6))
        elif p.name == "axis":
            a = rng.standard_normal(3)
            put("axis", a / np.linalg.norm(a))
        elif p.name in ("mount", "Theta0"):
            put(p.name, rng.uniform(-1.0, 1.0, 3))
        elif p.name in ("k", "d"):
            put(p.name, 0.5 + rng.random())
        elif p.name in ("rtol", "atol"):
            continue
        elif p.type == "Integer":
            continue
        else:
            put(p.name, rng.standard_normal(int(np.prod(p.shape)) if p.shape else 1))
    return v


def parameter_groups(iface: Interface) -> list:
    """Scalar parameter indices perturbed together: the symmetric pairs of a square matrix
    (inertia, K, D) must stay symmetric, every other scalar alone; except a flexible body's
    modal data (:func:`~titop_fmu.fmu.flexible.is_modal_array`), each array perturbed whole
    (every element by the same relative step, so a symmetric matrix stays symmetric): its
    elements reach the outputs through the same modal dynamics, and there are thousands of them
    (3029 parameters for a beam of 10 modes: an export measured 1796 groups in 6 minutes).
    Each element is then declared to depend on the union of the array's outputs: a dependency
    declared that is not there is allowed (FMI 2.0, 2.2.8), one left out is not."""
    groups, seen = [], set()
    names = [s[0] for s in iface.param_scalars]
    whole = {}
    for k, (name, pi, index, *_rest) in enumerate(iface.param_scalars):
        if k in seen:
            continue
        if is_modal_array(iface.params[pi].name):
            if pi not in whole:
                whole[pi] = []
                groups.append(whole[pi])
            whole[pi].append(k)
            continue
        g = [k]
        shape = iface.params[pi].shape
        if len(index) >= 2 and shape[-1] == shape[-2] and index[-1] != index[-2]:
            mirror = (*index[:-2], index[-1], index[-2])
            g.append(names.index(f"{iface.params[pi].name}[{','.join(str(i + 1) for i in mirror)}]"))
        seen.update(g)
        groups.append(g)
    return groups


def measure_dependencies(iface: Interface, n_sets: int = N_PARAMETER_SETS, seed: int = 0,
                         sample=random_parameters, extra=None):
    """``(on_inputs, on_parameters)``: boolean matrices (outputs x inputs, outputs x
    parameters) of the output dependencies, united over ``n_sets`` random parameter sets
    (``sample(iface, rng)``: scalar parameter values).

    ``on_inputs`` is the direct feedthrough during a step; ``on_parameters`` is
    measured on the outputs at the initial state, with random inputs (a
    parameter whose perturbation makes the block invalid counts as a
    dependency of every output). ``extra(unit)``: more initial unknowns (a vector, at
    the unit's initial state and inputs), whose dependencies on the parameters are
    measured alike: rows of ``on_parameters`` after the outputs'."""
    rng = np.random.default_rng(seed)
    n_out, n_in, n_par = len(iface.output_names), len(iface.input_names), iface.n_params
    on_inputs = np.zeros((n_out, n_in), dtype=bool)
    on_params = None

    def unknowns(unit):
        return unit.outputs() if extra is None else np.concatenate([unit.outputs(), extra(unit)])
    integer = [iface.params[s[1]].type == "Integer" for s in iface.param_scalars]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in range(n_sets):
            values = sample(iface, rng)
            for k, is_int in enumerate(integer):
                if is_int:
                    values[k] = s % 2
            unit, _ = iface.make_unit(values)
            if on_params is None:
                on_params = np.zeros((len(unknowns(unit)), n_par), dtype=bool)
            if not len(on_params):              # nothing depends on anything
                continue
            deps = unit.dependencies(seed=seed + s)
            for i, o in enumerate(iface.output_names):
                for name in deps[o]:
                    on_inputs[i, iface.input_names.index(name)] = True
            u = 0.3 * rng.standard_normal(n_in)
            unit.set_inputs(unit.ALL, u)
            y0 = unknowns(unit).copy()
            for group in parameter_groups(iface):
                perturbed = list(values)
                for k in group:
                    perturbed[k] = 1 - values[k] if integer[k] else values[k] + 1e-3 * (1.0 + abs(values[k]))
                try:
                    other, _ = iface.make_unit(perturbed)
                    other.set_inputs(other.ALL, u)
                    changed = unknowns(other) != y0
                except Exception:
                    changed = np.ones(len(y0), dtype=bool)
                for k in group:
                    on_params[:, k] |= changed
    return on_inputs, on_params


# -- XML ------------------------------------------------------------------------------------

def _add_units(units: Element, names):
    """Add the units ``names`` (SI, :data:`UNITS`) to ``<UnitDefinitions>`` (sorted by name)."""
    have = {u.get("name"): u for u in units}
    for name in set(names) - set(have):
        u = have[name] = Element("Unit", name=name)
        if UNITS[name]:
            SubElement(u, "BaseUnit", {k: str(e) for k, e in UNITS[name].items()})
    for u in list(units):
        units.remove(u)
    units.extend(have[name] for name in sorted(have))


def _unknown(parent, index, deps):
    SubElement(parent, "Unknown", index=str(index), dependencies=" ".join(str(d) for d in deps),
               dependenciesKind=" ".join("dependent" for _ in deps))


def finalize(root: Element, iface: Interface, on_inputs, on_params, experiment=None,
             derivatives=True, tool=None) -> Element:
    """Complete the pythonfmu model description ``root`` of the FMU ``iface`` in place
    (``experiment``: the attributes of ``<DefaultExperiment>``, default :data:`DEFAULT_EXPERIMENT`;
    ``derivatives``: the FMU gives directional derivatives, and declares their vendor function;
    ``tool``: the ``generationTool``, default titop-fmu with pythonfmu's)."""
    root.attrib.pop("generationDateAndTime", None)
    root.set("description", iface.description)
    root.set("generationTool", tool or f"titop-fmu ({root.get('generationTool')})")

    # children of fmiModelDescription in schema order
    cosim = root.find("CoSimulation")
    units = Element("UnitDefinitions")
    _add_units(units, {v.unit for v in iface.variables if v.unit is not None})
    root.insert(list(root).index(cosim) + 1, units)

    old = root.find("DefaultExperiment")
    if old is not None:
        root.remove(old)
    log = root.find("LogCategories")
    default = Element("DefaultExperiment", experiment or DEFAULT_EXPERIMENT)
    root.insert(list(root).index(log) + 1 if log is not None else list(root).index(units) + 1, default)
    # the entry points' vendor functions (shim.c, point 6), for a master that knows them
    vendor = Element("VendorAnnotations")
    functions = SubElement(SubElement(vendor, "Tool", name=VENDOR_TOOL), "Functions")    # a Tool has one element
    for tag, function in VENDOR_FUNCTIONS.items():
        if derivatives or tag != "DirectionalDerivatives":
            SubElement(functions, tag, function=function)
    root.insert(list(root).index(default) + 1, vendor)

    model_vars = root.find("ModelVariables")
    variables = iface.variables
    svs = list(model_vars)
    assert [sv.get("name") for sv in svs] == [v.name for v in variables], \
        "pythonfmu variables out of step with the catalog"
    index = {}
    for k, (sv, var) in enumerate(zip(svs, variables)):
        assert int(sv.get("valueReference")) == k
        index[var.name] = k + 1
        sv.set("description", var.description)
        if var.causality == "parameter":
            sv.set("variability", "fixed")
            sv.set("initial", "exact")
        typed = sv.find(var.type)
        if var.start is not None:
            typed.set("start", repr(float(var.start)) if var.type == "Real" else str(int(var.start)))
        if var.unit is not None:
            typed.set("unit", var.unit)
        if var.name.rpartition(".")[2] == "ext_frame":
            typed.set("min", "0")
            typed.set("max", "1")

    # the continuous states (local) and their derivatives, for directional derivatives w.r.t. them
    state_names = iface.state_names
    for state in state_names:
        svs[index[f"der({state})"] - 1].find("Real").set("derivative", str(index[state]))

    old = root.find("ModelStructure")
    if old is not None:
        root.remove(old)
    structure = SubElement(root, "ModelStructure")
    in_idx = [index[n] for n in iface.input_names]
    par_idx = [index[s[0]] for s in iface.param_scalars]
    if iface.output_names:
        outputs = SubElement(structure, "Outputs")
        for i, name in enumerate(iface.output_names):
            _unknown(outputs, index[name], [in_idx[j] for j in np.flatnonzero(on_inputs[i])])
    if state_names:                             # dependencies not listed: on every input and state
        derivatives = SubElement(structure, "Derivatives")
        for state in state_names:
            SubElement(derivatives, "Unknown", index=str(index[f"der({state})"]))
    if iface.output_names or state_names:
        initial = SubElement(structure, "InitialUnknowns")
        for i, name in enumerate(iface.output_names):
            deps_in = [in_idx[j] for j in np.flatnonzero(on_inputs[i])]
            deps_par = [par_idx[j] for j in np.flatnonzero(on_params[i])]
            _unknown(initial, index[name], sorted(deps_in + deps_par))
        for state in state_names:               # states, then derivatives: in index order
            SubElement(initial, "Unknown", index=str(index[state]))
        for state in state_names:
            SubElement(initial, "Unknown", index=str(index[f"der({state})"]))
    return root


#: the capability flags of CoSimulation that Model Exchange shares
_SHARED_FLAGS = ("modelIdentifier", "needsExecutionTool", "canBeInstantiatedOnlyOncePerProcess",
                 "canNotUseMemoryManagementFunctions", "canGetAndSetFMUstate", "canSerializeFMUstate",
                 "providesDirectionalDerivative")


def add_model_exchange(root: Element, states, out_on_x, dx_on_x, dx_on_u, x0_on_p, dx0_on_p) -> Element:
    """Declare Model Exchange in the completed co-simulation description ``root`` (in place):
    ``<ModelExchange>`` with the co-simulation's flags, no event indicators; the continuous
    states ``states`` (``(name, unit, unit of the derivative, description)``; none for loop
    closures alone, whose outputs are algebraic: then no ``<Derivatives>``) and their
    derivatives ``der(name)`` appended to the variables, so that the co-simulation's value
    references stay; ``<Derivatives>``, and the states and derivatives among the initial
    unknowns, with the dependencies given as boolean matrices: of the outputs, the derivatives
    on the states (``out_on_x``, ``dx_on_x``), of the derivatives on the inputs (``dx_on_u``),
    of the initial states and derivatives on the parameters (``x0_on_p``, ``dx0_on_p``; the
    initial derivatives also on the inputs)."""
    cosim = root.find("CoSimulation")
    flags = {k: cosim.get(k) for k in _SHARED_FLAGS if cosim.get(k) is not None}
    me = Element("ModelExchange", dict(flags, completedIntegratorStepNotNeeded="true"))
    root.insert(list(root).index(cosim), me)
    root.set("numberOfEventIndicators", "0")
    _add_units(root.find("UnitDefinitions"), [u for _, unit, der_unit, _ in states for u in (unit, der_unit) if u])
    model_vars = root.find("ModelVariables")
    svs = list(model_vars)
    index = {sv.get("name"): k + 1 for k, sv in enumerate(svs)}
    causality = [sv.get("causality") for sv in svs]
    inputs = [k + 1 for k, c in enumerate(causality) if c == "input"]
    params = [k + 1 for k, c in enumerate(causality) if c == "parameter"]
    n = len(svs)
    x_idx = list(range(n + 1, n + len(states) + 1))
    dx_idx = [i + len(states) for i in x_idx]
    for k, (name, unit, der_unit, description) in enumerate(states):
        sv = SubElement(model_vars, "ScalarVariable", name=name, valueReference=str(n + k), description=description,
                        causality="local", variability="continuous", initial="calculated")
        SubElement(sv, "Real", {"unit": unit} if unit else {})
    for k, (name, unit, der_unit, description) in enumerate(states):
        sv = SubElement(model_vars, "ScalarVariable", name=f"der({name})", valueReference=str(n + len(states) + k),
                        description=f"derivative of {name}", causality="local", variability="continuous",
                        initial="calculated")
        SubElement(sv, "Real", dict({"unit": der_unit} if der_unit else {}, derivative=str(x_idx[k])))

    def picked(indices, row):
        return [indices[j] for j in np.flatnonzero(row)]

    structure = root.find("ModelStructure")
    for unknown, row in zip(structure.find("Outputs") if out_on_x.size else (), out_on_x):
        deps = sorted([int(d) for d in unknown.get("dependencies").split()] + picked(x_idx, row))
        unknown.set("dependencies", " ".join(map(str, deps)))
        unknown.set("dependenciesKind", " ".join("dependent" for _ in deps))
    if not states:                                      # no state: no <Derivatives> (it holds one at least)
        return root
    initial = structure.find("InitialUnknowns")
    if initial is None:                                 # no output
        initial = SubElement(structure, "InitialUnknowns")
    derivatives = Element("Derivatives")
    structure.insert(list(structure).index(initial), derivatives)
    for k, i in enumerate(dx_idx):
        _unknown(derivatives, i, sorted(picked(x_idx, dx_on_x[k]) + picked(inputs, dx_on_u[k])))
    for k, i in enumerate(x_idx):
        _unknown(initial, i, picked(params, x0_on_p[k]))
    for k, i in enumerate(dx_idx):
        _unknown(initial, i, sorted(picked(inputs, dx_on_u[k]) + picked(params, dx0_on_p[k])))
    return root


def content_guid(*parts: bytes) -> str:
    """A GUID that changes exactly when the content does."""
    import hashlib
    h = hashlib.sha256()
    for p in parts:
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return "{" + str(uuid.uuid5(_GUID_NAMESPACE, h.hexdigest())) + "}"
