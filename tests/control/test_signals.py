"""Time signals: tables (hold, linear, cubic; held or periodic past the ends), the standard
sources, their breakpoints, their C form (compiled and run), and bad tables refused."""

import math
import subprocess

import numpy as np
import pytest
from scipy.interpolate import CubicSpline

from titop_fmu.control.expressions import C_HELPERS
from titop_fmu.control.signals import (C_BREAKPOINTS, C_TABLE, ExpressionSignal, SignalError, TableSignal, read_table,
                                       source, within)

T = np.array([0.0, 0.5, 1.5, 2.0, 3.5])
V = np.array([1.0, -2.0, 0.5, 4.0, 3.0])


def test_hold_is_the_last_rows_value_and_linear_the_chord():
    hold, lin = TableSignal(T, V, "hold"), TableSignal(T, V, "linear")
    for t in np.linspace(-1, 5, 601):
        i = np.searchsorted(T, t, side="right") - 1
        assert hold.value(t) == V[min(max(i, 0), len(V) - 1)]
        assert lin.value(t) == pytest.approx(np.interp(t, T, V), abs=1e-15)
    assert hold.value(1.5) == 0.5 and hold.value(np.nextafter(1.5, 0)) == -2.0     # right-continuous
    assert hold.breakpoints(0, 10).tolist() == [0.5, 1.5, 2.0, 3.5]
    assert lin.breakpoints(0.7, 3.0).tolist() == [1.5, 2.0]


def test_cubic_is_the_not_a_knot_spline_and_smooth_inside():
    cub = TableSignal(T, V, "cubic")
    ref = CubicSpline(T, V)
    for t in np.linspace(0, 3.5, 351):
        assert cub.value(t) == pytest.approx(float(ref(t)), abs=1e-13)
    assert cub.value(10.0) == V[-1] and cub.value(-1.0) == V[0]          # held past the ends
    assert cub.breakpoints(-1, 10).tolist() == [0.0, 3.5]                  # only where the hold begins


def test_periodic_repeats_the_span():
    per = TableSignal(T, V, "linear", "periodic")
    for t in np.linspace(0, 3.5, 36):
        assert per.value(t + 3.5 * 3) == pytest.approx(per.value(t), abs=1e-12)
    assert per.breakpoints(3.0, 8.0).tolist() == [3.5, 4.0, 5.0, 5.5, 7.0, 7.5]


def test_sources():
    step = source({"source": "step", "time": 2, "height": 3, "offset": 1}, "x")
    assert (step.value(1.999), step.value(2.0)) == (1.0, 4.0) and step.breakpoints(0, 5).tolist() == [2.0]
    ramp = source({"source": "ramp", "start": 1, "duration": 2, "height": 4}, "x")
    assert (ramp.value(0.5), ramp.value(2.0), ramp.value(9)) == (0.0, 2.0, 4.0)
    sine = source({"source": "sine", "amplitude": 2, "frequency": 0.5, "phase": 0.1, "offset": 1}, "x")
    assert sine.value(0.7) == pytest.approx(1 + 2 * math.sin(math.pi * 0.7 + 0.1), abs=1e-15)
    pulse = source({"source": "pulse", "amplitude": 5, "period": 2, "width": 0.5, "start": 1}, "x")
    assert [pulse.value(t) for t in (0.9, 1.0, 1.4, 1.5, 2.9, 3.0, 3.6)] == [0, 5, 5, 0, 0, 5, 0]
    assert pulse.breakpoints(0, 5.2).tolist() == [1.0, 1.5, 3.0, 3.5, 5.0]
    bb = source({"source": "bangbang", "amplitude": 0.8, "duration": 4, "start": 1}, "x")
    # rest to rest over the profile, having moved amplitude T^2 / 8 (integrated numerically)
    ts = np.linspace(0, 6, 600001)
    a = np.array([bb.value(t) for t in ts])
    v = np.concatenate([[0], np.cumsum(0.5 * (a[1:] + a[:-1]) * np.diff(ts))])
    x = np.concatenate([[0], np.cumsum(0.5 * (v[1:] + v[:-1]) * np.diff(ts))])
    assert abs(v[-1]) < 1e-9 and x[-1] == pytest.approx(0.8 * 16 / 8, rel=1e-8)


def test_a_source_reads_numbers_and_unit_strings():
    """Numbers as they are, a string through the reader given (a system file's ``"30 deg"``)."""
    def degrees(text):
        return np.radians(float(text.replace("deg", "")))
    ramp = source({"source": "ramp", "height": "30 deg", "duration": 2, "start": 1.0}, "x", degrees)
    assert ramp.value(2.0) == pytest.approx(np.radians(15)) and ramp.value(5) == pytest.approx(np.radians(30))


