"""Time signals on a system's inputs: how a system file gives them, how they are resolved
against the units' ports, and the units that carry them through the master.

An input in ``[inputs]`` takes a constant or a :class:`~titop_fmu.control.signals.Signal`:
an expression in ``t`` (a string), a table (``{table = "f.csv", ...}``), a standard source
(``{source = "step", ...}``), or a list mixing numbers and signals (one per scalar of a
port). :func:`parse_input` reads that value; :func:`resolve` gives every signal its scalar
once the ports are known (a whole port from a table takes the columns ``<port>[k]``).

Through the master a port's signals are one unit of their own (:func:`with_signal_units`,
:mod:`.signal_unit`), its outputs connected to the port.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..control.expressions import ExpressionError
from ..control.signals import Signal, SignalError, TableSignal, read_table, source, table_data
from ..errors import ConnectionError_, did_you_mean
from ..quantities import UnitError
from .graph import CoSystem
from .names import port_of
from .signal_unit import SignalSpec
from .values import text_value

TABLE_KEYS = ("table", "column", "interpolation", "extrapolation")


@dataclass
class TableSpec:
    """A table given to a whole port or a scalar, a CSV file (``path``) or its columns
    (``data``, ``{"t": [...], column: [...]}``): its columns are matched to scalars when the
    port is known (:func:`resolve`)."""

    path: Path | None
    interpolation: str = "linear"
    extrapolation: str = "hold"
    column: str | None = None
    where: str = "table"
    data: dict | None = None

    @property
    def name(self) -> str:
        return self.path.name if self.data is None else "the table"

    def read(self) -> tuple:
        """``(times, {column: values})``, checked."""
        return read_table(self.path, self.where) if self.data is None else table_data(self.data, self.where)

    def to_input(self) -> dict:
        """The table as a system file gives it, its data written out (the file needs not travel)."""
        times, columns = self.read()
        out = {"table": {"t": times.tolist(), **{c: v.tolist() for c, v in columns.items()}},
               "interpolation": self.interpolation, "extrapolation": self.extrapolation}
        return out if self.column is None else dict(out, column=self.column)

    def signals(self, scalars: list, port: str) -> list:
        """One :class:`TableSignal` per scalar name (``"ext.w[2]"`` of the port ``"ext.w"``):
        the column ``column`` for a lone scalar, else the column named as the scalar, as its
        last part (``w[2]``), or, for a scalar port, the table's only column."""
        times, columns = self.read()
        out = []
        for s in scalars:
            name = self.column
            if name is None:
                last = s.rpartition(".")[2]
                name = next((c for c in (s, last, f"{port}.{s}") if c in columns), None)
                if name is None and len(scalars) == 1 and len(columns) == 1:
                    name = next(iter(columns))
            elif len(scalars) > 1:
                raise SignalError(f"{self.where}: column = {self.column!r} gives one scalar; {port} has "
                                  f"{len(scalars)}: name the columns {scalars[0].rpartition('.')[2]} ... instead")
            if name not in columns:
                wanted = self.column or s.rpartition(".")[2]
                raise SignalError(f"{self.where}: {self.name} has no column {wanted!r}"
                                  f"{did_you_mean(wanted, columns)}; its columns: t, {', '.join(columns)}")
            out.append(TableSignal(times, columns[name], self.interpolation, self.extrapolation,
                                   f"table {self.name}:{name}"))
        return out


def parse_input(ref: str, value, where: str, base: Path, parameters: dict | None = None, unit=None):
    """The value of an ``[inputs]`` entry: a number, a list of numbers, a string (a number with
    its unit, in ``unit(index)``, the declared unit of the scalar at ``index``: ``()`` for the
    entry, ``(k,)`` for a port's element ``k``; or an expression of ``t`` and the named
    ``parameters``: a :class:`Signal`, a number when it is constant), a table or a source, or a
    list of numbers and signals (:mod:`.values`)."""
    return _input(ref, value, where, base, parameters or {}, unit, ())


def _input(ref, value, where, base, parameters, unit, index):
    if isinstance(value, bool):
        raise ConnectionError_(f"{where}: a number or a signal is expected, got {str(value).lower()}")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            v = text_value(value, where, unit(index) if unit else None, parameters, time=True)
        except (ExpressionError, SignalError, UnitError) as e:
            raise ConnectionError_(str(e)) from None
        if isinstance(v, Signal):
            return v
        return float(v) if np.ndim(v) == 0 else np.asarray(v, dtype=float).tolist()
    if isinstance(value, dict):
        return _table_or_source(value, where, Path(base), parameters)
    if isinstance(value, list) and not index:
        items = [_input(ref, v, f"{where}[{k + 1}]", base, parameters, unit, (k,)) for k, v in enumerate(value)]
        if any(isinstance(v, list) or isinstance(v, TableSpec) for v in items):
            raise ConnectionError_(f"{where}: a port's value is a list of numbers or signals, one per scalar")
        return items if any(isinstance(v, Signal) for v in items) else [float(v) for v in items]
    raise ConnectionError_(f"{where}: a number, a list, an expression in t, a table or a source is expected, "
                           f"got {value!r}")


