"""Time signals: any input of a system given as a function of time instead of a constant.

Three kinds, each a :class:`Signal` with its value, its breakpoints and its C form:

* :class:`ExpressionSignal`: an expression in ``t`` (:mod:`.expressions`), e.g.
  ``where(t < 15, 0.4*(1 - cos(2*pi*t/15)), 0)``;
* :class:`TableSignal`: a column of a CSV file against its column ``t``, interpolated
  (``hold``: the last row's value; ``linear``; ``cubic``: a not-a-knot cubic spline), held
  at the first and last rows' values past the ends (``extrapolation = "hold"``) or repeated
  with the table's span as period (``"periodic"``);
* the standard sources (:data:`SOURCES`): ``step``, ``ramp``, ``sine``, ``pulse`` and
  ``bangbang`` (a smooth rest-to-rest acceleration profile).

A signal is a right-continuous function of time: at a jump it has its new value. Its
*breakpoints* are the times where it, or one of its derivatives, jumps (a step, a table's
rows with ``hold`` or ``linear``, a comparison with ``t`` in an expression): an engine stops
its integrator exactly there and evaluates each piece within its own open interval
(:func:`within`), so that a discontinuity costs no accuracy.
"""

from __future__ import annotations

import ast
import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import TitopError, did_you_mean
from .expressions import SAMPLES_PER_SECOND, ExpressionError, parse


class SignalError(TitopError):
    """A time signal that cannot be read or evaluated; the message names it."""


def within(t: float, a: float, b: float) -> float:
    """``t`` brought into the open interval ``(a, b)``: a piece of a signal between two
    breakpoints evaluated at its ends gives its limits there, not the next piece's value."""
    if t <= a:
        return float(np.nextafter(a, np.inf))
    if t >= b:
        return float(np.nextafter(b, -np.inf))
    return t


class Signal:
    """A scalar function of time: :meth:`value`, :meth:`breakpoints`, :meth:`c_code`."""

    #: what it is, for messages and the docs (``"where(t < 15, ...)"``, ``"table torque.csv:w[2]"``)
    description = "signal"

    def value(self, t: float) -> float:
        raise NotImplementedError

    def breakpoints(self, t0: float, t1: float) -> np.ndarray:
        """The times in ``(t0, t1)`` where the signal or one of its derivatives jumps."""
        return np.zeros(0)

    def c_code(self, name: str) -> str:
        """C definitions ending in ``static double <name>(double t)``, the signal's value
        (``<math.h>`` and :data:`~.expressions.C_HELPERS` in scope)."""
        raise NotImplementedError

    def c_breakpoints(self, name: str) -> str:
        """C definitions ending in ``static double <name>_next(double t, double t1)``: the first
        of its breakpoints in ``(t, t1]``, ``INFINITY`` if none (:data:`C_BREAKPOINTS` and
        :meth:`c_code`'s definitions in scope)."""
        return f"static double {name}_next(double t, double t1) {{ (void)t, (void)t1; return INFINITY; }}\n"

    def to_input(self):
        """The value a system file gives the signal (``[inputs]``): what reads back as it."""
        raise NotImplementedError


