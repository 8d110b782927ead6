"""The deformed flexible bodies of the 3-D view (docs/flexible-bodies.md; docs/animation.md).

A flexible body is drawn through points of it, in its frame ``R_a``: ``P`` and the nodes of its
beam (the generator's mesh, :func:`~titop_fmu.titop.flexible.drawn_beams`), else ``P`` and its
port nodes, a line from ``P`` out; or the points of a modal file's ``shape_nodes``, as dots. A
point at ``x0`` is displaced as eq. (F11) moves a node,

    u(eta) = Phi(x0) eta - 1/2 [eta^T K0F_k(x0) eta]_k

(the second-order foreshortening where the data carries it: a beam's nodes and the ports), from
the modal coordinates ``eta`` of a run's states (``<unit>.eta1 ..``: an in-process run, a mode of
a linear model). A run that has only its outputs (a CSV, the co-simulation master) gives the
ports' displacements ``c<i>.u[1..3]``: the line ``P`` -> ports, exact at the ports. The
displacement is drawn times a scale: given, or chosen so that the largest is :data:`FRACTION`
of the body's size (a round number, at least 1); the page says it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TitopError

#: the largest elastic displacement drawn, relative to the size of its body (automatic scale)
FRACTION = 0.1


@dataclass(frozen=True)
class Drawn:
    """Points of a flexible body, in its frame, and their mode shapes: ``points`` (N, 3),
    ``phi`` (N, 3, n), ``K0F`` (N, 3, n, n) (eq. (F11); zeros where not known), ``line``: drawn
    as a line through them in order (else as dots); ``ports``: the index of each child port's node."""

    points: np.ndarray
    phi: np.ndarray
    K0F: np.ndarray
    line: bool
    ports: tuple

    def displacement(self, eta) -> np.ndarray:
        """``u`` (m, N, 3) of every point at the modal coordinates ``eta`` (m, n) (eq. (F11))."""
        eta = np.atleast_2d(np.asarray(eta, dtype=float))
        return np.einsum("kaj,mj->mka", self.phi, eta) - 0.5 * np.einsum("kaij,mi,mj->mka", self.K0F, eta, eta)


def of_body(body, beam=None) -> Drawn:
    """The :class:`Drawn` of a :class:`~titop_fmu.blocks.FlexibleBody`: ``P`` and the nodes of its
    beam (``beam``, the :class:`~titop_fmu.blocks.modal.ModalData` of
    :func:`~titop_fmu.titop.flexible.drawn_beams`, used when its modes are the body's), else of its
    modal data's ``shape_nodes`` (dots), else ``P`` and its port nodes."""
    d, n = body.data, body.n_modes
    s = 1.0 if body.stiffening else 0.0                 # the body's own second-order terms (eq. (F10))
    if beam is not None and beam.n_modes == n and np.allclose(beam.omega, d.omega, rtol=1e-9, atol=0.0):
        ports = tuple(int(np.argmin(np.linalg.norm(beam.nodes - c, axis=1))) for c in d.nodes)
        if all(np.allclose(beam.phi[k], d.phi[i], rtol=1e-9, atol=1e-12) for i, k in enumerate(ports)):
            first = np.zeros((1, 3)), np.zeros((1, 3, n)), np.zeros((1, 3, n, n))
            return Drawn(np.vstack([first[0], beam.nodes]), np.vstack([first[1], beam.phi]),
                         s * np.vstack([first[2], beam.K0F]), True, tuple(k + 1 for k in ports))
    if d.shape_nodes is not None:
        return Drawn(d.shape_nodes, d.shape_phi, np.zeros(d.shape_phi.shape + (n,)), False, ())
    z = np.zeros
    return Drawn(np.vstack([z((1, 3)), d.nodes]), np.vstack([z((1, 3, n)), d.phi]),
                 s * np.vstack([z((1, 3, n, n)), d.K0F]), True, tuple(range(1, d.n_nodes + 1)))


