"""The modal data of a flexible body (docs/flexible-bodies.md) and its neutral file.

:class:`ModalData` holds, for a body clamped at its port point ``P`` and projected in its
frame ``R_a``, the rigid mass ``D_P`` (eq. (F3)), the participation factors ``L`` (eq. (F4)),
the frequencies and damping ratios of ``n`` mass-normalised modes, the inertia-shape
integrals ``I_phi_x0``, ``I_phi_phi`` (eq. (F5)), the geometric-stiffness terms named as in
SID (``K0t``, ``K0r``, ``K0om``, eq. (F2)) and, at ``k`` port nodes, their positions, the
mode shapes ``phi`` (translation) and ``psi`` (rotation) and ``K0F``, ``K0M``. It checks
everything it is given: a bad field is one :class:`ModalError` naming it.

The neutral file is a NumPy ``.npz`` or a MATLAB ``.mat`` file holding these arrays under
these names (:meth:`ModalData.save`, :meth:`ModalData.load`).
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

from ..errors import ParameterError, did_you_mean

#: the order of the six products of angular rates of K0om (as SID's Oe)
OMEGA_PRODUCTS = ("xx", "yy", "zz", "xy", "xz", "yz")
#: file format tag written with the data
FORMAT = "titop-fmu modal data 1"


class ModalError(ParameterError):
    """A field of modal data is invalid (``.parameter`` names the field)."""


def _shapes(n, k):
    """Expected shape of every field for ``n`` modes and ``k`` nodes."""
    return {"mass": (6, 6), "L": (n, 6), "omega": (n,), "zeta": (n,), "nodes": (k, 3),
            "phi": (k, 3, n), "psi": (k, 3, n), "I_phi_x0": (3, 3, n), "I_phi_phi": (3, 3, n, n),
            "K0t": (3, n, n), "K0r": (3, n, n), "K0om": (6, n, n), "K0F": (k, 3, n, n), "K0M": (k, 3, n, n)}


OPTIONAL = ("shape_nodes", "shape_phi")


@dataclass(frozen=True, eq=False)
class ModalData:
    """Modal data of a body clamped at ``P`` (module docstring; the fields of the neutral
    file). ``shape_nodes`` (N x 3) and ``shape_phi`` (N x 3 x n), optional, are points of the
    body and their mode shapes, for drawing."""

    mass: np.ndarray
    L: np.ndarray
    omega: np.ndarray
    zeta: np.ndarray
    nodes: np.ndarray
    phi: np.ndarray
    psi: np.ndarray
    I_phi_x0: np.ndarray
    I_phi_phi: np.ndarray
    K0t: np.ndarray
    K0r: np.ndarray
    K0om: np.ndarray
    K0F: np.ndarray
    K0M: np.ndarray
    shape_nodes: np.ndarray | None = None
    shape_phi: np.ndarray | None = None
    where: str = "modal data"          # what the errors name (a file)

    def __post_init__(self):
        for f in fields(self):
            if f.name != "where" and getattr(self, f.name) is not None:
                object.__setattr__(self, f.name, self._array(f.name, getattr(self, f.name)))
        n, k = self.omega.shape[0] if self.omega.ndim == 1 else -1, self.nodes.shape[0] if self.nodes.ndim == 2 else -1
        if n < 0:
            self._error("omega", f"expected a vector of the n modal frequencies, got shape {self.omega.shape}")
        if k < 0:
            self._error("nodes", f"expected k x 3 node positions, got shape {self.nodes.shape}")
        for name, shape in _shapes(n, k).items():
            if getattr(self, name).shape != shape:
                self._error(name, f"expected shape {shape} for {n} modes and {k} nodes, got {getattr(self, name).shape}")
        if self.shape_nodes is not None or self.shape_phi is not None:
            if self.shape_nodes is None or self.shape_phi is None:
                self._error("shape_phi", "shape_nodes and shape_phi come together")
            N = self.shape_nodes.shape[0] if self.shape_nodes.ndim == 2 else -1
            if self.shape_nodes.shape != (N, 3) or self.shape_phi.shape != (N, 3, n):
                self._error("shape_phi", f"expected N x 3 and N x 3 x {n}, got {self.shape_nodes.shape} and "
                                         f"{self.shape_phi.shape}")
        self._check_values(n)

    def _array(self, name, value):
        try:
            a = np.array(value, dtype=float)
        except (TypeError, ValueError):
            self._error(name, f"expected numbers, got {type(value).__name__}")
        if not np.all(np.isfinite(a)):
            self._error(name, "must be finite")
        return a

    def _error(self, name, message):
        raise ModalError(name, f"{message} ({self.where})")

    def _check_values(self, n):
        bad = np.flatnonzero(self.omega <= 0)
        if bad.size:
            self._error("omega", f"the frequencies of the clamped modes must be positive, got {self.omega[bad[0]]:g} "
                                 f"at mode {bad[0] + 1}")
        bad = np.flatnonzero(self.zeta < 0)
        if bad.size:
            self._error("zeta", f"damping ratios must be >= 0, got {self.zeta[bad[0]]:g} at mode {bad[0] + 1}")
        D = self.mass
        scale = max(1.0, float(np.max(np.abs(D))))
        if np.max(np.abs(D - D.T)) > 1e-9 * scale:
            self._error("mass", "the rigid mass D_P must be symmetric")
        if D[0, 0] <= 0 or np.max(np.abs(D[0:3, 0:3] - D[0, 0] * np.eye(3))) > 1e-9 * scale:
            self._error("mass", "its translational block must be m 1 with a positive mass m")
        if np.linalg.eigvalsh(0.5 * (D + D.T))[0] < -1e-9 * scale:
            self._error("mass", "the rigid mass D_P must be positive semi-definite")
        if n:
            residual = np.linalg.eigvalsh(D - self.L.T @ self.L)[0]
            if residual < -1e-8 * scale:
                self._error("L", f"the residual mass D_P - L^T L is not positive semi-definite (eigenvalue "
                                 f"{residual:.3g}): L does not belong to this mass, or the modes are not mass-normalised")
        F = self.I_phi_phi
        fs = max(1.0, float(np.max(np.abs(F)))) if F.size else 1.0
        if np.max(np.abs(F - F.transpose(1, 0, 3, 2)), initial=0.0) > 1e-9 * fs:
            self._error("I_phi_phi", "must satisfy I_phi_phi[a, b, i, j] = I_phi_phi[b, a, j, i]")
        translational = np.einsum("aaij->ij", F)
        if n and np.max(np.diag(translational)) > 1 + 1e-6:
            self._error("I_phi_phi", "sum_a I_phi_phi[a, a] has diagonal terms above 1: the modes are not "
                                     "mass-normalised")
        for name in ("K0t", "K0r", "K0om", "K0F", "K0M"):
            K = getattr(self, name)
            ks = max(1.0, float(np.max(np.abs(K)))) if K.size else 1.0
            if np.max(np.abs(K - np.swapaxes(K, -1, -2)), initial=0.0) > 1e-9 * ks:
                self._error(name, "each n x n matrix must be symmetric")

    # -- sizes and selections ----------------------------------------------------------------
    @property
    def n_modes(self) -> int:
        return self.omega.shape[0]

    @property
    def n_nodes(self) -> int:
        return self.nodes.shape[0]

    def first_modes(self, n: int) -> ModalData:
        """The first ``n`` modes (every modal field cut to them)."""
        if not 0 <= n <= self.n_modes:
            raise ModalError("modes", f"{n} modes asked, the data has {self.n_modes} ({self.where})")
        m = slice(0, n)
        return replace(self, L=self.L[m], omega=self.omega[m], zeta=self.zeta[m], phi=self.phi[..., m],
                       psi=self.psi[..., m], I_phi_x0=self.I_phi_x0[..., m], I_phi_phi=self.I_phi_phi[..., m, m],
                       K0t=self.K0t[:, m, m], K0r=self.K0r[:, m, m], K0om=self.K0om[:, m, m],
                       K0F=self.K0F[..., m, m], K0M=self.K0M[..., m, m],
                       shape_phi=None if self.shape_phi is None else self.shape_phi[..., m])

    def with_nodes(self, index) -> ModalData:
        """Only the nodes ``index`` (0-based), in that order."""
        index = list(index)
        for i in index:
            if not 0 <= i < self.n_nodes:
                raise ModalError("ports", f"node {i + 1} is not in the data, which has {self.n_nodes} node(s) "
                                          f"({self.where})")
        return replace(self, nodes=self.nodes[index], phi=self.phi[index], psi=self.psi[index],
                       K0F=self.K0F[index], K0M=self.K0M[index])

    def with_damping(self, zeta) -> ModalData:
        """The same modes with the damping ratios ``zeta`` (one for all, or one per mode)."""
        z = np.broadcast_to(np.asarray(zeta, dtype=float), (self.n_modes,)) if np.ndim(zeta) == 0 else zeta
        return replace(self, zeta=z)

    # -- the neutral file -------------------------------------------------------------------
    def arrays(self) -> dict:
        """``{field: array}`` of the neutral file."""
        out = {f.name: getattr(self, f.name) for f in fields(self)
               if f.name != "where" and getattr(self, f.name) is not None}
        out["format"] = np.array(FORMAT)
        return out

    def save(self, path) -> Path:
        """Write the neutral file ``path`` (``.npz`` or ``.mat``)."""
        path = Path(path)
        arrays = self.arrays()
        if path.suffix.lower() == ".npz":
            np.savez(path, **arrays)
        elif path.suffix.lower() == ".mat":
            from scipy.io import savemat
            savemat(path, arrays, oned_as="column")
        else:
            raise ModalError("modal", f"a modal file is .npz or .mat, got {path.name}")
        return path

    @classmethod
    def load(cls, path) -> ModalData:
        """Read and check the neutral file ``path``; :class:`ModalError` names a missing or bad field."""
        path = Path(path)
        if path.is_dir():
            raise ModalError("modal", f"{path} is a folder, not a modal file")
        if not path.is_file():
            raise ModalError("modal", f"no modal file {path}")
        if path.suffix.lower() not in (".npz", ".mat"):
            raise ModalError("modal", f"a modal file is .npz or .mat, got {path.name}")
        if path.suffix.lower() == ".npz" and not zipfile.is_zipfile(path):
            raise ModalError("modal", f"{path} is not a NumPy .npz file (a zip archive of arrays: numpy.savez)")
        try:
            if path.suffix.lower() == ".npz":
                with np.load(path, allow_pickle=False) as z:
                    raw = {k: z[k] for k in z.files}
            else:
                from scipy.io import loadmat
                from scipy.io.matlab import MatReadError
                try:
                    raw = {k: v for k, v in loadmat(path).items() if not k.startswith("__")}
                except MatReadError as e:
                    raise ValueError(e) from None
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise ModalError("modal", f"cannot read {path}: {e}") from None
        return cls.from_arrays(raw, str(path))

    @classmethod
    def from_arrays(cls, raw: dict, where: str = "modal data") -> ModalData:
        """From ``{field: array}`` (a file's content: ``.mat`` files store vectors as columns
        and drop trailing unit dimensions, which are restored here)."""
        required = [f.name for f in fields(cls) if f.name not in OPTIONAL + ("where",)]
        unknown = sorted(set(raw) - set(required) - set(OPTIONAL) - {"format"})
        if unknown:
            raise ModalError(unknown[0], f"not a field of the neutral modal file"
                                         f"{did_you_mean(unknown[0], required + list(OPTIONAL))} ({where}; fields: "
                                         f"{', '.join(required + list(OPTIONAL))})")
        missing = [k for k in required if k not in raw]
        if missing:
            raise ModalError(missing[0], f"missing from {where} (fields: {', '.join(required)})")
        omega = np.ravel(raw["omega"])
        nodes = np.reshape(raw["nodes"], (-1, 3)) if np.size(raw["nodes"]) % 3 == 0 else raw["nodes"]
        n, k = omega.size, (np.shape(nodes)[0] if np.ndim(nodes) == 2 else 0)
        shapes = _shapes(n, k)
        if raw.get("shape_nodes") is not None:
            N = np.size(raw["shape_nodes"]) // 3
            shapes.update(shape_nodes=(N, 3), shape_phi=(N, 3, n))
        values = {}
        for name, value in raw.items():
            if name in ("format",) or name not in shapes:
                continue
            a = np.asarray(value)
            if a.dtype.kind not in "fiub":
                raise ModalError(name, f"expected numbers ({where})")
            if a.shape != shapes[name] and a.size == int(np.prod(shapes[name])) and \
                    tuple(d for d in a.shape if d != 1) == tuple(d for d in shapes[name] if d != 1):
                a = a.reshape(shapes[name])             # a .mat column, or unit dimensions dropped
            values[name] = a
        return cls(where=where, **values)