@pytest.mark.parametrize("spec,says", [
    ({"source": "stepp"}, "did you mean 'step'"),
    ({"source": "sine"}, "needs frequency"),
    ({"source": "sine", "frequency": 0}, "must be > 0"),
    ({"source": "step", "heigth": 1}, "did you mean 'height'"),
    ({"source": "pulse", "period": 1, "width": 2}, "longer than its period"),
    ({"source": "step", "time": "soon"}, "not a number"),
])
def test_bad_sources(spec, says):
    with pytest.raises(SignalError) as e:
        source(spec, "inputs.a.u")
    assert says in str(e.value)


def test_every_signal_in_c_is_the_python_value(tmp_path):
    signals = [TableSignal(T, V, "hold"), TableSignal(T, V, "linear"), TableSignal(T, V, "cubic"),
               TableSignal(T, V, "cubic", "periodic"), ExpressionSignal("where(t < 1.2, sin(3*t), t**2)"),
               source({"source": "step", "time": 2, "height": 3}, "x"),
               source({"source": "ramp", "start": 1, "duration": 2, "height": 4}, "x"),
               source({"source": "sine", "frequency": 0.5, "phase": 0.1, "start": 0.3}, "x"),
               source({"source": "pulse", "period": 2, "width": 0.5, "start": 1}, "x"),
               source({"source": "bangbang", "amplitude": 0.8, "duration": 4, "start": 1}, "x")]
    times = np.linspace(-0.5, 9.0, 77).tolist() + [0.5, 1.5, 2.0, 3.5]
    code = "".join(s.c_code(f"s{i}") for i, s in enumerate(signals))
    calls = "".join(f'    for (int k = 0; k < {len(times)}; k++) printf("%.17g\\n", s{i}(ts[k]));\n'
                    for i in range(len(signals)))
    src = tmp_path / "s.c"
    src.write_text("#include <math.h>\n#include <stdio.h>\n" + C_HELPERS + C_TABLE + code
                   + f"int main(void) {{ double ts[] = {{{', '.join(map(repr, times))}}};\n{calls} return 0; }}\n")
    subprocess.run(["cc", "-O2", "-o", str(tmp_path / "s"), str(src), "-lm"], check=True)
    out = np.array(subprocess.run([str(tmp_path / "s")], capture_output=True, text=True, check=True).stdout.split(),
                   dtype=float)
    expected = [s.value(t) for s in signals for t in times]
    np.testing.assert_allclose(out, expected, rtol=1e-14, atol=1e-14)


def test_within_gives_the_limits_of_a_piece():
    hold = TableSignal(T, V, "hold")
    assert hold.value(within(1.5, 0.5, 1.5)) == -2.0            # the piece (0.5, 1.5) at its end
    assert hold.value(within(1.5, 1.5, 2.0)) == 0.5             # the next one at its start
    assert within(1.0, 0.5, 1.5) == 1.0


def write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("text,says", [
    ("time,w\n0,1\n1,2\n", "no column 't'"),
    ("t,w\n0,1\n1,nan\n", "line 3: column 'w' is nan"),
    ("t,w\n0,1\n2,2\n1,3\n", "must increase strictly: t = 2 (line 3) then 1 (line 4)"),
    ("t,w\n0,1\n1,x\n", "line 3: not a number"),
    ("t,w\n0,1\n1\n", "line 3: 1 values for 2 columns"),
    ("", "is empty"),
])
def test_bad_tables_are_refused_naming_the_line(tmp_path, text, says):
    with pytest.raises(SignalError) as e:
        read_table(write(tmp_path / "d.csv", text), "inputs.bus.ext.w")
    assert says in str(e.value) and str(e.value).startswith("inputs.bus.ext.w")


def test_a_table_reads_its_columns(tmp_path):
    t, cols = read_table(write(tmp_path / "d.csv", "# a comment\nt, w[1] ,w[2]\n0,1,2\n1,3,4\n"), "x")
    assert t.tolist() == [0, 1] and cols["w[2]"].tolist() == [2, 4]


