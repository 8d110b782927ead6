"""The values a system file and ``--set`` give: numbers, numbers with their units
(:mod:`titop_fmu.quantities`: ``"30 deg"``, ``"5 mm"``), expressions of named values
(:mod:`titop_fmu.control.expressions`: ``"wing_mass * 2"``; in an input, of the time ``t`` too:
a time signal), and lists of them (vectors and matrices, row by row).

A string is read as an expression when it is one (its names known); else as a number with
its unit, converted to the unit the value is declared in (``unit``: a function of the
element's index, giving an FMI unit string or None for SI base units).
"""

from __future__ import annotations

import ast

import numpy as np

from ..control.expressions import ExpressionError, parse
from ..control.signals import ExpressionSignal
from ..errors import ConnectionError_
from ..quantities import UnitError, quantity


def text_value(text: str, where: str, unit: str | None = None, names: dict | None = None, time: bool = False):
    """The value of the string ``text``: an expression of the named values ``names`` (a number,
    or an array for an expression with lists) or, with ``time``, of ``t`` too (then an
    :class:`~titop_fmu.control.signals.ExpressionSignal`); else a number with its unit, in
    ``unit``. An error names ``where`` and says what was expected."""
    names = names or {}
    try:
        ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        if "(" in text:                                            # a call or a group: an expression
            parse(text, {*names, *(("t",) if time else ())}, where)
        return _quantity(text, where, unit, names, time)       # not an expression: '30 deg', '2 kN m'
    try:
        expr = parse(text, {*names, *(("t",) if time else ())}, where)
    except ExpressionError as e:
        try:
            return quantity(text, unit, where)                    # '2*kg': pint's
        except UnitError:
            if names or time:
                raise e from None                                 # it names the names it knows
            raise
    if "t" in expr.names:
        return ExpressionSignal(text, {k: names[k] for k in expr.names if k != "t"}, where)
    return expr.value(**{k: names[k] for k in expr.names})


def _quantity(text, where, unit, names, time):
    try:
        return quantity(text, unit, where)
    except UnitError as e:
        if names or time:
            known = ", ".join(sorted(names) + (["t"] if time else []))
            raise UnitError(f"{e} (or an expression of {known})") from None
        raise


def read(value, where: str, unit=None, names: dict | None = None, time: bool = False, index: tuple = ()):
    """A value as a system file writes it: a number (a Boolean as it is), a string
    (:func:`text_value`), or a list of values (a vector or matrix; a string element may be a
    time signal only with ``time``); ``unit(index)`` gives the declared unit of the element at
    ``index`` (a tuple, ``()`` for the whole value)."""
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return text_value(value, where, unit(index) if unit else None, names, time)
    if isinstance(value, list):
        return [read(v, where, unit, names, time, index + (k,)) for k, v in enumerate(value)]
    raise ConnectionError_(f"{where}: unsupported value {value!r} (a number, a string such as '30 deg', or a list)")


def split(text: str):
    """A list written as text, ``"[3 deg, 0, [1, 2]]"``, as nested lists of its elements' texts
    (commas inside brackets or parentheses belong to the element); any other text as it is.
    An element in quotes, as a file writes it (``"[0, '3 deg/s', 0]"``), is its text."""
    text = text.strip()
    if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1].strip()
    if not (text.startswith("[") and text.endswith("]")):
        return text
    items, depth, start = [], 0, 1
    for i, c in enumerate(text[1:-1], 1):
        depth += 1 if c in "[(" else -1 if c in "])" else 0
        if depth < 0:
            return text                                            # unbalanced: read as it is
        if c == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth:
        return text
    last = text[start:-1]
    if last.strip() or items:
        items.append(last)
    return [split(x) for x in items]


def references(value, names) -> set:
    """The names of ``names`` that the strings of ``value`` (a number, a string, a list) use as
    names of an expression (read by Python's parser, nothing evaluated)."""
    if isinstance(value, str):
        try:
            tree = ast.parse(value.strip(), mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return set()
        return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} & set(names)
    if isinstance(value, list):
        return set().union(*(references(v, names) for v in value)) if value else set()
    if isinstance(value, dict):
        return set().union(*(references(v, names) for v in value.values())) if value else set()
    return set()


def evaluate(table: dict, where: str) -> dict:
    """``{name: value}`` of a ``[parameters]`` table: each value a number, a number with its
    unit (in SI base units), an expression of the other names, or a list of them (an array),
    evaluated in the order of their dependencies. A cycle among them, an unknown name or a
    value that cannot be read is a :class:`ConnectionError_` naming ``where.<name>``."""
    deps = {n: references(v, table) for n, v in table.items()}
    order, done = [], set()

    def visit(name, path):
        if name in done:
            return
        if name in path:
            cycle = path[path.index(name):] + [name]
            raise ConnectionError_(f"{where}: the parameters depend on each other in a cycle: {' -> '.join(cycle)}")
        for d in sorted(deps[name]):
            visit(d, path + [name])
        done.add(name)
        order.append(name)

    for name in table:
        visit(name, [])
    out = {}
    for name in order:
        try:
            v = read(table[name], f"{where}.{name}", None, out)
        except (ExpressionError, UnitError) as e:
            raise ConnectionError_(str(e)) from None
        try:
            a = np.asarray(v, dtype=float)
        except (TypeError, ValueError):                 # words, or a ragged list
            a = None
        if isinstance(v, bool) or a is None or a.ndim == 0 and not isinstance(v, (int, float, np.floating)):
            raise ConnectionError_(f"{where}.{name}: a number, a number with its unit, an expression or a list "
                                   f"of them (rows of one length) is expected, got {table[name]!r}")
        out[name] = float(a) if a.ndim == 0 else a
    return out
