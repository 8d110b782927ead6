"""The content of the 3-D view: the bodies' shapes in their frames, their frames over time
(sampled for the eye, written compactly), the traces and the camera's framing.

Frames are sampled at most :data:`FPS` per simulated second and :data:`MAX_FRAMES` in all
(the viewer interpolates between them); positions are written as integers of a quantum of
``1e-4`` of the system's size, attitudes as quaternions to ``1e-4``, each as differences from
the previous sample: a 20 s run of four bodies takes under 100 kB.
"""

from __future__ import annotations

import numpy as np

from ..errors import TitopError
from ..spatial import quat_from_dcm
from . import deform
from .poses import Model

#: most samples per simulated second, and in all
FPS, MAX_FRAMES = 60, 3000
#: quanta of the written positions (times the system's size) and quaternions
POSITION_QUANTUM, QUATERNION_QUANTUM, TIME_QUANTUM = 1e-4, 1e-4, 1e-6
#: most traces drawn when none are asked
DEFAULT_TRACES = 8
#: body colours (one per body, in order)
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
           "#bcbd22", "#7f7f7f")


def frames(t, fps=FPS, max_frames=MAX_FRAMES) -> np.ndarray:
    """Indices of the samples of ``t`` (increasing) kept for the view: one at least every
    ``1/fps`` s where the run has them, at most ``max_frames``, the first and last always."""
    t = np.asarray(t, dtype=float)
    if len(t) < 2:
        return np.arange(len(t))
    spacing = max(1.0 / fps, (t[-1] - t[0]) / (max_frames - 1))
    keep, last = [0], t[0]
    for i in range(1, len(t) - 1):
        if t[i] - last >= spacing * (1 - 1e-9):
            keep.append(i)
            last = t[i]
    keep.append(len(t) - 1)
    return np.array(keep)


def equivalent_box(mass, inertia) -> tuple:
    """``(half sizes (3,), axes (3, 3))``: the homogeneous box of ``mass`` with the principal
    moments of ``inertia`` (``I_1 = m (b^2 + c^2) / 3`` for half sizes ``a, b, c``), along its
    principal axes (columns). Moments that no box has (the triangle inequality violated) give
    a thin side, a twentieth of the largest."""
    moments, axes = np.linalg.eigh(np.asarray(inertia, dtype=float))
    h2 = 1.5 / mass * (moments.sum() - 2 * moments)
    h = np.sqrt(np.maximum(h2, 0.0))
    return np.maximum(h, h.max() / 20), axes


#: sides of the polygon a cylinder is drawn with
CYLINDER_SIDES = 24


def mesh(b) -> tuple | None:
    """``(points (k, 3) in the body frame, faces)`` of the body ``b`` as drawn: the shape its
    system file gives it (a box, a cylinder, a panel: :func:`~titop_fmu.cosim.systemfile.read_shape`),
    else the box of its inertia (:func:`equivalent_box`); None for a point mass. Each face is a
    list of point indices, wound counter-clockwise seen from outside (a panel has both sides)."""
    s = b.shape
    if s is None:
        if b.mass <= 0 or np.linalg.eigvalsh(b.inertia)[-1] <= 0:
            return None
        h, axes = equivalent_box(b.mass, b.inertia)
        return _box(b.com, axes, h)
    centre = b.com if s["at"] is None else np.asarray(s["at"], dtype=float)
    if s["kind"] == "box":
        return _box(centre, np.eye(3), np.asarray(s["size"]) / 2)
    u, v, n = _frame(s["axis"])
    if s["kind"] == "panel":
        a, c = s["size"]
        points = np.array([centre + x * a / 2 * u + y * c / 2 * v for x, y in ((-1, -1), (1, -1), (1, 1), (-1, 1))])
        return points, [[0, 1, 2, 3], [3, 2, 1, 0]]
    radius, length = s["size"]
    angles = 2 * np.pi * np.arange(CYLINDER_SIDES) / CYLINDER_SIDES
    ring = np.outer(np.cos(angles), u) + np.outer(np.sin(angles), v)
    points = np.vstack([centre - length / 2 * n + radius * ring, centre + length / 2 * n + radius * ring])
    k = CYLINDER_SIDES
    faces = [list(range(k)), list(range(k, 2 * k))] + [[i, (i + 1) % k, k + (i + 1) % k, k + i] for i in range(k)]
    return points, _outward(points, faces)


