"""The flexible variants of the TITOP FMUs (docs/flexible-bodies.md): ``<kind>_c<k>_f<n>`` is
the block ``<kind>`` with ``k`` child ports whose body is flexible with ``n`` modes, the
number of modes fixed by the model (as the child ports are). Its body's FMI parameters are
the modal data (:class:`~titop_fmu.blocks.modal.ModalData`): ``flex.mass``, ``flex.L``,
``flex.omega``, ... and per port ``ci.r``, ``ci.phi``, ``ci.psi``, ``ci.K0F``, ``ci.K0M``; they
replace the rigid body's ``mass``, ``inertia``, ``com`` and ``ci.r``."""

from __future__ import annotations

import numpy as np

from ..blocks import FlexibleBody, ModalData
from ..blocks.beam import beam_modal_data, section
from ..errors import ParameterError

#: the rigid body's parameters, which a flexible body's replace
RIGID_BODY = ("mass", "inertia", "com")
PREFIX = "flex."
#: the port fields of the modal data that are arrays over the modes
PORT_MODAL = ("phi", "psi", "K0F", "K0M")


def is_modal_array(name: str) -> bool:
    """Whether the FMI parameter ``name`` (``flex.L``, ``c2.K0F``; an assembly's with its unit's
    name before) is an array of a flexible body's modal data."""
    *_, group, field = ["", *name.split(".")]
    if group + "." == PREFIX:
        return field != "stiffening"                        # the one integer switch
    return group[:1] == "c" and group[1:].isdigit() and field in PORT_MODAL


def _mass_units():
    """Units of ``D_P``: kg, kg.m (the first moment), kg.m2."""
    return tuple(tuple(("kg" if j < 3 else "kg.m") if i < 3 else ("kg.m" if j < 3 else "kg.m2") for j in range(6))
                 for i in range(6))


def body_params(param, n: int) -> tuple:
    """The :class:`~titop_fmu.fmu.catalog.Param` s of the modal data of ``n`` modes (``param``
    the catalog's ``Param`` class; defaults: a valid body, unit mass, unit frequencies)."""
    z = np.zeros
    return (
        param("flex.mass", np.eye(6).tolist(), _mass_units(),
              "D_P: rigid mass of the flexible body at P, [translation; rotation], body frame", stated=True),
        param("flex.L", z((n, 6)).tolist(), None, "modal participation factors at P (n x 6, mass-normalised modes)",
              stated=True),
        param("flex.omega", np.ones(n).tolist(), "rad/s", "frequencies of the modes clamped at P", stated=True),
        param("flex.zeta", z(n).tolist(), "1", "modal damping ratios"),
        param("flex.I_phi_x0", z((3, 3, n)).tolist(), None, "E_j = int phi_j x0^T dm (eq. (F5))", stated=True),
        param("flex.I_phi_phi", z((3, 3, n, n)).tolist(), "1", "F_ab = int Phi_a^T Phi_b dm (eq. (F5))", stated=True),
        param("flex.K0t", z((3, n, n)).tolist(), None, "geometric stiffness per unit acceleration of the frame",
              stated=True),
        param("flex.K0r", z((3, n, n)).tolist(), None, "geometric stiffness per unit angular acceleration",
              stated=True),
        param("flex.K0om", z((6, n, n)).tolist(), None,
              "geometric stiffness per unit product of rates [xx, yy, zz, xy, xz, yz]", stated=True),
        param("flex.stiffening", 1, None, "geometric stiffening: 1 on, 0 off", type="Integer"),
        param("flex.eta0", z(n).tolist(), None, "initial modal coordinates"),
        param("flex.etad0", z(n).tolist(), None, "initial modal rates"),
    )


def port_params(param, i: int, n: int) -> tuple:
    """The node of the child port ``ci``: its position and mode shapes."""
    z = np.zeros
    return (
        param(f"c{i}.r", [0.0, -1.0, 0.0], "m", f"[PC{i}]: from P to the node C{i} (undeformed), body frame",
              stated=True),
        param(f"c{i}.phi", z((3, n)).tolist(), None, f"translations of the modes at C{i}", stated=True),
        param(f"c{i}.psi", z((3, n)).tolist(), None, f"rotations of the modes at C{i}", stated=True),
        param(f"c{i}.K0F", z((3, n, n)).tolist(), None, f"geometric stiffness per unit force at C{i}", stated=True),
        param(f"c{i}.K0M", z((3, n, n)).tolist(), None, f"geometric stiffness per unit moment at C{i}", stated=True),
    )


