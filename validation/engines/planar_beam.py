"""Planar geometrically exact Euler-Bernoulli beams on a rigid hub, in the hub's frame (numpy/scipy).

An engine of its own for the flexible-body references, written independently of Exudyn and of
the TITOP blocks: the spin-up beam (the hub's angle prescribed) and a free-floating hub with beam
appendages (the hub free in the plane, a torque on it).

Kinematics. The hub frame turns by ``theta`` about z; its origin O (the hub's centre of mass) is at
``x_h`` in the inertial frame. A beam's material point at arc length ``s`` of the reference is at
``p(s)`` in the hub frame and at ``r = x_h + R(theta) p`` in the inertial one. ``p`` is
interpolated by cubic Hermite elements (nodal positions and slopes in the hub frame: four
coordinates per node, ``Q``), and the root is clamped to the hub: the root node's position and the
direction of its slope are fixed in the hub frame, its stretch is free.

Strains (Kirchhoff rod, extensible, no shear, no rotary inertia):

    eps = |p'| - 1,          kappa = (p' x p'') / |p'|^2        (material curvature)
    U   = 1/2 int (EA eps^2 + EI kappa^2) ds

``kappa`` is the rate of the tangent's angle along the reference arc length, exact for any
rotation. The same measures with ``linear=True``: ``eps = u'``, ``kappa = v''`` (constant
stiffness: a floating-frame model without geometric stiffening).

Inertia. With ``J = [[0, -1], [1, 0]]``, ``R^T r'' = b + p'' + 2 w J p' + w' J p - w^2 p``
(``b = R^T x_h''``, ``w = theta'``); the virtual work of the inertia forces gives, per beam,

    M Q'' + 2 w G Q' + w' G Q - w^2 M Q + Sbar^T b + f(Q) = 0
    M = int rhoA S^T S,   G = int rhoA S^T J S,   Sbar = int rhoA S

and the hub's equations (free hub):

    m_h b + sum (m_b b + Sbar Q'' + 2 w J Sbar Q' + w' J Sbar Q - w^2 Sbar Q) = R^T F
    J_h w' + sum ((J Sbar Q)^T b + Q^T G^T Q'' + 2 w Q^T M Q' + w' Q^T M Q) = tau

The beams' ``M`` is constant: each right-hand side is a Cholesky back-substitution and a 3 x 3
solve (the hub's Schur complement). Integrated by scipy's Radau IIA (order 5, error-controlled).
"""

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
from scipy.integrate import solve_ivp

J2 = np.array([[0.0, -1.0], [1.0, 0.0]])


@dataclass(frozen=True)
class Beam:
    """A uniform planar beam: length [m], EA [N], EI [N m^2], rhoA [kg/m]."""
    length: float
    EA: float
    EI: float
    rhoA: float


def hermite(xi, h):
    """Cubic Hermite shape functions on an element of length h at xi in [0, 1]: N, N', N''
    (derivatives along the arc length), each (len(xi), 4) for [r0, r0', r1, r1']."""
    xi = np.asarray(xi, dtype=float)
    n = np.stack([1 - 3 * xi**2 + 2 * xi**3, h * (xi - 2 * xi**2 + xi**3),
                  3 * xi**2 - 2 * xi**3, h * (-xi**2 + xi**3)], axis=-1)
    d1 = np.stack([-6 * xi + 6 * xi**2, h * (1 - 4 * xi + 3 * xi**2),
                   6 * xi - 6 * xi**2, h * (-2 * xi + 3 * xi**2)], axis=-1) / h
    d2 = np.stack([-6 + 12 * xi, h * (-4 + 6 * xi), 6 - 12 * xi, h * (-2 + 6 * xi)], axis=-1) / h**2
    return n, d1, d2


def expand(n):
    """(g, 4) scalar shape functions -> (g, 2, 8) matrices S with r = S q_e (q_e = [x0, y0,
    x0', y0', x1, y1, x1', y1'])."""
    s = np.zeros(n.shape[:-1] + (2, 8))
    s[..., 0, 0::2] = n
    s[..., 1, 1::2] = n
    return s