def _frame(axis) -> tuple:
    """``(u, v, n)``: the unit ``axis`` ``n`` and two unit vectors across it; for a body axis, the
    two others in order (``y``: ``x``, ``z``), a panel's sizes being along them."""
    n = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    k = int(np.argmax(np.abs(n)))
    if np.isclose(abs(n[k]), 1.0):
        u, v = (np.eye(3)[i] for i in range(3) if i != k)
        return u, v, n
    u = np.cross(n, np.eye(3)[int(np.argmin(np.abs(n)))])
    u /= np.linalg.norm(u)
    return u, np.cross(n, u), n


def _box(centre, axes, half) -> tuple:
    """The box of half sizes ``half`` along the columns of ``axes``, centred at ``centre``."""
    signs = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1], indexing="ij")).reshape(3, -1).T
    points = centre + (signs * half) @ np.asarray(axes).T
    faces = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    return points, _outward(points, faces)


def _outward(points, faces) -> list:
    """The faces of a convex solid, each wound so that its normal points away from its centre."""
    centre = points.mean(axis=0)
    out = []
    for f in faces:
        p = points[f]
        outward = np.cross(p[1] - p[0], p[2] - p[0]).dot(p.mean(axis=0) - centre) >= 0
        out.append(list(f) if outward else list(f)[::-1])
    return out


def body_points(m: Model) -> dict:
    """``{body: (k, 3)}``: the points drawn of each body in its frame (``P``, the centre of mass,
    the child points)."""
    return {n: np.vstack([np.zeros(3), b.com] + list(b.children)) for n, b in m.bodies.items()}


def _world(placed, points):
    """Every body point at every sample, ``(n, k, 3)``."""
    return np.concatenate([p[:, None, :] + np.einsum("kij,lj->kli", R, points[name])
                           for name, (R, p) in placed.items()], axis=1)


def parse_traces(m: Model, specs) -> list:
    """``[(body, point name, [PX]_Ra)]`` of the traces asked as ``unit``, ``unit.com``,
    ``unit.p`` or ``unit.c<i>``; by default the centre of mass of every body without a child
    body (the tips), the first :data:`DEFAULT_TRACES` of them."""
    if not specs:
        parents = {b.parent[0] for b in m.bodies.values() if b.parent}
        specs = [n for n in m.bodies if n not in parents][:DEFAULT_TRACES]
    out = []
    for spec in specs:
        name, _, point = spec.partition(".")
        if name not in m.bodies:
            raise TitopError(f"--trace {spec}: no body {name!r}; bodies: {', '.join(m.bodies)}")
        b = m.bodies[name]
        points = {"com": b.com, "p": np.zeros(3), **{f"c{i + 1}": c for i, c in enumerate(b.children)}}
        point = point or "com"
        if point not in points:
            raise TitopError(f"--trace {spec}: {name} has no point {point!r}; points: {', '.join(points)}")
        out.append((name, point, points[point]))
    return out


def _deltas(values, quantum) -> list:
    """Integers ``round(v / quantum)`` of a sequence, written as the first one and differences."""
    k = np.rint(np.asarray(values, dtype=float) / quantum).astype(np.int64)
    return np.diff(k, prepend=0).tolist()


def _quaternions(R) -> np.ndarray:
    """Unit quaternions of the DCMs ``R`` (n, 3, 3), signs chosen continuous in time."""
    q = np.array([quat_from_dcm(r) for r in R])
    for k in range(1, len(q)):
        if q[k].dot(q[k - 1]) < 0:
            q[k] = -q[k]
    return q


def _round(x, digits=4):
    return [float(f"{v:.{digits}g}") for v in np.ravel(x)]


