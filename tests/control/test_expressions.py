"""The expression language: values, IEEE semantics, breakpoints, the C form (compiled and
run), and that nothing but arithmetic is ever evaluated."""

import math
import subprocess

import numpy as np
import pytest

from titop_fmu.control.expressions import C_HELPERS, ExpressionError, parse

CASES = [
    ("where(t < 15, 0.4*(1 - cos(2*pi*t/15)), 0)", lambda t: 0.4 * (1 - math.cos(2 * math.pi * t / 15)) if t < 15 else 0.0),
    ("3*t**2 - 2*t + 1", lambda t: 3 * t ** 2 - 2 * t + 1),
    ("max(sin(t), 0.2, t/10) + min(t, 2)", lambda t: max(math.sin(t), 0.2, t / 10) + min(t, 2)),
    ("(t > 1 and t <= 2) + 2*(t >= 3 or t < 0.5) - (not t > 4)",
     lambda t: float(1 < t <= 2) + 2 * float(t >= 3 or t < 0.5) - float(not t > 4)),
    ("0.5 < t < 1.5", lambda t: float(0.5 < t < 1.5)),
    ("t % 0.7 + floor(t) - ceil(t/2) + sign(t - 2) + abs(t - 3)",
     lambda t: t % 0.7 + math.floor(t) - math.ceil(t / 2) + np.sign(t - 2) + abs(t - 3)),
    ("atan2(t, 2) + hypot(t, 1) + exp(-t) + log(t + 1) + log10(t + 2) + sqrt(t) + tanh(t) + 30*deg",
     lambda t: math.atan2(t, 2) + math.hypot(t, 1) + math.exp(-t) + math.log(t + 1) + math.log10(t + 2)
     + math.sqrt(t) + math.tanh(t) + math.radians(30)),
]
TIMES = [0.0, 0.3, 0.5, 1.0, 1.7, 2.0, 2.5, 3.0, 4.2, 14.999, 15.0, 17.5]


@pytest.mark.parametrize("text,expected", CASES)
def test_values_are_the_arithmetic_they_say(text, expected):
    f = parse(text, ["t"]).function("t")
    for t in TIMES:
        assert f(t) == pytest.approx(expected(t), rel=1e-15, abs=1e-15), (text, t)


def test_the_c_form_computes_the_same_numbers(tmp_path):
    """Each expression compiled by the C compiler and run: the same values to the last bits."""
    functions = "".join(f"static double f{i}(double t) {{ return {parse(text, ['t']).c_code({'t': 't'})}; }}\n"
                        for i, (text, _) in enumerate(CASES))
    calls = "".join(f'    for (int k = 0; k < {len(TIMES)}; k++) printf("%.17g\\n", f{i}(ts[k]));\n'
                    for i in range(len(CASES)))
    source = tmp_path / "e.c"
    source.write_text("#include <math.h>\n#include <stdio.h>\n" + C_HELPERS + functions
                      + f"int main(void) {{ double ts[] = {{{', '.join(map(repr, TIMES))}}};\n{calls} return 0; }}\n")
    subprocess.run(["cc", "-O2", "-o", str(tmp_path / "e"), str(source), "-lm"], check=True)
    out = [float(v) for v in subprocess.run([str(tmp_path / "e")], capture_output=True, text=True,
                                            check=True).stdout.split()]
    expected = [parse(text, ["t"]).function("t")(t) for text, _ in CASES for t in TIMES]
    np.testing.assert_allclose(out, expected, rtol=2e-15, atol=1e-15)


def test_arithmetic_is_ieee_as_in_c():
    assert parse("1/0").value() == math.inf
    assert math.isnan(parse("0/0").value())
    assert parse("10**10**10").value() == math.inf          # floats, not a big integer computed for ever
    assert math.isnan(parse("(-8)**(1/3)").value())
    assert parse("where(t > 0, 1/t, 0)", ["t"]).value(t=0.0) == 0.0      # only the branch taken


def test_lists_and_named_values():
    e = parse("m * [[2, 0], [0, 3]] + [[0, 1], [1, 0]]", ["m"])
    np.testing.assert_array_equal(e.value(m=2.0), [[4, 1], [1, 6]])
    np.testing.assert_array_equal(e.bind(m=1.0).value(), [[2, 1], [1, 3]])
    assert e.names == {"m"} and e.bind(m=1.0).is_constant


def test_breakpoints_are_where_a_comparison_with_t_changes_exactly():
    assert parse("where(t < 15, 1, 0)", ["t"]).breakpoints(0, 20).tolist() == [15.0]
    assert parse("(t >= 2) * (t < 2*pi)", ["t"]).breakpoints(0, 20).tolist() == [2.0, 2 * math.pi]
    b = parse("t/3 < 0.1", ["t"]).breakpoints(0, 1)
    assert len(b) == 1 and b[0] / 3 >= 0.1 > np.nextafter(b[0], 0) / 3          # the first float of the new truth
    s = parse("sin(t) > 0", ["t"]).breakpoints(0, 10)                             # not affine: bisection
    np.testing.assert_allclose(s, [math.pi, 2 * math.pi, 3 * math.pi], rtol=1e-15)
    assert parse("cos(t) + t", ["t"]).breakpoints(0, 10).size == 0              # no comparison, no stop
    assert parse("where(t < 30, 1, 0)", ["t"]).breakpoints(0, 20).size == 0     # past the end


@pytest.mark.parametrize("text,says", [
    ('__import__("os").system("echo hacked")', "an attribute (a.b) is not allowed"),
    ('__import__("os")', "unknown function '__import__'"),
    ("().__class__.__bases__[0]", "not allowed"),
    ("t.real", "an attribute"),
    ("open('x')", "unknown function 'open'"),
    ("[x for x in [1]]", "not allowed"),
    ("lambda: 0", "a lambda"),
    ("'text'", "not a number"),
    ("x + 1", "unknown name 'x'"),
    ("tt + 1", "did you mean 't'"),
    ("sin(1, 2)", "takes one argument"),
    ("where(t, 1)", "takes 3 arguments"),
    ("max(1)", "two or more"),
    ("1 +", "cannot read"),
    ("t // 2", "floor(a / b)"),
    ("1 if t else 0", "where(c, a, b)"),
    ("sin", "is a function"),
    ("(" * 500 + "1" + ")" * 500, "nested"),
])
def test_anything_but_arithmetic_is_refused_before_it_runs(text, says, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ExpressionError) as e:
        parse(text, ["t"], where="inputs.x")
    assert says in str(e.value) and str(e.value).startswith("inputs.x")
    assert not (tmp_path / "x").exists()


def test_a_where_on_a_comparison_is_searched_once_and_not_by_sampling(monkeypatch):
    """``where(t < 40, ..)`` tests the truth of ``t < 40`` (a step function of t): only the
    comparison itself is searched, as an affine function, never the step by sampling (a
    million evaluations over the 1000 s a signal unit looks ahead: 74 s of a 100 s run of
    examples/slew.toml through the master)."""
    from titop_fmu.control import expressions
    searched = []
    crossings = expressions._crossings
    monkeypatch.setattr(expressions, "_crossings",
                        lambda f, t0, t1: searched.append(f) or crossings(f, t0, t1))
    e = parse("30*deg*where(t < 40, 10*(t/40)**3 - 15*(t/40)**4 + 6*(t/40)**5, 1)", ["t"])
    assert e.breakpoints(0, 1000).tolist() == [40.0]
    assert len(searched) == 1
    assert len(e.c_comparisons()) == 1
