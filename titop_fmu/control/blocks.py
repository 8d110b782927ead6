"""Control blocks: the units a system file adds around a plant (``model = "state_space"``,
``"pid"``, ``"gain"``, ``"sum"``, ``"saturation"``, ``"rate_limiter"``, ``"zoh"``,
``"sensor"``).

A block has input ports and output ports (``u``, ``y``; ``u1 .. un`` for a sum), continuous
states ``x`` (integrated with the plant's), and, when it has a ``sample_time``, discrete
states ``d`` updated at the sample instants ``t = offset + k sample_time`` (:meth:`update`)
and outputs held between them. Its outputs are :meth:`output` ``(t, x, d, u)``; whether
they read ``u`` directly (direct feedthrough, :attr:`feedthrough`) decides where it sits
in an evaluation and whether a loop through it is algebraic.

Discrete semantics (Simulink's, the issue's contract): at ``t_k`` the block samples ``u_k``,
outputs ``y_k = C x_k + D u_k`` and holds it until ``t_{k+1}``, and updates
``x_{k+1} = A x_k + B u_k``. Its discrete state is ``d = [x_k, y_held]``.
"""

from __future__ import annotations

import math
import numpy as np

from ..errors import ParameterError
from .noise import gaussian

#: the models of this module, with the one-line description ``titop-fmu models`` shows
MODELS = {
    "state_space": "linear state space x' = A x + B u, y = C x + D u (continuous), or x[k+1] = A x[k] + B u[k], "
                   "y[k] = C x[k] + D u[k] held (with sample_time)",
    "gain": "static gain y = K u",
    "sum": "weighted sum y = s1 u1 + s2 u2 + ... (signs)",
    "saturation": "y = u clipped to [lower, upper]",
    "rate_limiter": "y follows u with its rate clipped to [falling, rising] (time constant Td)",
    "pid": "PID on the error u: kp u + ki int u + kd s/(tf s + 1) u, output limits with back-calculation anti-windup",
    "zoh": "sample-and-hold: y = u(t_k) held over each sample period",
    "sensor": "a measured quantity (a unit output, or a body's inertial quantity), sampled, with bias and seeded noise",
}


class ControlBlock:
    """A control block (see the module docstring). Subclasses set the ports and implement
    the parts they have."""

    inputs: dict = {"u": 1}
    outputs: dict = {"y": 1}
    n_x = 0
    sample_time: float | None = None
    offset = 0.0
    feedthrough = True
    #: its kind in the C module of the standalone FMUs (``fmu/csrc/control.c``: the enum's name)
    c_kind = None

    @property
    def n_u(self) -> int:
        return sum(self.inputs.values())

    @property
    def n_y(self) -> int:
        return sum(self.outputs.values())

    @property
    def discrete(self) -> bool:
        return self.sample_time is not None

    def x0(self) -> np.ndarray:
        return np.zeros(self.n_x)

    def d0(self) -> np.ndarray:
        """The discrete state before the first sample."""
        return np.zeros(0)

    def output(self, t, x, d, u) -> np.ndarray:
        raise NotImplementedError

    def derivative(self, t, x, d, u) -> np.ndarray:
        return np.zeros(0)

    def update(self, t, k, x, d, u) -> np.ndarray:
        """The discrete state after the sample ``k`` at ``t``."""
        return d

    def samples(self, t0: float, t1: float) -> np.ndarray:
        """The sample instants in ``[t0, t1]`` (``offset + k sample_time``, computed as such)."""
        if not self.discrete:
            return np.zeros(0)
        k0 = max(0, math.ceil((t0 - self.offset) / self.sample_time - 1e-9))
        k1 = math.floor((t1 - self.offset) / self.sample_time + 1e-9)
        return np.array([self.offset + k * self.sample_time for k in range(k0, k1 + 1)])

    def sample_index(self, t: float) -> int:
        return int(round((t - self.offset) / self.sample_time))

    def linear(self, t, x, d, u) -> tuple:
        """``(A, B, C, D)`` of the block's continuous dynamics about ``(x, u)``: exact for a
        linear block, the local slopes of a saturation."""
        raise NotImplementedError

    def c_data(self) -> list:
        """Its data as ``fmu/csrc/control.c`` reads it (its kind's comment there)."""
        return []