def scene(m: Model, t, placed: dict, title: str, traces=(), notes=(), deformed=None, scale=None) -> dict:
    """The JSON content of the view (:mod:`.html`): ``t`` the sampled times, ``placed`` the
    bodies' frames ``{body: (P_a/i (n, 3, 3), [IP]_Ri (n, 3))}`` at them (:func:`.poses.poses`);
    ``notes``, lines the view shows under its title; ``deformed``, the flexible bodies' drawn
    points and their elastic displacements ``{body: (Drawn, u (n, N, 3))}``
    (:func:`.deform.deformations`), drawn times ``scale`` (None: :func:`.deform.auto_scale`)."""
    if not placed:
        raise TitopError("nothing to draw: the system has no TITOP body that can be placed")
    t = np.asarray(t, dtype=float)
    points = body_points(m)
    first = _world({n: (R[:1], p[:1]) for n, (R, p) in placed.items()}, points)[0]
    size = float(np.linalg.norm(first.max(axis=0) - first.min(axis=0)))
    deformed = {n: x for n, x in (deformed or {}).items() if n in placed}
    chosen = scale is None
    scale = deform.auto_scale(deformed) if chosen else float(scale)
    if deformed:
        why = f" (the largest displacement {deform.FRACTION:g} of its body's size)" if chosen and scale > 1 else ""
        notes = [f"elastic deformation drawn x{scale:g}{why}"] + list(notes)
    meshes = {n: mesh(b) for n, b in m.bodies.items() if n in placed and n not in deformed}
    meshes = {n: x for n, x in meshes.items() if x is not None}
    if size < 1e-9:                                   # one body, all its points at P
        size = 2 * max([float(np.abs(p - m.bodies[n].com).max()) for n, (p, _) in meshes.items()] + [0.5])
    quantum = float(f"{POSITION_QUANTUM * size:.1g}")
    masses = [b.mass for n, b in m.bodies.items() if n in placed]
    heaviest = max(masses) or 1.0
    world = _world(placed, points)
    lo, hi = world.min(axis=(0, 1)), world.max(axis=(0, 1))
    bodies = []
    index = {n: i for i, n in enumerate(placed)}
    for i, (name, (R, p)) in enumerate(placed.items()):
        b = m.bodies[name]
        q = _quaternions(R)
        entry = dict(
            name=name, kind=b.kind, joint=b.joint, color=PALETTE[i % len(PALETTE)], mass=_round(b.mass)[0],
            radius=_round(size * max(0.025, 0.07 * (b.mass / heaviest) ** (1 / 3)) if b.mass > 0 else 0.0)[0],
            com=_round(b.com), children=[_round(c) for c in b.children],
            axis=None if b.axis is None else _round(b.axis),
            parent=index.get(b.parent[0], -1) if b.parent else -1,
            joint_point=None if b.joint_point is None else _round(b.joint_point),
            p=[_deltas(p[:, k], quantum) for k in range(3)],
            q=[_deltas(q[:, k], QUATERNION_QUANTUM) for k in range(4)])
        if name in meshes:
            vertices, faces = meshes[name]
            entry["mesh"] = dict(points=[_round(c) for c in vertices], faces=faces)
            drawn = p[:, None, :] + np.einsum("kij,lj->kli", R, vertices)
            lo, hi = np.minimum(lo, drawn.min(axis=(0, 1))), np.maximum(hi, drawn.max(axis=(0, 1)))
        if name in deformed:
            shape, u = deformed[name]
            d = scale * u                                                         # (n, N, 3)
            entry["flex"] = dict(points=[_round(x, 6) for x in shape.points], line=shape.line, ports=list(shape.ports),
                                 d=[_deltas(d[:, j, k], quantum) for j in range(d.shape[1]) for k in range(3)])
            drawn = p[:, None, :] + np.einsum("kij,klj->kli", R, shape.points[None] + d)
            lo, hi = np.minimum(lo, drawn.min(axis=(0, 1))), np.maximum(hi, drawn.max(axis=(0, 1)))
        bodies.append(entry)
    closures = [dict(name=c.name, a=[index[c.left[0]], _round(c.left[1])], b=[index[c.right[0]], _round(c.right[1])])
                for c in m.closures if c.left and c.right and c.left[0] in index and c.right[0] in index]
    travel = float(np.linalg.norm(hi - lo))
    return dict(
        title=title, notes=list(notes), flex_scale=scale if deformed else None,
        t=_deltas(t, TIME_QUANTUM), t_quantum=TIME_QUANTUM, p_quantum=quantum,
        q_quantum=QUATERNION_QUANTUM, size=_round(size)[0], bounds=[_round(lo), _round(hi)],
        ground=_round(lo[1] - 0.1 * size)[0], follow=bool(travel > 4 * size + 1e-12),
        bodies=bodies, closures=closures,
        traces=[dict(body=index[n], name=f"{n}.{pt}", point=_round(x)) for n, pt, x in parse_traces(m, traces)
                if n in index])

