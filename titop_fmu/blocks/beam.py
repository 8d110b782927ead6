"""Modal data of a straight 3-D Euler-Bernoulli beam clamped at ``P`` (docs/flexible-bodies.md,
"The beam generator", eqs. (F19)-(F22)): axial stretch, bending in two planes, torsion,
uniform or piecewise sections, lumped masses; a finite-element model reduced to its first
``n`` clamped modes, with the geometric stiffness of the unit load cases.

Degrees of freedom per node, in the section frame ``[axis, ydir, zdir]``: ``u, v, w,
theta_x, theta_y, theta_z``; bending in the x-y plane is ``v, theta_z = v'`` (stiffness
``EIz``), in the x-z plane ``w, theta_y = -w'`` (``EIy``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from .modal import ModalData

SECTION_KEYS = ("length", "EA", "EIy", "EIz", "GJ", "rhoA", "rhoJ")
#: degree-of-freedom families that decouple on a straight beam (section frame)
#: the most finite elements: the modes come from a dense eigenproblem of 6 (elements + 1) unknowns
#: (400 elements take about 30 s, and the time grows as the cube)
MAX_ELEMENTS = 500
FAMILIES = ((1, 5), (2, 4), (3,), (0,))          # bending v, bending w, torsion, stretch
GAUSS = np.polynomial.legendre.leggauss(4)       # exact to degree 7 on an element


@dataclass(frozen=True)
class Section:
    """A length of uniform beam (SI units)."""

    length: float
    EA: float
    EIy: float
    EIz: float
    GJ: float
    rhoA: float
    rhoJ: float = 0.0


@dataclass(frozen=True)
class LumpedMass:
    """A mass at ``at`` [m] from ``P`` along the beam, its inertia at that point (block frame)."""

    at: float
    mass: float
    inertia: tuple = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))


def section(spec: dict, where: str = "beam") -> Section:
    """A :class:`Section` from ``{length, EA, EIy, EIz, GJ, rhoA, rhoJ}``; errors name ``where.key``."""
    if not isinstance(spec, dict):
        raise ParameterError(where, f"expected a table {{{', '.join(SECTION_KEYS)}}}, got {spec!r}")
    unknown = sorted(set(spec) - set(SECTION_KEYS))
    if unknown:
        raise ParameterError(f"{where}.{unknown[0]}", f"unknown key; a beam section has {', '.join(SECTION_KEYS)}")
    values = {}
    for key in SECTION_KEYS:
        if key not in spec:
            if key == "rhoJ":
                continue
            raise ParameterError(f"{where}.{key}", "missing")
        v = spec[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
            raise ParameterError(f"{where}.{key}", f"expected a finite number, got {v!r}")
        if v < 0 or (v == 0 and key != "rhoJ"):
            raise ParameterError(f"{where}.{key}", f"must be {'>= 0' if key == 'rhoJ' else 'positive'}, got {v}")
        values[key] = float(v)
    return Section(**values)


def numbers(value, name: str) -> np.ndarray:
    """``value`` as an array of floats; else :class:`ParameterError` naming ``name``."""
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(name, f"expected numbers, got {value!r}") from None


def section_frame(axis, ydir=None) -> np.ndarray:
    """``R = [axis, ydir, zdir]`` (columns, block frame): the section frame."""
    a = numbers(axis, "axis")
    if a.shape != (3,) or not np.all(np.isfinite(a)) or np.linalg.norm(a) < 1e-12:
        raise ParameterError("axis", f"expected a non-zero 3-vector, got {axis!r}")
    a = a / np.linalg.norm(a)
    if ydir is None:
        y = np.array([0.0, 1.0, 0.0]) if abs(a[1]) < 0.9 else np.array([0.0, 0.0, 1.0])
    else:
        y = numbers(ydir, "ydir")
        if y.shape != (3,) or not np.all(np.isfinite(y)):
            raise ParameterError("ydir", f"expected a 3-vector, got {ydir!r}")
    y = y - (y @ a) * a
    if np.linalg.norm(y) < 1e-9:
        raise ParameterError("ydir", "must not be parallel to the axis")
    y /= np.linalg.norm(y)
    return np.column_stack([a, y, np.cross(a, y)])


def _mesh(sections, stations, elements):
    """Node stations along the beam: every section end and every station, the elements shared
    out over the intervals in proportion to their lengths (at least one each)."""
    total = sum(s.length for s in sections)
    cuts = np.unique(np.concatenate([[0.0], np.cumsum([s.length for s in sections]), stations]))
    cuts = cuts[np.concatenate([[True], np.diff(cuts) > 1e-12 * total])]
    lengths = np.diff(cuts)
    if elements < len(lengths):
        raise ParameterError("elements", f"{elements} is fewer than the {len(lengths)} intervals between section "
                                         "ends, ports and masses")
    share = lengths / total * elements
    count = np.maximum(1, np.floor(share).astype(int))
    while count.sum() < elements:                           # largest remainders first
        count[np.argmax(share - count)] += 1
    while count.sum() > elements:
        i = np.argmax(np.where(count > 1, count - share, -np.inf))
        count[i] -= 1
    nodes = [np.linspace(a, b, c + 1)[:-1] for a, b, c in zip(cuts[:-1], cuts[1:], count)]
    return np.concatenate(nodes + [[total]]), total


def _element_matrices(sec: Section, h: float):
    """``(K, M)`` of one element, 12 x 12, DOFs ``[node a (6), node b (6)]`` (eq. (F19))."""
    K, M = np.zeros((12, 12)), np.zeros((12, 12))
    bar = np.array([[1.0, -1.0], [-1.0, 1.0]])
    bar_m = np.array([[2.0, 1.0], [1.0, 2.0]]) / 6.0
    for dof, k, m in ((0, sec.EA / h, sec.rhoA * h), (3, sec.GJ / h, sec.rhoJ * h)):
        idx = [dof, 6 + dof]
        K[np.ix_(idx, idx)] += k * bar
        M[np.ix_(idx, idx)] += m * bar_m
    kb = np.array([[12, 6 * h, -12, 6 * h], [6 * h, 4 * h * h, -6 * h, 2 * h * h],
                   [-12, -6 * h, 12, -6 * h], [6 * h, 2 * h * h, -6 * h, 4 * h * h]]) / h ** 3
    mb = sec.rhoA * h / 420.0 * np.array([[156, 22 * h, 54, -13 * h], [22 * h, 4 * h * h, 13 * h, -3 * h * h],
                                          [54, 13 * h, 156, -22 * h], [-13 * h, -3 * h * h, -22 * h, 4 * h * h]])
    for (t, r), EI, sign in (((1, 5), sec.EIz, 1.0), ((2, 4), sec.EIy, -1.0)):
        idx = [t, r, 6 + t, 6 + r]
        S = np.diag([1.0, sign, 1.0, sign])                # theta_y = -w'
        K[np.ix_(idx, idx)] += EI * S @ kb @ S
        M[np.ix_(idx, idx)] += S @ mb @ S
    return K, M


def _shape_functions(xi, h):
    """At the local coordinates ``xi`` (m points): ``(N, dN)``, ``(m, 3, 12)`` maps from the
    element's DOFs to the displacement ``[u, v, w]`` and to its derivative along ``x``."""
    m = len(xi)
    N, dN = np.zeros((m, 3, 12)), np.zeros((m, 3, 12))
    H = np.stack([1 - 3 * xi ** 2 + 2 * xi ** 3, h * (xi - 2 * xi ** 2 + xi ** 3), 3 * xi ** 2 - 2 * xi ** 3,
                  h * (-xi ** 2 + xi ** 3)], axis=1)
    dH = np.stack([(-6 * xi + 6 * xi ** 2) / h, 1 - 4 * xi + 3 * xi ** 2, (6 * xi - 6 * xi ** 2) / h,
                   -2 * xi + 3 * xi ** 2], axis=1)
    N[:, 0, 0], N[:, 0, 6] = 1 - xi, xi
    dN[:, 0, 0], dN[:, 0, 6] = -1 / h, 1 / h
    for comp, (t, r), sign in ((1, (1, 5), 1.0), (2, (2, 4), -1.0)):
        for k, dof in enumerate((t, r, 6 + t, 6 + r)):
            s = sign if dof in (r, 6 + r) else 1.0
            N[:, comp, dof] = s * H[:, k]
            dN[:, comp, dof] = s * dH[:, k]
    return N, dN


