"""What each TITOP FMU is: its block, its FMI parameters and the units of its ports.

Data, not equations: a *kind* names a block class, the FMI parameters that
build it (with defaults, SI units and descriptions) and the few settings the
FMU adapter needs. An FMU is a kind and a number ``n`` of child ports; its
model identifier is ``<kind>_c<n>`` (``loop_closure``, which has no child
ports, is just ``loop_closure``).

Scalar FMI names follow the structured naming convention: a parameter of shape
``()`` is ``name``, of shape ``(n,)`` ``name[1]`` .. ``name[n]``, of shape
``(n, m)`` ``name[i,j]`` (1-based). Ports are named the same way
(:func:`titop_fmu.cosim.names.port_names`: ``p.m[1]`` .. ``p.m[18]``, ``c1.w[1]``, ...).
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import numpy as np

from ..blocks import (FloatingBase, ImposedMotionBase, LoopClosure, PrismaticBody, RevoluteBody,
                      RigidBody, WeldedBody)
from ..cosim.names import port_names, structured_names
from ..control.blocks import MODELS as CONTROL_MODELS
from ..errors import ParameterError, did_you_mean
from ..unit import BlockUnit
from . import flexible

# -- units of the port components ----------------------------------------------------------

MOTION_UNITS = ("m/s2",) * 3 + ("rad/s2",) * 3 + ("m/s",) * 3 + ("rad/s",) * 3 + ("m",) * 3 + ("rad",) * 3
MOTION_LABELS = ("spatial acceleration dv_x", "spatial acceleration dv_y", "spatial acceleration dv_z",
                 "angular acceleration dw_x", "angular acceleration dw_y", "angular acceleration dw_z",
                 "velocity v_x", "velocity v_y", "velocity v_z",
                 "angular velocity w_x", "angular velocity w_y", "angular velocity w_z",
                 "position x", "position y", "position z",
                 "Euler angle phi (3-2-1)", "Euler angle theta (3-2-1)", "Euler angle psi (3-2-1)")
WRENCH_UNITS = ("N",) * 3 + ("N.m",) * 3
WRENCH_LABELS = ("force F_x", "force F_y", "force F_z", "torque T_x", "torque T_y", "torque T_z")
ACCELERATION_UNITS = MOTION_UNITS[0:6]
ACCELERATION_LABELS = MOTION_LABELS[0:6]

#: per joint type: units of the effort, of [qdd, qd, q]
JOINT_UNITS = {
    "revolute": ("N.m", ("rad/s2", "rad/s", "rad")),
    "prismatic": ("N", ("m/s2", "m/s", "m")),
}

#: what each port is, for the variable descriptions (``{i}`` is the child index)
PORT_TEXT = {
    "p.m": "motion vector of the parent at P, in the parent frame",
    "p.w": "wrench applied by this body on its parent at P, in the parent frame",
    "c.m": "motion vector of this body at the child point C{i}, in the body frame",
    "c.w": "wrench applied by child {i} on this body at C{i}, in the body frame",
    "ext.w": "external wrench [F; T_P] applied at P (frame set by ext_frame)",
    "p.a": "imposed spatial acceleration of the body at P, in the body frame",
    "l.m": "motion vector of the left part A_l at C, in its frame",
    "r.m": "motion vector of the right part A_r at C, in its frame",
    "l.w": "wrench applied by the closure on A_l at C, in its frame",
    "r.w": "wrench applied by the closure on A_r at C, in its frame",
    "joint.tau": "actuator effort of the joint (C_m or F_m)",
    "joint.qdd": "imposed joint acceleration",
    "joint.q": "joint motion [qdd, qd, q]",
    "c.u": "elastic displacement [u; theta] of the node C{i} of the flexible body, in the body frame",
}

#: descriptions that differ from PORT_TEXT for one kind
PORT_TEXT_BY_KIND = {
    "floating_base": {"p.m": "motion vector of the base at P, in the body frame"},
    "imposed_motion_base": {"p.m": "motion vector of the base at P, in the body frame",
                            "p.w": "wrench the environment must apply on the body at P, in the body frame"},
}


def port_units(port: str, size: int, joint: str | None) -> tuple:
    """The unit of every component of a port (raises for a port this catalog does not know)."""
    if port == "joint.tau":
        return (JOINT_UNITS[joint][0],)
    if port == "joint.qdd":
        return (JOINT_UNITS[joint][1][0],)
    if port == "joint.q":
        return JOINT_UNITS[joint][1]
    if port == "p.a":
        return ACCELERATION_UNITS
    if re.fullmatch(r"c\d+\.u", port):
        return ("m",) * 3 + ("rad",) * 3
    if port.endswith(".m") and size == 18:
        return MOTION_UNITS
    if port.endswith(".w") and size == 6:
        return WRENCH_UNITS
    raise KeyError(f"no units known for port {port!r} of size {size}")


def port_labels(port: str, size: int) -> tuple:
    if port == "p.a":
        return ACCELERATION_LABELS
    if port.endswith(".m") and size == 18:
        return MOTION_LABELS
    if port.endswith(".w") and size == 6:
        return WRENCH_LABELS
    if port == "joint.q":
        return ("joint acceleration qdd", "joint velocity qd", "joint position q")
    if re.fullmatch(r"c\d+\.u", port):
        return ("displacement u_x", "displacement u_y", "displacement u_z", "rotation theta_x", "rotation theta_y",
                "rotation theta_z")
    return ("",) * size


def port_text(kind: str, port: str) -> str:
    m = re.fullmatch(r"c(\d+)\.([mwu])", port)
    key = f"c.{m.group(2)}" if m else port
    text = PORT_TEXT_BY_KIND.get(kind, {}).get(key, PORT_TEXT.get(key, port))
    return text.format(i=m.group(1)) if m else text


# -- parameters ------------------------------------------------------------------------------

def _blocks6(tt, tr, rt, rr):
    """Units of a 6x6 matrix acting on [translation; rotation] giving [force; torque]."""
    return tuple(tuple((tt if j < 3 else tr) if i < 3 else (rt if j < 3 else rr) for j in range(6))
                 for i in range(6))


@dataclass(frozen=True)
class Param:
    """One FMI parameter (a scalar, vector or matrix of FMI scalars)."""

    name: str
    default: object
    unit: object          # one unit for every component, or a tuple shaped like ``default``
    description: str
    type: str = "Real"    # "Real" or "Integer"
    stated: bool = False  # physical data with no meaningful default: a system file must give it

    @property
    def shape(self) -> tuple:
        return np.shape(self.default)

    def scalars(self) -> list:
        """``[(fmi name, index, default, unit)]`` in row-major order."""
        out = []
        for name, index in zip(structured_names(self.name, self.shape), np.ndindex(*self.shape)):
            value = self.default
            unit = self.unit
            for i in index:
                value = value[i]
                if isinstance(unit, tuple):
                    unit = unit[i]
            out.append((name, index, value, unit))
        return out


def _body_params(com):
    return (
        Param("mass", 1.0, "kg", "mass m of the body", stated=True),
        Param("inertia", np.eye(3).tolist(), "kg.m2",
              "inertia tensor I_B at the centre of mass B, body frame (symmetric, positive semi-definite)",
              stated=True),
        Param("com", list(com), "m", "[PB]: from the port point P to the centre of mass B, body frame",
              stated=True),
    )


def child_param(i: int) -> Param:
    return Param(f"c{i}.r", [0.0, -1.0, 0.0], "m",
                 f"[PC{i}]: from the port point P to the child point C{i}, body frame", stated=True)


GRAVITY = Param("gravity", [0.0, -9.81, 0.0], "m/s2", "gravity vector g in the inertial frame R_i")
MOUNT = Param("mount", [0.0, 0.0, 0.0], "rad",
              "3-2-1 Euler angles [phi, theta, psi] of the body frame w.r.t. the parent frame at zero joint motion")
BASE_INITIAL = (
    Param("r0", [0.0, 0.0, 0.0], "m", "initial position [IP] of P in the inertial frame R_i"),
    Param("Theta0", [0.0, 0.0, 0.0], "rad", "initial 3-2-1 Euler angles of the body frame w.r.t. R_i"),
    Param("twist0", [0.0] * 6, ("m/s",) * 3 + ("rad/s",) * 3,
          "initial twist [v_P; omega] at P, body frame"),
)
EXT_FRAME = Param("ext_frame", 0, None, "frame of ext.w: 0 = inertial frame R_i, 1 = body frame R_b",
                  type="Integer")
TOLERANCES = (
    Param("rtol", 1e-10, "1", "relative tolerance of the internal Dormand-Prince 5(4) integrator"),
    Param("atol", 1e-10, "1", "absolute tolerance of the internal integrator (states in SI units)"),
)


def _joint_params(joint, axis):
    effort, (acc, vel, pos) = JOINT_UNITS[joint]
    return (
        Param("axis", list(axis), "1", f"{joint} joint axis in the body frame (normalised)", stated=True),
        Param("q0", 0.0, pos, "initial joint position"),
        Param("qd0", 0.0, vel, "initial joint velocity"),
        Param("k", 0.0, f"{effort}/{pos}", "spring stiffness inside the joint (effort -k q)"),
        Param("d", 0.0, f"{effort}.s/{pos}", "damping inside the joint (effort -d qd)"),
    )


LOOP_PARAMS = (
    Param("K", (1000.0 * np.eye(6)).tolist(), _blocks6("N/m", "N/rad", "N", "N.m/rad"),
          "6x6 stiffness of the closure, [force; torque] from [translation; rotation] (symmetric PSD)",
          stated=True),
    Param("D", (10.0 * np.eye(6)).tolist(), _blocks6("N.s/m", "N.s/rad", "N.s", "N.m.s/rad"),
          "6x6 damping of the closure, [force; torque] from [velocity; angular velocity] (symmetric PSD)",
          stated=True),
)


# -- kinds -------------------------------------------------------------------------------------

def _rigid_body(v, n):
    """The block's body: rigid, or flexible when the values hold modal data (``flex.*``)."""
    if "flex.omega" in v:
        return flexible.flexible_body(v, n)
    return RigidBody(v["mass"], v["inertia"], v["com"], [v[f"c{i}.r"] for i in range(1, n + 1)])


