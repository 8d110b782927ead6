"""Planar geometrically exact beams in Exudyn: the independent references of the flexible bodies'
spin-up beam and free-floating hub (issue 31), sharing nothing with ``titop_fmu`` but the data.

Each beam is a chain of Exudyn's ``ObjectBeamGeometricallyExact2D`` (Simo-Reissner: exact
kinematics of large rotations, axial, bending and shear strains) between ``NodeRigidBody2D``
nodes ``(x, y, phi)``, integrated by Exudyn's implicit generalized-alpha solver. The shear
stiffness is made large (``GA = SHEAR * EA``) so that the beam is the Euler-Bernoulli one of the
TITOP beam generator, which has no rotary inertia of bending either: the sections carry a
token one, ``ROTARY`` times that of a solid section of the same ``EI/EA`` (Exudyn's implicit solver
wants the nodes' rotations to have a mass; a full one, 6e-4 kg m, would add 0.012 kg m^2 to the
free hub's 1000 and turn it 1.6e-4 rad less in 30 s).

* :func:`spinup`: the beam clamped to a hub whose angle is prescribed (Simo & Vu-Quoc): the
  root node's ``x, y`` held at 0 and its ``phi`` at ``theta(t)`` (coordinate constraints, the
  last one with an offset function of time).
* :func:`free_hub`: a rigid hub (``ObjectRigidBody2D``, free in the plane) whose node is the root
  node of two beams, one along ``+x`` and one along ``-x``; a torque ``tau(t)`` on its angle.

What is compared is the tip's position in the hub frame, transverse component:
``d = [-sin theta, cos theta] . (r_tip - r_hub)`` (inertial positions, ``theta`` the hub's angle),
which is exactly what a floating-frame model's transverse elastic displacement of the tip is.
"""

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

#: the shear stiffness, a multiple of EA: Euler-Bernoulli to 3 EI / (GA L^2) ~ 1.5e-6 here
SHEAR = 10.0
#: the sections' rotary inertia against a solid section's (rhoA EI/EA)
ROTARY = 1e-4
#: the spin-up manoeuvre (Simo & Vu-Quoc 1986): final rate [rad/s], duration [s]
WS, TS = 6.0, 15.0


@dataclass(frozen=True)
class Beam:
    """A uniform planar beam: length [m], EA [N], EI [N m^2], rhoA [kg/m]."""
    length: float = 10.0
    EA: float = 2.8e7
    EI: float = 1.4e4
    rhoA: float = 1.2


def theta_spinup(t):
    """The hub's angle, rate and acceleration of the spin-up manoeuvre at ``t`` (scalars)."""
    if t < TS:
        a = 2 * np.pi / TS
        return ((WS / TS) * (t * t / 2 + (np.cos(a * t) - 1) / a**2),
                (WS / TS) * (t - np.sin(a * t) / a), (WS / TS) * (1 - np.cos(a * t)))
    return WS * (t - TS / 2), WS, 0.0


def _exudyn():
    import exudyn as exu
    from exudyn import itemInterface as ii
    return exu, ii


def _chain(mbs, ii, beam, elements, x0, direction, first=None):
    """Nodes and elements of one beam from ``x0`` along ``direction`` (+1 or -1) on the x axis;
    ``first``: an existing node at ``x0`` (the hub's). Returns the nodes, root first."""
    h = beam.length / elements
    xs = [x0 + direction * h * i for i in range(elements + 1)]
    nodes = [first if (i == 0 and first is not None) else
             mbs.AddNode(ii.NodeRigidBody2D(referenceCoordinates=[x, 0.0, 0.0])) for i, x in enumerate(xs)]
    chain = nodes if direction > 0 else nodes[::-1]          # each element along +x
    for a, b in pairwise(chain):
        mbs.AddObject(ii.ObjectBeamGeometricallyExact2D(
            nodeNumbers=[a, b], length=h, massPerLength=beam.rhoA,
            crossSectionInertia=ROTARY * beam.rhoA * beam.EI / beam.EA, bendingStiffness=beam.EI,
            axialStiffness=beam.EA, shearStiffness=SHEAR * beam.EA))
    return nodes


