"""The generated chains and trees (titop_fmu.scenarios.generate): structure, physics, bad input."""

import numpy as np
import pytest

from titop_fmu import invariants
from titop_fmu.scenarios import generate
from titop_fmu.errors import ParameterError


def test_tree_structure_is_breadth_first():
    s = generate.tree(6, branching=2)
    assert list(s.blocks) == ["base"] + [f"b{i}" for i in range(1, 7)]
    links = {(l.parent, l.child_port, l.child) for l in s.links}
    assert links == {("base", "c1", "b1"), ("base", "c2", "b2"), ("b1", "c1", "b3"), ("b1", "c2", "b4"),
                     ("b2", "c1", "b5"), ("b2", "c2", "b6")}
    chain = generate.chain(4, joint="prismatic")
    assert [(l.parent, l.child) for l in chain.links] == [("base", "b1"), ("b1", "b2"), ("b2", "b3"),
                                                           ("b3", "b4")]
    assert chain.initial_state().shape == (13 + 4 * 2,)


@pytest.mark.parametrize("joint", ["revolute", "prismatic"])
def test_generated_tree_moves_with_constant_momentum(joint):
    """The base's lift cancels the whole weight: no net external force, so the linear
    momentum stays what it is (zero) while the joints swing."""
    s = generate.tree(5, branching=2, joint=joint)
    tr = s.simulate(0.5, 0.05)
    p = np.array([invariants.momenta(s, y)[0] for y in tr.y])
    q = np.concatenate([tr.states(f"b{i}")[:, 0:1] for i in range(1, 6)], axis=1)
    assert np.ptp(q, axis=0).min() > 1e-3                    # every joint moves
    assert np.max(np.abs(p)) <= 1e-9


@pytest.mark.parametrize("kw, name", [({"n": 0}, "n"), ({"n": 2.5}, "n"), ({"n": 3, "branching": 0}, "branching"),
                                      ({"n": 3, "joint": "ball"}, "joint")])
def test_bad_sizes_are_parameter_errors(kw, name):
    with pytest.raises(ParameterError, match=f"parameter '{name}'"):
        generate.tree(**kw)