@dataclass
class ExpressionSignal(Signal):
    """An expression in ``t`` and the named values ``parameters`` (put in as numbers)."""

    text: str
    parameters: dict = field(default_factory=dict)
    where: str = "signal"

    def __post_init__(self):
        expr = parse(self.text, {"t", *self.parameters}, self.where)
        self.expression = expr.bind(**{k: v for k, v in self.parameters.items() if k in expr.names})
        if np.ndim(self.expression.value(t=0.0)) != 0:
            raise SignalError(f"{self.where}: {self.text!r} is a list; a signal gives one number")
        self._f = self.expression.function("t")
        self.description = self.text

    def value(self, t):
        return float(self._f(t))

    def breakpoints(self, t0, t1):
        try:
            return self.expression.breakpoints(t0, t1)
        except ExpressionError as e:
            raise SignalError(f"{self.where}: {e}") from None

    def c_code(self, name):
        return f"static double {name}(double t) {{ return {self.expression.c_code({'t': 't'})}; }}\n"

    def c_breakpoints(self, name):
        """Where the truth of a comparison with ``t`` changes: sampled and bisected to the first
        float of its new truth (:meth:`breakpoints` finds the same times, or one float earlier
        where the difference of the two sides is exactly zero: it looks for its sign)."""
        truths = self.expression.c_comparisons()
        code = "".join(f"static int {name}_c{i}(double t) {{ return {c}; }}\n" for i, c in enumerate(truths))
        first = "".join(f"    b = fmin(b, titop_first_change({name}_c{i}, t, t1));\n" for i in range(len(truths)))
        return code + (f"static double {name}_next(double t, double t1)\n{{\n    double b = INFINITY;\n{first}"
                       f"    return b;\n}}\n" if truths else super().c_breakpoints(name))

    def to_input(self):
        """Its text, the named values it uses written in as numbers (a system file without its
        ``[parameters]``: an exported system travels with the values it was made with)."""
        if not self.parameters:
            return self.text
        tree = _Literals(self.parameters).visit(ast.parse(self.text.strip(), mode="eval"))
        return ast.unparse(ast.fix_missing_locations(tree))


class _Literals(ast.NodeTransformer):
    """The names of ``values`` replaced by their numbers (lists for arrays), signs as operators
    (so that ``x ** 2`` of a negative ``x`` is written ``(-1.5) ** 2``)."""

    def __init__(self, values):
        self.values = values

    def visit_Name(self, node):
        return _literal(self.values[node.id]) if node.id in self.values else node


def _literal(value):
    if np.ndim(value):
        return ast.List([_literal(v) for v in np.asarray(value, dtype=float)], ast.Load())
    v = float(value)
    return ast.UnaryOp(ast.USub(), ast.Constant(-v)) if math.copysign(1.0, v) < 0 else ast.Constant(v)


INTERPOLATIONS = ("hold", "linear", "cubic")
EXTRAPOLATIONS = ("hold", "periodic")


@dataclass
class TableSignal(Signal):
    """``values`` against the strictly increasing ``times``, interpolated (``hold``,
    ``linear``, ``cubic``), held (``extrapolation="hold"``) or repeated (``"periodic"``)
    past the ends."""

    times: np.ndarray
    values: np.ndarray
    interpolation: str = "linear"
    extrapolation: str = "hold"
    description: str = "table"

    def __post_init__(self):
        self.times = np.asarray(self.times, dtype=float)
        self.values = np.asarray(self.values, dtype=float)
        if self.interpolation not in INTERPOLATIONS:
            raise SignalError(f"{self.description}: interpolation {self.interpolation!r}"
                              f"{did_you_mean(self.interpolation, INTERPOLATIONS)}; one of {', '.join(INTERPOLATIONS)}")
        if self.extrapolation not in EXTRAPOLATIONS:
            raise SignalError(f"{self.description}: extrapolation {self.extrapolation!r}"
                              f"{did_you_mean(self.extrapolation, EXTRAPOLATIONS)}; one of {', '.join(EXTRAPOLATIONS)}")
        if len(self.times) < 2:
            raise SignalError(f"{self.description}: a table needs two rows or more, got {len(self.times)}")
        # per interval i, the polynomial c[0] + c[1] s + c[2] s^2 + c[3] s^3 in s = t - times[i]
        n = len(self.times) - 1
        self.coefficients = np.zeros((n, 4))
        self.coefficients[:, 0] = self.values[:-1]
        if self.interpolation == "linear":
            self.coefficients[:, 1] = np.diff(self.values) / np.diff(self.times)
        elif self.interpolation == "cubic":
            from scipy.interpolate import CubicSpline
            spline = CubicSpline(self.times, self.values, bc_type="not-a-knot" if n > 2 else "natural")
            self.coefficients = spline.c[::-1].T.copy()

    @property
    def span(self) -> float:
        return float(self.times[-1] - self.times[0])

    def _local(self, t):
        """``t`` brought onto the table's span: held at its ends, or folded (periodic)."""
        t0, t1 = self.times[0], self.times[-1]
        if self.extrapolation == "periodic":
            return t0 + (t - t0) % self.span
        return min(max(t, t0), t1)

    def value(self, t):
        t = self._local(t)
        if t >= self.times[-1]:
            return float(self.values[-1])
        i = int(np.searchsorted(self.times, t, side="right")) - 1
        i = max(i, 0)
        s = t - self.times[i]
        c = self.coefficients[i]
        return float(c[0] + s * (c[1] + s * (c[2] + s * c[3])))

    def breakpoints(self, t0, t1):
        rows = self.times if self.interpolation != "cubic" else self.times[[0, -1]]
        if self.extrapolation == "periodic":
            first = math.floor((t0 - self.times[0]) / self.span)
            last = math.ceil((t1 - self.times[0]) / self.span)
            rows = np.concatenate([rows[:-1] + k * self.span for k in range(first, last + 1)])
        return np.array([b for b in rows if t0 < b < t1])

    def c_code(self, name):
        n = len(self.times)
        times = ", ".join(repr(float(x)) for x in self.times)
        coefficients = ", ".join(repr(float(x)) for x in self.coefficients.ravel())
        periodic = int(self.extrapolation == "periodic")
        return (f"static const double {name}_t[{n}] = {{{times}}};\n"
                f"static const double {name}_c[{4 * (n - 1)}] = {{{coefficients}}};\n"
                f"static double {name}(double t) {{ return titop_table(t, {n}, {name}_t, {name}_c, "
                f"{repr(float(self.values[-1]))}, {periodic}); }}\n")

    def c_breakpoints(self, name):
        rows = self.times if self.interpolation != "cubic" else self.times[[0, -1]]
        if self.extrapolation == "periodic":
            return (f"static const double {name}_b[{len(rows) - 1}] = {_c_list(rows[:-1])};\n"
                    f"static double {name}_next(double t, double t1) {{ return titop_periodic_next(t, t1, "
                    f"{len(rows) - 1}, {name}_b, {float(self.times[0])!r}, {self.span!r}); }}\n")
        return _first_after(name, rows)

    def to_input(self):
        raise SignalError(f"{self.description}: a table signal is written as its table (TableSpec)")


