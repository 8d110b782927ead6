"""Parametrized cases of a test that only ``pytest --slow`` runs: the plain run keeps the
others, the quick representative of what the test checks."""

import pytest


def slow(*values) -> list:
    """The cases ``values`` (one per case; a tuple for several arguments) marked slow."""
    return [pytest.param(*(v if isinstance(v, tuple) else (v,)), marks=pytest.mark.slow) for v in values]


#: a test of both kinds of FMU (the ``kind`` fixture of fmu_fixtures.py): the default kind,
#: standalone (C only), in the plain run; pythonfmu, the reference route through CPython, slow
pythonfmu_slow = pytest.mark.parametrize("kind", [*slow("pythonfmu"), "standalone"], indirect=True)


def by_kind(ids, quick="revolute_c1") -> list:
    """``(kind, model identifier)`` cases of a test of every block FMU of both kinds (with
    ``indirect=["kind"]``): ``quick``'s in the plain run, the others slow."""
    return [(kind, mid) if mid == quick else pytest.param(kind, mid, marks=pytest.mark.slow)
            for kind in ("pythonfmu", "standalone") for mid in ids]
