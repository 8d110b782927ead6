"""A small, safe expression language for time signals and named parameters.

An expression is arithmetic on numbers, named values (the time ``t`` in a signal, the
names of a ``[parameters]`` table), the constants ``pi``, ``e`` and ``deg`` (pi/180), lists
(vectors and matrices, row by row), comparisons (1 when true, 0 when false), ``and``,
``or``, ``not`` and the functions of :data:`FUNCTIONS`, ``where(cond, a, b)`` among them::

    where(t < 15, 0.4*(1 - cos(2*pi*t/15)), 0)
    wing_mass * [[2.1, 0, 0], [0, 0.5, 0], [0, 0, 2.6]]

It is read by Python's own parser (:mod:`ast`) and every node of the tree is checked
against a short list of what may appear: no attribute, no subscript, no call but the
listed functions, no name but the allowed ones. A system file from someone else runs
nothing but arithmetic. The checked tree is then compiled once into a Python function
and, for an exported FMU, into a C expression (:meth:`Expression.c_code`) with the same
IEEE semantics: a division by zero gives an infinity, which the caller's finiteness check
reports with the time, as C does.

Discontinuities in time are the comparisons that involve ``t``:
:meth:`Expression.breakpoints` gives the times where their truth changes, exactly for a
comparison of ``t`` (or an affine function of it) with a constant, by bisection to the
last bit otherwise, so that an integrator can stop there.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import TitopError, did_you_mean

#: name -> (numpy function, its number of arguments (None: two or more), C expression format)
FUNCTIONS = {
    "sin": (np.sin, 1, "sin({0})"), "cos": (np.cos, 1, "cos({0})"), "tan": (np.tan, 1, "tan({0})"),
    "asin": (np.arcsin, 1, "asin({0})"), "acos": (np.arccos, 1, "acos({0})"), "atan": (np.arctan, 1, "atan({0})"),
    "atan2": (np.arctan2, 2, "atan2({0}, {1})"),
    "sinh": (np.sinh, 1, "sinh({0})"), "cosh": (np.cosh, 1, "cosh({0})"), "tanh": (np.tanh, 1, "tanh({0})"),
    "exp": (np.exp, 1, "exp({0})"), "log": (np.log, 1, "log({0})"), "log10": (np.log10, 1, "log10({0})"),
    "sqrt": (np.sqrt, 1, "sqrt({0})"), "abs": (np.abs, 1, "fabs({0})"), "hypot": (np.hypot, 2, "hypot({0}, {1})"),
    "floor": (np.floor, 1, "floor({0})"), "ceil": (np.ceil, 1, "ceil({0})"), "sign": (np.sign, 1, "titop_sign({0})"),
    "min": (np.minimum, None, "fmin({0}, {1})"), "max": (np.maximum, None, "fmax({0}, {1})"),
    "where": (None, 3, "(({0}) != 0.0 ? ({1}) : ({2}))"),
}
#: the names every expression knows
CONSTANTS = {"pi": math.pi, "e": math.e, "deg": math.pi / 180.0}
#: helpers the C code of an expression uses (written once into the C source that holds it)
C_HELPERS = """\
static double titop_sign(double x) { return (x > 0.0) - (x < 0.0); }
static double titop_mod(double a, double b) { return a - b * floor(a / b); }
"""

_BINARY = {ast.Add: ("+", "({0} + {1})"), ast.Sub: ("-", "({0} - {1})"), ast.Mult: ("*", "({0} * {1})"),
           ast.Div: ("/", "({0} / {1})"), ast.Pow: ("**", "pow({0}, {1})"), ast.Mod: ("%", "titop_mod({0}, {1})")}
_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class ExpressionError(TitopError):
    """An expression that cannot be read or evaluated; the message quotes it."""


@dataclass
class Expression:
    """A checked expression: its text, the names it uses (besides the constants) and how to
    evaluate it. Made by :func:`parse`."""

    text: str
    names: frozenset
    tree: ast.Expression = field(repr=False)
    _code: object = field(default=None, repr=False)

    @property
    def is_constant(self) -> bool:
        """It uses no name (a number, or arithmetic on numbers and constants)."""
        return not self.names

    def function(self, *arguments: str):
        """A Python function of the ``arguments`` (in order; the other names must be bound
        first with :meth:`bind`): ``parse("2*t").function("t")(3.0) == 6.0``.

        Numbers are evaluated with Python's floats and :mod:`math` (libm, as the C form), and
        again with numpy's IEEE arithmetic when Python raises (a division by zero, an overflow,
        a square root of a negative number: an infinity or a NaN, as in C); lists with numpy."""
        missing = self.names - set(arguments)
        if missing:
            raise ExpressionError(f"{self.text!r}: {', '.join(sorted(missing))} not given a value")
        if self._code is None:
            self._code = compile(self.tree, f"<{self.text}>", "eval")
        code = self._code
        ieee = {"__builtins__": {}, **_RUNTIME, **CONSTANTS}
        fast = {"__builtins__": {}, **_FAST, **CONSTANTS}

        def exact(*values):
            scope = dict(zip(arguments, (np.float64(v) if np.ndim(v) == 0 else np.asarray(v, dtype=float)
                                         for v in values)))
            with np.errstate(all="ignore"):
                return eval(code, ieee, scope)               # the tree is checked: arithmetic only

        def f(*values):
            try:
                out = eval(code, fast, dict(zip(arguments, values)))
            except (ArithmeticError, ValueError, TypeError):
                return exact(*values)
            return out if type(out) is float else exact(*values)     # a complex power, a list
        return f

    def value(self, **values):
        """The value with every name given: ``parse("a*b").value(a=2, b=3) == 6.0`` (a float,
        or an array for an expression with lists)."""
        out = self.function(*values)(*values.values())
        return float(out) if np.ndim(out) == 0 else np.asarray(out, dtype=float)

    def bind(self, **values) -> Expression:
        """The same expression with the named values put in as numbers (a parameter's value
        in a signal): the remaining names stay free."""
        if not values:
            return self
        tree = _Substitute(values).visit(_copy(self.tree))
        ast.fix_missing_locations(tree)
        return Expression(self.text, self.names - set(values), tree)

    def c_code(self, names: dict | None = None) -> str:
        """The expression in C (doubles, ``<math.h>`` and :data:`C_HELPERS`), each free name
        replaced by ``names[name]`` (a C expression)."""
        return _to_c(self.tree.body, names or {}, self.text)

    def c_comparisons(self, variable: str = "t") -> list:
        """The C expressions (0 or 1) of the comparisons that involve ``variable``, one per
        pair of a chained comparison: where their truth changes are the breakpoints that
        :meth:`breakpoints` finds, in C (:data:`~.signals.C_BREAKPOINTS`)."""
        return [_to_c(ast.Compare(left, [op], [right]), {variable: variable}, self.text)
                for node in _comparisons(self.tree, variable)
                for left, op, right in zip([node.left] + node.comparators[:-1], node.ops, node.comparators)]

    def breakpoints(self, t0: float, t1: float, variable: str = "t") -> np.ndarray:
        """The sorted times in ``(t0, t1)`` where a comparison involving ``variable`` changes
        its truth: the first time of the new truth value, to the last bit (a time ``b`` with
        the comparison's value at ``b`` different from that at the float before ``b``)."""
        found = set()
        for node in _comparisons(self.tree, variable):
            for left, right in zip([node.left] + node.comparators[:-1], node.comparators):
                tree = ast.fix_missing_locations(ast.Expression(ast.BinOp(left, ast.Sub(), right)))
                diff = Expression(self.text, self.names, tree)
                f = diff.function(variable)
                found.update(_crossings(f, t0, t1))
        margin = 1e-12 * max(1.0, abs(t0), abs(t1))      # a float or two past an end: no stop there
        return np.array(sorted(b for b in found if t0 + margin < b < t1 - margin))


def parse(text, allowed=(), where: str = "expression") -> Expression:
    """Read and check ``text``; ``allowed`` are the names it may use (besides :data:`CONSTANTS`).
    An unknown name, a forbidden construct or bad syntax is an :class:`ExpressionError`
    that names ``where`` and quotes the text."""
    if not isinstance(text, str):
        raise ExpressionError(f"{where}: an expression is a string, got {text!r}")
    source = text.strip()
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as e:
        if "nested" in str(e.msg):
            raise ExpressionError(f"{where}: cannot read {text[:40]!r}...: {e.msg}") from None
        raise ExpressionError(f"{where}: cannot read {text!r}: {e.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise ExpressionError(f"{where}: cannot read {text[:40]!r}...: too deeply nested or too long") from None
    allowed = set(allowed)
    names = set()
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if id(node) not in called:            # a callee is checked with its call
            _check(node, allowed, names, where, text)
    tree = _Runtime().visit(tree)
    ast.fix_missing_locations(tree)
    return Expression(source, frozenset(names), tree)


# --- the check ---------------------------------------------------------------------------------

_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Call, ast.Name, ast.Constant,
            ast.List, ast.Load, ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or, *_BINARY, *_COMPARE)


def _check(node, allowed, names, where, text):
    if not isinstance(node, _ALLOWED):
        raise ExpressionError(f"{where}: {text!r}: {_describe(node)} is not allowed in an expression "
                              "(numbers, names, arithmetic, comparisons, lists and the functions "
                              f"{', '.join(FUNCTIONS)})")
    if isinstance(node, ast.Constant) and (isinstance(node.value, bool) or not isinstance(node.value, (int, float))):
        raise ExpressionError(f"{where}: {text!r}: {node.value!r} is not a number")
    if isinstance(node, ast.Name) and node.id not in CONSTANTS:
        if node.id in FUNCTIONS:
            raise ExpressionError(f"{where}: {text!r}: {node.id} is a function: {node.id}(...)")
        if node.id not in allowed:
            known = sorted(allowed | set(CONSTANTS))
            raise ExpressionError(f"{where}: {text!r}: unknown name {node.id!r}{did_you_mean(node.id, known)}; "
                                  f"known: {', '.join(known)}")
        names.add(node.id)
    if isinstance(node, ast.Call):
        _check_callee(node.func, where, text)
        fname = node.func.id
        if node.keywords:
            raise ExpressionError(f"{where}: {text!r}: {fname}() takes no keyword arguments")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise ExpressionError(f"{where}: {text!r}: '*' arguments are not allowed")
        arity = FUNCTIONS[fname][1]
        if (arity is None and len(node.args) < 2) or (arity is not None and len(node.args) != arity):
            wanted = {None: "two or more arguments", 1: "one argument"}.get(arity, f"{arity} arguments")
            raise ExpressionError(f"{where}: {text!r}: {fname}() takes {wanted}, got {len(node.args)}")


def _check_callee(node, where, text):
    """What a call calls: one of :data:`FUNCTIONS` by name, nothing else."""
    if not isinstance(node, ast.Name):
        raise ExpressionError(f"{where}: {text!r}: {_describe(node)} is not allowed in an expression")
    if node.id not in FUNCTIONS:
        raise ExpressionError(f"{where}: {text!r}: unknown function {node.id!r}"
                              f"{did_you_mean(node.id, FUNCTIONS)}; functions: {', '.join(FUNCTIONS)}")


def _describe(node) -> str:
    kind = type(node).__name__
    return {"Attribute": "an attribute (a.b)", "Subscript": "a subscript (a[i])", "Lambda": "a lambda",
            "IfExp": "'a if c else b' (write where(c, a, b))", "Tuple": "a tuple (write a list [a, b])",
            "FloorDiv": "'//' (write floor(a / b))"}.get(kind, f"'{kind}'")


def _names(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


# --- Python evaluation ---------------------------------------------------------------------


def _array(items):
    return np.array(items, dtype=float)


_RUNTIME = {name: f for name, (f, _, _) in FUNCTIONS.items() if f is not None}
#: the same on Python floats with libm's functions (math), for speed: a number in, a number out
_FAST = {name: getattr(math, name) for name in ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
                                                "tanh", "exp", "log", "log10", "sqrt", "hypot")}
_FAST.update(abs=lambda x: float(abs(x)), floor=lambda x: float(math.floor(x)), ceil=lambda x: float(math.ceil(x)),
             sign=lambda x: float((x > 0) - (x < 0)), min=lambda *a: float(min(a)), max=lambda *a: float(max(a)),
             _f=float, _bool=lambda x: 1.0 if x else 0.0, _array=_array)
_RUNTIME.update(_array=_array, _f=np.float64, _bool=lambda x: np.float64(bool(x)),
                min=lambda *a: _fold(np.minimum, a), max=lambda *a: _fold(np.maximum, a))


def _fold(f, args):
    out = args[0]
    for a in args[1:]:
        out = f(out, a)
    return out


class _Runtime(ast.NodeTransformer):
    """The checked tree made evaluable by :func:`eval` with numpy's IEEE arithmetic:
    ``where`` a conditional expression (only the branch taken is evaluated, as in C),
    comparisons and ``and``/``or``/``not`` numbers 1 and 0, lists arrays, every number a
    float (``10**10**10`` is an infinity, not a big integer computed for ever)."""

    def visit_Constant(self, node):
        return _number(node.value)

    def visit_Call(self, node):
        self.generic_visit(node)
        if node.func.id == "where":
            c, a, b = node.args
            return ast.IfExp(test=_truth(c), body=a, orelse=b)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        return ast.Call(ast.Name("_bool", ast.Load()), [node], [])

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        node.values = [_truth(v) for v in node.values]
        return ast.Call(ast.Name("_bool", ast.Load()), [node], [])

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.Call(ast.Name("_bool", ast.Load()), [ast.UnaryOp(ast.Not(), _truth(node.operand))], [])
        return node

    def visit_List(self, node):
        node.elts = [self.visit(e) for e in node.elts]
        return ast.Call(ast.Name("_array", ast.Load()), [node], [])


def _number(value):
    """A number of the evaluable tree: a numpy double (IEEE arithmetic: no Python
    ``OverflowError`` or ``ZeroDivisionError``, an infinity as in C)."""
    return ast.Call(ast.Name("_f", ast.Load()), [ast.Constant(float(value))], [])


def _truth(node):
    """A number's truth as C reads it: not zero."""
    return ast.Compare(node, [ast.NotEq()], [ast.Constant(0.0)])


def _comparisons(tree, variable):
    """The comparisons of ``tree`` that involve ``variable``, but the truth test of a truth value
    (``where(t < 40, ..)``'s ``_bool(t < 40) != 0``): it changes where the comparison inside does,
    and, a step function, it would be searched by sampling (a million samples per 1000 s)."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.Compare) and variable in _names(node)
            and not (isinstance(node.left, ast.Call) and getattr(node.left.func, "id", None) == "_bool"
                     and isinstance(node.ops[0], ast.NotEq) and len(node.ops) == 1)]


class _Substitute(ast.NodeTransformer):
    def __init__(self, values):
        self.values = values

    def visit_Name(self, node):
        if node.id in self.values:
            v = np.asarray(self.values[node.id], dtype=float)
            if v.ndim:
                return ast.Call(ast.Name("_array", ast.Load()), [ast.Constant(v.tolist())], [])
            return _number(v)
        return node


def _copy(tree):
    return ast.parse(ast.unparse(tree), mode="eval")


# --- C ---------------------------------------------------------------------------------------


def _to_c(node, names, text) -> str:
    """The C expression of a node of the evaluable tree (:class:`_Runtime`'s)."""
    if isinstance(node, ast.Constant):
        return repr(float(node.value)) if not isinstance(node.value, list) else _no_c(text, "a list")
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return repr(CONSTANTS[node.id])
        if node.id not in names:
            raise ExpressionError(f"{text!r}: {node.id} has no value in C")
        return f"({names[node.id]})"
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)][1].format(_to_c(node.left, names, text), _to_c(node.right, names, text))
    if isinstance(node, ast.UnaryOp):
        inner = _to_c(node.operand, names, text)
        return {ast.USub: f"(-{inner})", ast.UAdd: inner, ast.Not: f"(!{inner})"}[type(node.op)]
    if isinstance(node, ast.IfExp):
        return f"({_to_c(node.test, names, text)} ? {_to_c(node.body, names, text)} : {_to_c(node.orelse, names, text)})"
    if isinstance(node, ast.Compare):
        parts, left = [], node.left
        for op, right in zip(node.ops, node.comparators):
            parts.append(f"({_to_c(left, names, text)} {_COMPARE[type(op)]} {_to_c(right, names, text)})")
            left = right
        return "(" + " && ".join(parts) + ")"
    if isinstance(node, ast.BoolOp):
        joined = (" && " if isinstance(node.op, ast.And) else " || ").join(_to_c(v, names, text) for v in node.values)
        return f"({joined})"
    if isinstance(node, ast.Call):
        name = node.func.id
        if name == "_bool":
            return f"(({_to_c(node.args[0], names, text)}) ? 1.0 : 0.0)"
        if name == "_f":
            return repr(node.args[0].value)
        if name == "_array":
            return _no_c(text, "a list")
        args = [_to_c(a, names, text) for a in node.args]
        fmt = FUNCTIONS[name][2]
        out = fmt.format(*args[:2])
        for extra in args[2:]:                   # min/max of more than two
            out = fmt.format(out, extra)
        return out
    raise ExpressionError(f"{text!r}: cannot be written in C ({type(node).__name__})")  # pragma: no cover