#: the C function the tables' code calls (written once into the C source that holds them)
C_TABLE = """\
static double titop_table(double t, int n, const double *ts, const double *c, double last, int periodic)
{
    double span = ts[n - 1] - ts[0];
    if (periodic)
        t = ts[0] + titop_mod(t - ts[0], span);
    else if (t <= ts[0])
        t = ts[0];
    if (t >= ts[n - 1])
        return last;
    int lo = 0, hi = n - 1;                /* ts[lo] <= t < ts[hi] */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (ts[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    double s = t - ts[lo];
    const double *k = c + 4 * lo;
    return k[0] + s * (k[1] + s * (k[2] + s * k[3]));
}
"""


#: the C functions the signals' breakpoint code calls (:meth:`Signal.c_breakpoints`; written once
#: into the C source that holds them)
C_BREAKPOINTS = """\
/* the first of the n increasing times b[] in (t, t1], or INFINITY */
static double titop_first_after(double t, double t1, int n, const double *b)
{
    for (int j = 0; j < n; j++)
        if (b[j] > t)
            return b[j] <= t1 ? b[j] : INFINITY;
    return INFINITY;
}

/* the first of the times rows[j] + k span (every k) in (t, t1], or INFINITY: a periodic table's
   rows, the first row at t0 */
static double titop_periodic_next(double t, double t1, int n, const double *rows, double t0, double span)
{
    for (double k = floor((t - t0) / span);; k++)
        for (int j = 0; j < n; j++) {
            double b = rows[j] + k * span;
            if (b > t)
                return b <= t1 ? b : INFINITY;
        }
}

/* the first float in (t0, t1] where truth differs from truth(t0): sampled SAMPLES times a second,
   then bisected to the last bit; INFINITY if none */
static double titop_first_change(int (*truth)(double), double t0, double t1)
{
    if (!(t1 > t0))
        return INFINITY;
    int s = truth(t0);
    double n = ceil((t1 - t0) * SAMPLES), a = t0;
    for (double k = 1; k <= n; k++) {
        double b = k == n ? t1 : t0 + (t1 - t0) * (k / n);
        if (truth(b) != s) {
            for (;;) {
                double m = 0.5 * (a + b);
                if (m <= a || m >= b)
                    return b;
                if (truth(m) == s)
                    a = m;
                else
                    b = m;
            }
        }
        a = b;
    }
    return INFINITY;
}
""".replace("SAMPLES", f"{float(SAMPLES_PER_SECOND)!r}")