def _ext_frame(value):
    frames = ("inertial", "body")
    if value not in (0, 1):
        raise ParameterError("ext_frame", f"must be 0 (inertial) or 1 (body), got {value!r}")
    return frames[int(value)]


def _base_kw(v):
    return dict(gravity=v["gravity"], r0=v["r0"], Theta0=v["Theta0"], twist0=v["twist0"])


def _joint_kw(v, mode):
    return dict(axis=v["axis"], q0=v["q0"], qd0=v["qd0"], k=v["k"], d=v["d"], mode=mode,
                gravity=v["gravity"], mount=v["mount"])


@dataclass(frozen=True)
class Kind:
    name: str
    description: str
    params: tuple                     # parameters before the child points ...
    more_params: tuple                # ... and after them
    build: Callable                   # (values: {name: array}, n_children) -> Block
    has_children: bool = True
    joint: str | None = None          # units of the joint.* ports
    integrator: bool = True           # the block has states: rtol/atol parameters


KINDS = {k.name: k for k in (
    Kind("floating_base", "TITOP floating rigid base G^B_{P,C1..Cn} (forward dynamics of a free body)",
         _body_params([0.0, 0.0, 0.0]), (GRAVITY,) + BASE_INITIAL + (EXT_FRAME,),
         lambda v, n: FloatingBase(_rigid_body(v, n), ext_frame=_ext_frame(v["ext_frame"]), **_base_kw(v))),
    Kind("imposed_motion_base",
         "TITOP body with imposed motion at P (inverse dynamics: wrench needed for an imposed acceleration)",
         _body_params([0.0, 0.0, 0.0]), (GRAVITY,) + BASE_INITIAL,
         lambda v, n: ImposedMotionBase(_rigid_body(v, n), **_base_kw(v))),
    Kind("welded", "TITOP body clamped to its parent R^A_{P,C1..Cn}",
         _body_params([0.0, -0.5, 0.0]), (GRAVITY, MOUNT),
         lambda v, n: WeldedBody(_rigid_body(v, n), gravity=v["gravity"], mount=v["mount"]),
         integrator=False),
    Kind("revolute", "TITOP body with a revolute joint R^{A,r}_{P,C1..Cn}, torque in (forward dynamics)",
         _body_params([0.0, -0.5, 0.0]), (GRAVITY, MOUNT) + _joint_params("revolute", [0.0, 0.0, 1.0]),
         lambda v, n: RevoluteBody(_rigid_body(v, n), **_joint_kw(v, "forward")), joint="revolute"),
    Kind("prismatic", "TITOP body with a prismatic joint R^{A,t}_{P0,C1..Cn}, force in (forward dynamics)",
         _body_params([0.0, -0.5, 0.0]), (GRAVITY, MOUNT) + _joint_params("prismatic", [1.0, 0.0, 0.0]),
         lambda v, n: PrismaticBody(_rigid_body(v, n), **_joint_kw(v, "forward")), joint="prismatic"),
    Kind("revolute_inverse",
         "TITOP body with a revolute joint, joint acceleration in, torque out (inverse dynamics)",
         _body_params([0.0, -0.5, 0.0]), (GRAVITY, MOUNT) + _joint_params("revolute", [0.0, 0.0, 1.0]),
         lambda v, n: RevoluteBody(_rigid_body(v, n), **_joint_kw(v, "inverse")), joint="revolute"),
    Kind("prismatic_inverse",
         "TITOP body with a prismatic joint, joint acceleration in, force out (inverse dynamics)",
         _body_params([0.0, -0.5, 0.0]), (GRAVITY, MOUNT) + _joint_params("prismatic", [1.0, 0.0, 0.0]),
         lambda v, n: PrismaticBody(_rigid_body(v, n), **_joint_kw(v, "inverse")), joint="prismatic"),
    Kind("loop_closure", "TITOP loop-closure spring-damper L^A_C between two parts of a body",
         (), LOOP_PARAMS, lambda v, n: LoopClosure(v["K"], v["D"]),
         has_children=False, integrator=False),
)}