def _modes(K, M, n):
    """The first ``n`` modes of ``K X = omega^2 M X`` (free DOFs): each decoupled family of
    :data:`FAMILIES` on its own when nothing couples them, a family without inertia left out."""
    from scipy.linalg import eigh
    ndof = K.shape[0]
    kind = np.arange(ndof) % 6
    groups = [np.flatnonzero(np.isin(kind, f)) for f in FAMILIES]
    other = [np.setdiff1d(np.arange(ndof), g) for g in groups]
    coupled = any(np.any(A[np.ix_(g, o)]) for g, o in zip(groups, other) for A in (K, M))
    if coupled:
        groups = [np.arange(ndof)]
    found = []
    for order, g in enumerate(groups):
        Mg = M[np.ix_(g, g)]
        if np.linalg.eigvalsh(Mg)[0] <= 1e-14 * max(1.0, np.max(np.abs(Mg))):
            continue                                        # no inertia: no mode of this family
        Kg = K[np.ix_(g, g)]
        _, V = eigh(Kg, Mg)
        for v in V.T:                                       # Rayleigh quotients: accurate to rounding
            lam = (v @ Kg @ v) / (v @ Mg @ v)
            x = np.zeros(ndof)
            x[g] = v
            found.append((lam, order, x))
    found.sort(key=lambda f: f[0])
    i = 0
    while i < len(found):                                   # equal frequencies: in family order
        j = i + 1
        while j < len(found) and found[j][0] - found[i][0] <= 1e-8 * abs(found[i][0]):
            j += 1
        found[i:j] = sorted(found[i:j], key=lambda f: f[1])
        i = j
    if len(found) < n:
        raise ParameterError("modes", f"{n} modes asked, the beam's model has {len(found)}")
    lam = np.array([f[0] for f in found[:n]])
    X = np.column_stack([f[2] for f in found[:n]]) if n else np.zeros((ndof, 0))
    for j in range(n):                                      # the largest component positive
        i = np.argmax(np.abs(X[:, j]))
        if X[i, j] < 0:
            X[:, j] = -X[:, j]
    return np.sqrt(np.maximum(lam, 0.0)), X