def _c_list(values) -> str:
    return "{" + ", ".join(repr(float(v)) for v in values) + "}"


def _first_after(name: str, times) -> str:
    """The C breakpoint function of a signal whose breakpoints are the increasing ``times``."""
    times = [float(b) for b in times]
    return (f"static const double {name}_b[{len(times)}] = {_c_list(times)};\n"
            f"static double {name}_next(double t, double t1) {{ return titop_first_after(t, t1, {len(times)}, "
            f"{name}_b); }}\n")


def read_table(path: Path, where: str) -> tuple:
    """``(times, {column: values})`` of a CSV file with a header line and a column ``t``:
    every value a finite number, the times strictly increasing (errors name the file, the
    row and the column)."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            lines = [line.strip() for line in f if line.strip() and not line.lstrip().startswith("#")]
    except FileNotFoundError:
        raise SignalError(f"{where}: no table file {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SignalError(f"{where}: cannot read the table {path}: {e}") from None
    if not lines:
        raise SignalError(f"{where}: {path} is empty (a header line 't,...' and rows of numbers)")
    header = [h.strip().strip('"') for h in lines[0].split(",")]
    if "t" not in header:
        raise SignalError(f"{where}: {path} has no column 't' (its columns: {', '.join(header)})")
    rows = []
    for k, line in enumerate(lines[1:], start=2):
        cells = line.split(",")
        if len(cells) != len(header):
            raise SignalError(f"{where}: {path}, line {k}: {len(cells)} values for {len(header)} columns")
        try:
            row = [float(c) for c in cells]
        except ValueError:
            raise SignalError(f"{where}: {path}, line {k}: not a number in {line!r}") from None
        for name, v in zip(header, row):
            if not math.isfinite(v):
                raise SignalError(f"{where}: {path}, line {k}: column {name!r} is {v} (every value must be finite)")
        rows.append(row)
    data = np.array(rows, dtype=float).reshape(-1, len(header))
    times = data[:, header.index("t")]
    _increasing(times, f"{where}: {path}", "line", 2)
    return times, {name: data[:, j] for j, name in enumerate(header) if name != "t"}


def table_data(data: dict, where: str) -> tuple:
    """``(times, {column: values})`` of a table given as its data, ``{"t": [...], column: [...]}``
    (a system file's table written out whole), checked as :func:`read_table` checks a file."""
    if not isinstance(data, dict) or "t" not in data:
        raise SignalError(f"{where}: a table's data has a column 't' and one per scalar, got {data!r:.60}")
    columns = {}
    for name, values in data.items():
        try:
            columns[name] = np.array(values, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise SignalError(f"{where}: table column {name!r}: not a list of numbers") from None
        if not np.all(np.isfinite(columns[name])):
            raise SignalError(f"{where}: table column {name!r}: every value must be finite")
    for name, values in columns.items():
        if len(values) != len(columns["t"]):
            raise SignalError(f"{where}: table column {name!r}: {len(values)} values for {len(columns['t'])} times")
    times = columns.pop("t")
    _increasing(times, where, "row", 1)
    return times, columns


def _increasing(times, where, row, first):
    """The times of a table increase strictly; else the error names the rows (numbered from
    ``first``)."""
    bad = np.nonzero(np.diff(times) <= 0)[0]
    if len(bad):
        k = int(bad[0])
        raise SignalError(f"{where}: the times must increase strictly: t = {times[k]:g} ({row} {k + first}) "
                          f"then {times[k + 1]:g} ({row} {k + first + 1})")


# --- the standard sources ------------------------------------------------------------------


class _Source(Signal):
    """A standard source (:data:`SOURCES`), a dataclass of its parameters."""

    def to_input(self):
        name = next(n for n, (cls, _) in SOURCES.items() if type(self) is cls)
        return {"source": name, **dataclasses.asdict(self)}


@dataclass
class Step(_Source):
    """``offset`` before ``time``, ``offset + height`` from it on."""

    height: float = 1.0
    time: float = 0.0
    offset: float = 0.0

    def value(self, t):
        return self.offset + (self.height if t >= self.time else 0.0)

    def breakpoints(self, t0, t1):
        return np.array([self.time]) if t0 < self.time < t1 else np.zeros(0)

    def c_code(self, name):
        return (f"static double {name}(double t) {{ return {self.offset!r} + (t >= {self.time!r} ? "
                f"{self.height!r} : 0.0); }}\n")

    def c_breakpoints(self, name):
        return _first_after(name, [self.time])


@dataclass
class Ramp(_Source):
    """From ``offset`` at ``start`` to ``offset + height`` at ``start + duration``, linearly;
    held before and after."""

    height: float = 1.0
    duration: float = 1.0
    start: float = 0.0
    offset: float = 0.0

    def value(self, t):
        return self.offset + self.height * min(max((t - self.start) / self.duration, 0.0), 1.0)

    def breakpoints(self, t0, t1):
        return np.array([b for b in (self.start, self.start + self.duration) if t0 < b < t1])

    def c_code(self, name):
        return (f"static double {name}(double t) {{ return {self.offset!r} + {self.height!r} * "
                f"fmin(fmax((t - {self.start!r}) / {self.duration!r}, 0.0), 1.0); }}\n")

    def c_breakpoints(self, name):
        return _first_after(name, [self.start, self.start + self.duration])


@dataclass
class Sine(_Source):
    """``offset + amplitude sin(2 pi frequency (t - start) + phase)`` from ``start`` on
    (``offset`` before); ``frequency`` in Hz, ``phase`` in rad."""

    amplitude: float = 1.0
    frequency: float = 1.0
    phase: float = 0.0
    offset: float = 0.0
    start: float = 0.0

    def value(self, t):
        if t < self.start:
            return self.offset
        return self.offset + self.amplitude * math.sin(2 * math.pi * self.frequency * (t - self.start) + self.phase)

    def breakpoints(self, t0, t1):
        return np.array([self.start]) if t0 < self.start < t1 else np.zeros(0)

    def c_code(self, name):
        return (f"static double {name}(double t) {{ return t < {self.start!r} ? {self.offset!r} : {self.offset!r} + "
                f"{self.amplitude!r} * sin({2 * math.pi * self.frequency!r} * (t - {self.start!r}) + {self.phase!r}); }}\n")

    def c_breakpoints(self, name):
        return _first_after(name, [self.start])


@dataclass
class Pulse(_Source):
    """``offset + amplitude`` during the first ``width`` seconds of every ``period`` from
    ``start`` on, ``offset`` otherwise."""

    amplitude: float = 1.0
    period: float = 1.0
    width: float = 0.5
    start: float = 0.0
    offset: float = 0.0

    def value(self, t):
        if t < self.start:
            return self.offset
        phase = (t - self.start) - self.period * math.floor((t - self.start) / self.period)
        return self.offset + (self.amplitude if phase < self.width else 0.0)

    def breakpoints(self, t0, t1):
        k0 = max(0, math.floor((t0 - self.start) / self.period))
        k1 = math.ceil((t1 - self.start) / self.period)
        times = [self.start + k * self.period + w for k in range(k0, k1 + 1) for w in (0.0, self.width)]
        return np.array(sorted(b for b in times if t0 < b < t1))

    def c_code(self, name):
        return (f"static double {name}(double t) {{ if (t < {self.start!r}) return {self.offset!r};\n"
                f"    double s = titop_mod(t - {self.start!r}, {self.period!r});\n"
                f"    return {self.offset!r} + (s < {self.width!r} ? {self.amplitude!r} : 0.0); }}\n")

    def c_breakpoints(self, name):
        return (f"static double {name}_next(double t, double t1)\n{{\n"
                f"    for (double k = fmax(0.0, floor((t - {self.start!r}) / {self.period!r}));; k++) {{\n"
                f"        double b = {self.start!r} + k * {self.period!r};\n"
                f"        if (b + {self.width!r} > t) {{\n"
                f"            b = b > t ? b : b + {self.width!r};\n"
                f"            return b <= t1 ? b : INFINITY;\n        }}\n    }}\n}}\n")


@dataclass
class BangBang(_Source):
    """A smooth rest-to-rest acceleration profile from ``start`` over ``duration`` ``T``:
    ``amplitude sin^2(2 pi s / T)`` for the first half (``s = t - start``), its negative for
    the second, zero outside; continuous with its first derivative. Integrated twice from
    rest it ends at rest, having moved ``amplitude T^2 / 8`` (a slew of angle ``a`` takes
    ``amplitude = 8 a / T^2``)."""

    amplitude: float = 1.0
    duration: float = 1.0
    start: float = 0.0

    def value(self, t):
        s = t - self.start
        if s <= 0.0 or s >= self.duration:
            return 0.0
        v = self.amplitude * math.sin(2 * math.pi * s / self.duration) ** 2
        return v if s < 0.5 * self.duration else -v

    def breakpoints(self, t0, t1):
        return np.array([b for b in (self.start, self.start + self.duration) if t0 < b < t1])

    def c_code(self, name):
        return (f"static double {name}(double t) {{ double s = t - {self.start!r};\n"
                f"    if (s <= 0.0 || s >= {self.duration!r}) return 0.0;\n"
                f"    double v = sin({2 * math.pi / self.duration!r} * s);\n"
                f"    return (s < {0.5 * self.duration!r} ? 1.0 : -1.0) * {self.amplitude!r} * v * v; }}\n")

    def c_breakpoints(self, name):
        return _first_after(name, [self.start, self.start + self.duration])


#: ``source = "<name>"`` -> (class, {parameter: (default or None when required, must be > 0)})
SOURCES = {
    "step": (Step, {"height": (1.0, False), "time": (0.0, False), "offset": (0.0, False)}),
    "ramp": (Ramp, {"height": (1.0, False), "duration": (None, True), "start": (0.0, False), "offset": (0.0, False)}),
    "sine": (Sine, {"amplitude": (1.0, False), "frequency": (None, True), "phase": (0.0, False),
                    "offset": (0.0, False), "start": (0.0, False)}),
    "pulse": (Pulse, {"amplitude": (1.0, False), "period": (None, True), "width": (None, True),
                      "start": (0.0, False), "offset": (0.0, False)}),
    "bangbang": (BangBang, {"amplitude": (None, False), "duration": (None, True), "start": (0.0, False)}),
}


def source(spec: dict, where: str, number=float) -> Signal:
    """A standard source from ``{"source": name, parameter: value, ...}``; ``number`` reads
    one parameter value (a unit string, say). Errors name ``where`` and the parameter."""
    name = spec.get("source")
    if name not in SOURCES:
        raise SignalError(f"{where}: source {name!r}{did_you_mean(name, SOURCES)}; sources: {', '.join(SOURCES)}")
    cls, params = SOURCES[name]
    values = {}
    for key, v in spec.items():
        if key == "source":
            continue
        if key not in params:
            raise SignalError(f"{where}: the {name} source has no parameter {key!r}{did_you_mean(key, params)}; "
                              f"parameters: {', '.join(params)}")
        try:
            values[key] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float(number(v))
        except (TypeError, ValueError):
            raise SignalError(f"{where}: {name}.{key} = {v!r}: not a number") from None
        if not math.isfinite(values[key]):
            raise SignalError(f"{where}: {name}.{key} = {v!r}: must be finite")
    for key, (default, positive) in params.items():
        if key not in values:
            if default is None:
                raise SignalError(f"{where}: the {name} source needs {key} (parameters: {', '.join(params)})")
            values[key] = default
        if positive and values[key] <= 0:
            raise SignalError(f"{where}: {name}.{key} must be > 0, got {values[key]:g}")
    if name == "pulse" and values["width"] > values["period"]:
        raise SignalError(f"{where}: pulse.width {values['width']:g} is longer than its period {values['period']:g}")
    out = cls(**values)
    out.description = f"{name} " + ", ".join(f"{k}={v:g}" for k, v in values.items())
    return out