def _solve(mbs, exu, stop, step, output):
    s = exu.SimulationSettings()
    s.timeIntegration.numberOfSteps = round(stop / step)
    s.timeIntegration.endTime = stop
    s.timeIntegration.generalizedAlpha.spectralRadius = 0.9
    s.timeIntegration.newton.useModifiedNewton = False
    # Newton's residual: the round-off floor of EA ~ 1e7 at positions of 10 m is ~1e-7 of the
    # first residual; an absolute 1e-4 N is far below the loads (the runs' convergence shows it)
    s.timeIntegration.newton.relativeTolerance = 1e-7
    s.timeIntegration.newton.absoluteTolerance = 1e-4
    s.timeIntegration.verboseMode = 0
    s.linearSolver.solverType = exu.LinearSolverType.EigenSparse   # a chain's banded Jacobian: 10x the dense LU
    s.solution.file.write = False
    s.solution.sensors.writePeriod = output
    mbs.SolveDynamic(s)


def _sensor(mbs, exu, ii, node, kind):
    return mbs.AddSensor(ii.SensorNode(nodeNumber=node, outputVariableType=kind, storeInternal=True,
                                       writeToFile=False))


def transverse(theta, r_hub, r_tip):
    """``[-sin theta, cos theta] . (r_tip - r_hub)``: the tip's position in the hub frame,
    transverse component (``r`` as (k, 2) arrays)."""
    d = np.asarray(r_tip) - np.asarray(r_hub)
    return -np.sin(theta) * d[:, 0] + np.cos(theta) * d[:, 1]


def spinup(elements=40, step=0.01, stop=20.0, beam=Beam(), output=0.01):
    """The spin-up beam: ``(t, d)``, the tip's transverse position in the hub frame every
    ``output`` s."""
    exu, ii = _exudyn()
    mbs = exu.SystemContainer().AddSystem()
    nodes = _chain(mbs, ii, beam, elements, 0.0, 1.0)
    ground = mbs.AddMarker(ii.MarkerNodeCoordinate(nodeNumber=mbs.AddNode(ii.NodePointGround()), coordinate=0))
    root = [mbs.AddMarker(ii.MarkerNodeCoordinate(nodeNumber=nodes[0], coordinate=k)) for k in range(3)]
    mbs.AddObject(ii.CoordinateConstraint(markerNumbers=[ground, root[0]]))
    mbs.AddObject(ii.CoordinateConstraint(markerNumbers=[ground, root[1]]))
    mbs.AddObject(ii.CoordinateConstraint(markerNumbers=[ground, root[2]],
                                          offsetUserFunction=lambda mbs, t, item, offset: theta_spinup(t)[0]))
    tip = _sensor(mbs, exu, ii, nodes[-1], exu.OutputVariableType.Position)
    mbs.Assemble()
    _solve(mbs, exu, stop, step, output)
    data = mbs.GetSensorStoredData(tip)
    t = data[:, 0]
    th = np.array([theta_spinup(x)[0] for x in t])
    return t, transverse(th, np.zeros((len(t), 2)), data[:, 1:3])


def free_hub(tau, hub_mass, hub_inertia, elements=40, step=0.01, stop=30.0, beam=Beam(), output=0.01):
    """A rigid hub (mass, inertia about its centre) free in the plane, two beams from its centre
    along ``+x`` and ``-x``, the torque ``tau(t)`` on it: ``(t, theta, d_plus, d_minus)``, the
    hub's angle and each tip's transverse position in the hub frame every ``output`` s."""
    exu, ii = _exudyn()
    mbs = exu.SystemContainer().AddSystem()
    hub = mbs.AddNode(ii.NodeRigidBody2D(referenceCoordinates=[0.0, 0.0, 0.0]))
    mbs.AddObject(ii.ObjectRigidBody2D(nodeNumber=hub, mass=hub_mass, inertia=hub_inertia))
    plus = _chain(mbs, ii, beam, elements, 0.0, 1.0, first=hub)
    minus = _chain(mbs, ii, beam, elements, 0.0, -1.0, first=hub)
    angle = mbs.AddMarker(ii.MarkerNodeCoordinate(nodeNumber=hub, coordinate=2))
    mbs.AddLoad(ii.LoadCoordinate(markerNumber=angle, load=0.0,
                                  loadUserFunction=lambda mbs, t, load: tau(t)))
    q_hub = _sensor(mbs, exu, ii, hub, exu.OutputVariableType.Coordinates)
    tips = [_sensor(mbs, exu, ii, n[-1], exu.OutputVariableType.Position) for n in (plus, minus)]
    mbs.Assemble()
    _solve(mbs, exu, stop, step, output)
    h = mbs.GetSensorStoredData(q_hub)
    t, r_hub, th = h[:, 0], h[:, 1:3], h[:, 3]
    d = [transverse(th, r_hub, mbs.GetSensorStoredData(s)[:, 1:3]) for s in tips]
    return t, th, d[0], d[1]
