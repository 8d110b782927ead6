"""Flexible-body systems the tests share: the beam of the issue (Simo & Vu-Quoc's), a spinning
hub with it, a free-floating hub with two appendages, and the Richardson-extrapolated
central differences that linearize the NumPy blocks (the C kernel's dual numbers do it
exactly; these are their independent counterpart)."""

import numpy as np

from titop_fmu.blocks import FlexibleBody, FloatingBase, ImposedMotionBase, RevoluteBody, RigidBody, WeldedBody
from titop_fmu.blocks.beam import beam_modal_data, section
from titop_fmu.system import System

#: the spin-up beam (Simo & Vu-Quoc 1986), the issue's contract
SIMO = dict(length=10.0, EA=2.8e7, EIy=1.4e4, EIz=1.4e4, GJ=1.4e4, rhoA=1.2, rhoJ=6e-4)


def simo_beam(modes=10, elements=40, **kw):
    return beam_modal_data([section(SIMO)], modes, elements=elements, ports=[10.0], **kw)


def spinning_beam(Omega, modes=10, stiffening=True):
    """A hub spinning about z at ``Omega`` (imposed motion, ``p.a = 0``) with the beam along x."""
    s = System()
    s.add("hub", ImposedMotionBase(RigidBody(1.0, np.eye(3), children=[[0, 0, 0]]), gravity=[0, 0, 0],
                                   twist0=[0, 0, 0, 0, 0, Omega]))
    s.add("beam", WeldedBody(FlexibleBody(simo_beam(modes), stiffening=stiffening), gravity=[0, 0, 0]))
    s.link("hub.c1", "beam.p")
    s.set_input("beam.c1.w", np.zeros(6))
    return s


def richardson(g, h):
    """``g'(0)`` by central differences at ``h`` and ``2 h``, Richardson-extrapolated (error
    ``O(h^4)``)."""
    d1 = (g(h) - g(-h)) / (2 * h)
    d2 = (g(2 * h) - g(-2 * h)) / (4 * h)
    return (4 * d1 - d2) / 3


def state_jacobian(s, y, rows, columns, h=1e-5):
    """``d ydot[rows] / d y[columns]`` of the system ``s`` at ``y``."""
    J = np.zeros((len(rows), len(columns)))
    for k, j in enumerate(columns):
        e = np.zeros(len(y))
        e[j] = 1.0
        J[:, k] = richardson(lambda t: s.rhs(0.0, y + t * e)[rows], h)
    return J


def appendages(stiffening=True, gravity=(0.0, 0.0, 0.0), tip_mass=True):
    """A free-floating hub with two flexible appendages: a welded beam along x with a rigid
    mass at its tip, a beam on a damped-free revolute hinge along -y; torques on the hub."""
    g = list(gravity)
    a = beam_modal_data([section(dict(length=3.0, EA=5e6, EIy=800.0, EIz=500.0, GJ=300.0, rhoA=2.0, rhoJ=0.01))],
                        6, axis=[1, 0.1, 0.0], elements=12, ports=[3.0])
    b = beam_modal_data([section(dict(length=2.0, EA=4e6, EIy=300.0, EIz=400.0, GJ=200.0, rhoA=1.5, rhoJ=0.02))],
                        5, axis=[0.0, -1, 0.2], elements=10, ports=[2.0])
    s = System()
    s.add("hub", FloatingBase(RigidBody(40.0, [[6, 0.3, 0.1], [0.3, 8, -0.2], [0.1, -0.2, 7]], [0.05, -0.02, 0.03],
                                        [[0.4, 0.1, 0.0], [-0.3, -0.4, 0.1]]),
                              ext_frame="body", gravity=g, twist0=[0.1, -0.05, 0.02, 0.05, -0.1, 0.4]))
    s.add("wing", WeldedBody(FlexibleBody(a, stiffening=stiffening, eta0=0.02 * np.ones(6)), gravity=g,
                             mount=[0.1, -0.2, 0.3]))
    s.add("boom", RevoluteBody(FlexibleBody(b, stiffening=stiffening, etad0=0.05 * np.ones(5)), axis=[0, 0.3, 1.0],
                               k=20.0, gravity=g, mount=[0.0, 0.2, 0.1], qd0=0.3))
    s.link("hub.c1", "wing.p")
    s.link("hub.c2", "boom.p")
    if tip_mass:
        s.add("tip", WeldedBody(RigidBody(0.8, np.diag([0.01, 0.012, 0.011]), [0.02, 0.01, -0.03]), gravity=g,
                                mount=[0.3, 0.0, 0.2]))
        s.link("wing.c1", "tip.p")
    else:
        s.set_input("wing.c1.w", np.zeros(6))
    s.set_input("boom.c1.w", np.zeros(6))
    s.set_input("hub.ext.w", np.zeros(6))
    return s
