"""Distributions and designs: each sample from the seed and its index alone, the
distributions they claim, and one-line errors."""

import math

import numpy as np
import pytest
from scipy import stats

from titop_fmu.campaign.distributions import SweepError, design, parse



def test_a_random_sample_depends_on_the_seed_and_its_index_alone():
    d = [parse("a", "uniform(0, 1)"), parse("b", "normal(0, 1)")]
    short, long = design(d, 10, 7), design(d, 1000, 7)
    assert np.array_equal(short, long[:10])
    assert not np.array_equal(design(d, 10, 8), short)


@pytest.mark.parametrize("text, check", [
    ("uniform(2, 5)", lambda x: x.min() >= 2 and x.max() < 5 and abs(x.mean() - 3.5) < 0.05),
    ("normal(170deg, 2deg)", lambda x: abs(x.mean() - math.radians(170)) < 3e-3 and
     abs(x.std() - math.radians(2)) < 2e-3),
    ("truncnormal(1, 2, 0.5, 1.5)", lambda x: x.min() >= 0.5 and x.max() <= 1.5 and
     stats.kstest(x, stats.truncnorm(-0.25, 0.25, loc=1, scale=2).cdf).pvalue > 1e-3),
    ("[1, 2, 4]", lambda x: set(x) == {1, 2, 4} and all(abs(np.mean(x == v) - 1 / 3) < 0.03 for v in (1, 2, 4))),
    ("linspace(0, 1, 5)", lambda x: set(x) == {0, 0.25, 0.5, 0.75, 1}),
])
@pytest.mark.parametrize("sampling", ["random", "lhs", "sobol"])
def test_the_distributions(text, check, sampling):
    x = design([parse("v", text)], 4096, 1, sampling)[:, 0]
    assert check(x)


def test_latin_hypercube_puts_one_point_in_each_stratum():
    x = design([parse("a", "uniform(0, 1)"), parse("b", "uniform(0, 10)")], 50, 3, "lhs")
    for col, scale in ((0, 1), (1, 10)):
        assert sorted((x[:, col] / scale * 50).astype(int)) == list(range(50))


def test_grid_is_every_combination_first_slowest():
    x = design([parse("a", "[1, 2]"), parse("b", "linspace(0, 1, 3)")], 6, 0, "grid")
    assert x.tolist() == [[1, 0], [1, 0.5], [1, 1], [2, 0], [2, 0.5], [2, 1]]


@pytest.mark.parametrize("text, message", [
    ("normall(1, 2)", "--vary m=normall(1, 2): unknown distribution 'normall' (did you mean 'normal'"),
    ("uniform(2, 1)", "uniform(a, b) needs a < b"),
    ("normal(1)", "normal takes 2 numbers, got 1"),
    ("normal(1, 0)", "sigma must be > 0"),
    ("uniform(1, x)", "cannot read 'x'"),
    ("uniform(1, inf)", "is not a finite number"),
    ("linspace(0, 1, 2.5)", "a whole number n >= 1"),
    ("[]", "no values to choose from"),
    ("7", "expected uniform(a,b)"),
])
def test_errors_are_one_line(text, message):
    with pytest.raises(SweepError, match=None) as e:
        parse("m", text)
    assert message in str(e.value) and "\n" not in str(e.value)