@dataclass
class BeamMesh:
    """One beam of ``elements`` equal elements, its root at ``a`` along the hub's x axis times
    ``direction`` (+1 or -1), pointing along direction * x."""
    beam: Beam
    elements: int
    a: float = 0.0
    direction: float = 1.0
    gauss: int = 6
    linear: bool = False
    M: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        b, n = self.beam, self.elements
        self.h = b.length / n
        self.nq = 4 * (n + 1)
        s = np.linspace(0.0, b.length, n + 1)
        q = np.zeros((n + 1, 4))
        q[:, 0] = self.direction * (self.a + s)
        q[:, 2] = self.direction
        self.QX = q.ravel()                                # the straight reference
        xg, wg = np.polynomial.legendre.leggauss(self.gauss)
        self.xi, self.w = (xg + 1) / 2, wg / 2 * self.h    # points in [0, 1], weights in metres
        n0, n1, n2 = hermite(self.xi, self.h)
        self.S, self.S1, self.S2 = expand(n0), expand(n1), expand(n2)
        self.dofs = 4 * np.arange(n)[:, None] + np.arange(8)[None, :]   # element -> global
        me = b.rhoA * np.einsum("g,gia,gib->ab", self.w, self.S, self.S)
        ge = b.rhoA * np.einsum("g,gia,ij,gjb->ab", self.w, self.S, J2, self.S)
        se = b.rhoA * np.einsum("g,gia->ia", self.w, self.S)
        self.M, self.G, self.Sbar = (np.zeros((self.nq, self.nq)), np.zeros((self.nq, self.nq)),
                                     np.zeros((2, self.nq)))
        for d in self.dofs:
            self.M[np.ix_(d, d)] += me
            self.G[np.ix_(d, d)] += ge
            self.Sbar[:, d] += se
        self.mass = b.rhoA * b.length
        # clamped root: the root node's x, y and y' are those of the reference
        self.free = np.setdiff1d(np.arange(self.nq), [0, 1, 3])
        if self.linear:
            self.K = self._linear_stiffness()

    def _linear_stiffness(self):
        b = self.beam
        ex, ey = np.array([1.0, 0.0]), np.array([0.0, 1.0])
        ke = (b.EA * np.einsum("g,ga,gb->ab", self.w, self.S1.transpose(0, 2, 1) @ ex,
                               self.S1.transpose(0, 2, 1) @ ex)
              + b.EI * np.einsum("g,ga,gb->ab", self.w, self.S2.transpose(0, 2, 1) @ ey,
                                 self.S2.transpose(0, 2, 1) @ ey))
        k = np.zeros((self.nq, self.nq))
        for d in self.dofs:
            k[np.ix_(d, d)] += ke
        return k

    # -- strains, internal forces, energy ------------------------------------------------------
    def strains(self, Q):
        """eps, kappa at every (element, Gauss point), and p', p''. From the displacement
        Q - QX, so that eps = (|p'|^2 - 1) / (|p'| + 1) has no cancellation (the reference's
        p' = [direction, 0] and p'' = 0 exactly)."""
        de = (Q - self.QX)[self.dofs]                              # (n, 8)
        u1 = np.einsum("gia,na->ngi", self.S1, de)
        r2 = np.einsum("gia,na->ngi", self.S2, de)
        r1 = u1 + np.array([self.direction, 0.0])
        nn = r1[..., 0] ** 2 + r1[..., 1] ** 2
        ln = np.sqrt(nn)
        eps = (2 * self.direction * u1[..., 0] + u1[..., 0] ** 2 + u1[..., 1] ** 2) / (ln + 1.0)
        c = r1[..., 0] * r2[..., 1] - r1[..., 1] * r2[..., 0]
        return eps, c / nn, r1, r2, nn

    def internal_force(self, Q):
        """f(Q) = dU/dQ (the generalized elastic forces)."""
        b = self.beam
        if self.linear:
            return self.K @ (Q - self.QX)
        eps, kap, r1, r2, nn = self.strains(Q)
        ln = np.sqrt(nn)
        # dU/dp' and dU/dp'' at each point
        dkap_r1 = np.stack([r2[..., 1], -r2[..., 0]], -1) / nn[..., None] - 2 * (kap / nn)[..., None] * r1
        dkap_r2 = np.stack([-r1[..., 1], r1[..., 0]], -1) / nn[..., None]
        g1 = (b.EA * eps / ln)[..., None] * r1 + (b.EI * kap)[..., None] * dkap_r1
        g2 = (b.EI * kap)[..., None] * dkap_r2
        fe = np.einsum("g,ngi,gia->na", self.w, g1, self.S1) + np.einsum("g,ngi,gia->na", self.w, g2, self.S2)
        f = np.zeros(self.nq)
        np.add.at(f, self.dofs, fe)
        return f

    def strain_energy(self, Q):
        b = self.beam
        if self.linear:
            d = Q - self.QX
            return 0.5 * d @ self.K @ d
        eps, kap, *_ = self.strains(Q)
        return 0.5 * np.einsum("g,ng->", self.w, b.EA * eps**2 + b.EI * kap**2)

    def tip(self, Q):
        """The tip node's position in the hub frame."""
        return Q[-4:-2]