def flexible_body(v: dict, n_children: int) -> FlexibleBody:
    """The :class:`FlexibleBody` of the FMI parameter values ``v``; a bad field is a
    :class:`ParameterError` naming the FMI parameter."""
    ports = [f"c{i}" for i in range(1, n_children + 1)]
    fields = {"mass": "flex.mass", "L": "flex.L", "omega": "flex.omega", "zeta": "flex.zeta",
              "I_phi_x0": "flex.I_phi_x0", "I_phi_phi": "flex.I_phi_phi", "K0t": "flex.K0t", "K0r": "flex.K0r",
              "K0om": "flex.K0om"}
    n = np.size(v["flex.omega"])
    shapes = {"mass": (6, 6), "L": (n, 6), "omega": (n,), "zeta": (n,), "I_phi_x0": (3, 3, n),
              "I_phi_phi": (3, 3, n, n), "K0t": (3, n, n), "K0r": (3, n, n), "K0om": (6, n, n),
              "r": (3,), "phi": (3, n), "psi": (3, n), "K0F": (3, n, n), "K0M": (3, n, n)}
    # an FMU's arrays have their sizes; their shapes, lost in nested lists of zero modes, restored
    arrays = {f: np.reshape(np.asarray(v[p], dtype=float), shapes[f]) for f, p in fields.items()}
    for c in ports:                                         # the port fields, named by port
        for f in ("r", "phi", "psi", "K0F", "K0M"):
            a = np.reshape(np.asarray(v[f"{c}.{f}"], dtype=float), shapes[f])
            if not np.all(np.isfinite(a)):
                raise ParameterError(f"{c}.{f}", "must be finite")
            if f in ("K0F", "K0M") and np.max(np.abs(a - np.swapaxes(a, -1, -2)), initial=0.0) > \
                    1e-9 * max(1.0, float(np.max(np.abs(a), initial=0.0))):
                raise ParameterError(f"{c}.{f}", "each n x n matrix must be symmetric")
    arrays["nodes"] = np.reshape([v[f"{c}.r"] for c in ports], (n_children, 3))
    for f in ("phi", "psi", "K0F", "K0M"):
        arrays[f] = np.reshape([v[f"{c}.{f}"] for c in ports], (n_children, *shapes[f]))
    try:
        data = ModalData(**arrays, where="FMU parameters")
    except ParameterError as e:
        raise ParameterError(fields.get(e.parameter, e.parameter), e.detail) from None
    stiffening = v["flex.stiffening"]
    if stiffening not in (0, 1):
        raise ParameterError("flex.stiffening", f"must be 0 or 1, got {stiffening!r}")
    try:
        return FlexibleBody(data, stiffening=bool(stiffening), eta0=v["flex.eta0"], etad0=v["flex.etad0"])
    except ParameterError as e:                             # eta0, etad0: named as the FMI parameters
        raise e.renamed(PREFIX + e.parameter) from None


def flexible_values(data: ModalData, stiffening=True, eta0=None, etad0=None) -> dict:
    """``{FMI parameter: array}`` of the modal data ``data`` (its nodes the child ports)."""
    n = data.n_modes
    out = {"flex.mass": data.mass, "flex.L": data.L, "flex.omega": data.omega, "flex.zeta": data.zeta,
           "flex.I_phi_x0": data.I_phi_x0, "flex.I_phi_phi": data.I_phi_phi, "flex.K0t": data.K0t,
           "flex.K0r": data.K0r, "flex.K0om": data.K0om, "flex.stiffening": int(bool(stiffening)),
           "flex.eta0": np.zeros(n) if eta0 is None else np.asarray(eta0, dtype=float),
           "flex.etad0": np.zeros(n) if etad0 is None else np.asarray(etad0, dtype=float)}
    for i in range(data.n_nodes):
        c = f"c{i + 1}"
        out.update({f"{c}.r": data.nodes[i], f"{c}.phi": data.phi[i], f"{c}.psi": data.psi[i],
                    f"{c}.K0F": data.K0F[i], f"{c}.K0M": data.K0M[i]})
    return out


def random_values(n_children: int, n_modes: int, rng) -> dict:
    """``{FMI parameter: array}`` of a random valid flexible body of ``n_modes`` modes and
    ``n_children`` ports (a beam of random sections and direction, the ports at random nodes),
    with random modal states: the parameter sets over which the FMU's dependencies are measured
    (:func:`titop_fmu.fmu.model_description.random_parameters`)."""
    length = 1.0 + rng.random()
    beam = section({"length": length, "EA": 1e3 * (1.0 + rng.random()), "EIy": 1.0 + rng.random(),
                    "EIz": 1.0 + rng.random(), "GJ": 1.0 + rng.random(), "rhoA": 1.0 + rng.random(),
                    "rhoJ": 0.1 + 0.1 * rng.random()})
    data = beam_modal_data([beam], n_modes, axis=rng.standard_normal(3), elements=max(2, n_modes),
                           ports=list(length * rng.random(n_children)))
    return flexible_values(data, eta0=0.1 * rng.standard_normal(n_modes), etad0=0.1 * rng.standard_normal(n_modes))