#: the child-port counts built by default
DEFAULT_CHILDREN = (0, 1, 2)
#: the most child ports of a block, and of modes of a flexible body (a model's FMI variables
#: grow with the first and its parameters with the square of the second)
MAX_CHILDREN, MAX_MODES = 64, 1000


def model_identifier(kind: str, n_children: int, n_modes: int | None = None) -> str:
    """``revolute_c2``; with a flexible body of ``n_modes`` modes, ``revolute_c2_f10``."""
    if not KINDS[kind].has_children:
        return kind
    return f"{kind}_c{n_children}" + ("" if n_modes is None else f"_f{n_modes}")


def parse_identifier(model_id: str) -> tuple:
    """``"revolute_c2"`` (or ``"revolute_c2_f10"``) -> ``("revolute", 2)``; KeyError saying what
    the models are, with the nearest identifiers to a misspelled one."""
    return parse_model(model_id)[0:2]


def parse_model(model_id: str) -> tuple:
    """``"revolute_c2_f10"`` -> ``("revolute", 2, 10)``, ``"revolute_c2"`` -> ``("revolute", 2, None)``
    (the number of modes of a flexible body, None for a rigid one)."""
    if model_id in KINDS and not KINDS[model_id].has_children:
        return model_id, 0, None
    m = re.fullmatch(r"(\w+?)_c(\d+)(?:_f(\d+))?", str(model_id))
    if not m or m.group(1) not in KINDS or not KINDS[m.group(1)].has_children:
        raise KeyError(unknown_model(model_id))
    children, modes = int(m.group(2)), None if m.group(3) is None else int(m.group(3))
    if children > MAX_CHILDREN or (modes or 0) > MAX_MODES:
        raise KeyError(f"model {model_id!r}: at most {MAX_CHILDREN} child ports (_c<n>) and {MAX_MODES} flexible "
                       "modes (_f<m>)")
    return m.group(1), children, modes