def _matrix(name, value, ndim=2) -> np.ndarray:
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(name, f"not a matrix of numbers: {value!r}") from None
    if ndim == 2 and a.ndim == 1:
        a = a.reshape(1, -1)
    if a.ndim == 0 and ndim == 2:
        a = a.reshape(1, 1)
    if a.ndim != ndim:
        raise ParameterError(name, f"expected a {'matrix' if ndim == 2 else 'vector'}, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ParameterError(name, "every entry must be finite")
    return a


def _sample(where, sample_time, offset):
    if sample_time is None:
        return None, 0.0
    sample_time = float(sample_time)
    if not (math.isfinite(sample_time) and sample_time > 0):
        raise ParameterError(f"{where}.sample_time", f"must be > 0, got {sample_time:g}")
    offset = float(offset)
    if not (math.isfinite(offset) and offset >= 0):
        raise ParameterError(f"{where}.offset", f"must be >= 0, got {offset:g}")
    return sample_time, offset


class StateSpace(ControlBlock):
    """``x' = A x + B u``, ``y = C x + D u``; with a ``sample_time``, the discrete
    ``x[k+1] = A x[k] + B u[k]``, ``y[k] = C x[k] + D u[k]`` held."""

    def __init__(self, A, B, C, D, x0=None, sample_time=None, offset=0.0, where="state_space"):
        B = _matrix(f"{where}.B", B)
        C = _matrix(f"{where}.C", C)
        n = B.shape[0] if B.size else C.shape[1]
        A = _matrix(f"{where}.A", A).reshape(n, n) if np.size(A) == n * n else _matrix(f"{where}.A", A)
        D = _matrix(f"{where}.D", D) if D is not None else np.zeros((C.shape[0], B.shape[1]))
        if A.shape != (n, n):
            raise ParameterError(f"{where}.A", f"expected {n}x{n} (B has {n} rows), got {A.shape}")
        if C.shape[1] != n:
            raise ParameterError(f"{where}.C", f"expected {n} columns (the states), got {C.shape}")
        if D.shape != (C.shape[0], B.shape[1]):
            raise ParameterError(f"{where}.D", f"expected {C.shape[0]}x{B.shape[1]} (outputs x inputs), got {D.shape}")
        self.A, self.B, self.C, self.D = A, B, C, D
        self.x_init = np.zeros(n) if x0 is None else _matrix(f"{where}.x0", x0, 1)
        if self.x_init.shape != (n,):
            raise ParameterError(f"{where}.x0", f"expected {n} values, got {self.x_init.shape}")
        self.sample_time, self.offset = _sample(where, sample_time, offset)
        self.inputs, self.outputs = {"u": B.shape[1]}, {"y": C.shape[0]}
        self.n_x = 0 if self.discrete else n
        self.feedthrough = bool(np.any(D))

    def x0(self):
        return np.zeros(0) if self.discrete else self.x_init.copy()

    def d0(self):
        if not self.discrete:
            return np.zeros(0)
        return np.concatenate([self.x_init, self.C @ self.x_init])       # y held before the first sample

    def output(self, t, x, d, u):
        if self.discrete:
            return d[len(self.x_init):]
        return self.C @ x + self.D @ u

    def derivative(self, t, x, d, u):
        return self.A @ x + self.B @ u

    def update(self, t, k, x, d, u):
        n = len(self.x_init)
        xk = d[:n]
        return np.concatenate([self.A @ xk + self.B @ u, self.C @ xk + self.D @ u])

    def linear(self, t, x, d, u):
        return self.A, self.B, self.C, self.D

    c_kind = "TITOP_STATE_SPACE"

    def c_data(self):
        return np.concatenate([m.ravel() for m in (self.A, self.B, self.C, self.D)]).tolist()


class Gain(ControlBlock):
    """``y = K u``."""

    def __init__(self, K, where="gain"):
        self.K = _matrix(f"{where}.K", K)
        self.inputs, self.outputs = {"u": self.K.shape[1]}, {"y": self.K.shape[0]}
        self.feedthrough = bool(np.any(self.K))

    def output(self, t, x, d, u):
        return self.K @ u

    c_kind = "TITOP_GAIN"

    def c_data(self):
        return self.K.ravel().tolist()

    def linear(self, t, x, d, u):
        return np.zeros((0, 0)), np.zeros((0, self.n_u)), np.zeros((self.n_y, 0)), self.K


class Sum(ControlBlock):
    """``y = sum_i signs[i] u_i`` over the ports ``u1 .. un`` of ``size`` each."""

    def __init__(self, signs=(1.0, 1.0), size=1, where="sum"):
        self.signs = _matrix(f"{where}.signs", signs, 1)
        if len(self.signs) < 1:
            raise ParameterError(f"{where}.signs", "give one sign (or weight) per input, e.g. [1, -1]")
        self.size = _size(where, size)
        self.inputs = {f"u{i + 1}": self.size for i in range(len(self.signs))}
        self.outputs = {"y": self.size}

    def output(self, t, x, d, u):
        return self.signs @ np.reshape(u, (len(self.signs), self.size))

    c_kind = "TITOP_SUM"

    def c_data(self):
        return self.signs.tolist()

    def linear(self, t, x, d, u):
        return (np.zeros((0, 0)), np.zeros((0, self.n_u)), np.zeros((self.n_y, 0)),
                np.kron(self.signs.reshape(1, -1), np.eye(self.size)))


def _size(where, size) -> int:
    if int(size) != size or size < 1:
        raise ParameterError(f"{where}.size", f"must be a positive integer, got {size}")
    return int(size)


def _limits(where, lower, upper, size):
    lo = np.broadcast_to(np.asarray(lower, dtype=float), (size,)).copy()
    hi = np.broadcast_to(np.asarray(upper, dtype=float), (size,)).copy()
    if np.any(np.isnan(lo)) or np.any(np.isnan(hi)) or np.any(lo > hi):
        raise ParameterError(f"{where}.limits", f"need lower <= upper, got {lo.tolist()} and {hi.tolist()}")
    return lo, hi


class Saturation(ControlBlock):
    """``y = min(max(u, lower), upper)``, component by component."""

    def __init__(self, lower, upper, size=1, where="saturation"):
        self.size = _size(where, size)
        self.lower, self.upper = _limits(where, lower, upper, self.size)
        self.inputs, self.outputs = {"u": self.size}, {"y": self.size}

    def output(self, t, x, d, u):
        return np.minimum(np.maximum(u, self.lower), self.upper)

    c_kind = "TITOP_SATURATION"

    def c_data(self):
        return self.lower.tolist() + self.upper.tolist()

    def linear(self, t, x, d, u):
        inside = ((u > self.lower) & (u < self.upper)).astype(float)
        return np.zeros((0, 0)), np.zeros((0, self.size)), np.zeros((self.size, 0)), np.diag(inside)


class RateLimiter(ControlBlock):
    """``y' = min(max((u - y) / Td, falling), rising)``: ``y`` follows ``u`` with the time
    constant ``Td`` and its rate clipped (Modelica's ``Nonlinear.SlewRateLimiter``)."""

    feedthrough = False

    def __init__(self, rising, falling=None, Td=1e-3, y0=0.0, where="rate_limiter"):
        self.rising = float(rising)
        self.falling = -self.rising if falling is None else float(falling)
        self.Td, self.y_init = float(Td), float(y0)
        if not self.rising > 0:
            raise ParameterError(f"{where}.rising", f"must be > 0, got {self.rising:g}")
        if not self.falling < 0:
            raise ParameterError(f"{where}.falling", f"must be < 0, got {self.falling:g}")
        if not self.Td > 0:
            raise ParameterError(f"{where}.Td", f"must be > 0, got {self.Td:g}")
        self.n_x = 1

    def x0(self):
        return np.array([self.y_init])

    c_kind = "TITOP_RATE_LIMITER"

    def c_data(self):
        return [self.rising, self.falling, self.Td]

    def output(self, t, x, d, u):
        return x.copy()

    def derivative(self, t, x, d, u):
        return np.clip((u - x) / self.Td, self.falling, self.rising)

    def linear(self, t, x, d, u):
        rate = (u[0] - x[0]) / self.Td
        slope = 1.0 / self.Td if self.falling < rate < self.rising else 0.0
        return np.array([[-slope]]), np.array([[slope]]), np.eye(1), np.zeros((1, 1))


class PID(ControlBlock):
    """``v = kp e + x_i + kd (e - x_f) / tf``, ``y = min(max(v, lower), upper)`` of the error
    ``e = u``: the integral ``x_i' = ki e + (y - v) / tt`` (back-calculation anti-windup,
    Åström & Hägglund; ``tt`` defaults to ``sqrt(kd / ki)``, or ``kp / ki`` without ``kd``),
    the filtered derivative ``x_f' = (e - x_f) / tf``."""

    def __init__(self, kp=0.0, ki=0.0, kd=0.0, tf=None, limits=None, tt=None, where="pid"):
        self.kp, self.ki, self.kd = float(kp), float(ki), float(kd)
        for name in ("kp", "ki", "kd"):
            if not math.isfinite(getattr(self, name)):
                raise ParameterError(f"{where}.{name}", "must be finite")
        if self.kd and (tf is None or not float(tf) > 0):
            raise ParameterError(f"{where}.tf", "a derivative action needs its filter time constant tf > 0")
        self.tf = float(tf) if tf is not None else 1.0
        if limits is None:
            self.lower, self.upper = np.array([-np.inf]), np.array([np.inf])
        else:
            if np.shape(limits) != (2,):
                raise ParameterError(f"{where}.limits", f"expected [lower, upper], got {limits!r}")
            self.lower, self.upper = _limits(where, limits[0], limits[1], 1)
        limited = np.isfinite(self.lower[0]) or np.isfinite(self.upper[0])
        if tt is None and limited and self.ki:
            tt = math.sqrt(self.kd / self.ki) if self.kd and self.kd / self.ki > 0 else \
                (self.kp / self.ki if self.kp and self.kp / self.ki > 0 else None)
            if tt is None:
                raise ParameterError(f"{where}.tt", "give the anti-windup time constant tt > 0 (no default "
                                     "without kp or kd of the sign of ki)")
        self.tt = float(tt) if tt is not None else math.inf
        if not self.tt > 0:
            raise ParameterError(f"{where}.tt", f"must be > 0, got {self.tt:g}")
        self.n_x = 2
        self.feedthrough = bool(self.kp or self.kd)

    c_kind = "TITOP_PID"

    def c_data(self):
        return [self.kp, self.ki, self.kd, self.tf, float(self.lower[0]), float(self.upper[0]), self.tt]

    def _v(self, x, e):
        return self.kp * e + x[0] + (self.kd * (e - x[1]) / self.tf if self.kd else 0.0)

    def output(self, t, x, d, u):
        return np.minimum(np.maximum(self._v(x, u[0]), self.lower), self.upper)

    def derivative(self, t, x, d, u):
        e = u[0]
        v = self._v(x, e)
        y = min(max(v, self.lower[0]), self.upper[0])
        back = (y - v) / self.tt if math.isfinite(self.tt) else 0.0
        return np.array([self.ki * e + back, (e - x[1]) / self.tf])

    def linear(self, t, x, d, u):
        e = u[0]
        v = self._v(x, e)
        inside = float(self.lower[0] < v < self.upper[0])
        c = self.kd / self.tf
        dv = np.array([1.0, -c])                        # dv/dx
        dv_de = self.kp + c
        back = 0.0 if not math.isfinite(self.tt) else (inside - 1.0) / self.tt      # d(y - v)/dv / tt
        A = np.array([[back * dv[0], back * dv[1]], [0.0, -1.0 / self.tf]])
        B = np.array([[self.ki + back * dv_de], [1.0 / self.tf]])
        return A, B, inside * dv.reshape(1, 2), np.array([[inside * dv_de]])


class ZOH(ControlBlock):
    """``y = u(t_k)`` held over ``[t_k, t_k+1)``, ``t_k = offset + k sample_time``."""

    def __init__(self, sample_time, offset=0.0, size=1, where="zoh"):
        self.size = _size(where, size)
        self.sample_time, self.offset = _sample(where, sample_time, offset)
        if self.sample_time is None:
            raise ParameterError(f"{where}.sample_time", "a sample-and-hold needs its sample_time")
        self.inputs, self.outputs = {"u": self.size}, {"y": self.size}

    def d0(self):
        return np.zeros(self.size)

    c_kind = "TITOP_ZOH"

    def output(self, t, x, d, u):
        return d.copy()

    def update(self, t, k, x, d, u):
        return np.array(u, dtype=float)


class Sensor(ControlBlock):
    """A measured quantity of ``size`` components: ``y = q + bias`` (continuous), or, with a
    ``sample_time``, ``y = q(t_k) + bias + noise_k`` held, ``noise_k`` Gaussian of standard
    deviation ``noise`` (per component), drawn from ``seed`` and the sample index alone (the
    same numbers in every engine, in an exported FMU too)."""

    def __init__(self, size, noise=0.0, bias=0.0, seed=0, sample_time=None, offset=0.0, where="sensor"):
        self.size = _size(where, size)
        self.noise = np.broadcast_to(np.asarray(noise, dtype=float), (self.size,)).copy()
        self.bias = np.broadcast_to(np.asarray(bias, dtype=float), (self.size,)).copy()
        if np.any(~np.isfinite(self.noise)) or np.any(self.noise < 0):
            raise ParameterError(f"{where}.noise", f"standard deviations >= 0, got {self.noise.tolist()}")
        if np.any(~np.isfinite(self.bias)):
            raise ParameterError(f"{where}.bias", "must be finite")
        if int(seed) != seed or seed < 0:
            raise ParameterError(f"{where}.seed", f"a non-negative integer, got {seed}")
        self.seed = int(seed)
        self.sample_time, self.offset = _sample(where, sample_time, offset)
        if np.any(self.noise) and not self.discrete:
            raise ParameterError(f"{where}.noise", "noise is drawn at sample instants: give the sensor a sample_time")
        self.inputs, self.outputs = {"u": self.size}, {"y": self.size}
        self.feedthrough = not self.discrete

    def d0(self):
        return np.zeros(self.size) if self.discrete else np.zeros(0)

    c_kind = "TITOP_SENSOR"

    def c_data(self):
        return self.bias.tolist() + self.noise.tolist()

    def output(self, t, x, d, u):
        return d.copy() if self.discrete else np.asarray(u, dtype=float) + self.bias

    def update(self, t, k, x, d, u):
        return np.asarray(u, dtype=float) + self.bias + self.noise * gaussian(self.seed, k, self.size)

    def linear(self, t, x, d, u):
        return np.zeros((0, 0)), np.zeros((0, self.size)), np.zeros((self.size, 0)), np.eye(self.size)