def beam_modal_data(sections, modes: int, axis=(1.0, 0.0, 0.0), ydir=None, elements: int = 20, ports=(),
                    masses=(), zeta=0.0) -> ModalData:
    """The :class:`ModalData` of a straight beam from ``P`` along ``axis`` (block frame):
    ``sections`` (:class:`Section` s from ``P`` outwards), ``masses`` (:class:`LumpedMass`),
    child ports at the distances ``ports`` from ``P``, ``elements`` finite elements, the
    first ``modes`` clamped modes with the damping ratio(s) ``zeta`` (eqs. (F19)-(F22))."""
    sections = list(sections)
    if not sections:
        raise ParameterError("beam", "no section")
    if isinstance(elements, bool) or not isinstance(elements, (int, np.integer)) or not 1 <= elements <= MAX_ELEMENTS:
        raise ParameterError("elements", f"expected an integer from 1 to {MAX_ELEMENTS}, got {elements!r}")
    if isinstance(modes, bool) or not isinstance(modes, (int, np.integer)) or modes < 0:
        raise ParameterError("modes", f"expected an integer >= 0, got {modes!r}")
    R = section_frame(axis, ydir)
    total = sum(s.length for s in sections)
    stations = []
    for name, values in (("ports", list(ports)), ("masses", [m.at for m in masses])):
        for i, s in enumerate(values):
            if not isinstance(s, (int, float)) or not 0.0 <= s <= total * (1 + 1e-12):
                raise ParameterError(f"{name}[{i}]", f"{s!r} is off the beam (0 to {total:g} m from P)")
            stations.append(min(float(s), total))
    nodes, total = _mesh(sections, np.array(stations), int(elements))
    ends = np.cumsum([s.length for s in sections])
    nn = len(nodes)
    K, M = np.zeros((6 * nn, 6 * nn)), np.zeros((6 * nn, 6 * nn))
    quad = []                                               # per element: (section, s_a, h)
    for e in range(nn - 1):
        h = nodes[e + 1] - nodes[e]
        sec = sections[min(int(np.searchsorted(ends, 0.5 * (nodes[e] + nodes[e + 1]))), len(sections) - 1)]
        Ke, Me = _element_matrices(sec, h)
        idx = np.arange(6 * e, 6 * e + 12)
        K[np.ix_(idx, idx)] += Ke
        M[np.ix_(idx, idx)] += Me
        quad.append((sec, nodes[e], h))
    at_node = [int(np.argmin(np.abs(nodes - s))) for s in stations]
    port_nodes, mass_nodes = at_node[:len(list(ports))], at_node[len(list(ports)):]
    for i, (m, node) in enumerate(zip(masses, mass_nodes)):
        J = numbers(m.inertia, f"masses[{i}].inertia")
        if not (isinstance(m.mass, (int, float)) and m.mass >= 0) or J.shape != (3, 3) or not np.all(np.isfinite(J)):
            raise ParameterError(f"masses[{i}]", "expected mass >= 0 and a 3x3 inertia")
        M[6 * node:6 * node + 3, 6 * node:6 * node + 3] += m.mass * np.eye(3)
        M[6 * node + 3:6 * node + 6, 6 * node + 3:6 * node + 6] += R.T @ J @ R
    omega, Xf = _modes(K[6:, 6:], M[6:, 6:], int(modes))   # node 0 clamped
    X = np.zeros((6 * nn, Xf.shape[1]))
    X[6:] = Xf
    n = X.shape[1]
    # rigid-body modes about P (section frame), eq. (F20)
    Rig = np.zeros((6 * nn, 6))
    for i, s in enumerate(nodes):
        Rig[6 * i:6 * i + 3, 0:3] = np.eye(3)
        Rig[6 * i:6 * i + 3, 3:6] = -_skew(np.array([s, 0.0, 0.0]))
        Rig[6 * i + 3:6 * i + 6, 3:6] = np.eye(3)
    T = np.kron(np.eye(2), R)                               # section -> block for 6-vectors
    D_P = T @ (Rig.T @ M @ Rig) @ T.T
    L = (X.T @ M @ Rig) @ T.T
    per_node = X.reshape(nn, 6, n)
    trans = np.einsum("ab,kbj->kaj", R, per_node[:, 0:3])
    rot = np.einsum("ab,kbj->kaj", R, per_node[:, 3:6])
    E, F, KG = _integrals(quad, X, R, nodes, masses, mass_nodes, trans, port_nodes)
    a = R[:, 0]
    prods = [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)]
    K0om = np.array([((1.0 if k == l else 0.0) - a[k] * a[l]) * (1 if k == l else 2) * KG["centrifugal"]
                     for k, l in prods])
    K0t = np.array([-a[k] * KG["acceleration"] for k in range(3)])
    kp = len(port_nodes)
    K0F = np.array([[a[k] * KG[("force", node)] for k in range(3)] for node in port_nodes]).reshape(kp, 3, n, n)
    zeros = np.zeros((3, n, n))
    return ModalData(mass=0.5 * (D_P + D_P.T), L=L, omega=omega,
                     zeta=np.broadcast_to(np.asarray(zeta, dtype=float), (n,)).copy(),
                     nodes=np.array([nodes[i] * a for i in port_nodes]).reshape(kp, 3),
                     phi=trans[port_nodes].reshape(kp, 3, n), psi=rot[port_nodes].reshape(kp, 3, n),
                     I_phi_x0=E, I_phi_phi=F, K0t=K0t, K0r=zeros, K0om=K0om, K0F=K0F,
                     K0M=np.zeros_like(K0F), shape_nodes=np.outer(nodes, a), shape_phi=trans,
                     where="beam generator")


