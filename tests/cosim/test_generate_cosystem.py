"""generate.cosystem is the system of generate.tree for the co-simulation master."""

import numpy as np
import pytest

from titop_fmu import generate
from titop_fmu.master.reference import monolithic


@pytest.mark.parametrize("n, branching, joint", [(7, 2, "revolute"), (4, 1, "prismatic"), (9, 3, "revolute")])
def test_cosystem_is_the_same_system_as_tree(n, branching, joint):
    s, twin = generate.tree(n, branching, joint), monolithic(generate.cosystem(n, branching, joint))
    assert list(twin.blocks) == list(s.blocks)
    assert [(l.parent, l.child_port, l.child) for l in twin.links] == \
        [(l.parent, l.child_port, l.child) for l in s.links]
    y = s.initial_state()
    assert np.array_equal(twin.initial_state(), y)
    assert np.allclose(twin.rhs(0.0, y), s.rhs(0.0, y), rtol=1e-14, atol=1e-14)