def unknown_model(model_id) -> str:
    """What an unknown model identifier gets told: the nearest identifiers and every kind."""
    m = re.fullmatch(r".*_c(\d+)", str(model_id))
    counts = [int(m.group(1))] if m else DEFAULT_CHILDREN
    near = did_you_mean(model_id, [*dict.fromkeys(model_identifier(k, n) for k in KINDS for n in counts),
                                   *CONTROL_MODELS])
    kinds = ", ".join(f"{k}_c<n>" if KINDS[k].has_children else k for k in KINDS)
    return (f"unknown model {model_id!r}{near}; models: {kinds} (n: the number of child ports); control "
            f"units: {', '.join(CONTROL_MODELS)}; a body of m flexible modes: <model>_f<m> (titop-fmu models lists "
            "them)")


def parameters(kind: str, n_children: int, n_modes: int | None = None) -> tuple:
    """The FMI parameters of ``kind`` with ``n_children`` child ports; with a flexible body of
    ``n_modes`` modes, its modal data in place of the rigid body's mass properties."""
    k = KINDS[kind]
    if n_modes is not None:
        body = tuple(p for p in k.params if p.name not in flexible.RIGID_BODY) + flexible.body_params(Param, n_modes)
        ports = tuple(p for i in range(1, n_children + 1) for p in flexible.port_params(Param, i, n_modes))
        return body + ports + k.more_params + TOLERANCES
    children = tuple(child_param(i) for i in range(1, n_children + 1)) if k.has_children else ()
    return k.params + children + k.more_params + (TOLERANCES if k.integrator else ())


_CHILD_NAME = re.compile(r"children\[(\d+)\]")


