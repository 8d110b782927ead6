"""A mode of a linear model in the 3-D view (``titop-fmu animate --mode N``, ``linearize
--animate``): the system moved along the mode's shape about its operating point.

The model's states are minimal coordinates (:mod:`titop_fmu.linear.coordinates`); along the
mode's shape ``v`` (:meth:`~titop_fmu.linear.model.LinearModel.shape`) the system's state is
``x0 (+) c Re(v e^(i theta))``, the phase ``theta`` running over :data:`CYCLES` turns
(``x0 (+) c v sin(theta)`` for a real eigenvalue), each turn shown in :data:`PERIOD` seconds
whatever the mode's frequency (the title gives it). ``c`` makes the largest displacement of a
body point a tenth of the system's size: a linear shape has no amplitude of its own. The
points of a flexible body count, deformed by the modal coordinates of the state (a bending
mode bends the body), and its deformation is drawn as it is (scale 1) unless asked otherwise.
"""

from __future__ import annotations

import numpy as np

from ..errors import TitopError
from ..linear.coordinates import Coordinates
from . import deform, poses, scene

#: turns of the phase shown, the seconds each takes in the view, samples per turn
CYCLES, PERIOD, SAMPLES = 2, 2.0, 48
#: the largest displacement of a body point, relative to the system's size
AMPLITUDE = 0.1


def oscillating(model) -> list:
    """The modes of ``model`` that are not zero (rigid-body and neutral directions), slowest
    first: the rows of its modes table below the zero line, numbered from 1."""
    return [m for m in model.modes() if m.frequency > 0.0]


def mode_motion(m: poses.Model, system, model, number: int) -> tuple:
    """``(t, columns, title)``: the view's times, the outputs that place the bodies (labels of
    :func:`~.poses.needed`) along mode ``number`` of ``model`` (linearized from ``system``, a
    :class:`~titop_fmu.system.System`, at ``model.x0``), and a title naming the mode."""
    modes = oscillating(model)
    if not 1 <= number <= len(modes):
        raise TitopError(f"--mode {number}: the linear model has {len(modes)} mode(s) that are not zero, numbered "
                         "from 1, slowest first (the rows of the modes table below its zero line)")
    mode = modes[number - 1]
    coords = Coordinates(system)
    if coords.state_names != list(model.states):
        raise TitopError("the linear model's states are not those of the system it is shown on")
    v = model.shape(mode)
    theta = 2 * np.pi * np.arange(CYCLES * SAMPLES + 1) / SAMPLES
    turn = np.real(np.outer(np.exp(1j * theta), v)) if np.iscomplexobj(v) else np.outer(np.sin(theta), v)
    labels = poses.needed(m)
    x0 = np.asarray(model.x0, dtype=float)

    def placed(scale):
        ys = np.array([coords.retract(x0, scale * dx) for dx in turn])
        outs = system.outputs_at(ys, sorted({_port(label) for label in labels}))
        columns = {label: outs[label.partition(".")[0]][_port(label)[1]][:, _index(label)] for label in labels}
        columns.update(deform.modal_states(m, system.state_names(), ys))
        where = poses.poses(m, columns)
        points = scene.body_points(m)
        drawn = [p[:, None, :] + np.einsum("kij,lj->kli", R, points[n]) for n, (R, p) in where.items()]
        for n, (shape, u) in deform.deformations(m, columns, len(ys))[0].items():   # the deformed bodies
            R, p = where[n]
            drawn.append(p[:, None, :] + np.einsum("kij,klj->kli", R, shape.points[None] + u))
        return columns, np.concatenate(drawn, axis=1)

    _, rest = placed(0.0)
    size = max(float(np.linalg.norm(np.ptp(rest[0], axis=0))), 1e-3)
    _, moved = placed(1e-6)
    reach = float(np.max(np.linalg.norm(moved - rest, axis=2))) / 1e-6
    if reach == 0.0:
        raise TitopError(f"--mode {number}: its shape moves no body (a velocity mode): nothing to see")
    scale = AMPLITUDE * size / reach
    for _ in range(3):                              # to first order, then the motion's own reach
        columns, moved = placed(scale)
        scale *= AMPLITUDE * size / float(np.max(np.linalg.norm(moved - rest, axis=2)))
    columns, _ = placed(scale)
    what = (f"{mode.hz:.4g} Hz, damping {mode.damping:.3g}" if mode.multiplicity == 2
            else f"lambda = {mode.eigenvalue.real:.4g} 1/s")
    return theta / (2 * np.pi) * PERIOD, columns, f"mode {number}, {what} (a turn in {PERIOD:g} s)"


def _port(label: str) -> tuple:
    """``(unit, port)`` of an output scalar label (``bus.p.m[13]`` -> ``(bus, p.m)``)."""
    unit, _, var = label.partition(".")
    return unit, var.partition("[")[0]


def _index(label: str) -> int:
    return int(label.rpartition("[")[2][:-1]) - 1


def write_mode(anim, system, model, number: int):
    """Write the view ``anim`` (:class:`~titop_fmu.viewer.Animation`, of the system's file) of
    mode ``number`` of ``model``, linearized from ``system`` (a System, or a CoSystem: its
    monolithic twin), its title followed by the mode's."""
    from ..linear.linearize import as_system
    t, columns, what = mode_motion(anim.model, as_system(system)[0], model, number)
    anim.title = f"{anim.title}: {what}" if anim.title else what
    anim.scale = 1.0 if anim.scale is None else anim.scale
    anim.write(t, columns)