def _no_c(text, what):
    raise ExpressionError(f"{text!r}: {what} has no C form (a signal is a number)")


# --- breakpoints -----------------------------------------------------------------------------

#: samples per unit of time when a comparison is not affine in t (roots found by bisection)
SAMPLES_PER_SECOND = 1000


def _crossings(f, t0, t1) -> set:
    """The times in ``(t0, t1)`` where the sign (< 0, = 0, > 0) of the scalar function ``f``
    changes, each refined to the first float of the new sign."""
    def sign(t):
        v = f(t)
        if np.ndim(v):
            raise ExpressionError("a comparison of lists has no single truth value")
        return int(np.sign(v)) if np.isfinite(v) else 0
    found = set()
    affine = _affine_root(f, t0, t1)
    if affine is not None:
        candidates = [affine] if t0 < affine < t1 else []
        for r in candidates:
            found.add(_first_of_new_sign(sign, r))
        return found
    n = max(2, int(math.ceil((t1 - t0) * SAMPLES_PER_SECOND)) + 1)
    grid = np.linspace(t0, t1, n)
    signs = [sign(t) for t in grid]
    for a, b, sa, sb in zip(grid[:-1], grid[1:], signs[:-1], signs[1:]):
        if sa != sb:
            found.add(_bisect(sign, a, b, sa))
    return found


