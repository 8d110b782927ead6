"""A linear model with its names (:class:`LinearModel`), its modes, and its files.

``dx/dt = A dx + B du``, ``dy = C dx + D du``: deviations from the operating point, which
the model carries (the system's state ``x0``, the input values ``u0``, the output values
``y0`` and the minimal states' derivative ``xdot0``, zero at an equilibrium). Every
matrix goes with the names of its rows and columns, in Python, in the printed mode table
and in the files:

* ``.mat`` (:func:`scipy.io.savemat`, MATLAB 5 format): the matrices ``A, B, C, D``, the
  names as cell arrays of strings ``StateName, InputName, OutputName`` (the
  ``ss`` property names of MATLAB's Control System Toolbox: ``sys = ss(A, B, C, D,
  'StateName', StateName, 'InputName', InputName, 'OutputName', OutputName)``), the
  operating point ``x0, u0, y0, xdot0``, ``x0_names`` (the system's own states) and the
  chart ``chart`` (a string);
* ``.npz`` (:func:`numpy.savez`): the same arrays, names as string arrays.

:meth:`LinearModel.to_control` gives a ``control.StateSpace`` (python-control, the
``linear`` extra) with the names (``.`` written ``_``, which python-control reserves).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import TitopError

#: eigenvalues below this times the largest one (and below 1e-6) count as zero
ZERO = 1e-7
#: eigenvalues closer to each other than this times the largest one (and 1e-5) are one cluster: a
#: defective eigenvalue of multiplicity m comes out of ``eig`` split by about (rounding error)^(1/m)
CLUSTER = 1e-5


def python_control():
    """The ``control`` module (python-control, the ``linear`` extra), or a one-line error."""
    try:
        import control
    except ImportError:
        raise TitopError("python-control is not installed: pip install 'titop-fmu[linear]'") from None
    return control


def control_names(names) -> list:
    """Signal names as python-control takes them: every ``.`` written ``_`` and nothing else
    changed (python-control refuses ``.`` in a name: it is its ``subsystem.signal``):
    ``balloon.ext.w[2]`` is ``balloon_ext_w[2]``. Two names that would be written the same
    (``a_b.c``, ``a.b_c``) are an error: the mapping is one to one."""
    out = [n.replace(".", "_") for n in names]
    if len(set(out)) < len(out):
        same = next(n for n in out if out.count(n) > 1)
        raise TitopError(f"the names {', '.join(n for n, c in zip(names, out) if c == same)} are all {same!r} for "
                         "python-control ('.' written '_'): rename a unit")
    return out


@dataclass
class Mode:
    """One eigenvalue of ``A`` (of a complex pair, the one with ``Im >= 0``)."""

    eigenvalue: complex
    frequency: float         # natural frequency |lambda| [rad/s]
    damping: float           # -Re(lambda) / |lambda| (1 for a real negative pole; nan at zero)
    dominant: list           # [(state name, participation share)], largest first
    multiplicity: int = 1    # 2 for a complex pair

    @property
    def hz(self) -> float:
        return self.frequency / (2 * np.pi)


@dataclass
class LinearModel:
    """``A, B, C, D`` with the names of states, inputs and outputs, and the operating point."""

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    states: list
    inputs: list
    outputs: list
    x0: np.ndarray = field(default_factory=lambda: np.zeros(0))      # the system's state there
    u0: np.ndarray = field(default_factory=lambda: np.zeros(0))      # the inputs' values
    y0: np.ndarray = field(default_factory=lambda: np.zeros(0))      # the outputs' values
    xdot0: np.ndarray = field(default_factory=lambda: np.zeros(0))   # minimal states' derivative
    x0_names: list = field(default_factory=list)                     # the system's state names
    chart: str = ""

    @property
    def eigenvalues(self) -> np.ndarray:
        return np.linalg.eigvals(self.A) if len(self.A) else np.zeros(0, dtype=complex)

    def modes(self, zero: float = ZERO) -> list:
        """The modes, slowest first: one :class:`Mode` per real eigenvalue or complex pair,
        the dominant states by participation (:func:`participation`: checked invariant
        subspaces, independent of the states' units and scales, exact at repeated and
        defective eigenvalues). Eigenvalues with ``|lambda| <= zero * max(1, max |lambda|)``
        are zero (rigid-body and neutral modes); eigenvalues within ``CLUSTER * max(1, max
        |lambda|)`` of one another are one cluster (a repeated or defective eigenvalue), whose
        modes share its participation."""
        if not len(self.A):
            return []
        lam = np.linalg.eigvals(self.A)
        scale = max(1.0, float(np.max(np.abs(lam))))
        tol = zero * scale
        lam = np.where(np.abs(lam) <= tol, 0j, lam)
        groups = clusters(lam, CLUSTER * scale)
        share = participation(self.A, lam, groups)
        of = {i: k for k, g in enumerate(groups) for i in g}
        out = []
        for i in np.argsort(np.abs(lam), kind="stable"):
            l = lam[i]
            if l.imag < -tol:                        # the pair is counted with its Im > 0 member
                continue
            pair = l.imag > tol
            p, k = share[of[i]], len(groups[of[i]])
            order = np.argsort(-p, kind="stable")
            dominant = [(self.states[j], float(p[j])) for j in order[:3 * k] if p[j] >= 0.1 / k or j == order[0]]
            mag = abs(l)
            damping = -l.real / mag + 0.0 if mag else float("nan")     # + 0.0: no negative zero
            out.append(Mode(complex(l), mag, damping, dominant, 2 if pair else 1))
        return out

    def shape(self, mode: Mode) -> np.ndarray:
        """The shape of ``mode``: a vector ``v`` with ``A v = lambda v`` (complex for a pair),
        taken from the null space of ``A - lambda I`` (its right singular vector of the smallest
        singular value: a defective or repeated eigenvalue has one too) and checked,
        ``|(A - lambda I) v| <= 1e-8 |A|``; scaled so that its largest component is 1."""
        M = self.A - mode.eigenvalue * np.eye(len(self.A))
        v = np.linalg.svd(M)[2][-1].conj()
        residual = np.linalg.norm(M @ v)
        if residual > 1e-8 * max(1.0, np.linalg.norm(self.A, 2)):
            raise TitopError(f"no vector of A for its eigenvalue {mode.eigenvalue:.6g} (residual {residual:.2g})")
        v = v / v[np.argmax(np.abs(v))]
        return v if mode.multiplicity == 2 else v.real

    def count_zero(self, zero: float = ZERO) -> int:
        """The number of (near-)zero eigenvalues (:meth:`modes`' threshold)."""
        lam = self.eigenvalues
        return int(np.sum(np.abs(lam) <= zero * max(1.0, float(np.max(np.abs(lam), initial=0.0)))))

    def modes_table(self, zero: float = ZERO) -> str:
        """The modes as a text table: eigenvalue, natural frequency [Hz, rad/s], damping and
        the dominant states (participation share)."""
        rows = [f"{'eigenvalue':>26}  {'f [Hz]':>10}  {'w [rad/s]':>10}  {'damping':>8}  dominant states",
                f"{'-' * 26}  {'-' * 10}  {'-' * 10}  {'-' * 8}  {'-' * 15}"]
        modes = self.modes(zero)
        zeros = [m for m in modes if m.frequency == 0.0]
        if zeros:                               # the rigid-body and neutral modes, on one line
            states = list(dict.fromkeys(n for m in zeros for n, _ in m.dominant))
            rows.append(f"{f'0 (x{len(zeros)})':>26}  {0:10.5g}  {0:10.5g}  {'-':>8}  " + ", ".join(states))
        for m in modes:
            if m.frequency == 0.0:
                continue
            lam = m.eigenvalue
            text = f"{lam.real:.6g}" + (f" +/- {lam.imag:.6g}j" if m.multiplicity == 2 else "")
            damping = "-" if np.isnan(m.damping) else f"{m.damping:.4f}"
            dom = ", ".join(f"{n} ({s:.0%})" for n, s in m.dominant)
            rows.append(f"{text:>26}  {m.hz:10.5g}  {m.frequency:10.5g}  {damping:>8}  {dom}")
        n_zero = self.count_zero(zero)
        rows.append(f"{len(self.A)} states, {n_zero} zero eigenvalue(s) (|lambda| <= {zero:g} max(1, |lambda|max))")
        return "\n".join(rows)

    def to_control(self):
        """A ``control.StateSpace`` with the names, ``.`` written ``_`` (python-control reserves
        ``.`` for ``subsystem.signal``): ``balloon_ext_w[2]`` (the ``linear`` extra)."""
        control = python_control()
        return control.ss(self.A, self.B, self.C, self.D, states=control_names(self.states),
                          inputs=control_names(self.inputs), outputs=control_names(self.outputs))

    # -- files ---------------------------------------------------------------------------------
    def arrays(self) -> dict:
        """The model's arrays and names, as the files hold them."""
        return {"A": self.A, "B": self.B, "C": self.C, "D": self.D, "StateName": list(self.states),
                "InputName": list(self.inputs), "OutputName": list(self.outputs), "x0": self.x0,
                "u0": self.u0, "y0": self.y0, "xdot0": self.xdot0, "x0_names": list(self.x0_names),
                "chart": self.chart}

    def save(self, path):
        """Write the model to ``path``: ``.mat`` or ``.npz`` (the module docstring)."""
        save_arrays(path, self.arrays())

    @classmethod
    def load(cls, path) -> LinearModel:
        """The model written by :meth:`save`."""
        d = load_arrays(path)
        return cls(d["A"], d["B"], d["C"], d["D"], d["StateName"], d["InputName"], d["OutputName"],
                   d["x0"], d["u0"], d["y0"], d["xdot0"], d["x0_names"], d["chart"])


def clusters(lam, tol) -> list:
    """The eigenvalues ``lam`` in clusters (index arrays): those within ``tol`` of one another,
    by chains (a defective eigenvalue comes out of ``eig`` as a ring of radius about
    ``sqrt(eps |A|)``; a repeated one as close values)."""
    left, out = list(range(len(lam))), []
    while left:
        group, grow = [left.pop(0)], 0
        while grow < len(group):
            near = [j for j in left if abs(lam[j] - lam[group[grow]]) <= tol]
            group += near
            left = [j for j in left if j not in near]
            grow += 1
        out.append(np.array(sorted(group)))
    return out


def participation(A, lam, groups) -> list:
    """Per cluster ``groups`` (index arrays) of the eigenvalues ``lam`` of ``A``, the
    participation of each state: ``|diag P| / trace P``, ``P`` the spectral projector on the
    cluster's invariant subspace along the others'. For a simple eigenvalue ``P = v w^T / (w^T v)``
    (right and left eigenvectors), so these are the classical participation factors
    ``|v_i w_i|``; for a repeated or defective one (a free body's rigid-body modes: Jordan
    blocks, whose eigenvectors ``eig`` returns nearly parallel, ``inv(V)`` then meaningless, and
    whose left ones are orthogonal to the right ones) ``P`` is still well defined. ``P`` comes
    from the ordered Schur form ``A = Z [[T11, T12], [0, T22]] Z^H`` (the cluster in ``T11``):
    ``P = Z[:, :k] [I, -R] Z^H`` with ``T11 R - R T22 = -T12``, and it is checked (``A P = P A``,
    ``P P = P``); if the clusters are too close for that, the row energies of the cluster's
    orthonormal Schur basis stand in."""
    from scipy.linalg import schur
    from scipy.linalg.lapack import ztrsen, ztrsyl
    n = len(A)
    T0, Z0 = schur(np.asarray(A, dtype=complex), output="complex")
    cluster = np.empty(len(lam), dtype=int)
    for g, members in enumerate(groups):
        cluster[members] = g
    nearest = cluster[np.argmin(np.abs(np.diag(T0)[:, None] - np.asarray(lam)[None, :]), axis=1)]
    scale = max(1.0, np.linalg.norm(A, 1))
    out = []
    for g in range(len(groups)):
        T, Z, _w, k, _s, _sep, info = ztrsen((nearest == g).astype(np.int32), T0, Z0, job="N")
        R, f, info2 = ztrsyl(T[:k, :k], T[k:, k:], -T[:k, k:], isgn=-1) if k < n else (np.zeros((k, 0)), 1.0, 0)
        P = Z[:, :k] @ np.hstack([np.eye(k), -R / f]) @ Z.conj().T
        size = max(1.0, np.linalg.norm(P, 1))
        ok = not (info or info2) and np.all(np.isfinite(P)) and \
            np.linalg.norm(A @ P - P @ A, 1) <= 1e-8 * scale * size and np.linalg.norm(P @ P - P, 1) <= 1e-8 * size ** 2
        d = np.abs(np.diag(P)) if ok else np.sum(np.abs(Z[:, :k]) ** 2, axis=1)
        out.append(d / d.sum())
    return out


NAMES = ("StateName", "InputName", "OutputName", "x0_names")
#: the shapes of the matrices (rows, columns) by their names' keys, to restore empty ones
SHAPES = {"A": ("StateName", "StateName"), "B": ("StateName", "InputName"),
          "C": ("OutputName", "StateName"), "D": ("OutputName", "InputName")}


def save_arrays(path, d: dict):
    """``d`` (arrays, lists of names, strings) to ``.mat`` (names as cell arrays of strings)
    or ``.npz``; another suffix is an error."""
    path = Path(path)
    if path.suffix == ".mat":
        from scipy.io import savemat
        out = {}
        for k, v in d.items():
            if isinstance(v, list):
                cell = np.empty((len(v), 1), dtype=object)          # a column cell array of char
                cell[:, 0] = [str(s) for s in v]
                out[k] = cell
            else:
                out[k] = v
        savemat(path, out, do_compression=True, oned_as="column")
    elif path.suffix == ".npz":
        np.savez(path, **{k: np.array(v, dtype=str) if isinstance(v, list) else np.asarray(v)
                          for k, v in d.items()})
    else:
        raise TitopError(f"{path}: unknown format {path.suffix!r}; write .mat or .npz")


def load_arrays(path) -> dict:
    """What :func:`save_arrays` wrote: arrays, lists of names (the keys in :data:`NAMES`),
    strings."""
    path = Path(path)
    if path.suffix == ".mat":
        from scipy.io import loadmat
        raw = loadmat(path)
        d = {}
        for k, v in raw.items():
            if k.startswith("__"):
                continue
            if v.dtype == object:                                    # a cell array of strings
                d[k] = [str(np.ravel(c)[0]) if np.size(c) else "" for c in np.ravel(v)]
            elif v.dtype.kind == "U":
                d[k] = str(v[0]) if v.size else ""
            else:
                d[k] = v
        for k in ("x0", "u0", "y0", "xdot0", "grid"):
            if k in d and isinstance(d[k], np.ndarray) and d[k].ndim == 2 and 1 in d[k].shape:
                d[k] = d[k].ravel()
    elif path.suffix == ".npz":
        with np.load(path) as z:
            d = {k: z[k] for k in z.files}
        for k, v in d.items():
            if v.dtype.kind == "U":
                d[k] = v.tolist() if v.ndim else str(v)
    else:
        raise TitopError(f"{path}: unknown format {path.suffix!r}; read .mat or .npz")
    for k in NAMES:
        if k in d and not isinstance(d[k], list):
            d[k] = [] if np.size(d[k]) == 0 else [str(x) for x in np.ravel(d[k])]
    for k, (r, c) in SHAPES.items():                  # empty matrices come back as (0, 0) or (1, 0)
        if k in d and d[k].size == 0:
            lead = d[k].shape[:-2] if d[k].ndim > 2 else ()
            d[k] = np.zeros(lead + (len(d[r]), len(d[c])))
    return d