def _table_or_source(value: dict, where, base, parameters):
    if ("table" in value) == ("source" in value):
        raise ConnectionError_(f"{where}: a signal table holds table = \"file.csv\" or source = \"step\" "
                               f"(sources: step, ramp, sine, pulse, bangbang), got keys {', '.join(value)}")
    try:
        if "source" in value:
            return source(value, where, lambda v: text_value(v, f"{where}: {value['source']}", None, parameters))
        for k in value:
            if k not in TABLE_KEYS:
                raise SignalError(f"{where}: a table takes {', '.join(TABLE_KEYS)}; not {k!r}{did_you_mean(k, TABLE_KEYS)}")
        table = value["table"]
        if not isinstance(table, (str, dict)):
            raise SignalError(f"{where}: table = \"file.csv\" (a CSV file), or its columns {{t = [...], ...}}")
        path = None if isinstance(table, dict) else Path(table)
        spec = TableSpec(path if path is None or path.is_absolute() else (base / path).resolve(),
                         value.get("interpolation", "linear"), value.get("extrapolation", "hold"),
                         value.get("column"), where, table if path is None else None)
        TableSignal([0, 1], [0, 0], spec.interpolation, spec.extrapolation, where)     # the names checked now
        spec.read()                                                                    # and the file
        return spec
    except SignalError as e:
        raise ConnectionError_(str(e)) from None


def has_signals(cs: CoSystem) -> bool:
    """Some input of ``cs`` is a time signal."""
    return any(is_signal(v) for v in cs.inputs.values())


def is_signal(v) -> bool:
    """``v``, an input's value, is or holds a time signal (not a constant)."""
    return isinstance(v, (Signal, TableSpec)) or (isinstance(v, list) and any(isinstance(x, Signal) for x in v))


def resolve(cs: CoSystem, types: dict) -> tuple:
    """``(constants, signals)``: the system's inputs with their scalars known from the unit
    ``types``: ``{ref: value}`` of the constant ones (as :attr:`CoSystem.inputs` holds them) and
    ``{(unit, input scalar): Signal}`` of the time signals."""
    constants, signals = {}, {}
    for ref, value in cs.inputs.items():
        if not is_signal(value):
            constants[ref] = value
            continue
        unit, _, var = ref.partition(".")
        if unit not in types:
            raise ConnectionError_(f"input {ref}: unknown unit {unit!r}{did_you_mean(unit, types)}")
        scalars = types[unit].scalars(var, "input")
        if not scalars:
            inputs = types[unit].ports("input")
            raise ConnectionError_(f"input {ref}: {unit!r} has no input {var!r}{did_you_mean(var, inputs)}; "
                                   f"inputs: {', '.join(inputs)}")
        try:
            items = value.signals(scalars, var) if isinstance(value, TableSpec) else \
                value if isinstance(value, list) else [value]
        except SignalError as e:
            raise ConnectionError_(str(e)) from None
        if len(items) != len(scalars):
            raise ConnectionError_(f"input {ref} takes {len(scalars)} value(s), got {len(items)}")
        for s, v in zip(scalars, items):
            if isinstance(v, Signal):
                signals[(unit, s)] = v
            else:
                constants[f"{unit}.{s}"] = v
    return constants, signals


def with_signal_units(cs: CoSystem, types: dict) -> CoSystem:
    """``cs`` with each port's time signals as a :class:`SignalSpec` unit connected to it
    (``<unit>_<port>_signal``), the constant inputs as they are: what the master runs."""
    constants, signals = resolve(cs, types)
    out = CoSystem()
    out.units, out.links = dict(cs.units), list(cs.links)
    out.connections, out.recorded = list(cs.connections), list(cs.recorded)
    out.inputs = constants
    ports = {}
    for (unit, scalar), signal in signals.items():
        ports.setdefault((unit, port_of(scalar)[0]), []).append((scalar, signal))
    for (unit, port), items in ports.items():
        name = f"{unit}_{port.replace('.', '_')}_signal"
        while name in out.units:
            name += "_"
        out.add(name, SignalSpec([s for _, s in items]))
        for k, (scalar, _) in enumerate(items):
            out.connect(f"{name}.{SignalSpec([s for _, s in items]).output_names[k]}", f"{unit}.{scalar}")
    return out