def _affine_root(f, t0, t1):
    """The root of ``f`` if it is affine in t over the span (checked at four points), else None."""
    span = max(t1 - t0, 1.0)
    ts = np.array([t0, t0 + 0.25 * span, t0 + 0.7 * span, t0 + span])
    vs = np.array([float(f(t)) for t in ts])
    if not np.all(np.isfinite(vs)):
        return None
    slope = (vs[-1] - vs[0]) / (ts[-1] - ts[0])
    scale = max(np.max(np.abs(vs)), 1e-300)
    if np.max(np.abs(vs - (vs[0] + slope * (ts - ts[0])))) > 1e-12 * scale:
        return None
    if slope == 0.0:
        return None
    return float(ts[0] - vs[0] / slope)


def _first_of_new_sign(sign, r):
    """From an approximate root ``r``, the float where the sign changes (searched a few ulps
    around ``r``)."""
    lo, hi = r, r
    for _ in range(64):
        lo = np.nextafter(lo, -np.inf)
        hi = np.nextafter(hi, np.inf)
    s_lo = sign(lo)
    return _bisect(sign, lo, hi, s_lo) if sign(hi) != s_lo else r


def _bisect(sign, a, b, sa):
    """The first float in ``(a, b]`` whose sign differs from ``sa`` (``sign(a) == sa``)."""
    while True:
        m = 0.5 * (a + b)
        if m <= a or m >= b:
            return float(b)
        if sign(m) == sa:
            a = m
        else:
            b = m