def test_every_signals_breakpoints_in_c_are_the_python_ones(tmp_path):
    """Each signal's C breakpoint function, walked from -0.5 (b = next(b, 9.0) until none), gives
    the signal's breakpoints in (-0.5, 9.0]: the rows of tables (periodic too) and the sources'
    instants exactly, an expression's comparisons with t to one float (the first float of the new
    truth; Python's, where the difference of the two sides changes sign, is one float earlier
    where that difference is exactly zero)."""
    signals = [TableSignal(T, V, "hold"), TableSignal(T, V, "linear", "periodic"), TableSignal(T, V, "cubic"),
               TableSignal(T, V, "cubic", "periodic"), ExpressionSignal("where(t < 1.2, sin(3*t), t**2)"),
               ExpressionSignal("(t >= 2) * (t < 2*pi) + (sin(t) > 0.5)"), ExpressionSignal("cos(t) + t"),
               source({"source": "step", "time": 2, "height": 3}, "x"),
               source({"source": "ramp", "start": 1, "duration": 2, "height": 4}, "x"),
               source({"source": "sine", "frequency": 0.5, "phase": 0.1, "start": 0.3}, "x"),
               source({"source": "pulse", "period": 2, "width": 0.5, "start": 1}, "x"),
               source({"source": "bangbang", "amplitude": 0.8, "duration": 4, "start": 1}, "x")]
    code = "".join(s.c_code(f"s{i}") + s.c_breakpoints(f"s{i}") for i, s in enumerate(signals))
    walks = "".join(f'    for (double b = s{i}_next(-0.5, 9.0); isfinite(b); b = s{i}_next(b, 9.0)) '
                    f'printf("%d %.17g\\n", {i}, b);\n' for i in range(len(signals)))
    src = tmp_path / "b.c"
    src.write_text("#include <math.h>\n#include <stdio.h>\n" + C_HELPERS + C_TABLE + C_BREAKPOINTS + code
                   + f"int main(void) {{\n{walks}    return 0;\n}}\n")
    subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-Wno-unused-function", "-o", str(tmp_path / "b"), str(src), "-lm"], check=True)
    out = subprocess.run([str(tmp_path / "b")], capture_output=True, text=True, check=True).stdout.split("\n")
    found = {i: [float(line.split()[1]) for line in out if line and int(line.split()[0]) == i]
             for i in range(len(signals))}
    for i, s in enumerate(signals):
        want = s.breakpoints(-0.5, 9.0 + 1e-9)
        if isinstance(s, ExpressionSignal):
            assert len(found[i]) == len(want) and np.all(np.abs(found[i] - want) <= np.spacing(want)), (i, found[i])
        else:
            assert found[i] == want.tolist(), (i, found[i], want)
    assert found[0] == T.tolist() and found[1][:6] == [0.0, 0.5, 1.5, 2.0, 3.5, 4.0] and found[6] == []
    assert found[4] == [1.2] and found[5][1] == 2.0


def test_signals_write_back_as_a_system_file_gives_them():
    """An expression as its text, a source as its table: read back, the same signal."""
    from titop_fmu.cosim.signals import parse_input
    for value in ["where(t < 15, 0.4*(1 - cos(2*pi*t/15)), 0)",
                  {"source": "pulse", "amplitude": 5, "period": 2, "width": 0.5, "start": 1},
                  {"source": "bangbang", "amplitude": 0.8, "duration": 4}]:
        s = parse_input("a.u", value, "x", ".")
        back = parse_input("a.u", s.to_input(), "x", ".")
        assert back.to_input() == s.to_input() and [back.value(t) for t in T] == [s.value(t) for t in T]
    assert source({"source": "step", "time": 2}, "x").to_input() == {"source": "step", "height": 1.0, "time": 2.0,
                                                                     "offset": 0.0}


@pytest.mark.parametrize("data,says", [
    ({"w": [1, 2]}, "a column 't'"),
    ({"t": [0, 1], "w": [1]}, "column 'w': 1 values for 2 times"),
    ({"t": [0, 1], "w": [1, float("nan")]}, "column 'w': every value must be finite"),
    ({"t": [0, 2, 1], "w": [1, 2, 3]}, "must increase strictly: t = 2 (row 2) then 1 (row 3)"),
    ({"t": [0, 1], "w": ["a", 1]}, "column 'w': not a list of numbers"),
])
def test_a_table_given_as_its_data_is_checked_as_a_file(data, says):
    from titop_fmu.control.signals import table_data
    with pytest.raises(SignalError) as e:
        table_data(data, "inputs.bus.ext.w")
    assert says in str(e.value) and str(e.value).startswith("inputs.bus.ext.w")
    t, cols = table_data({"t": [0, 1], "w[2]": [2, 4]}, "x")
    assert t.tolist() == [0, 1] and cols["w[2]"].tolist() == [2, 4]