def _skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _integrals(quad, X, R, nodes, masses, mass_nodes, trans, port_nodes):
    """``(I_phi_x0, I_phi_phi, {load case: K_G})`` by Gauss quadrature on every element (eqs.
    (F5), (F21), (F22)), the lumped masses added at their nodes."""
    n = X.shape[1]
    xi, wq = 0.5 * (GAUSS[0] + 1.0), 0.5 * GAUSS[1]
    a = R[:, 0]
    pts, w_m, disp, slopes = [], [], [], []
    for e, (sec, s_a, h) in enumerate(quad):
        N, dN = _shape_functions(xi, h)
        Xe = X[6 * e:6 * e + 12]
        pts.append(s_a + xi * h)
        w_m.append(wq * h * sec.rhoA)
        disp.append(np.einsum("ab,qbd,dj->qaj", R, N, Xe))          # translations, block frame
        slopes.append(np.einsum("qbd,dj->qbj", dN[:, 1:3], Xe))       # v', w' (section frame)
    s, w_m, disp, slopes = np.concatenate(pts), np.concatenate(w_m), np.concatenate(disp), np.concatenate(slopes)
    h_q = np.concatenate([wq * h for _, _, h in quad])                 # quadrature weights in length
    x0 = np.outer(s, a)
    E = np.einsum("q,qaj,qb->abj", w_m, disp, x0)
    F = np.einsum("q,qai,qbj->abij", w_m, disp, disp)
    for m, node in zip(masses, mass_nodes):
        E += m.mass * np.einsum("aj,b->abj", trans[node], nodes[node] * a)
        F += m.mass * np.einsum("ai,bj->abij", trans[node], trans[node])
    # mass and first moment of the beam beyond s (exact: uniform rhoA per element)
    ends = np.array([s_a + h for _, s_a, h in quad])
    rho = np.array([sec.rhoA for sec, _, _ in quad])
    starts = np.array([s_a for _, s_a, _ in quad])
    lumped = [(m.mass, nodes[node]) for m, node in zip(masses, mass_nodes)]

    def beyond(s, moment):
        out = np.zeros_like(s)
        for r, a0, b0 in zip(rho, starts, ends):
            lo = np.clip(s, a0, b0)
            out += r * ((b0 ** 2 - lo ** 2) / 2 if moment else (b0 - lo))
        for mass, sm in lumped:
            out += np.where(sm > s, mass * (sm if moment else 1.0), 0.0)
        return out

    def K_G(N):
        return np.einsum("q,qbi,qbj->ij", h_q * N, slopes, slopes)

    KG = {"acceleration": K_G(beyond(s, False)), "centrifugal": K_G(beyond(s, True))}
    for node in port_nodes:
        KG[("force", node)] = K_G((s < nodes[node]).astype(float))
    return E, 0.5 * (F + F.transpose(1, 0, 3, 2)), KG
