"""Modal data of a solid mesh from Exudyn's finite-element interface (docs/flexible-bodies.md,
"From a finite-element code"): an ``exudyn.FEM.FEMinterface`` (in memory, or the file of its
``SaveToFile``) holds the nodes, the mass matrix ``M`` and the stiffness matrix ``K`` of a
mesh of ``Position`` nodes (3 translations each, ``x y z`` per node). :func:`modal_data`
clamps the body at the node set ``clamp`` (its mean is ``P`` unless ``origin`` is given; the
body frame ``R_a`` has the mesh's axes), solves ``K X = omega^2 M X`` on the free degrees of
freedom for the first ``n`` modes (mass-normalised), and gives the modal data of eqs.
(F3)-(F5), (F20):

    D_P = R^T M R,   L = X^T M R,   I_phi_x0[a, b, j] = X_j^T M (e_a x0_b),   I_phi_phi[a, b] = X_a^T M_s X_b

(``R`` the rigid-body modes about ``P``, ``M_s`` the mass matrix of one displacement
component, ``X_a`` the rows of component ``a``), and at each port node its translations
``phi`` and its rotations ``psi``: the least-squares rotation of the nodes that share an
element with it (a solid mesh's nodes do not turn); the mode shapes drawn (``shape_nodes``,
``shape_phi``) are those of the nodes of the FEMinterface's ``surface`` (what Exudyn draws;
all nodes without one). A mesh carries no geometric stiffness:
the ``K0`` fields are zero, and the body is then without stiffening (a warning says so).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import numpy as np

from ..blocks.modal import ModalData, ModalError
from ..errors import ParameterWarning

#: what the warning says of the K0 fields
NO_STIFFENING = ("an Exudyn mesh gives no geometric stiffness: the K0 fields of the modal data are zero, "
                 "so the body has no stiffening (as stiffening = false)")


def load(path) -> object:
    """The ``FEMinterface`` of the file ``path`` (written by its ``SaveToFile``; needs Exudyn)."""
    path = Path(path)
    if not path.is_file():
        raise ModalError("fem", f"no file {path}")
    try:
        from exudyn.FEM import FEMinterface
    except ImportError:
        raise ModalError("fem", "reading an Exudyn FEMinterface file needs Exudyn (pip install exudyn)") from None
    fem = FEMinterface()
    try:
        with contextlib.redirect_stdout(io.StringIO()):    # Exudyn prints its failures too
            fem.LoadFromFile(str(path))
    except Exception as e:                                  # noqa: BLE001 - any failure of the reader
        raise ModalError("fem", f"cannot read {path} as an Exudyn FEMinterface file: {e}") from None
    return fem


def modal_file(fem, clamp, ports, modes: int, out, **options) -> Path:
    """Write the neutral modal file ``out`` (``.npz`` or ``.mat``) of :func:`modal_data`."""
    return modal_data(fem, clamp, ports, modes, **options).save(out)


def modal_data(fem, clamp, ports, modes: int, origin=None, zeta=0.0, tolerance: float = 1e-6) -> ModalData:
    """The :class:`ModalData` of the mesh ``fem`` (an ``FEMinterface`` or its file) clamped at
    the nodes ``clamp`` (0-based node numbers, e.g. ``fem.GetNodesInPlane(...)``), with the
    first ``modes`` clamped modes, damping ratio(s) ``zeta``, and child ports at ``ports``:
    each a node number or a point ``[x, y, z]`` of the mesh (the node within ``tolerance``
    times the mesh's size of it). ``origin`` is ``P`` (default: the mean of the clamp nodes).
    Each bad input is one :class:`ModalError` naming it."""
    where = str(fem) if isinstance(fem, (str, Path)) else "Exudyn FEMinterface"
    if isinstance(fem, (str, Path)):
        fem = load(fem)
    x, M, K = _mesh(fem)
    N = len(x)
    if isinstance(modes, bool) or not isinstance(modes, (int, np.integer)) or modes < 0:
        raise ModalError("modes", f"expected an integer >= 0, got {modes!r}")
    fixed = _clamp(clamp, x)
    P = x[fixed].mean(axis=0) if origin is None else _point("origin", origin)
    size = float(np.linalg.norm(x.max(axis=0) - x.min(axis=0)))
    port_nodes = [_port(i, p, x, tolerance * size) for i, p in enumerate(ports)]
    omega, X = _clamped_modes(K, M, fixed, int(modes))
    n = X.shape[1]
    x0 = x - P
    Ms = M[0::3, 0::3]
    MX = (M @ X).reshape(N, 3, n)
    Rig = rigid_modes(x0)
    D_P = Rig.T @ (M @ Rig)
    shapes = X.reshape(N, 3, n)
    E = np.einsum("kaj,kb->abj", MX, x0)
    F = np.array([[shapes[:, a].T @ (Ms @ shapes[:, b]) for b in range(3)] for a in range(3)])
    elements = _groups(fem, "elements", N)
    k = len(port_nodes)
    psi = np.array([_rotation(c, _neighbours(elements, c), x, shapes) for c in port_nodes]).reshape(k, 3, n)
    surface = np.unique(np.concatenate([g.ravel() for g in _groups(fem, "surface", N)] or [np.arange(N)]))
    warnings.warn(NO_STIFFENING, ParameterWarning, stacklevel=2)
    return ModalData(mass=0.5 * (D_P + D_P.T), L=(MX.reshape(3 * N, n).T @ Rig), omega=omega,
                     zeta=np.broadcast_to(np.asarray(zeta, dtype=float), (n,)).copy(),
                     nodes=x0[port_nodes].reshape(k, 3), phi=shapes[port_nodes].reshape(k, 3, n), psi=psi,
                     I_phi_x0=E, I_phi_phi=0.5 * (F + F.transpose(1, 0, 3, 2)),
                     K0t=np.zeros((3, n, n)), K0r=np.zeros((3, n, n)), K0om=np.zeros((6, n, n)),
                     K0F=np.zeros((k, 3, n, n)), K0M=np.zeros((k, 3, n, n)),
                     shape_nodes=x0[surface], shape_phi=shapes[surface], where=where)


def rigid_modes(x0) -> np.ndarray:
    """``R`` (3N x 6): the nodes' translations under a unit translation and a unit rotation of
    the body about ``P`` (``x0`` the nodes from ``P``): ``[1, -(*x0)]`` per node (eq. (F20))."""
    N = len(x0)
    R = np.zeros((N, 3, 6))
    R[:, :, 0:3] = np.eye(3)
    R[:, :, 3:6] = -skews(x0)
    return R.reshape(3 * N, 6)


def skews(v) -> np.ndarray:
    """``(*v_k)`` of each row ``v_k`` of ``v`` (m x 3 -> m x 3 x 3), ``(*v) u = v x u``."""
    S = np.zeros((len(v), 3, 3))
    S[:, 0, 1], S[:, 0, 2], S[:, 1, 2] = -v[:, 2], v[:, 1], -v[:, 0]
    return S - S.transpose(0, 2, 1)


def _mesh(fem):
    """``(x, M, K)``: the node positions (N x 3) and the sparse matrices (3N x 3N) of ``fem``,
    checked: Position nodes only, symmetric matrices, a mass matrix that couples no two
    displacement components (a continuum's consistent or lumped mass)."""
    from scipy import sparse
    nodes = getattr(fem, "nodes", None)
    if not isinstance(nodes, dict) or not nodes:
        raise ModalError("fem.nodes", "the FEMinterface has no nodes")
    if list(nodes) != ["Position"]:
        raise ModalError("fem.nodes", f"node types {list(nodes)}: only solid meshes of 'Position' nodes (3 "
                                      "translations each) are read; beams, 2-D meshes and rigid-body nodes are not")
    x = np.asarray(nodes["Position"], dtype=float)
    if x.ndim != 2 or x.shape[1] != 3 or not np.all(np.isfinite(x)):
        raise ModalError("fem.nodes", f"expected N x 3 finite positions, got shape {x.shape}")
    out = [x]
    for name in ("massMatrix", "stiffnessMatrix"):
        A = getattr(fem, name, None)
        if A is None:
            raise ModalError(f"fem.{name}", "missing: the FEMinterface has no such matrix (import or compute it first)")
        try:
            A = sparse.csr_matrix(A, dtype=float)
        except (TypeError, ValueError):
            A = None
        if A is None or A.shape != (3 * len(x), 3 * len(x)):
            raise ModalError(f"fem.{name}", f"expected {3 * len(x)} x {3 * len(x)} (3 per node), got "
                                            f"{'no matrix' if A is None else A.shape}")
        scale = abs(A).max()
        if not np.all(np.isfinite(A.data)) or scale == 0 or abs(A - A.T).max() > 1e-9 * scale:
            raise ModalError(f"fem.{name}", "must be finite, non-zero and symmetric")
        out.append(A)
    M = out[1]
    Ms = M[0::3, 0::3]
    scale = abs(M).max()
    for a in range(3):
        for b in range(3):
            if abs(M[a::3, b::3] - (Ms if a == b else 0 * Ms)).max() > 1e-9 * scale:
                raise ModalError("fem.massMatrix", "couples the displacement components (or differs between them): "
                                                   "not the mass matrix of a solid mesh ordered x y z per node")
    return tuple(out)


def _point(name, value):
    p = np.asarray(value, dtype=float) if np.ndim(value) == 1 else None
    if p is None or p.shape != (3,) or not np.all(np.isfinite(p)):
        raise ModalError(name, f"expected a point [x, y, z], got {value!r}")
    return p


def _clamp(clamp, x):
    """The clamped nodes, checked: node numbers of the mesh that span a plane (a body clamped
    at one node or along a line turns about it)."""
    try:
        nodes = np.unique(np.asarray(clamp, dtype=np.int64).ravel())
    except (TypeError, ValueError):
        raise ModalError("clamp", f"expected node numbers, got {clamp!r}") from None
    if nodes.size == 0:
        raise ModalError("clamp", "no node: the body must be clamped at P (e.g. fem.GetNodesInPlane(...))")
    bad = nodes[(nodes < 0) | (nodes >= len(x))]
    if bad.size:
        raise ModalError("clamp", f"node {bad[0]} is not in the mesh (nodes 0 to {len(x) - 1})")
    spread = np.linalg.svd(x[nodes] - x[nodes].mean(axis=0), compute_uv=False) if nodes.size > 1 else np.zeros(1)
    if spread.size < 2 or spread[1] <= 1e-9 * max(spread[0], 1e-300):
        raise ModalError("clamp", f"the {nodes.size} clamp node(s) lie on a line: the body can turn about it "
                                  "(a rigid-body mode); clamp nodes that span a face")
    return nodes


def _port(i, p, x, tolerance):
    if isinstance(p, (int, np.integer)) and not isinstance(p, bool):
        if not 0 <= p < len(x):
            raise ModalError("ports", f"ports[{i}]: node {p} is not in the mesh (nodes 0 to {len(x) - 1})")
        return int(p)
    q = _point(f"ports[{i}]", p)
    d = np.linalg.norm(x - q, axis=1)
    k = int(np.argmin(d))
    if d[k] > tolerance:
        raise ModalError("ports", f"ports[{i}]: no node at {q.tolist()} (the nearest, node {k}, is {d[k]:.3g} away)")
    return k


def _clamped_modes(K, M, fixed, n):
    """``(omega, X)``: the first ``n`` modes of ``K X = omega^2 M X`` with the nodes ``fixed``
    clamped (shift-invert Lanczos), mass-normalised, the largest component of each positive;
    ``X`` (3N x n) is zero at the clamp. A clamp that leaves a rigid-body mode is an error."""
    from scipy.sparse.linalg import eigsh
    ndof = K.shape[0]
    free = np.setdiff1d(np.arange(ndof), (3 * fixed[:, None] + np.arange(3)).ravel())
    X = np.zeros((ndof, n))
    if n == 0:
        return np.zeros(0), X
    if n >= free.size - 1:
        raise ModalError("modes", f"{n} modes asked, the clamped mesh has {free.size} degrees of freedom")
    Kf, Mf = K[free][:, free].tocsc(), M[free][:, free].tocsc()
    scale = Kf.diagonal().mean() / Mf.diagonal().mean()     # an element's frequency squared
    start = np.random.default_rng(0).standard_normal(free.size)     # ARPACK's start: the same each run
    lam, V = eigsh(Kf, k=n, M=Mf, sigma=-1e-6 * scale, which="LM", v0=start)
    order = np.argsort(lam)
    V = V[:, order]
    V /= np.sqrt(np.einsum("ij,ij->j", V, Mf @ V))
    lam = np.einsum("ij,ij->j", V, Kf @ V)                  # Rayleigh quotients: accurate to rounding
    if lam[0] <= 1e-10 * scale:
        raise ModalError("clamp", f"the clamped mesh has a rigid-body mode (omega^2 = {lam[0]:.3g}): the clamp "
                                  "nodes do not hold the body (or the mesh is in pieces)")
    for j in range(n):
        i = np.argmax(np.abs(V[:, j]))
        if V[i, j] < 0:
            V[:, j] = -V[:, j]
    X[free] = V
    return np.sqrt(lam), X


def _groups(fem, key: str, N: int):
    """The node-number arrays of ``fem.elements`` (``key = "elements"``) or ``fem.surface``,
    one per element type, checked against the ``N`` nodes."""
    out = []
    for group in getattr(fem, key, None) or []:
        for kind, conn in group.items():
            if kind == "Name":
                continue
            conn = np.asarray(conn)
            if conn.ndim != 2 or conn.dtype.kind not in "iu" or conn.size and (conn.min() < 0 or conn.max() >= N):
                raise ModalError(f"fem.{key}", f"{kind}: expected rows of node numbers of the mesh")
            out.append(conn)
    return out


def _neighbours(elements, c) -> list:
    """The nodes that share an element with the node ``c`` (not ``c``)."""
    around = set()
    for conn in elements:
        around.update(conn[(conn == c).any(axis=1)].ravel().tolist())
    return sorted(around - {c})


def _rotation(c, around, x, shapes):
    """``psi`` at the node ``c`` (3 x n): the rotation ``theta`` that best fits, in least
    squares, the displacements of its neighbours ``around`` relative to it,
    ``u_k - u_c = theta x (x_k - x_c)``."""
    A = -skews(x[around] - x[c]).reshape(-1, 3)            # theta x d = -(*d) theta
    if len(around) < 2 or np.linalg.matrix_rank(A, tol=1e-9 * np.abs(A).max()) < 3:
        raise ModalError("ports", f"node {c} has no elements around it (or only collinear neighbours): its "
                                  "rotation cannot be had")
    du = (shapes[around] - shapes[c]).reshape(3 * len(around), shapes.shape[2])
    return np.linalg.lstsq(A, du, rcond=None)[0]