def fmi_parameter_name(core_name: str) -> str:
    """The FMI parameter a core :class:`ParameterError` is about (``children[0]`` -> ``c1.r``)."""
    m = _CHILD_NAME.fullmatch(core_name)
    return f"c{int(m.group(1)) + 1}.r" if m else core_name


def positive(name, value):
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise ParameterError(name, f"must be a finite positive number, got {value!r}")
    return v


@dataclass(frozen=True)
class ScalarVar:
    """One FMI scalar variable of an FMU, in value-reference order."""

    name: str
    causality: str        # "parameter", "input", "output", "local" (a state or its derivative)
    type: str             # "Real" or "Integer"
    start: object         # parameters and inputs; None for outputs
    unit: str | None
    description: str


#: the units of a block's states and of their derivatives, by state name (a joint's by its type)
STATE_UNITS = {**{f"v_{a}": ("m/s", "m/s2") for a in "xyz"}, **{f"w_{a}": ("rad/s", "rad/s2") for a in "xyz"},
               **{f"r_{a}": ("m", "m/s") for a in "xyz"}, **{f"q_{a}": ("1", "1/s") for a in "wxyz"}}
STATE_TEXT = {"v": "velocity of P, body frame", "w": "angular velocity, body frame",
              "r": "position [IP] of P, inertial frame", "q": "attitude quaternion of P_b/i (scalar first)"}


def state_name(state: str) -> str:
    """The FMI name of the block state ``state``: ``x.<state>`` (its derivative: ``der(x.<state>)``)."""
    return f"x.{state}"


def state_variables(kind: str, states) -> list:
    """The :class:`ScalarVar` s of a block's continuous states (causality ``local``) and then of
    their derivatives, which the FMU exposes (``ModelStructure/Derivatives``) for directional
    derivatives with respect to them (a linearization)."""
    joint = KINDS[kind].joint
    out, ders = [], []
    for x in states:
        if x.startswith("eta"):
            unit = dunit = None
            text = f"modal {'rate' if x.startswith('etad') else 'coordinate'} {x} of the flexible body"
        elif joint:
            _, (acc, vel, pos) = JOINT_UNITS[joint]
            unit, dunit, text = (pos, vel, "joint position") if x == "q" else (vel, acc, "joint velocity")
        else:
            (unit, dunit), text = STATE_UNITS[x], f"{STATE_TEXT[x[0]]}: {x}"
        out.append(ScalarVar(state_name(x), "local", "Real", None, unit, f"state: {text}"))
        ders.append(ScalarVar(f"der({state_name(x)})", "local", "Real", None, dunit, f"time derivative of the state {text}"))
    return out + ders


@dataclass(frozen=True)
class Interface:
    """Everything the adapter and the model description need about one FMU."""

    kind: str
    n_children: int
    model_identifier: str
    description: str
    params: tuple                    # Param
    param_scalars: tuple             # (name, param index, index tuple, default, unit)
    input_names: tuple
    output_names: tuple
    variables: tuple = field(repr=False)   # ScalarVar, value reference = position
    state_names: tuple = ()                # the block's states as FMI names, x.<state> (after the outputs)
    n_modes: int | None = None             # the modes of a flexible body (None: a rigid body)

    @property
    def n_params(self):
        return len(self.param_scalars)

    def defaults(self) -> list:
        return [s[3] for s in self.param_scalars]

    def values(self, scalars) -> dict:
        """``{parameter name: value}`` (floats / arrays) from the scalar values, in order."""
        out, k = {}, 0
        for p in self.params:
            size = int(np.prod(p.shape)) if p.shape else 1
            chunk = scalars[k:k + size]
            k += size
            if p.type == "Integer":
                out[p.name] = int(chunk[0])
            elif p.shape:
                out[p.name] = np.array(chunk, dtype=float).reshape(p.shape)
            else:
                out[p.name] = float(chunk[0])
        return out

    def make_unit(self, scalars) -> tuple:
        """``(BlockUnit, [warning messages])`` for the scalar parameter values;
        :class:`ParameterError` (``.parameter`` an FMI name) if one is invalid."""
        v = self.values(scalars)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                block = KINDS[self.kind].build(v, self.n_children)
        except ParameterError as e:
            name = fmi_parameter_name(e.parameter)
            if name == e.parameter:
                raise
            raise e.renamed(name) from None
        kw = {}
        if KINDS[self.kind].integrator or self.n_modes is not None:
            kw = dict(rtol=positive("rtol", v["rtol"]), atol=positive("atol", v["atol"]))
        return BlockUnit(block, **kw), [str(w.message) for w in caught]


