"""The check of an exported FMU's variable names (``titop_fmu.fmu.build.validate``): FMPy's
grammar of structured names, on one name per shape, finds what FMPy's check of every name finds."""

from types import SimpleNamespace

import pytest

from titop_fmu.fmu.build import _name_problems

pytest.importorskip("lark", reason="FMPy checks the structured names' grammar with lark")


def described(names):
    return SimpleNamespace(variableNamingConvention="structured",
                           modelVariables=[SimpleNamespace(name=n, sourceline=i + 1) for i, n in enumerate(names)])


def test_one_name_per_shape_finds_what_every_name_finds():
    from fmpy.validation import _validate_variable_names
    good = [f"beam.q[{k}]" for k in range(1, 40)] + ["beam.c1.m[18]", "a.b[1,2]", "a.b[10,20]", "der(x.y[3])",
                                                      "'quoted name'.z[2]", "b3.joint.q[1]", "_x"]
    bad = ["1link.q[1]", "link.q[1", "link.q[]", "link.q[-1]", "link..q", "link.q[1][2", "a b", "link.q[1.5]"]
    names = good[:20] + bad[:4] + good[20:] + bad[4:]
    every = _validate_variable_names(described(names))
    shapes = _name_problems(described(names))
    assert len(every) == len(bad) and shapes == every
    assert _name_problems(described(good)) == []