class Hub:
    """A rigid hub carrying beams; its angle prescribed (``theta(t)`` -> (theta, w, w')) or free
    (``mass``, ``inertia`` about O and a torque ``tau(t)``)."""

    def __init__(self, meshes, theta=None, mass=None, inertia=None, tau=None):
        self.meshes = list(meshes)
        self.theta, self.mass, self.inertia, self.tau = theta, mass, inertia, tau
        self.free_hub = theta is None
        self.nf = [len(m.free) for m in self.meshes]
        self.offsets = np.concatenate([[0], np.cumsum(self.nf)])
        self.chol = [sla.cho_factor(m.M[np.ix_(m.free, m.free)]) for m in self.meshes]
        self.nh = 3 if self.free_hub else 0                # hub coordinates x, y, theta
        self.n = self.nh + self.offsets[-1]

    # state y = [z, z'], z = [x_h, y_h, theta (free hub only), q_free of each beam]
    def full(self, m, k, qf):
        Q = m.QX.copy()
        Q[m.free] += qf
        return Q

    def split(self, z):
        return [z[self.nh + self.offsets[k]: self.nh + self.offsets[k + 1]] for k in range(len(self.meshes))]

    def rhs(self, t, y):
        n = self.n
        z, zd = y[:n], y[n:]
        qs, qds = self.split(z), self.split(zd)
        Qs = [self.full(m, k, q) for k, (m, q) in enumerate(zip(self.meshes, qs))]
        Qds = []
        for m, qd in zip(self.meshes, qds):
            v = np.zeros(m.nq)
            v[m.free] = qd
            Qds.append(v)
        if not self.free_hub:
            th, w, wd = self.theta(t)
            acc = []
            for k, (m, Q, Qd) in enumerate(zip(self.meshes, Qs, Qds)):
                r = -(2 * w * m.G @ Qd + wd * m.G @ Q - w * w * m.M @ Q + m.internal_force(Q))
                acc.append(sla.cho_solve(self.chol[k], r[m.free]))
            return np.concatenate([zd, np.concatenate(acc)])
        # free hub: unknowns b (2), w' (1), q'' of each beam; Schur complement on the hub's 3
        th, w = z[2], zd[2]
        R = rot(th)
        A = np.zeros((3, 3))
        rhs_h = np.zeros(3)
        A[:2, :2] = self.mass * np.eye(2)
        A[2, 2] = self.inertia
        rhs_h[:2] = R.T @ np.zeros(2)
        rhs_h[2] = self.tau(t)
        parts = []
        for k, (m, Q, Qd) in enumerate(zip(self.meshes, Qs, Qds)):
            fr, JSQ = m.free, J2 @ m.Sbar @ Q
            # beam row: M Q'' = r0 - Sbar^T b - w' G Q
            r0 = -(2 * w * m.G @ Qd - w * w * m.M @ Q + m.internal_force(Q))
            C = np.column_stack([m.Sbar.T, m.G @ Q])[fr]   # (nf, 3): coefficients of [b, w']
            X = sla.cho_solve(self.chol[k], np.column_stack([r0[fr], C]))
            x0, xc = X[:, 0], X[:, 1:]                      # q'' = x0 - xc [b; w']
            # hub rows: coefficients of Q'' (only free entries move)
            H = np.vstack([m.Sbar, (m.G @ Q)[None, :]])[:, fr]   # (3, nf): [Sbar; (G Q)^T]
            # inertia of the beam's own rigid part and the velocity terms
            A[:2, :2] += m.mass * np.eye(2)
            A[:2, 2] += JSQ
            A[2, :2] += JSQ
            A[2, 2] += Q @ m.M @ Q
            rhs_h[:2] -= 2 * w * J2 @ m.Sbar @ Qd - w * w * m.Sbar @ Q
            rhs_h[2] -= 2 * w * Q @ m.M @ Qd
            A -= H @ xc
            rhs_h -= H @ x0
            parts.append((x0, xc))
        bw = np.linalg.solve(A, rhs_h)
        acc = [x0 - xc @ bw for x0, xc in parts]
        xdd = R @ bw[:2]
        return np.concatenate([zd, xdd, [bw[2]], np.concatenate(acc)])

    # -- outputs -------------------------------------------------------------------------------
    def hub_state(self, t, y):
        n = self.n
        if self.free_hub:
            return y[:2], y[2], y[n:n + 2], y[n + 2]
        th, w, _ = self.theta(t)
        return np.zeros(2), th, np.zeros(2), w

    def beams(self, y):
        n = self.n
        qs, qds = self.split(y[:n]), self.split(y[n:])
        out = []
        for k, m in enumerate(self.meshes):
            Qd = np.zeros(m.nq)
            Qd[m.free] = qds[k]
            out.append((m, self.full(m, k, qs[k]), Qd))
        return out

    def angular_momentum(self, t, y):
        """H_z about the inertial origin."""
        xh, th, vh, w = self.hub_state(t, y)
        R = rot(th)
        h = (self.inertia or 0.0) * w + (self.mass or 0.0) * cross(xh, vh)
        for m, Q, Qd in self.beams(y):
            p = np.einsum("gia,na->ngi", m.S, Q[m.dofs])
            pd = np.einsum("gia,na->ngi", m.S, Qd[m.dofs])
            r = xh + p @ R.T
            v = vh + (pd + w * p @ J2.T) @ R.T
            h += m.beam.rhoA * np.einsum("g,ng->", m.w, cross(r, v))
        return h

    def energy(self, t, y):
        """Kinetic + strain energy."""
        xh, th, vh, w = self.hub_state(t, y)
        R = rot(th)
        e = 0.5 * (self.inertia or 0.0) * w * w + 0.5 * (self.mass or 0.0) * vh @ vh
        for m, Q, Qd in self.beams(y):
            p = np.einsum("gia,na->ngi", m.S, Q[m.dofs])
            pd = np.einsum("gia,na->ngi", m.S, Qd[m.dofs])
            v = vh + (pd + w * p @ J2.T) @ R.T
            e += 0.5 * m.beam.rhoA * np.einsum("g,ngi->", m.w, v * v) + m.strain_energy(Q)
        return e

    def simulate(self, t_stop, dt, rtol=1e-10, atol=1e-12, breaks=(), method="Radau"):
        """Integrate from rest at the reference; the output every dt. Integration restarts at
        ``breaks`` (a discontinuity of the input); returns (t, Y) with Y (len(t), 2n)."""
        t_out = np.round(np.arange(0.0, t_stop + dt / 2, dt), 12)
        edges = [0.0] + [b for b in breaks if 0 < b < t_stop] + [t_stop]
        y0 = np.zeros(2 * self.n)
        Y = np.zeros((len(t_out), 2 * self.n))
        stats = {"nfev": 0, "njev": 0, "nlu": 0, "steps": 0}
        for t0, t1 in zip(edges[:-1], edges[1:]):
            sel = (t_out >= t0) & (t_out <= t1)
            sol = solve_ivp(self.rhs, (t0, t1), y0, method=method, t_eval=t_out[sel],
                            rtol=rtol, atol=atol)
            if not sol.success:
                raise RuntimeError(sol.message)
            Y[sel] = sol.y.T
            y0 = sol.y[:, -1]
            for k in ("nfev", "njev", "nlu"):
                stats[k] += int(getattr(sol, k))
            stats["steps"] += len(sol.t)
        return t_out, Y, stats


def rot(th):
    c, s = np.cos(th), np.sin(th)
    return np.array([[c, -s], [s, c]])


def cross(a, b):
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