def ports_only(body) -> Drawn:
    """``P`` and the port nodes of ``body``, a line: what the ports' displacements ``c<i>.u`` place."""
    k = len(body.children)
    return Drawn(np.vstack([np.zeros((1, 3)), np.reshape(body.children, (k, 3))]), np.zeros((k + 1, 3, 0)),
                 np.zeros((k + 1, 3, 0, 0)), True, tuple(range(1, k + 1)))


def eta_labels(name: str, n: int) -> list:
    """The columns of a body's modal coordinates: its states ``<unit>.eta1 ..``."""
    return [f"{name}.eta{j + 1}" for j in range(n)]


def modal_states(m, names, ys) -> dict:
    """``{"<unit>.eta<j>": (len(ys),)}``: the modal coordinates of the flexible bodies of the view's
    model ``m`` among the states ``ys`` named ``names`` (a :class:`~titop_fmu.system.System`'s)."""
    index = {n: i for i, n in enumerate(names)}
    ys = np.atleast_2d(np.asarray(ys, dtype=float))
    return {x: ys[:, index[x]] for name, b in m.bodies.items() if b.flexible
            for x in eta_labels(name, b.flexible[1]) if x in index}


def u_labels(name: str, k: int) -> list:
    """The columns of the ports' elastic displacements, ``<unit>.c<i>.u[1..3]``."""
    return [f"{name}.c{i + 1}.u[{a}]" for i in range(k) for a in (1, 2, 3)]


def deformations(m, columns: dict, n: int) -> tuple:
    """``({body: (Drawn, u (n, N, 3))}, notes)``: the elastic displacement of the drawn points of
    every flexible body of the view's model ``m`` over the ``n`` samples of ``columns``, from its
    modal coordinates, else from its ports' displacements; a body with neither is drawn
    undeformed, and a note says so."""
    out, notes = {}, []
    for name, b in m.bodies.items():
        if b.flexible is None:
            continue
        drawn, modes = b.flexible
        etas, us = eta_labels(name, modes), u_labels(name, len(b.children))
        if all(x in columns for x in etas):
            eta = np.column_stack([columns[x] for x in etas]) if modes else np.zeros((n, 0))
            out[name] = (drawn, drawn.displacement(eta))
        elif us and all(x in columns for x in us):
            ports = ports_only(b)
            u = np.zeros((n, len(ports.points), 3))
            u[:, 1:] = np.column_stack([columns[x] for x in us]).reshape(n, -1, 3)
            out[name] = (ports, u)
            notes.append(f"{name}: deformed through its ports (the run has their displacements c<i>.u, "
                         "not its modal coordinates)")
        else:
            out[name] = (drawn, np.zeros((n, len(drawn.points), 3)))
            notes.append(f"{name}: drawn undeformed (the run has neither its modal coordinates nor its ports' "
                         "displacements c<i>.u)")
    return out, notes


def auto_scale(deformed: dict) -> float:
    """The scale that draws the largest displacement as :data:`FRACTION` of its body's size: a
    round number (1, 2 or 5 times a power of 10, rounded down), at least 1."""
    ratio = np.inf
    for drawn, u in deformed.values():
        largest = float(np.max(np.linalg.norm(u, axis=2), initial=0.0))
        size = float(np.max(np.linalg.norm(drawn.points - drawn.points[0], axis=1), initial=0.0))
        if largest > 0 and size > 0:
            ratio = min(ratio, FRACTION * size / largest)
    if not np.isfinite(ratio) or ratio <= 1:
        return 1.0
    e = 10.0 ** np.floor(np.log10(ratio))
    return float(max(x for x in (1, 2, 5, 10) if x * e <= ratio * (1 + 1e-12)) * e)


def checked_scale(scale) -> float | None:
    """``--scale``: a number > 0 (None: automatic)."""
    if scale is None:
        return None
    if not (isinstance(scale, (int, float)) and np.isfinite(scale) and scale > 0):
        raise TitopError(f"--scale {scale}: the factor the elastic displacements are drawn times, a number > 0")
    return float(scale)