def port_variables(kind: str, port: str, size: int, causality: str) -> list:
    """The :class:`ScalarVar` s of the port ``port`` (``size`` scalars) of an FMU of ``kind``,
    with their units and descriptions (inputs start at 0)."""
    units = port_units(port, size, KINDS[kind].joint)
    labels = port_labels(port, size)
    text = port_text(kind, port)
    return [ScalarVar(name, causality, "Real", 0.0 if causality == "input" else None,
                      unit, f"{text}: {label}" if label else text)
            for name, unit, label in zip(port_names({port: size}), units, labels)]


@lru_cache(maxsize=None)
def interface(kind: str, n_children: int = 0, n_modes: int | None = None) -> Interface:
    """The interface of the FMU ``kind`` with ``n_children`` child ports (cached); with a
    flexible body of ``n_modes`` modes (docs/flexible-bodies.md)."""
    k = KINDS[kind]
    if not k.has_children:
        n_children, n_modes = 0, None
    if n_children < 0:
        raise ValueError(f"number of child ports must be >= 0, got {n_children}")
    params = parameters(kind, n_children, n_modes)
    scalars = tuple((name, i, index, default, unit)
                    for i, p in enumerate(params) for name, index, default, unit in p.scalars())
    description = k.description if n_modes is None else f"{k.description}; the body flexible, {n_modes} modes"
    iface = Interface(kind, n_children, model_identifier(kind, n_children, n_modes), description, params,
                      scalars, (), (), (), n_modes=n_modes)
    template, _ = iface.make_unit(iface.defaults())     # port names do not depend on parameters
    variables = [ScalarVar(name, "parameter", params[i].type, default, unit, params[i].description)
                 for name, i, index, default, unit in scalars]
    for causality, spec in (("input", template.input_spec), ("output", template.output_spec)):
        for port, size in spec.items():
            variables += port_variables(kind, port, size, causality)
    assert [v.name for v in variables if v.causality == "input"] == template.input_names
    assert [v.name for v in variables if v.causality == "output"] == template.output_names
    variables += state_variables(kind, template.block.state_names)
    return Interface(kind, n_children, iface.model_identifier, description, params, scalars,
                     tuple(template.input_names), tuple(template.output_names), tuple(variables),
                     tuple(state_name(x) for x in template.block.state_names), n_modes)


def all_identifiers(children=DEFAULT_CHILDREN) -> list:
    """``[(kind, n)]`` of every FMU built for the child counts ``children``."""
    out = []
    for kind, k in KINDS.items():
        if k.has_children:
            out += [(kind, n) for n in children]
        else:
            out.append((kind, 0))
    return out


def interface_of(model_id: str) -> Interface:
    """The interface of the TITOP FMU ``model_id`` (``"revolute_c2"``, ``"revolute_c2_f10"``);
    KeyError if it is none."""
    return interface(*parse_model(model_id))


def unknown_parameter(iface: Interface, name: str) -> str:
    """``"revolute_c0 has no parameter 'mas' (did you mean 'mass'?); parameters: ..."``
    (an indexed name, ``com[4]``, is told the shape of its parameter)."""
    base = re.sub(r"\[.*\]$", "", name)
    for p in iface.params:
        if p.name == base:
            return (f"{iface.model_identifier} has no parameter {name!r}: {p.name} is "
                    + (f"{'a 3x3 matrix' if len(p.shape) == 2 else f'a vector of {p.shape[0]}'}, "
                       f"{p.scalars()[0][0]} .. {p.scalars()[-1][0]}" if p.shape else "a scalar"))
    known = [p.name for p in iface.params]
    return (f"{iface.model_identifier} has no parameter {name!r}{did_you_mean(base, known)}; "
            f"parameters: {', '.join(known)}")


def build_unit(model_id: str, parameters: dict) -> tuple:
    """``(BlockUnit, [warning messages])`` of the TITOP FMU ``model_id`` with ``parameters``
    (``{FMI scalar name: value}``) over the defaults: the one place where defaults merge
    (in-process units, the monolithic twin). KeyError for an unknown model or parameter,
    :class:`ParameterError` for an invalid value."""
    iface = interface_of(model_id)
    values = dict(zip((s[0] for s in iface.param_scalars), iface.defaults()))
    for k, v in parameters.items():
        if k not in values:
            raise KeyError(unknown_parameter(iface, k))
        values[k] = v
    return iface.make_unit([values[s[0]] for s in iface.param_scalars])
